// Kernel bodies on the CUDA backend, planned on the host (no GPU needed, so
// unit tested everywhere). Each block operation of the body evaluator
// (core/expr/body.hpp, BlockOps) becomes a Plan: the temporaries it needs and
// a list of Steps, each one kernel launch or cuBLASLt call with every index
// computed here (broadcast strides as DeviceWalks, reduction geometry, the
// batched product as cuBLASLt calls with their leading dims and corners,
// permutation strides). PlannedBlockOps runs plans through a StepRunner: the
// CUDA one (cuda_body.cpp) launches the kernels, the tests' one emulates them
// on the host.
//
// Compute types: a block of float32, float16 or bfloat16 data lives on the
// device as float32; one of float64, int32, int64 or bool data as float64
// (integers exact up to 2^53, as the host evaluator). Every operation
// computes in its block's type, so a float32 body rounds after each
// operation where the host reference rounds only on a cast and on output;
// reductions accumulate in float64 either way.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backends/cuda/cuda_plan.hpp"
#include "backends/cuda/kernels.hpp"
#include "core/expr/body.hpp"

namespace tapestry::cuda::body {

using Shape = std::vector<std::int64_t>;

// The type a block of `dtype` computes in on the device (Float32 or Float64).
ElementType computeType(std::string_view dtype);
// How `dtype` is stored in a tensor.
ElementType storageType(std::string_view dtype);
int elementSize(ElementType type);

// A buffer a step reads or writes: operand `index` of the operation (the
// order its BlockOps call takes them), the result, or temporary `index`.
struct Slot {
  enum class Kind : std::uint8_t { Operand, Result, Temp };
  Kind kind = Kind::Result;
  int index = 0;
  friend bool operator==(const Slot&, const Slot&) = default;
};

// Reductions of a body (the order of expr::ReduceFn).
enum class BodyReduceOp : int { Sum, Mean, Max, Min, Prod, ArgMax, ArgMin, ArgMaxLast, ArgMinLast };

enum class StepKind : std::uint8_t {
  Fill,    // slots {y}: y[0 .. count) = value
  Unary,   // launchUnary(UnaryOp op), slots {x, y}
  Binary,  // launchBinary(BinaryOp op), slots {a, b, y}
  Combine, // launchCombine(CombineOp op), slots {dst, src}
  Copy,    // launchCopy, slots {x, y}
  Cast,    // launchCast(type -> to), slots {x, y}
  Reduce,  // launchBodyReduce(BodyReduceOp op), slots {x, y}; inner walks x
  Where,   // launchWhere, slots {condition (bool bytes), a, b, y}
  Gemm,    // row-major C[m, n] = A[m, k]·B[k, n] of dense blocks, slots {A, B, C}
};

struct Step {
  StepKind kind = StepKind::Copy;
  ElementType type = ElementType::Float32; // the elements' type (Cast: the source's)
  ElementType to = ElementType::Float32;   // Cast: the destination's type
  int op = 0;                              // UnaryOp, BinaryOp, CombineOp or BodyReduceOp
  std::vector<Slot> slots;                 // in the kernel's operand order
  std::vector<std::int64_t> offsets;       // elements from each slot's start
  DeviceWalk walk;                         // the launch's walk (Fill: count only)
  DeviceWalk inner;                        // Reduce: the combined dims, operand 0: x
  double value = 0;                        // Fill
  std::int64_t m = 0, n = 0, k = 0;        // Gemm
  LtGemm gemm;                             // Gemm: the column-major call
};

struct Plan {
  ElementType resultType = ElementType::Float32;
  std::int64_t resultCount = 0;
  std::vector<std::pair<ElementType, std::int64_t>> temps; // type, elements
  std::vector<Step> steps;
};

// The plans of BlockOps' operations, for the same arguments (operands are
// Block or Number values; a number becomes a one-element temporary).
Plan planElementwise(expr::ElementOp op, const expr::BodyValue& a, const expr::BodyValue& b,
                     std::span<const std::int64_t> out);
Plan planUnary(expr::UnaryFn fn, const expr::BodyValue& x);
Plan planReduce(expr::ReduceFn fn, const expr::BodyValue& x, const std::vector<bool>& reduced);
Plan planMatmul(const expr::BodyValue& a, const expr::BodyValue& b, const expr::MatmulShape& s);
Plan planTranspose(const expr::BodyValue& x, std::span<const std::int64_t> perm);
Plan planCast(const expr::BodyValue& x, std::string_view dtype);
Plan planConcat(std::span<const expr::BodyValue> blocks, std::size_t axis,
                std::span<const std::int64_t> out);
Plan planSlice(const expr::BodyValue& x, std::size_t axis, std::int64_t start, std::int64_t stop);
Plan planWhere(const expr::BodyValue& condition, const expr::BodyValue& a, const expr::BodyValue& b,
               std::span<const std::int64_t> out);

// Moving a tensor's selection between a view and a dense row-major block, as
// cast launches (the view's dtype to the compute type, or back): `read` walks
// `region` with operand 0 the view (from `base`, the view's element offset of
// the region's start) and operand 1 the block; `write` the other way round.
struct Transfer {
  std::int64_t base = 0;
  DeviceWalk read;
  DeviceWalk write;
};
Transfer planTransfer(const backend::TensorView& view, const ZRange& region);

// ---------------------------------------------------------------- running plans

// A block in a runner's memory: dense, row-major, `count` elements of `type`.
class PlannedBlock : public expr::BlockStorage {
public:
  PlannedBlock(ElementType type, std::int64_t count) : type_(type), count_(count) {}
  ElementType type() const { return type_; }
  std::int64_t elementCount() const override { return count_; }

private:
  ElementType type_;
  std::int64_t count_;
};

class StepRunner {
public:
  virtual ~StepRunner() = default;
  virtual std::shared_ptr<PlannedBlock> allocate(ElementType type, std::int64_t count) = 0;
  // Runs (or enqueues) one step; blocks[i] is the buffer of step.slots[i].
  // Blocks are written through even when const (a result or temporary).
  virtual void run(const Step& step, std::span<const PlannedBlock* const> blocks) = 0;
};

// BlockOps that plan each operation and run the plan.
class PlannedBlockOps final : public expr::BlockOps {
public:
  explicit PlannedBlockOps(StepRunner& runner) : runner_(runner) {}

  expr::BlockHandle elementwise(expr::ElementOp op, const expr::BodyValue& a,
                                const expr::BodyValue& b,
                                std::span<const std::int64_t> out) override;
  expr::BlockHandle unary(expr::UnaryFn fn, const expr::BodyValue& x) override;
  expr::BlockHandle reduce(expr::ReduceFn fn, const expr::BodyValue& x,
                           const std::vector<bool>& reduced) override;
  expr::BlockHandle matmul(const expr::BodyValue& a, const expr::BodyValue& b,
                           const expr::MatmulShape& shape) override;
  expr::BlockHandle transpose(const expr::BodyValue& x,
                              std::span<const std::int64_t> perm) override;
  expr::BlockHandle cast(const expr::BodyValue& x, std::string_view dtype) override;
  expr::BlockHandle concat(std::span<const expr::BodyValue> blocks, std::size_t axis,
                           std::span<const std::int64_t> out) override;
  expr::BlockHandle slice(const expr::BodyValue& x, std::size_t axis, std::int64_t start,
                          std::int64_t stop) override;
  expr::BlockHandle where(const expr::BodyValue& condition, const expr::BodyValue& a,
                          const expr::BodyValue& b, std::span<const std::int64_t> out) override;

private:
  expr::BlockHandle execute(const Plan& plan, std::vector<const expr::BodyValue*> operands);
  StepRunner& runner_;
};

} // namespace tapestry::cuda::body
