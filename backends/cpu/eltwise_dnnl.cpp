// float32 gelu and tanh on oneDNN's eltwise primitive (eltwise_dnnl.hpp): one
// primitive per prepared shard over its dense run, made for the team size the
// shard runs with and made again if that changes.
#include "backends/cpu/eltwise_dnnl.hpp"

#include <optional>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/onednn.hpp"
#include "backends/cpu/team.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

std::optional<dnnl::algorithm> dnnlAlgorithm(VUnary op) {
  switch (op) {
  case VUnary::Gelu:
    return dnnl::algorithm::eltwise_gelu_erf;
  case VUnary::Tanh:
    return dnnl::algorithm::eltwise_tanh;
  case VUnary::GeluTanh:
    return dnnl::algorithm::eltwise_gelu_tanh;
  default:
    return std::nullopt;
  }
}

class DnnlUnary final : public PreparedKernel {
public:
  DnnlUnary(dnnl::algorithm algorithm, const RunLoop<2>& loop)
      : algorithm_(algorithm), loop_(loop),
        desc_(dnnl::memory::dims{loop.length()}, dnnl::memory::data_type::f32,
              dnnl::memory::dims{1}) {}

  // The primitive for a team of `threads`; false where oneDNN refuses the
  // shard or has only its reference code for it.
  bool build(int threads) {
    onednn::useThreads(threads);
    const dnnl::engine& engine = onednn::cpuEngine();
    try {
      const dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm_, desc_,
                                             0.0f, 0.0f);
      const dnnl::eltwise_forward::primitive_desc pd(desc, onednn::userScratchpad(), engine);
      if (onednn::isReference(pd)) {
        return false;
      }
      stream_ = dnnl::stream(engine);
      src_ = dnnl::memory(desc_, engine, nullptr);
      dst_ = dnnl::memory(desc_, engine, nullptr);
      step_ = onednn::Step(dnnl::eltwise_forward(pd), pd);
      step_.arg(DNNL_ARG_SRC, src_);
      step_.arg(DNNL_ARG_DST, dst_);
    } catch (const dnnl::error&) {
      return false;
    }
    threads_ = threads;
    return true;
  }

  void run(const KernelCall& call) override {
    const int threads = teamThreads(loop_.length());
    if (threads != threads_ && !build(threads)) {
      throw InternalError("oneDNN refused an eltwise it made for " + std::to_string(threads_) +
                          " threads when asked for " + std::to_string(threads));
    }
    onednn::useThreads(threads);
    loop_.forEach({call.inputs[0][0].data, call.outputs[0][0].data}, [&](const auto& at) {
      src_.set_data_handle(at[0]);
      dst_.set_data_handle(at[1]);
    });
    step_.run(stream_);
  }

private:
  dnnl::algorithm algorithm_;
  RunLoop<2> loop_;
  dnnl::memory::desc desc_;
  int threads_ = 0;
  dnnl::stream stream_;
  dnnl::memory src_, dst_;
  onednn::Step step_;
};

} // namespace

std::unique_ptr<PreparedKernel> prepareDnnlUnary(const KernelCall& call, VUnary op,
                                                 const RunLoop<2>& loop) {
  const std::optional<dnnl::algorithm> algorithm = dnnlAlgorithm(op);
  if (!algorithm || call.outputs[0][0].dtype != DType::Float32 || loop.runCount() != 1 ||
      !loop.unitStride() || loop.length() < kDnnlEltwiseFrom) {
    return nullptr;
  }
  auto kernel = std::make_unique<DnnlUnary>(*algorithm, loop);
  if (!kernel->build(teamThreads(loop.length()))) {
    return nullptr;
  }
  return kernel;
}

} // namespace tapestry::backend::cpu
