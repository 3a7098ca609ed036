// Host-side plans of the body block operations on the CUDA backend (see
// body_plan.hpp): pure index arithmetic, no CUDA calls.
#include "backends/cuda/body_plan.hpp"

#include <string>

#include "backends/dtype.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda::body {

using expr::BodyValue;
using Kind = BodyValue::Kind;

ElementType computeType(std::string_view dtype) {
  return dtype == "float32" || dtype == "float16" || dtype == "bfloat16" ? ElementType::Float32
                                                                         : ElementType::Float64;
}

ElementType storageType(std::string_view dtype) {
  return elementType(backend::parseDType(dtype));
}

int elementSize(ElementType type) {
  switch (type) {
  case ElementType::Float64:
  case ElementType::Int64:
    return 8;
  case ElementType::Float32:
  case ElementType::Int32:
    return 4;
  case ElementType::Float16:
  case ElementType::BFloat16:
    return 2;
  case ElementType::Bool:
    break;
  }
  return 1;
}

namespace {

std::int64_t countOf(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    n *= e;
  }
  return n;
}

Shape rowMajor(std::span<const std::int64_t> s) {
  Shape strides(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * s[d];
  }
  return strides;
}

// Strides reading `s` broadcast to `out` (0 along broadcast dims and dims s lacks).
Shape broadcastStrides(std::span<const std::int64_t> s, std::span<const std::int64_t> out) {
  const Shape own = rowMajor(s);
  Shape strides(out.size(), 0);
  const std::size_t offset = out.size() - s.size();
  for (std::size_t d = 0; d < s.size(); ++d) {
    strides[offset + d] = s[d] == 1 ? 0 : own[d];
  }
  return strides;
}

Shape shapeOf(const BodyValue& v) {
  return v.kind == Kind::Block ? v.type.shape : Shape{};
}

DeviceWalk walk(std::span<const std::int64_t> extent, std::vector<Shape> strides) {
  return makeWalk(extent, strides);
}

DeviceWalk dense(std::int64_t count, std::size_t operands) {
  const Shape extent{count};
  return walk(extent, std::vector<Shape>(operands, Shape{1}));
}

Slot operand(int i) {
  return {Slot::Kind::Operand, i};
}
Slot result() {
  return {Slot::Kind::Result, 0};
}

// Operand `i` as a slot: a block is read in place, a number is filled into a
// one-element temporary of `type` first.
Slot source(Plan& plan, const BodyValue& v, int i, ElementType type) {
  if (v.kind == Kind::Block) {
    return operand(i);
  }
  const int temp = static_cast<int>(plan.temps.size());
  plan.temps.emplace_back(type, 1);
  Step fill;
  fill.kind = StepKind::Fill;
  fill.type = type;
  fill.slots = {{Slot::Kind::Temp, temp}};
  fill.offsets = {0};
  fill.walk = dense(1, 1);
  fill.value = v.kind == Kind::Bool ? (v.boolean ? 1.0 : 0.0) : v.number;
  plan.steps.push_back(fill);
  return {Slot::Kind::Temp, temp};
}

Step copyStep(ElementType type, Slot from, Slot to, std::int64_t fromOffset, std::int64_t toOffset,
              DeviceWalk w) {
  Step s;
  s.kind = StepKind::Copy;
  s.type = type;
  s.slots = {from, to};
  s.offsets = {fromOffset, toOffset};
  s.walk = w;
  return s;
}

Step castStep(ElementType from, ElementType to, Slot x, Slot y, std::int64_t count) {
  Step s;
  s.kind = StepKind::Cast;
  s.type = from;
  s.to = to;
  s.slots = {x, y};
  s.offsets = {0, 0};
  s.walk = dense(count, 2);
  return s;
}

Plan resultOf(ElementType type, std::int64_t count) {
  Plan p;
  p.resultType = type;
  p.resultCount = count;
  return p;
}

UnaryOp unaryOp(expr::UnaryFn fn) {
  switch (fn) {
  case expr::UnaryFn::Exp:
    return UnaryOp::Exp;
  case expr::UnaryFn::Log:
    return UnaryOp::Log;
  case expr::UnaryFn::Sqrt:
  case expr::UnaryFn::Rsqrt: // then Reciprocal
    return UnaryOp::Sqrt;
  case expr::UnaryFn::Tanh:
    return UnaryOp::Tanh;
  case expr::UnaryFn::Erf:
    return UnaryOp::Erf;
  case expr::UnaryFn::Abs:
    return UnaryOp::Abs;
  case expr::UnaryFn::Neg:
    return UnaryOp::Neg;
  case expr::UnaryFn::Sigmoid:
    return UnaryOp::Sigmoid;
  case expr::UnaryFn::Relu:
    return UnaryOp::Relu;
  case expr::UnaryFn::Floor:
    return UnaryOp::Floor;
  case expr::UnaryFn::Ceil:
    return UnaryOp::Ceil;
  case expr::UnaryFn::Round:
    return UnaryOp::Round;
  case expr::UnaryFn::Sign:
    return UnaryOp::Sign;
  case expr::UnaryFn::Sin:
    return UnaryOp::Sin;
  case expr::UnaryFn::Cos:
    return UnaryOp::Cos;
  case expr::UnaryFn::Tan:
    return UnaryOp::Tan;
  case expr::UnaryFn::Asin:
    return UnaryOp::Asin;
  case expr::UnaryFn::Acos:
    return UnaryOp::Acos;
  case expr::UnaryFn::Atan:
    return UnaryOp::Atan;
  case expr::UnaryFn::Sinh:
    return UnaryOp::Sinh;
  case expr::UnaryFn::Cosh:
    return UnaryOp::Cosh;
  case expr::UnaryFn::Asinh:
    return UnaryOp::Asinh;
  case expr::UnaryFn::Acosh:
    return UnaryOp::Acosh;
  case expr::UnaryFn::Atanh:
    return UnaryOp::Atanh;
  case expr::UnaryFn::IsNan:
    return UnaryOp::IsNan;
  case expr::UnaryFn::IsInf:
    return UnaryOp::IsInf;
  case expr::UnaryFn::Not:
    return UnaryOp::Not;
  case expr::UnaryFn::Gelu:
    break;
  }
  return UnaryOp::Gelu;
}

BinaryOp binaryOp(expr::ElementOp op) {
  switch (op) {
  case expr::ElementOp::Add:
    return BinaryOp::Add;
  case expr::ElementOp::Sub:
    return BinaryOp::Sub;
  case expr::ElementOp::Mul:
    return BinaryOp::Mul;
  case expr::ElementOp::Div:
    return BinaryOp::Div;
  case expr::ElementOp::Mod:
    return BinaryOp::Mod;
  case expr::ElementOp::Fmod:
    return BinaryOp::Fmod;
  case expr::ElementOp::Equal:
    return BinaryOp::Equal;
  case expr::ElementOp::Less:
    return BinaryOp::Less;
  case expr::ElementOp::LessEqual:
    return BinaryOp::LessEqual;
  case expr::ElementOp::Greater:
    return BinaryOp::Greater;
  case expr::ElementOp::GreaterEqual:
    return BinaryOp::GreaterEqual;
  case expr::ElementOp::And:
    return BinaryOp::And;
  case expr::ElementOp::Or:
    return BinaryOp::Or;
  case expr::ElementOp::Xor:
    return BinaryOp::Xor;
  case expr::ElementOp::Pow:
  case expr::ElementOp::Maximum: // planned as a combine
  case expr::ElementOp::Minimum:
    break;
  }
  return BinaryOp::Pow;
}

// Whether an op gives a bool block (1 or 0), which the plans keep in bool's
// compute type, float64, whatever the operands' type.
bool givesBool(expr::ElementOp op) {
  return op >= expr::ElementOp::Equal;
}
bool givesBool(expr::UnaryFn fn) {
  return fn == expr::UnaryFn::IsNan || fn == expr::UnaryFn::IsInf || fn == expr::UnaryFn::Not;
}

// Points the plan's last step at a temp of `type` and casts that into the
// result (float64), for an op that gives a bool from operands of another type.
void castLastStepToResult(Plan& plan, ElementType type, std::int64_t count) {
  if (type == plan.resultType) {
    return;
  }
  const Slot temp{Slot::Kind::Temp, static_cast<int>(plan.temps.size())};
  plan.temps.emplace_back(type, count);
  plan.steps.back().slots.back() = temp;
  plan.steps.push_back(castStep(type, plan.resultType, temp, result(), count));
}

} // namespace

Plan planElementwise(expr::ElementOp op, const BodyValue& a, const BodyValue& b,
                     std::span<const std::int64_t> out) {
  const ElementType type = computeType(a.kind == Kind::Block ? a.type.dtype : b.type.dtype);
  Plan plan = resultOf(type, countOf(out));
  const Slot sa = source(plan, a, 0, type);
  const Slot sb = source(plan, b, 1, type);
  const Shape strideA = broadcastStrides(shapeOf(a), out);
  const Shape strideB = broadcastStrides(shapeOf(b), out);
  const Shape strideY = rowMajor(out);
  if (op == expr::ElementOp::Maximum || op == expr::ElementOp::Minimum) {
    // y = a, then y = max(y, b): the combine kernel propagates NaN.
    plan.steps.push_back(copyStep(type, sa, result(), 0, 0, walk(out, {strideA, strideY})));
    Step s;
    s.kind = StepKind::Combine;
    s.type = type;
    s.op = static_cast<int>(op == expr::ElementOp::Maximum ? CombineOp::Max : CombineOp::Min);
    s.slots = {result(), sb};
    s.offsets = {0, 0};
    s.walk = walk(out, {strideY, strideB});
    plan.steps.push_back(s);
    return plan;
  }
  Step s;
  s.kind = StepKind::Binary;
  s.type = type;
  s.op = static_cast<int>(binaryOp(op));
  s.slots = {sa, sb, result()};
  s.offsets = {0, 0, 0};
  s.walk = walk(out, {strideA, strideB, strideY});
  plan.steps.push_back(s);
  if (givesBool(op)) {
    plan.resultType = computeType("bool");
    castLastStepToResult(plan, type, plan.resultCount);
  }
  return plan;
}

Plan planUnary(expr::UnaryFn fn, const BodyValue& x) {
  const ElementType type = computeType(x.type.dtype);
  const std::int64_t count = countOf(x.type.shape);
  Plan plan = resultOf(type, count);
  Step s;
  s.kind = StepKind::Unary;
  s.type = type;
  s.op = static_cast<int>(unaryOp(fn));
  s.slots = {operand(0), result()};
  s.offsets = {0, 0};
  s.walk = dense(count, 2);
  plan.steps.push_back(s);
  if (fn == expr::UnaryFn::Rsqrt) {
    s.op = static_cast<int>(UnaryOp::Reciprocal);
    s.slots = {result(), result()};
    plan.steps.push_back(s);
  }
  if (givesBool(fn)) {
    plan.resultType = computeType("bool");
    castLastStepToResult(plan, type, count);
  }
  return plan;
}

Plan planReduce(expr::ReduceFn fn, const BodyValue& x, const std::vector<bool>& reduced) {
  const ElementType type = computeType(x.type.dtype);
  const Shape& shape = x.type.shape;
  Shape kept = shape;           // the result: reduced dims of extent 1
  Shape combined(shape.size()); // the reduced sub-box: kept dims of extent 1
  for (std::size_t d = 0; d < shape.size(); ++d) {
    combined[d] = reduced[d] ? shape[d] : 1;
    kept[d] = reduced[d] ? 1 : shape[d];
  }
  // argmax and argmin give int64 indices (float64 on the device): a float32
  // x's indices go through a float32 temporary (exact up to 2^24) and a cast.
  const bool arg = fn >= expr::ReduceFn::ArgMax;
  const bool viaTemp = arg && type != ElementType::Float64;
  Plan plan = resultOf(arg ? ElementType::Float64 : type, countOf(kept));
  const Slot y = viaTemp ? Slot{Slot::Kind::Temp, 0} : result();
  if (viaTemp) {
    plan.temps.emplace_back(type, countOf(kept));
  }
  const Shape strideX = rowMajor(shape);
  Step s;
  s.kind = StepKind::Reduce;
  s.type = type;
  s.op = static_cast<int>(fn);
  s.slots = {operand(0), y};
  s.offsets = {0, 0};
  s.walk = walk(kept, {strideX, rowMajor(kept)});
  s.inner = walk(combined, {strideX});
  if (s.walk.count > 0) {
    plan.steps.push_back(s);
    if (viaTemp) {
      plan.steps.push_back(castStep(type, ElementType::Float64, y, result(), countOf(kept)));
    }
  }
  return plan;
}

// b's dtype is a's (the evaluator checked) and its shape is in s.
Plan planMatmul(const BodyValue& a, const BodyValue& /*b*/, const expr::MatmulShape& s) {
  const ElementType type = computeType(a.type.dtype);
  const std::int64_t batches = countOf(s.batch);
  Plan plan = resultOf(type, batches * s.m * s.n);
  if (plan.resultCount == 0) {
    return plan;
  }
  if (s.k == 0) { // an empty sum
    Step fill;
    fill.kind = StepKind::Fill;
    fill.type = type;
    fill.slots = {result()};
    fill.offsets = {0};
    fill.walk = dense(plan.resultCount, 1);
    plan.steps.push_back(fill);
    return plan;
  }
  auto gemm = [&](std::int64_t rows, std::int64_t offA, std::int64_t offB, std::int64_t offC) {
    Step g;
    g.kind = StepKind::Gemm;
    g.type = type;
    g.slots = {operand(0), operand(1), result()};
    g.offsets = {offA, offB, offC};
    g.m = rows;
    g.n = s.n;
    g.k = s.k;
    g.gemm = planGemm(rows, s.n, s.k, MatrixLayout{false, s.k}, MatrixLayout{false, s.n}, s.n);
    plan.steps.push_back(g);
  };
  // One B for every batch point and an A of its own per point: A's batch
  // folds into its rows, one call (x @ W with x [b..., m, k]).
  if (countOf(s.batchB) == 1 && countOf(s.batchA) == batches) {
    gemm(batches * s.m, 0, 0, 0);
    return plan;
  }
  // Else a call per batch point, each operand's corner from its broadcast strides.
  const Shape strideA = broadcastStrides(s.batchA, s.batch);
  const Shape strideB = broadcastStrides(s.batchB, s.batch);
  Shape point(s.batch.size(), 0);
  for (std::int64_t i = 0; i < batches; ++i) {
    std::int64_t offA = 0;
    std::int64_t offB = 0;
    for (std::size_t d = 0; d < point.size(); ++d) {
      offA += point[d] * strideA[d];
      offB += point[d] * strideB[d];
    }
    gemm(s.m, offA * s.m * s.k, offB * s.k * s.n, i * s.m * s.n);
    for (std::size_t d = point.size(); d-- > 0;) {
      if (++point[d] < s.batch[d]) {
        break;
      }
      point[d] = 0;
    }
  }
  return plan;
}

Plan planTranspose(const BodyValue& x, std::span<const std::int64_t> perm) {
  const ElementType type = computeType(x.type.dtype);
  const Shape own = rowMajor(x.type.shape);
  Shape out(perm.size());
  Shape strides(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    out[d] = x.type.shape[static_cast<std::size_t>(perm[d])];
    strides[d] = own[static_cast<std::size_t>(perm[d])];
  }
  Plan plan = resultOf(type, countOf(out));
  plan.steps.push_back(
      copyStep(type, operand(0), result(), 0, 0, walk(out, {strides, rowMajor(out)})));
  return plan;
}

Plan planCast(const BodyValue& x, std::string_view dtype) {
  const ElementType from = computeType(x.type.dtype);
  const ElementType to = computeType(dtype);
  const ElementType stored = storageType(dtype);
  const std::int64_t count = countOf(x.type.shape);
  Plan plan = resultOf(to, count);
  if (stored == to) { // float32 or float64: the compute type holds the dtype exactly
    plan.steps.push_back(from == to ? copyStep(from, operand(0), result(), 0, 0, dense(count, 2))
                                    : castStep(from, to, operand(0), result(), count));
    return plan;
  }
  // Round through the dtype as stored (float16, bfloat16, ints, bool) and back.
  plan.temps.emplace_back(stored, count);
  const Slot temp{Slot::Kind::Temp, 0};
  plan.steps.push_back(castStep(from, stored, operand(0), temp, count));
  plan.steps.push_back(castStep(stored, to, temp, result(), count));
  return plan;
}

Plan planConcat(std::span<const BodyValue> blocks, std::size_t axis,
                std::span<const std::int64_t> out) {
  const ElementType type = computeType(blocks.front().type.dtype);
  Plan plan = resultOf(type, countOf(out));
  const Shape strideY = rowMajor(out);
  std::int64_t at = 0; // where the block starts along the axis
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const Shape& shape = blocks[i].type.shape;
    plan.steps.push_back(copyStep(type, operand(static_cast<int>(i)), result(), 0,
                                  at * strideY[axis], walk(shape, {rowMajor(shape), strideY})));
    at += shape[axis];
  }
  return plan;
}

Plan planSlice(const BodyValue& x, std::size_t axis, std::int64_t start, std::int64_t stop) {
  const ElementType type = computeType(x.type.dtype);
  Shape out = x.type.shape;
  out[axis] = stop - start;
  const Shape own = rowMajor(x.type.shape);
  Plan plan = resultOf(type, countOf(out));
  plan.steps.push_back(
      copyStep(type, operand(0), result(), start * own[axis], 0, walk(out, {own, rowMajor(out)})));
  return plan;
}

Plan planWhere(const BodyValue& condition, const BodyValue& a, const BodyValue& b,
               std::span<const std::int64_t> out) {
  const ElementType type = computeType(a.kind == Kind::Block ? a.type.dtype : b.type.dtype);
  Plan plan = resultOf(type, countOf(out));
  // The where kernel reads the condition as bool bytes.
  Slot c;
  if (condition.kind == Kind::Block) {
    const std::int64_t count = countOf(condition.type.shape);
    c = {Slot::Kind::Temp, static_cast<int>(plan.temps.size())};
    plan.temps.emplace_back(ElementType::Bool, count);
    plan.steps.push_back(
        castStep(computeType(condition.type.dtype), ElementType::Bool, operand(0), c, count));
  } else {
    c = source(plan, condition, 0, ElementType::Bool);
  }
  const Slot sa = source(plan, a, 1, type);
  const Slot sb = source(plan, b, 2, type);
  Step s;
  s.kind = StepKind::Where;
  s.type = type;
  s.slots = {c, sa, sb, result()};
  s.offsets = {0, 0, 0, 0};
  s.walk = walk(out, {broadcastStrides(shapeOf(condition), out), broadcastStrides(shapeOf(a), out),
                      broadcastStrides(shapeOf(b), out), rowMajor(out)});
  plan.steps.push_back(s);
  return plan;
}

Transfer planTransfer(const backend::TensorView& view, const ZRange& region) {
  const Shape extent = region.shape().vector();
  Transfer t;
  t.base = view.offsetOf(region.start().coords());
  t.read = walk(extent, {view.strides, rowMajor(extent)});
  t.write = walk(extent, {rowMajor(extent), view.strides});
  return t;
}

// ---------------------------------------------------------------- running plans

expr::BlockHandle PlannedBlockOps::execute(const Plan& plan,
                                           std::vector<const BodyValue*> operands) {
  std::shared_ptr<PlannedBlock> out = runner_.allocate(plan.resultType, plan.resultCount);
  std::vector<std::shared_ptr<PlannedBlock>> temps;
  for (const auto& [type, count] : plan.temps) {
    temps.push_back(runner_.allocate(type, count));
  }
  std::vector<const PlannedBlock*> blocks;
  for (const Step& step : plan.steps) {
    blocks.clear();
    for (const Slot& slot : step.slots) {
      const PlannedBlock* block = nullptr;
      if (slot.kind == Slot::Kind::Result) {
        block = out.get();
      } else if (slot.kind == Slot::Kind::Temp) {
        block = temps.at(static_cast<std::size_t>(slot.index)).get();
      } else {
        const BodyValue* v = operands.at(static_cast<std::size_t>(slot.index));
        block = dynamic_cast<const PlannedBlock*>(v->data.get());
        if (block == nullptr) {
          throw InternalError("cuda body: an operand block is not in the runner's memory");
        }
      }
      blocks.push_back(block);
    }
    runner_.run(step, blocks);
  }
  return out;
}

expr::BlockHandle PlannedBlockOps::elementwise(expr::ElementOp op, const BodyValue& a,
                                               const BodyValue& b,
                                               std::span<const std::int64_t> out) {
  return execute(planElementwise(op, a, b, out), {&a, &b});
}

expr::BlockHandle PlannedBlockOps::unary(expr::UnaryFn fn, const BodyValue& x) {
  return execute(planUnary(fn, x), {&x});
}

expr::BlockHandle PlannedBlockOps::reduce(expr::ReduceFn fn, const BodyValue& x,
                                          const std::vector<bool>& reduced) {
  return execute(planReduce(fn, x, reduced), {&x});
}

expr::BlockHandle PlannedBlockOps::matmul(const BodyValue& a, const BodyValue& b,
                                          const expr::MatmulShape& shape) {
  return execute(planMatmul(a, b, shape), {&a, &b});
}

expr::BlockHandle PlannedBlockOps::transpose(const BodyValue& x,
                                             std::span<const std::int64_t> perm) {
  return execute(planTranspose(x, perm), {&x});
}

expr::BlockHandle PlannedBlockOps::cast(const BodyValue& x, std::string_view dtype) {
  return execute(planCast(x, dtype), {&x});
}

expr::BlockHandle PlannedBlockOps::concat(std::span<const BodyValue> blocks, std::size_t axis,
                                          std::span<const std::int64_t> out) {
  std::vector<const BodyValue*> operands;
  for (const BodyValue& b : blocks) {
    operands.push_back(&b);
  }
  return execute(planConcat(blocks, axis, out), std::move(operands));
}

expr::BlockHandle PlannedBlockOps::slice(const BodyValue& x, std::size_t axis, std::int64_t start,
                                         std::int64_t stop) {
  return execute(planSlice(x, axis, start, stop), {&x});
}

expr::BlockHandle PlannedBlockOps::where(const BodyValue& condition, const BodyValue& a,
                                         const BodyValue& b, std::span<const std::int64_t> out) {
  return execute(planWhere(condition, a, b, out), {&condition, &a, &b});
}

} // namespace tapestry::cuda::body
