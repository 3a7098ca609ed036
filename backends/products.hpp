// Matrix products as backends run them: a matmul or linear shard reduced to
// one strided, possibly batched gemm plus the offsets of the loops around it.
// The CPU backend runs the gemm on oneDNN or OpenBLAS, the CUDA backend on
// cuBLASLt; both read every stride from the operation's IPFs, so transposed
// operands (transpose_x / transpose_w) and broadcast batch dims are strides
// like any others, read in place.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace tapestry::backend {

// C[b] = A[b]·B[b] (+ bias on every row) for b < batch, each operand given by
// element strides from its first element: A [M, K] with strides (rsA, csA), B
// [K, N], C [M, N], and bsX the stride from one batch element to the next (0:
// the same matrix for every b). bias, when present, is [N] with stride
// biasStride.
struct GemmGeometry {
  std::int64_t batch = 1, M = 1, N = 1, K = 1;
  std::int64_t bsA = 0, rsA = 0, csA = 0;
  std::int64_t bsB = 0, rsB = 0, csB = 0;
  std::int64_t bsC = 0, rsC = 0, csC = 0;
  bool bias = false;
  std::int64_t biasStride = 0;

  // 2·batch·M·N·K.
  double flops() const;
  // "2 x [16, 64] @ [64, 192] strides A [64, 1] B [1, 64] C [192, 1] batch strides 1024/0/3072"
  std::string toString() const;
};

// A matmul or linear shard as one gemm run once per entry of `outer`: the
// element offsets, from each view's data pointer, of X (A), W (B) and the
// result (C) there; the bias (linear) at element offset bias0 of its view.
struct ProductPlan {
  GemmGeometry gemm;
  std::vector<std::array<std::int64_t, 3>> outer;
  std::int64_t bias0 = 0;
};

// linear and linear_act (linear with its epilogue): X·W + bias, k whole per
// point, planned by planProduct as one.
inline bool isLinearKernel(std::string_view kernel) {
  return kernel == "linear" || kernel == "linear_act";
}

// The plan of a matmul (index [b..., m, n, k]) or linear (index [b..., n], k
// whole per point) call. Batch dims of extent 1 go; dims every operand walks
// contiguously merge; trailing batch dims along which W does not move become
// more rows of one product (x [B, S, D] @ W [D, F] is one [B·S, D] product)
// while X's and the result's rows stay equally spaced and as readable in place
// (a unit stride) as before; the innermost remaining
// batch dim is the gemm's own batch, and the others are listed in `outer`.
ProductPlan planProduct(const KernelCall& call);

} // namespace tapestry::backend
