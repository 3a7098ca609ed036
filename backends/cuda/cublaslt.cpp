#include "backends/cuda/cublaslt.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include <cublasLt.h>

#include "backends/cuda/dynamic_library.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda {

namespace {

// The cuBLASLt entry points we call, resolved from the shared library.
struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusString) statusString = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) prefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) prefDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) prefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  std::string error; // why loading failed ("" when it worked)
};

#define TAPESTRY_STR2(x) #x
#define TAPESTRY_STR(x) TAPESTRY_STR2(x)

LtApi loadApi() {
  LtApi api;
#ifdef TAPESTRY_CUDA_LIBRARY_DIR
  const char* dir = TAPESTRY_CUDA_LIBRARY_DIR;
#else
  const char* dir = nullptr;
#endif
  DynamicLibrary lib({"libcublasLt.so." TAPESTRY_STR(CUBLAS_VER_MAJOR), "libcublasLt.so"}, dir);
  auto bind = [&](auto& fn, const char* symbol) { lib.bind(fn, symbol); };
  bind(api.create, "cublasLtCreate");
  bind(api.destroy, "cublasLtDestroy");
  bind(api.statusString, "cublasLtGetStatusString");
  bind(api.descCreate, "cublasLtMatmulDescCreate");
  bind(api.descDestroy, "cublasLtMatmulDescDestroy");
  bind(api.descSet, "cublasLtMatmulDescSetAttribute");
  bind(api.layoutCreate, "cublasLtMatrixLayoutCreate");
  bind(api.layoutDestroy, "cublasLtMatrixLayoutDestroy");
  bind(api.prefCreate, "cublasLtMatmulPreferenceCreate");
  bind(api.prefDestroy, "cublasLtMatmulPreferenceDestroy");
  bind(api.prefSet, "cublasLtMatmulPreferenceSetAttribute");
  bind(api.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  bind(api.matmul, "cublasLtMatmul");
  api.error = lib.error();
  return api;
}

const LtApi& api() {
  static const LtApi loaded = loadApi();
  if (!loaded.error.empty()) {
    throw BackendUnavailable("the CUDA backend needs cuBLASLt: " + loaded.error);
  }
  return loaded;
}

void check(cublasStatus_t status, const std::string& what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error("backend cuda: cuBLASLt " + what + " failed: " + api().statusString(status) +
                " (status " + std::to_string(static_cast<int>(status)) + ")");
  }
}

// Descriptors released however the call ends.
struct Descriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, cIn = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    const LtApi& lt = api();
    if (pref != nullptr) {
      lt.prefDestroy(pref);
    }
    for (cublasLtMatrixLayout_t layout : {a, b, c, cIn}) {
      if (layout != nullptr) {
        lt.layoutDestroy(layout);
      }
    }
    if (desc != nullptr) {
      lt.descDestroy(desc);
    }
  }
};

struct Types {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

Types typesOf(backend::DType dtype, bool tf32) {
  switch (dtype) {
  case backend::DType::Float32:
    return {CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F};
  case backend::DType::Float64:
    return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
  case backend::DType::Float16:
    return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
  case backend::DType::BFloat16:
    return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
  case backend::DType::Int32:
  case backend::DType::Int64:
  case backend::DType::Bool:
    break;
  }
  throw InternalError(std::string("cuBLASLt product of ") + backend::dtypeName(dtype));
}

std::uint32_t epilogueOf(LtEpilogue e) {
  switch (e) {
  case LtEpilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case LtEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case LtEpilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case LtEpilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  throw InternalError("cuBLASLt epilogue " + std::to_string(static_cast<int>(e)));
}

// ", bias epilogue": for the messages of a failed call.
std::string epilogueName(LtEpilogue e) {
  switch (e) {
  case LtEpilogue::None:
    return "";
  case LtEpilogue::Bias:
    return ", bias epilogue";
  case LtEpilogue::Gelu:
    return ", GELU epilogue";
  case LtEpilogue::GeluBias:
    return ", bias and GELU epilogue";
  }
  return "";
}

} // namespace

void requireCublasLt() {
  (void)api();
}

LtMatmul::LtMatmul() {
  cublasLtHandle_t handle = nullptr;
  check(api().create(&handle), "handle creation");
  handle_ = handle;
}

LtMatmul::~LtMatmul() {
  if (handle_ != nullptr) {
    api().destroy(static_cast<cublasLtHandle_t>(handle_));
  }
}

int LtMatmul::heuristicQueries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queries_;
}

bool LtMatmul::run(const LtProblem& p, void* workspace, std::size_t workspaceBytes,
                   cudaStream_t stream) {
  const LtApi& lt = api();
  const Types types = typesOf(p.dtype, p.tf32);
  const std::string what = "matmul (" + std::string(backend::dtypeName(p.dtype)) + ", " +
                           p.gemm.toString() + epilogueName(p.epilogue) + ")";
  Descriptors d;
  check(lt.descCreate(&d.desc, types.compute, types.scale), what + ": descriptor");
  const std::int32_t transA = p.gemm.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int32_t transB = p.gemm.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(lt.descSet(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA), what + ": TRANSA");
  check(lt.descSet(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof transB), what + ": TRANSB");
  if (p.epilogue != LtEpilogue::None) {
    const std::uint32_t epilogue = epilogueOf(p.epilogue);
    check(lt.descSet(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
          what + ": EPILOGUE");
  }
  if (epilogueAddsBias(p.epilogue)) {
    // Set before the heuristic: it reads the pointer's alignment.
    check(lt.descSet(d.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof p.bias),
          what + ": BIAS_POINTER");
  }
  check(lt.layoutCreate(&d.a, types.data, p.gemm.a.rows, p.gemm.a.cols, p.gemm.a.ld),
        what + ": layout of A");
  check(lt.layoutCreate(&d.b, types.data, p.gemm.b.rows, p.gemm.b.cols, p.gemm.b.ld),
        what + ": layout of B");
  check(lt.layoutCreate(&d.c, types.data, p.gemm.c.rows, p.gemm.c.cols, p.gemm.c.ld),
        what + ": layout of D");
  const bool apart = p.accumulate && p.c != nullptr;
  if (apart) {
    check(lt.layoutCreate(&d.cIn, types.data, p.gemm.c.rows, p.gemm.c.cols, p.ldcIn),
          what + ": layout of C");
  }
  const cublasLtMatrixLayout_t cLayout = apart ? d.cIn : d.c;
  const void* cData = apart ? p.c : p.d;

  // Sub-views need not be 256-byte aligned: tell the heuristic what they are.
  const std::uint32_t alignA = static_cast<std::uint32_t>(pointerAlignment(p.a));
  const std::uint32_t alignB = static_cast<std::uint32_t>(pointerAlignment(p.b));
  const std::uint32_t alignD = static_cast<std::uint32_t>(pointerAlignment(p.d));
  const std::uint32_t alignC = static_cast<std::uint32_t>(pointerAlignment(cData));
  const std::string key =
      std::to_string(static_cast<int>(p.dtype)) + (p.tf32 ? "t" : "f") +
      (p.accumulate ? "+" : "=") + "e" + std::to_string(static_cast<int>(p.epilogue)) + " " +
      p.gemm.toString() + " al " + std::to_string(alignA) + "," + std::to_string(alignB) + "," +
      std::to_string(alignD) + "," +
      std::to_string(epilogueAddsBias(p.epilogue) ? pointerAlignment(p.bias) : 0) +
      (apart ? " C ld " + std::to_string(p.ldcIn) + " al " + std::to_string(alignC) : "") + " ws " +
      std::to_string(workspaceBytes);
  cublasLtMatmulAlgo_t algo{};
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = algorithms_.find(key);
    if (it != algorithms_.end()) {
      if (!it->second) {
        return false;
      }
      static_assert(sizeof(algo) == sizeof(*it->second));
      std::memcpy(&algo, it->second->data(), sizeof algo);
      cached = true;
    }
  }
  if (!cached) {
    check(lt.prefCreate(&d.pref), what + ": preference");
    const std::uint64_t bytes = workspaceBytes;
    check(lt.prefSet(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes),
          what + ": workspace preference");
    check(lt.prefSet(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA, sizeof alignA),
          what + ": alignment of A");
    check(lt.prefSet(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB, sizeof alignB),
          what + ": alignment of B");
    check(lt.prefSet(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC, sizeof alignC),
          what + ": alignment of C");
    check(lt.prefSet(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD, sizeof alignD),
          what + ": alignment of D");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = lt.heuristic(static_cast<cublasLtHandle_t>(handle_), d.desc, d.a,
                                               d.b, cLayout, d.c, d.pref, 1, &result, &found);
    // With an epilogue or a C apart, any refusal means none: the caller runs
    // without them.
    const bool none =
        status == CUBLAS_STATUS_NOT_SUPPORTED ||
        (status != CUBLAS_STATUS_SUCCESS && (p.epilogue != LtEpilogue::None || apart)) ||
        (status == CUBLAS_STATUS_SUCCESS && (found == 0 || result.state != CUBLAS_STATUS_SUCCESS));
    if (!none) {
      check(status, what + ": heuristic");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++queries_;
    if (none) {
      algorithms_.emplace(key, std::nullopt);
      return false;
    }
    algo = result.algo;
    std::array<unsigned long long, 8> stored{};
    std::memcpy(stored.data(), &algo, sizeof algo);
    algorithms_.emplace(key, stored);
  }

  const float oneF = 1.0f;
  const float betaF = p.accumulate ? 1.0f : 0.0f;
  const double oneD = 1.0;
  const double betaD = p.accumulate ? 1.0 : 0.0;
  const bool doubles = types.scale == CUDA_R_64F;
  const void* alpha = doubles ? static_cast<const void*>(&oneD) : static_cast<const void*>(&oneF);
  const void* beta = doubles ? static_cast<const void*>(&betaD) : static_cast<const void*>(&betaF);
  check(lt.matmul(static_cast<cublasLtHandle_t>(handle_), d.desc, alpha, p.a, d.a, p.b, d.b, beta,
                  cData, cLayout, p.d, d.c, &algo, workspace, workspaceBytes, stream),
        what);
  return true;
}

} // namespace tapestry::cuda
