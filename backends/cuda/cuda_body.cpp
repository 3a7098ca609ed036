#include "backends/cuda/cuda_body.hpp"

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/body_kernel.hpp"
#include "backends/cuda/body_kernels.hpp"
#include "backends/cuda/body_plan.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda {

namespace {

using body::PlannedBlock;
using body::Step;
using body::StepKind;

// A block in device memory, freed stream-ordered when the last handle goes.
class DeviceBlock final : public PlannedBlock {
public:
  DeviceBlock(ElementType type, std::int64_t count, const KernelContext& c)
      : PlannedBlock(type, count),
        memory_(static_cast<std::size_t>(count) * static_cast<std::size_t>(body::elementSize(type)),
                c.gpu, c.stream) {}
  std::byte* data() const { return memory_.get(); }

private:
  Scratch memory_;
};

const char* stepName(StepKind kind) {
  switch (kind) {
  case StepKind::Fill:
    return "fill";
  case StepKind::Unary:
    return "unary";
  case StepKind::Binary:
    return "binary";
  case StepKind::Combine:
    return "max/min";
  case StepKind::Copy:
    return "copy";
  case StepKind::Cast:
    return "cast";
  case StepKind::Reduce:
    return "reduction";
  case StepKind::Where:
    return "where";
  case StepKind::Gemm:
    break;
  }
  return "matrix product";
}

class DeviceRunner final : public body::StepRunner {
public:
  DeviceRunner(const KernelContext& c, std::string what) : c_(c), what_(std::move(what)) {}

  std::shared_ptr<PlannedBlock> allocate(ElementType type, std::int64_t count) override {
    return std::make_shared<DeviceBlock>(type, count, c_);
  }

  void run(const Step& s, std::span<const PlannedBlock* const> blocks) override {
    if (s.kind != StepKind::Gemm && s.walk.count == 0) {
      return;
    }
    std::vector<std::byte*> at;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto* block = static_cast<const DeviceBlock*>(blocks[i]);
      at.push_back(block->data() +
                   s.offsets[i] * static_cast<std::int64_t>(body::elementSize(block->type())));
    }
    const std::string what = what_ + ": body " + stepName(s.kind);
    switch (s.kind) {
    case StepKind::Fill:
      checkCuda(launchBodyFill(s.type, at[0], s.walk, s.value, c_.stream), what);
      return;
    case StepKind::Unary:
      checkCuda(launchUnary(static_cast<UnaryOp>(s.op), s.type, at[0], at[1], s.walk, c_.stream),
                what);
      return;
    case StepKind::Binary:
      checkCuda(
          launchBinary(static_cast<BinaryOp>(s.op), s.type, at[0], at[1], at[2], s.walk, c_.stream),
          what);
      return;
    case StepKind::Combine:
      checkCuda(
          launchCombine(static_cast<CombineOp>(s.op), s.type, at[0], at[1], s.walk, c_.stream),
          what);
      return;
    case StepKind::Copy:
      checkCuda(launchCopy(body::elementSize(s.type), at[0], at[1], s.walk, c_.stream), what);
      return;
    case StepKind::Cast:
      checkCuda(launchCast(s.type, s.to, at[0], at[1], s.walk, c_.stream), what);
      return;
    case StepKind::Reduce:
      checkCuda(launchBodyReduce(s.op, s.type, at[0], at[1], s.walk, s.inner, c_.stream), what);
      return;
    case StepKind::Where:
      checkCuda(
          launchWhere(body::elementSize(s.type), at[0], at[1], at[2], at[3], s.walk, c_.stream),
          what);
      return;
    case StepKind::Gemm:
      gemm(s, at, what);
      return;
    }
  }

private:
  void gemm(const Step& s, const std::vector<std::byte*>& at, const std::string& what) {
    LtProblem problem;
    problem.dtype =
        s.type == ElementType::Float64 ? backend::DType::Float64 : backend::DType::Float32;
    problem.tf32 = c_.tf32;
    problem.gemm = s.gemm;
    problem.a = at[1]; // cuBLASLt's A is our B (planGemm)
    problem.b = at[0];
    problem.d = at[2];
    if (!c_.lt->run(problem, c_.workspace, c_.workspaceBytes, c_.stream)) {
      // No cuBLASLt algorithm: the simple kernel on the same dense operands.
      checkCuda(launchSimpleMatmul(s.type, s.m, s.n, s.k, at[0], s.k, 1, at[1], s.n, 1, at[2], s.n,
                                   1, false, c_.stream),
                what + " without a cuBLASLt algorithm");
    }
  }

  const KernelContext& c_;
  std::string what_;
};

// The shard's selections read into device blocks and written back from them,
// with a cast between the tensor's dtype and the compute type either way.
class DeviceMemory final : public backend::cpu::BodyMemory {
public:
  DeviceMemory(const KernelContext& c, std::string what)
      : c_(c), what_(what), runner_(c, std::move(what)), ops_(runner_) {}

  expr::BlockOps& ops() override { return ops_; }

  expr::BlockHandle read(const backend::TensorView& view, const ZRange& region) override {
    const std::string dtype = backend::dtypeName(view.dtype);
    auto block = std::make_shared<DeviceBlock>(body::computeType(dtype), region.size(), c_);
    const body::Transfer t = body::planTransfer(view, region);
    const std::int64_t size = static_cast<std::int64_t>(backend::dtypeSize(view.dtype));
    checkCuda(launchCast(elementType(view.dtype), block->type(), view.data + t.base * size,
                         block->data(), t.read, c_.stream),
              what_ + ": reading " + region.toString() + " of " + view.toString());
    return block;
  }

  void write(const expr::BodyValue& value, const backend::TensorView& view,
             const ZRange& region) override {
    const auto* block = dynamic_cast<const DeviceBlock*>(value.data.get());
    if (block == nullptr) {
      throw InternalError("backend cuda: a body output is not a device block");
    }
    const body::Transfer t = body::planTransfer(view, region);
    const std::int64_t size = static_cast<std::int64_t>(backend::dtypeSize(view.dtype));
    checkCuda(launchCast(block->type(), elementType(view.dtype), block->data(),
                         view.data + t.base * size, t.write, c_.stream),
              what_ + ": writing " + region.toString() + " of " + view.toString());
  }

private:
  const KernelContext& c_;
  std::string what_;
  DeviceRunner runner_;
  body::PlannedBlockOps ops_;
};

} // namespace

void runBodyOnDevice(const backend::KernelCall& call, const KernelContext& c) {
  DeviceMemory memory(c, "kernel " + call.op.kernel + " (operation " + call.op.name + ")");
  backend::cpu::runBodyKernelWith(call, memory);
}

} // namespace tapestry::cuda
