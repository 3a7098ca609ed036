// Matrix products on oneDNN's matmul primitive (float32, bfloat16): the
// primitive, its memory objects and a user scratchpad are made once per
// prepared gemm, so a run only sets data pointers and executes. A constant B
// may be reordered once into the blocked layout oneDNN picks for the shape
// (WeightUse::Packed), which OpenBLAS cannot keep between calls; any other B
// read by many rows is reordered on every call (WeightUse::Repacked). Where
// a constant B's layout is a plain one whose rows are 2 KiB apart or a
// multiple, the packed rows get a cache line between them (padAliasedRows).
#include <array>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv_epilogue.hpp"
#include "backends/cpu/gemm_engine.hpp"
#include "backends/cpu/onednn.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

using Dims = dnnl::memory::dims;
using MemoryDesc = dnnl::memory::desc;

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success) {
    throw InternalError(std::string("oneDNN: ") + what + " failed (status " +
                        std::to_string(static_cast<int>(status)) + ")");
  }
}

// A [rows, cols] operand (with a leading batch dim when `batched`) as oneDNN
// sees it. A dim of extent 1 gets the stride a dense layout would give it, so
// that a row or a column is a plain layout; a batch stride of 0 (the same
// matrix for every batch element) is a batch dim of 1, which oneDNN broadcasts.
MemoryDesc matrixDesc(dnnl::memory::data_type type, bool batched, std::int64_t batch,
                      std::int64_t bs, std::int64_t rows, std::int64_t cols, std::int64_t rs,
                      std::int64_t cs) {
  if (rows == 1 && cols == 1) {
    rs = cs = 1;
  } else if (rows == 1) {
    rs = cs == 1 ? cols : 1;
  } else if (cols == 1) {
    cs = rs == 1 ? rows : 1;
  }
  if (!batched) {
    return MemoryDesc(Dims{rows, cols}, type, Dims{rs, cs});
  }
  const bool broadcast = bs == 0;
  return MemoryDesc(Dims{broadcast ? 1 : batch, rows, cols}, type,
                    Dims{broadcast ? std::max(rs * rows, cs * cols) : bs, rs, cs});
}

// The activation as eltwise post-ops: the exact GELU (or its tanh
// approximation, or SiLU), then the clip as
// conv2d_act's (appendClip: relu for [0, inf), else clip).
dnnl::post_ops activationPostOps(const GemmActivation& a) {
  dnnl::post_ops ops;
  if (a.gelu) {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  }
  if (a.geluTanh) {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  }
  if (a.silu) { // swish with alpha 1: x * sigmoid(x)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  }
  if (a.clips()) {
    appendClip(ops, a.lo, a.hi);
  }
  return ops;
}

// A plain layout: strides alone, no inner blocks.
bool isPlain(const MemoryDesc& d) {
  return d.data.format_kind == dnnl_blocked && d.data.format_desc.blocking.inner_nblks == 0;
}

// Whether oneDNN answered with its reference kernel (loops, slower than any BLAS).
bool isReference(const dnnl::matmul::primitive_desc& pd) {
  return std::string_view(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// Rows of a packed B this many bytes apart (or a multiple) all fall in the
// same sets of a 4 KiB-periodic L1 cache, and a kernel streaming its panels
// stalls on them.
constexpr std::int64_t kAliasedRowBytes = 2048;
// The padding that moves such rows apart: one cache line.
constexpr std::int64_t kRowPadBytes = 64;

// The layout oneDNN chose for a packed B when it is a plain one (no inner
// blocks: the stored matrix transposed or not, as on CPUs without AVX-512)
// whose rows are kAliasedRowBytes apart: the same layout with a cache line
// between rows. Otherwise `chosen` itself. (On an AMD EPYC with AVX2 only, a
// [128, 1024] x [1024, 1024] product with B packed row-major, rows 4 KiB apart, took
// 6.2 ms against 3.8 with B read as stored; docs/cpu-products.md.)
MemoryDesc padAliasedRows(const MemoryDesc& chosen, std::int64_t elementBytes) {
  const dnnl_memory_desc_t& md = chosen.data;
  if (!isPlain(chosen) || md.ndims < 2 || md.ndims > 3) {
    return chosen;
  }
  const int nd = md.ndims;
  const dnnl_dim_t rows = md.dims[nd - 2];
  const dnnl_dim_t cols = md.dims[nd - 1];
  const dnnl_dim_t rs = md.format_desc.blocking.strides[nd - 2];
  const dnnl_dim_t cs = md.format_desc.blocking.strides[nd - 1];
  const bool rowMajor = cs == 1;
  if (!rowMajor && rs != 1) {
    return chosen;
  }
  const dnnl_dim_t ld = rowMajor ? rs : cs;
  if (rows < 2 || cols < 2 || (ld * elementBytes) % kAliasedRowBytes != 0) {
    return chosen;
  }
  const dnnl_dim_t padded = ld + kRowPadBytes / elementBytes;
  Dims strides = rowMajor ? Dims{padded, 1} : Dims{1, padded};
  Dims dims = {rows, cols};
  if (nd == 3) {
    dims.insert(dims.begin(), md.dims[0]);
    strides.insert(strides.begin(), padded * (rowMajor ? rows : cols));
  }
  return MemoryDesc(dims, static_cast<dnnl::memory::data_type>(md.data_type), strides);
}

class DnnlGemm final : public GemmEngine {
public:
  DnnlGemm(DType dtype, const GemmGeometry& g, WeightUse weights, int threads,
           const GemmActivation& activation)
      : dtype_(dtype), g_(g), weights_(weights), threads_(threads), activation_(activation),
        stream_(cpuEngine()) {}

  // Makes the primitive; false when oneDNN has no fast kernel for the problem.
  bool build() {
    const auto type =
        dtype_ == DType::BFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    const bool batched = g_.batch > 1;
    const MemoryDesc a = matrixDesc(type, batched, g_.batch, g_.bsA, g_.M, g_.K, g_.rsA, g_.csA);
    const MemoryDesc b = matrixDesc(type, batched, g_.batch, g_.bsB, g_.K, g_.N, g_.rsB, g_.csB);
    const MemoryDesc c = matrixDesc(type, batched, g_.batch, g_.bsC, g_.M, g_.N, g_.rsC, g_.csC);
    const std::int64_t biasStride = g_.N == 1 ? 1 : g_.biasStride;
    const MemoryDesc bias = batched
                                ? MemoryDesc(Dims{1, 1, g_.N}, type, Dims{g_.N, g_.N, biasStride})
                                : MemoryDesc(Dims{1, g_.N}, type, Dims{g_.N, biasStride});
    const MemoryDesc any(b.dims(), type, dnnl::memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (activation_.any()) {
      attr.set_post_ops(activationPostOps(activation_));
    }
    onednn::useThreads(threads_); // oneDNN partitions the work for the creating thread's team size
    auto describe = [&](const MemoryDesc& weights) {
      const dnnl::matmul::desc desc =
          g_.bias ? dnnl::matmul::desc(a, weights, bias, c) : dnnl::matmul::desc(a, weights, c);
      return dnnl::matmul::primitive_desc(desc, attr, cpuEngine());
    };
    // A B read in place whose rows alias, by kPadInPlaceRows rows or more,
    // where oneDNN has no blocked layout for it (the one it prefers is
    // plain, as on CPUs without AVX-512): copied on every run into its own
    // layout with the rows padded apart.
    const std::int64_t elementBytes = dtype_ == DType::BFloat16 ? 2 : 4;
    MemoryDesc weights = weights_ != WeightUse::InPlace ? any : b;
    const MemoryDesc paddedB = padAliasedRows(b, elementBytes);
    if (weights_ == WeightUse::InPlace && paddedB != b &&
        (g_.bsB == 0 ? g_.batch : 1) * g_.M >= kPadInPlaceRows) {
      try {
        if (isPlain(describe(any).weights_desc())) {
          weights = paddedB;
          weights_ = WeightUse::Repacked;
          padded_ = true;
        }
      } catch (const dnnl::error&) {
        // read B in place
      }
    }
    dnnl::matmul::primitive_desc pd;
    try {
      pd = describe(weights);
      if (padded_ && isReference(pd)) {
        throw dnnl::error(dnnl_unimplemented, "only the reference kernel for the padded copy");
      }
    } catch (const dnnl::error&) {
      if (!padded_) {
        return false;
      }
      weights_ = WeightUse::InPlace; // no fast kernel for the padded copy: read B in place
      padded_ = false;
      try {
        pd = describe(b);
      } catch (const dnnl::error&) {
        return false;
      }
    }
    // Only a B packed once: one reordered on every call would pay the copy
    // each time (cpu-products.md: about what the aliasing costs).
    if (weights_ == WeightUse::Packed) {
      const MemoryDesc padded = padAliasedRows(pd.weights_desc(), elementBytes);
      if (padded != pd.weights_desc()) {
        try {
          dnnl::matmul::primitive_desc other = describe(padded);
          if (!isReference(other)) {
            pd = other;
            padded_ = true;
          }
        } catch (const dnnl::error&) {
          // keep oneDNN's own layout
        }
      }
    }
    impl_ = pd.impl_info_str();
    if (isReference(pd)) {
      return false; // the reference kernel: loops, slower than any BLAS
    }
    primitive_ = dnnl::matmul(pd);
    a_ = dnnl::memory(a, cpuEngine(), DNNL_MEMORY_NONE);
    b_ = dnnl::memory(b, cpuEngine(), DNNL_MEMORY_NONE);
    c_ = dnnl::memory(c, cpuEngine(), DNNL_MEMORY_NONE);
    scratch_ = dnnl::memory(pd.scratchpad_desc(), cpuEngine());
    packed_ = {};
    packedFrom_ = nullptr;
    if (weights_ != WeightUse::InPlace && pd.weights_desc() != b) {
      packed_ = dnnl::memory(pd.weights_desc(), cpuEngine());
      pack_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpuEngine(), b, cpuEngine(), pd.weights_desc()));
    }
    nargs_ = 0;
    args_[nargs_++] = {DNNL_ARG_SRC, a_.get()};
    args_[nargs_++] = {DNNL_ARG_WEIGHTS, packed_ ? packed_.get() : b_.get()};
    args_[nargs_++] = {DNNL_ARG_DST, c_.get()};
    args_[nargs_++] = {DNNL_ARG_SCRATCHPAD, scratch_.get()};
    if (g_.bias) {
      bias_ = dnnl::memory(bias, cpuEngine(), DNNL_MEMORY_NONE);
      args_[nargs_++] = {DNNL_ARG_BIAS, bias_.get()};
    }
    return true;
  }

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    onednn::useThreads(threads_);
    check(dnnl_memory_set_data_handle(a_.get(), const_cast<std::byte*>(a)), "setting A");
    check(dnnl_memory_set_data_handle(c_.get(), c), "setting C");
    if (g_.bias) {
      check(dnnl_memory_set_data_handle(bias_.get(), const_cast<std::byte*>(bias)), "setting bias");
    }
    if (!packed_) {
      check(dnnl_memory_set_data_handle(b_.get(), const_cast<std::byte*>(b)), "setting B");
    } else if (b != packedFrom_ || weights_ == WeightUse::Repacked) {
      check(dnnl_memory_set_data_handle(b_.get(), const_cast<std::byte*>(b)), "setting B");
      const std::array<dnnl_exec_arg_t, 2> args = {
          {{DNNL_ARG_SRC, b_.get()}, {DNNL_ARG_DST, packed_.get()}}};
      check(dnnl_primitive_execute(pack_.get(), stream_.get(), 2, args.data()), "packing B");
      packedFrom_ = b;
    }
    check(dnnl_primitive_execute(primitive_.get(), stream_.get(), nargs_, args_.data()),
          "executing matmul");
    check(dnnl_stream_wait(stream_.get()), "waiting for matmul");
  }

  void weightsChanged() override { packedFrom_ = nullptr; }

  bool appliesActivation() const override { return activation_.any(); }

  std::string name() const override {
    const char* layout = !packed_ ? ""
                         : weights_ == WeightUse::Repacked
                             ? (padded_ ? "repacked padded " : "repacked ")
                             : (padded_ ? "packed padded " : "packed ");
    std::string post;
    if (activation_.gelu) {
      post += " gelu_erf";
    }
    if (activation_.geluTanh) {
      post += " gelu_tanh";
    }
    if (activation_.silu) {
      post += " silu";
    }
    if (activation_.clips()) {
      post += activation_.relu() ? " relu" : " clip";
    }
    return std::string("onednn ") + layout + impl_ + (post.empty() ? "" : " +" + post);
  }

private:
  DType dtype_;
  GemmGeometry g_;
  WeightUse weights_;
  int threads_;
  GemmActivation activation_;
  dnnl::stream stream_;
  std::string impl_;
  dnnl::matmul primitive_;
  dnnl::memory a_, b_, c_, bias_, scratch_, packed_;
  dnnl::reorder pack_;
  const std::byte* packedFrom_ = nullptr; // the B that packed_ holds
  bool padded_ = false;                   // packed_'s rows padded apart (padAliasedRows)
  std::array<dnnl_exec_arg_t, 5> args_{};
  int nargs_ = 0;
};

} // namespace

std::unique_ptr<GemmEngine> makeDnnlGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                         int threads, const GemmActivation& activation) {
  if ((dtype != DType::Float32 && dtype != DType::BFloat16) || g.K <= 0) {
    return nullptr;
  }
  if (weights == WeightUse::InPlace && (g.bsB == 0 ? g.batch : 1) * g.M >= kRepackRows) {
    weights = WeightUse::Repacked;
  }
  auto engine = std::make_unique<DnnlGemm>(dtype, g, weights, threads, activation);
  if (!engine->build()) {
    return nullptr;
  }
  return engine;
}

} // namespace tapestry::backend::cpu
