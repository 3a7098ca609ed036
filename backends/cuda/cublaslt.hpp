// Matrix products through cuBLASLt. The library is loaded on first use
// (dlopen), so every tapestry command starts, and `--backend cuda` reports a
// missing GPU, without it; a missing library is a BackendUnavailable (exit 4).
// Algorithms come from cuBLASLt's heuristic, cached per problem (shape,
// layouts, dtype, pointer alignments), with a workspace per stream.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_plan.hpp"
#include "backends/dtype.hpp"

namespace tapestry::cuda {

// One column-major product D = epilogue(op(A)·op(B) (+ C when accumulate; C is
// D unless given)).
struct LtProblem {
  backend::DType dtype = backend::DType::Float32;
  bool tf32 = false; // float32 may use TF32 tensor cores
  LtGemm gemm;
  const void* a = nullptr; // cuBLASLt's A (our B, see planGemm)
  const void* b = nullptr; // cuBLASLt's B (our A)
  void* d = nullptr;
  bool accumulate = false; // beta = 1: C (D unless `c` is set) holds what to add
  // With accumulate, C apart from D: a matrix of D's shape (a residual), its
  // columns (cuBLASLt's) `ldcIn` apart.
  const void* c = nullptr;
  std::int64_t ldcIn = 0;
  // Applied to the sum before the store; the bias is a packed vector of D's
  // rows (cuBLASLt's rows: our columns) in D's dtype.
  LtEpilogue epilogue = LtEpilogue::None;
  const void* bias = nullptr;
};

// The cuBLASLt handle of one GPU (the current device when constructed).
class LtMatmul {
public:
  LtMatmul();
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Enqueues the product on `stream` (the caller checks completion); false
  // when cuBLASLt has no algorithm for it (remembered per problem). Error
  // naming the problem when cuBLASLt fails.
  bool run(const LtProblem& problem, void* workspace, std::size_t workspaceBytes,
           cudaStream_t stream);

  // Heuristic queries so far (cache misses), for tests and --verbose.
  int heuristicQueries() const;

private:
  void* handle_ = nullptr; // cublasLtHandle_t
  mutable std::mutex mutex_;
  // cublasLtMatmulAlgo_t per problem; nullopt: cuBLASLt has none.
  std::map<std::string, std::optional<std::array<unsigned long long, 8>>> algorithms_;
  int queries_ = 0;
};

// Throws BackendUnavailable unless libcublasLt can be loaded.
void requireCublasLt();

} // namespace tapestry::cuda
