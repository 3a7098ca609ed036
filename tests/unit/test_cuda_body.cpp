// Kernel bodies on the CUDA backend without a GPU (backends/cuda/body_plan.hpp;
// over 800 lines: the host emulation of every device step the plans name, and
// the cases that walk each block operation, share one emulator):
// every plan the device would run (its walks, reduction geometry, cuBLASLt
// calls with their leading dims and corners, permutation strides, casts) is
// executed by a host emulation of the kernels it names, and the numbers are
// compared with the host float64 evaluator's on every standard kernel that has
// a body and on bodies that use every block operation. The emulation reads and
// writes through bounds-checked blocks and replays each cuBLASLt call from its
// column-major description, so a wrong stride, offset or leading dim shows.
//
// What it cannot show: the device kernels' own arithmetic (their float32
// rounding, cuBLASLt's results). The emulation computes every step in float64,
// rounding only where a step casts, as the device's cast kernel does; so the
// host and the emulation agree to float64 rounding (matrix products sum in
// another order), and the tolerance below is relative to float64, not to the
// float32 a GPU computes in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/body_kernel.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cuda/body_plan.hpp"
#include "backends/dtype.hpp"
#include "core/metakernel/shard_body.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/cuda_replay.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::cuda;
using namespace tapestry::cuda::body;
using tapestry::testing::BodyCase;

namespace {

// ---------------------------------------------------------------- the emulation

class EmuBlock final : public PlannedBlock {
public:
  EmuBlock(ElementType type, std::int64_t count)
      : PlannedBlock(type, count), values(static_cast<std::size_t>(count), std::nan("")) {}
  mutable std::vector<double> values; // the runner writes results through const handles
};

backend::DType dtypeOf(ElementType t) {
  switch (t) {
  case ElementType::Float32:
    return backend::DType::Float32;
  case ElementType::Float64:
    return backend::DType::Float64;
  case ElementType::Float16:
    return backend::DType::Float16;
  case ElementType::BFloat16:
    return backend::DType::BFloat16;
  case ElementType::Int32:
    return backend::DType::Int32;
  case ElementType::Int64:
    return backend::DType::Int64;
  case ElementType::Bool:
    break;
  }
  return backend::DType::Bool;
}

// What storing v as `type` keeps (the cast kernel's convertValue).
double storeAs(ElementType type, double v) {
  double out = 0;
  backend::dispatchWithBool(dtypeOf(type), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = backend::cpu::convertValue<double>(backend::cpu::convertValue<T>(v));
  });
  return out;
}

// Calls f(i, offsets) for the walk's points: the offsets of its first n
// operands, as device_walk.cuh's walkOffsets computes them.
template <class F> void forWalk(const DeviceWalk& w, int n, F&& f) {
  REQUIRE(w.rank >= 0);
  REQUIRE(w.rank <= kMaxWalkDims);
  std::int64_t product = 1;
  for (int d = 0; d < w.rank; ++d) {
    product *= w.extent[d];
  }
  REQUIRE((w.count == 0 || product == w.count));
  for (std::int64_t i = 0; i < w.count; ++i) {
    std::vector<std::int64_t> off(static_cast<std::size_t>(n), 0);
    std::int64_t rest = i;
    for (int d = w.rank - 1; d >= 0; --d) {
      const std::int64_t c = rest % w.extent[d];
      rest /= w.extent[d];
      for (int k = 0; k < n; ++k) {
        off[static_cast<std::size_t>(k)] += c * w.stride[k][d];
      }
    }
    f(i, off);
  }
}

double unaryOf(UnaryOp op, double x) {
  switch (op) {
  case UnaryOp::Relu:
    return x < 0 ? 0.0 : x;
  case UnaryOp::Gelu:
    return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440));
  case UnaryOp::Tanh:
    return std::tanh(x);
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Erf:
    return std::erf(x);
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Reciprocal:
    return 1.0 / x;
  case UnaryOp::Log:
    return std::log(x);
  case UnaryOp::Abs:
    return std::fabs(x);
  case UnaryOp::Floor:
    return std::floor(x);
  case UnaryOp::Ceil:
    return std::ceil(x);
  case UnaryOp::Round:
    return std::nearbyint(x);
  case UnaryOp::Sign:
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  case UnaryOp::Sin:
    return std::sin(x);
  case UnaryOp::Cos:
    return std::cos(x);
  case UnaryOp::Tan:
    return std::tan(x);
  case UnaryOp::Asin:
    return std::asin(x);
  case UnaryOp::Acos:
    return std::acos(x);
  case UnaryOp::Atan:
    return std::atan(x);
  case UnaryOp::Sinh:
    return std::sinh(x);
  case UnaryOp::Cosh:
    return std::cosh(x);
  case UnaryOp::Asinh:
    return std::asinh(x);
  case UnaryOp::Acosh:
    return std::acosh(x);
  case UnaryOp::Atanh:
    return std::atanh(x);
  case UnaryOp::IsNan:
    return std::isnan(x) ? 1.0 : 0.0;
  case UnaryOp::IsInf:
    return std::isinf(x) ? 1.0 : 0.0;
  case UnaryOp::Not:
    return x == 0 ? 1.0 : 0.0;
  default:
    FAIL("a body never plans unary op " << static_cast<int>(op));
  }
  return 0;
}

double binaryOf(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  case BinaryOp::Mod: {
    const double r = std::fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  case BinaryOp::Fmod:
    return std::fmod(a, b);
  case BinaryOp::Equal:
    return a == b ? 1.0 : 0.0;
  case BinaryOp::Less:
    return a < b ? 1.0 : 0.0;
  case BinaryOp::LessEqual:
    return a <= b ? 1.0 : 0.0;
  case BinaryOp::Greater:
    return a > b ? 1.0 : 0.0;
  case BinaryOp::GreaterEqual:
    return a >= b ? 1.0 : 0.0;
  case BinaryOp::And:
    return a != 0 && b != 0 ? 1.0 : 0.0;
  case BinaryOp::Or:
    return a != 0 || b != 0 ? 1.0 : 0.0;
  case BinaryOp::Xor:
    return (a != 0) != (b != 0) ? 1.0 : 0.0;
  case BinaryOp::Pow:
    break;
  }
  return std::pow(a, b);
}

class EmuRunner final : public StepRunner {
public:
  int steps = 0;
  int gemms = 0;

  std::shared_ptr<PlannedBlock> allocate(ElementType type, std::int64_t count) override {
    REQUIRE(count >= 0);
    return std::make_shared<EmuBlock>(type, count);
  }

  void run(const Step& s, std::span<const PlannedBlock* const> blocks) override {
    ++steps;
    REQUIRE(blocks.size() == s.slots.size());
    REQUIRE(s.offsets.size() == s.slots.size());
    std::vector<const EmuBlock*> b;
    for (const PlannedBlock* p : blocks) {
      b.push_back(dynamic_cast<const EmuBlock*>(p));
      REQUIRE(b.back() != nullptr);
    }
    // Element j of operand i, bounds-checked.
    auto at = [&](std::size_t i, std::int64_t j) -> double& {
      const std::int64_t k = s.offsets[i] + j;
      REQUIRE(k >= 0);
      REQUIRE(k < b[i]->elementCount());
      return b[i]->values[static_cast<std::size_t>(k)];
    };
    // Kernels that compute in a type: their blocks are of it.
    if (s.kind != StepKind::Cast && s.kind != StepKind::Copy && s.kind != StepKind::Fill) {
      for (std::size_t i = 0; i < b.size(); ++i) {
        if (!(s.kind == StepKind::Where && i == 0)) {
          CHECK(b[i]->type() == s.type);
        }
      }
    }
    switch (s.kind) {
    case StepKind::Fill:
      REQUIRE(b[0]->type() == s.type);
      // A bool fill is 0 or 1; a number stays float64, as every step here.
      forWalk(s.walk, 1, [&](std::int64_t, const auto& o) {
        at(0, o[0]) = s.type == ElementType::Bool ? storeAs(s.type, s.value) : s.value;
      });
      return;
    case StepKind::Unary:
      forWalk(s.walk, 2, [&](std::int64_t, const auto& o) {
        at(1, o[1]) = unaryOf(static_cast<UnaryOp>(s.op), at(0, o[0]));
      });
      return;
    case StepKind::Binary:
      forWalk(s.walk, 3, [&](std::int64_t, const auto& o) {
        at(2, o[2]) = binaryOf(static_cast<BinaryOp>(s.op), at(0, o[0]), at(1, o[1]));
      });
      return;
    case StepKind::Combine:
      forWalk(s.walk, 2, [&](std::int64_t, const auto& o) {
        const double x = at(0, o[0]);
        const double y = at(1, o[1]);
        const bool isMax = static_cast<CombineOp>(s.op) == CombineOp::Max;
        REQUIRE((isMax || static_cast<CombineOp>(s.op) == CombineOp::Min));
        at(0, o[0]) = std::isnan(x) || std::isnan(y) ? NAN
                      : isMax                        ? std::max(x, y)
                                                     : std::min(x, y);
      });
      return;
    case StepKind::Copy:
      REQUIRE(b[0]->type() == s.type);
      REQUIRE(b[1]->type() == s.type);
      forWalk(s.walk, 2, [&](std::int64_t, const auto& o) { at(1, o[1]) = at(0, o[0]); });
      return;
    case StepKind::Cast:
      REQUIRE(b[0]->type() == s.type);
      REQUIRE(b[1]->type() == s.to);
      forWalk(s.walk, 2,
              [&](std::int64_t, const auto& o) { at(1, o[1]) = storeAs(s.to, at(0, o[0])); });
      return;
    case StepKind::Reduce:
      forWalk(s.walk, 2, [&](std::int64_t, const auto& o) {
        const int op = s.op;
        if (op >= 5) { // argmax, argmin, their last forms: the inner walk position
          const bool isMax = op == 5 || op == 7;
          double best = 0.0;
          std::int64_t where = -1;
          forWalk(s.inner, 1, [&](std::int64_t j, const auto& in) {
            const double v = at(0, o[0] + in[0]);
            if (where < 0 || expr::argReplaces(v, best, isMax, op >= 7)) {
              best = v;
              where = j;
            }
          });
          at(1, o[1]) = static_cast<double>(where);
          return;
        }
        double acc = op == 2 ? -INFINITY : op == 3 ? INFINITY : op == 4 ? 1.0 : 0.0;
        forWalk(s.inner, 1, [&](std::int64_t, const auto& in) {
          const double v = at(0, o[0] + in[0]);
          if (op == 4) {
            acc *= v;
          } else if (op >= 2) {
            acc = std::isnan(acc) || std::isnan(v) ? NAN
                  : op == 2                        ? std::max(acc, v)
                                                   : std::min(acc, v);
          } else {
            acc += v;
          }
        });
        if (op == 1 && s.inner.count > 0) {
          acc /= static_cast<double>(s.inner.count);
        }
        at(1, o[1]) = acc;
      });
      return;
    case StepKind::Where:
      REQUIRE(b[0]->type() == ElementType::Bool);
      forWalk(s.walk, 4, [&](std::int64_t, const auto& o) {
        at(3, o[3]) = at(0, o[0]) != 0.0 ? at(1, o[1]) : at(2, o[2]);
      });
      return;
    case StepKind::Gemm:
      ++gemms;
      gemm(s, at);
      return;
    }
  }

private:
  // cuBLASLt's column-major D = op(A)·op(B) replayed from the call's
  // description: its A is our B (slot 1), its B our A (slot 0), D our C.
  template <class At> void gemm(const Step& s, At& at) {
    const LtGemm& g = s.gemm;
    REQUIRE(static_cast<std::int64_t>(g.c.rows) == s.n);
    REQUIRE(static_cast<std::int64_t>(g.c.cols) == s.m);
    REQUIRE(static_cast<std::int64_t>(g.a.transpose ? g.a.rows : g.a.cols) == s.k);
    testing::cuda_replay::replayLtAt(
        g, [&](std::int64_t o) { return at(1, o); }, [&](std::int64_t o) { return at(0, o); },
        [&](std::int64_t o) -> double& { return at(2, o); });
  }
};

// ---------------------------------------------------------------- comparing

expr::BlockHandle emuBlock(std::string_view dtype, const std::vector<double>& values) {
  auto b = std::make_shared<EmuBlock>(computeType(dtype), static_cast<std::int64_t>(values.size()));
  b->values = values;
  return b;
}

const std::vector<double>& emuValues(const expr::BodyValue& v) {
  const auto* b = dynamic_cast<const EmuBlock*>(v.data.get());
  REQUIRE(b != nullptr);
  REQUIRE(b->type() == computeType(v.type.dtype));
  return b->values;
}

// Equal to float64 rounding: within 1e-12 of the block's largest magnitude
// (matrix products sum in another order; everything else is the same
// operations in the same order), NaN where the host has NaN.
void checkClose(const std::vector<double>& emulated, const std::vector<double>& host) {
  REQUIRE(emulated.size() == host.size());
  double scale = 1;
  for (double h : host) {
    if (std::isfinite(h)) {
      scale = std::max(scale, std::fabs(h));
    }
  }
  for (std::size_t i = 0; i < host.size(); ++i) {
    INFO("element " << i << ": emulated " << emulated[i] << ", host " << host[i]);
    if (std::isnan(host[i]) || std::isinf(host[i])) {
      CHECK(((std::isnan(host[i]) && std::isnan(emulated[i])) || emulated[i] == host[i]));
    } else {
      CHECK(std::fabs(emulated[i] - host[i]) <= 1e-12 * scale);
    }
  }
}

void roundTo(std::string_view dtype, std::vector<double>& v) {
  for (double& x : v) {
    x = storeAs(storageType(dtype), x);
  }
}

// The CUDA backend's body memory (cuda_body.cpp) with its launches emulated:
// selections read from and written into host views by the transfers'
// walks, each a cast between the view's dtype and the compute type.
class EmuMemory final : public backend::cpu::BodyMemory {
public:
  expr::BlockOps& ops() override { return ops_; }

  expr::BlockHandle read(const backend::TensorView& view, const ZRange& region) override {
    const Transfer t = planTransfer(view, region);
    auto block =
        std::make_shared<EmuBlock>(computeType(backend::dtypeName(view.dtype)), region.size());
    backend::dispatchWithBool(view.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* base = reinterpret_cast<const T*>(view.data) + t.base;
      forWalk(t.read, 2, [&](std::int64_t, const auto& o) {
        block->values.at(static_cast<std::size_t>(o[1])) =
            backend::cpu::convertValue<double>(base[o[0]]);
      });
    });
    return block;
  }

  void write(const expr::BodyValue& value, const backend::TensorView& view,
             const ZRange& region) override {
    const auto* block = dynamic_cast<const EmuBlock*>(value.data.get());
    REQUIRE(block != nullptr);
    const Transfer t = planTransfer(view, region);
    backend::dispatchWithBool(view.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* base = reinterpret_cast<T*>(view.data) + t.base;
      forWalk(t.write, 2, [&](std::int64_t, const auto& o) {
        base[o[1]] =
            backend::cpu::convertValue<T>(block->values.at(static_cast<std::size_t>(o[0])));
      });
    });
  }

private:
  EmuRunner runner_;
  PlannedBlockOps ops_{runner_};
};

std::vector<double> valuesOf(const backend::Buffer& b) {
  std::vector<double> out;
  backend::dispatchWithBool(b.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = reinterpret_cast<const T*>(b.data());
    for (std::int64_t i = 0; i < b.region().size(); ++i) {
      out.push_back(backend::cpu::convertValue<double>(p[i]));
    }
  });
  return out;
}

} // namespace

TEST_CASE("cuda bodies: every standard body's device plans give the host evaluator's numbers",
          "[cuda][body]") {
  std::map<std::string, int> kernels;
  for (const BodyCase& c : testing::standardBodyCases()) {
    INFO(c.name());
    std::uint64_t state = 0xC0DA0000u + static_cast<std::uint64_t>(kernels[c.kernel]++);
    const auto sels = testing::inputSelections(c);
    metakernel::BlockData hostIn(sels.size());
    metakernel::BlockData emuIn(sels.size());
    for (std::size_t p = 0; p < sels.size(); ++p) {
      for (std::size_t t = 0; t < sels[p].size(); ++t) {
        if (sels[p][t].isEmpty()) {
          hostIn[p].push_back(nullptr);
          emuIn[p].push_back(nullptr);
          continue;
        }
        const std::string& dtype = c.app.inputs[p].tensors[t].dtype;
        const std::vector<double> v = testing::randomBlock(
            dtype, sels[p][t].size(), state, [&](std::vector<double>& x) { roundTo(dtype, x); });
        hostIn[p].push_back(expr::hostBlock(v));
        emuIn[p].push_back(emuBlock(dtype, v));
      }
    }
    EmuRunner runner;
    PlannedBlockOps emulated(runner);
    const auto want = metakernel::evaluateShardBody(c.app, c.kernel, c.shard, &hostIn,
                                                    &backend::cpu::hostBodyOps());
    const auto got = metakernel::evaluateShardBody(c.app, c.kernel, c.shard, &emuIn, &emulated);
    REQUIRE(got.size() == want.size());
    for (std::size_t p = 0; p < want.size(); ++p) {
      REQUIRE(got[p].size() == want[p].size());
      for (std::size_t t = 0; t < want[p].size(); ++t) {
        if (!want[p][t].data) { // a list element the shard does not write
          CHECK(!got[p][t].data);
          continue;
        }
        checkClose(emuValues(got[p][t]), expr::hostValues(want[p][t]));
      }
    }
  }
  CHECK(kernels.size() == 93);
}

TEST_CASE("cuda bodies: every block operation's plan, on broadcasts, batches, axes and casts",
          "[cuda][body]") {
  struct Input {
    const char* name;
    expr::BlockType type;
  };
  const std::vector<Input> inputs = {
      {"a", {{2, 3, 4}, "float64"}}, {"b", {{3, 1}, "float64"}},     {"v", {{4}, "float64"}},
      {"w", {{4, 5}, "float64"}},    {"bt", {{2, 5, 4}, "float64"}}, {"c", {{2, 1, 4}, "bool"}},
      {"i", {{2, 3, 4}, "int32"}},   {"f", {{2, 3, 4}, "float32"}},  {"e", {{0, 4}, "float64"}},
  };
  const std::vector<std::string> bodies = {
      "r = a * b + 2 - v / 3; s = 1 - a; t = 2 / b",
      "r = maximum(a, 0.5) + minimum(v, b); s = maximum(b, v)",
      "s = sum(a, axis=[0, 2], keepdims=true); t = max(a, axis=1); u = min(a); "
      "q = mean(a, axis=-1); z = sum(i, axis=0); n = mean(e, axis=0); m = sum(e)",
      "r = a @ w; q = v @ w; z = a @ v; p = bt @ transpose(a, perm=[0, 2, 1])",
      "y = reshape(a, shape=[2, 1, 3, 4]) @ reshape(bt, shape=[1, 2, 4, 5]); "
      "x = transpose(w) @ reshape(a, shape=[2, 1, 4, 3]); o = e @ w",
      "r = transpose(a, perm=[2, 0, 1]); t = transpose(w); s = transpose(bt)",
      "r = cast(f * 3.7, int32); s = cast(a, bfloat16); u = cast(cast(a, float16), float64); "
      "k = cast(i, bool); g = cast(c, float32); h = cast(f, float64); j = cast(a, float32); "
      "l = cast(a * 1e10, int64); n = cast(cast(a, float32), float32)",
      "r = concat([a, a * 2], axis=1); s = concat([slice(a, axis=2, start=1, stop=3), a], "
      "axis=-1); "
      "t = slice(bt, axis=0, start=1, stop=2); u = concat(w, axis=0)",
      "r = where(c, a, 0 - a); s = where(c, 1.5, a); t = where(true, a, b); "
      "u = where(false, 2, v); z = where(cast(i, bool), i, 7)",
      "r = exp(a) + log(abs(a)) + sqrt(abs(a)) + rsqrt(abs(a) + 1) + tanh(a) + erf(a) + "
      "sigmoid(a) + relu(a) + gelu(a) - a; n = -i + abs(i) + relu(i); p = a ** 2 + pow(abs(a), b)",
      "r = i * 3 - i + 2; s = f * f - f / 3; t = -f",
      "r = floor(a * 3) + ceil(a * 3) + round(a * 5) + sign(a) + sin(a) + cos(a) + tan(a) + "
      "atan(a) + sinh(a) + cosh(a) + asinh(a) + asin(a / 2) + acos(a / 2) + atanh(a / 2) + "
      "acosh(abs(a) + 1); s = sign(i); t = round(f * 4) + sin(f)",
      "r = equal(round(a * 2), round(b * 2)); s = less(a, b); t = less_equal(a, 0.25); "
      "u = greater(f, 0); ge = greater_equal(i, i); la = logical_and(c, less(a, 0)); "
      "x = logical_or(c, true); y = logical_xor(c, greater(b, v)); z = logical_not(c); "
      "n = isnan(log(a)); k = isinf(1 / round(a)); q = where(less(a, 0), a * 0.1, a)",
      "r = mod(a * 7, b + 2); s = fmod(a * 7, b - 2); t = mod(i, 3); u = fmod(f * 9, -2); "
      "m = mod(a * 5, -1.5)",
  };
  std::uint64_t state = 0xB0D1E5u;
  for (const std::string& text : bodies) {
    INFO(text);
    expr::BodyEnvironment host;
    expr::BodyEnvironment emu;
    expr::Bindings bindings;
    for (const Input& in : inputs) {
      std::int64_t count = 1;
      for (std::int64_t e : in.type.shape) {
        count *= e;
      }
      const std::vector<double> v = testing::randomBlock(
          in.type.dtype, count, state, [&](std::vector<double>& x) { roundTo(in.type.dtype, x); });
      host.inputs.emplace(in.name, expr::BodyValue::block(in.type, expr::hostBlock(v)));
      emu.inputs.emplace(in.name, expr::BodyValue::block(in.type, emuBlock(in.type.dtype, v)));
    }
    EmuRunner runner;
    PlannedBlockOps emulated(runner);
    for (auto* env : {&host, &emu}) {
      env->bindings = &bindings;
      env->numeric = true;
    }
    host.ops = &backend::cpu::hostBodyOps();
    emu.ops = &emulated;
    const expr::Body body = expr::parseBody(text);
    const auto want = expr::evaluateBody(body, host);
    const auto got = expr::evaluateBody(body, emu);
    REQUIRE(got.size() == want.size());
    for (const auto& [name, value] : want) {
      INFO(name << " = " << toString(value.type));
      REQUIRE(got.count(name) == 1);
      CHECK(got.at(name).type == value.type);
      checkClose(emuValues(got.at(name)), expr::hostValues(value));
    }
    CHECK(runner.steps > 0);
  }
}

// Over 120 lines: one short SECTION per planning rule, read side by side.
TEST_CASE("cuda bodies: plans fold, split and broadcast as intended", "[cuda][body]") {
  auto block = [](Shape shape, std::string dtype = "float32") {
    return expr::BodyValue::block(expr::BlockType{std::move(shape), std::move(dtype)});
  };
  expr::BodyValue number;
  number.number = 2.5;

  SECTION("compute types") {
    CHECK(computeType("float32") == ElementType::Float32);
    CHECK(computeType("bfloat16") == ElementType::Float32);
    CHECK(computeType("float16") == ElementType::Float32);
    CHECK(computeType("float64") == ElementType::Float64);
    CHECK(computeType("int32") == ElementType::Float64);
    CHECK(computeType("int64") == ElementType::Float64);
    CHECK(computeType("bool") == ElementType::Float64);
  }
  SECTION("x @ W with x [2, 3, 4, 5] is one cuBLASLt call of 24 rows") {
    const Plan p = planMatmul(block({2, 3, 4, 5}), block({5, 6}),
                              expr::MatmulShape{{2, 3}, {}, {2, 3}, 4, 6, 5});
    REQUIRE(p.steps.size() == 1);
    const Step& g = p.steps[0];
    CHECK(g.kind == StepKind::Gemm);
    CHECK((g.m == 24 && g.n == 6 && g.k == 5));
    CHECK(g.offsets == std::vector<std::int64_t>{0, 0, 0});
    // Row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ: leading dims n, k, n.
    CHECK(g.gemm.a == LtMatrix{6, 5, 6, false});
    CHECK(g.gemm.b == LtMatrix{5, 24, 5, false});
    CHECK(g.gemm.c == LtMatrix{6, 24, 6, false});
    CHECK(p.resultCount == 144);
  }
  SECTION("broadcast batches: a call per batch point at each operand's corner") {
    // [2, 1, 3, 4] @ [1, 2, 4, 5] -> [2, 2, 3, 5]
    const Plan p = planMatmul(block({2, 1, 3, 4}), block({1, 2, 4, 5}),
                              expr::MatmulShape{{2, 1}, {1, 2}, {2, 2}, 3, 5, 4});
    REQUIRE(p.steps.size() == 4);
    const std::vector<std::vector<std::int64_t>> corners = {
        {0, 0, 0}, {0, 20, 15}, {12, 0, 30}, {12, 20, 45}};
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(p.steps[i].offsets == corners[i]);
      CHECK((p.steps[i].m == 3 && p.steps[i].n == 5 && p.steps[i].k == 4));
    }
  }
  SECTION("an empty inner dim fills zeros; an empty result plans nothing") {
    Plan p = planMatmul(block({3, 0}), block({0, 2}), expr::MatmulShape{{}, {}, {}, 3, 2, 0});
    REQUIRE(p.steps.size() == 1);
    CHECK(p.steps[0].kind == StepKind::Fill);
    CHECK(p.steps[0].walk.count == 6);
    CHECK(p.steps[0].value == 0);
    p = planMatmul(block({0, 4}), block({4, 2}), expr::MatmulShape{{}, {}, {}, 0, 2, 4});
    CHECK(p.steps.empty());
  }
  SECTION("a number operand is a filled one-element temporary read at stride 0") {
    const std::vector<std::int64_t> out{3, 4};
    const Plan p = planElementwise(expr::ElementOp::Sub, number, block({3, 4}), out);
    REQUIRE(p.temps.size() == 1);
    CHECK(p.temps[0] == std::make_pair(ElementType::Float32, std::int64_t{1}));
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[0].kind == StepKind::Fill);
    CHECK(p.steps[0].value == 2.5);
    const Step& s = p.steps[1];
    CHECK(s.kind == StepKind::Binary);
    CHECK(static_cast<BinaryOp>(s.op) == BinaryOp::Sub);
    CHECK(s.slots[0] == Slot{Slot::Kind::Temp, 0});
    CHECK(s.slots[1] == Slot{Slot::Kind::Operand, 1});
    REQUIRE(s.walk.rank == 1); // dense [3, 4] merges into one dim of 12
    CHECK(s.walk.extent[0] == 12);
    CHECK(s.walk.stride[0][0] == 0);
    CHECK(s.walk.stride[1][0] == 1);
  }
  SECTION("maximum copies a then combines b; a row broadcasts at stride 0") {
    const std::vector<std::int64_t> out{3, 4};
    const Plan p = planElementwise(expr::ElementOp::Maximum, block({3, 4}, "float64"),
                                   block({4}, "float64"), out);
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[0].kind == StepKind::Copy);
    CHECK(p.steps[0].type == ElementType::Float64);
    CHECK(p.steps[1].kind == StepKind::Combine);
    CHECK(static_cast<CombineOp>(p.steps[1].op) == CombineOp::Max);
    REQUIRE(p.steps[1].walk.rank == 2);
    CHECK(p.steps[1].walk.stride[1][0] == 0);
    CHECK(p.steps[1].walk.stride[1][1] == 1);
  }
  SECTION("a reduction over the middle axis: a thread per kept point, the axis inside") {
    const Plan p = planReduce(expr::ReduceFn::Sum, block({2, 3, 4}), {false, true, false});
    REQUIRE(p.steps.size() == 1);
    const Step& s = p.steps[0];
    CHECK(p.resultCount == 8);
    CHECK(s.walk.count == 8);
    REQUIRE(s.walk.rank == 2);
    CHECK(s.walk.stride[0][0] == 12); // x
    CHECK(s.walk.stride[0][1] == 1);
    CHECK(s.walk.stride[1][0] == 4); // y [2, 1, 4]
    CHECK(s.walk.stride[1][1] == 1);
    REQUIRE(s.inner.rank == 1);
    CHECK(s.inner.count == 3);
    CHECK(s.inner.stride[0][0] == 4);
  }
  SECTION("rsqrt is sqrt then reciprocal in place; a permutation reads x's strides permuted") {
    Plan p = planUnary(expr::UnaryFn::Rsqrt, block({5}));
    REQUIRE(p.steps.size() == 2);
    CHECK(static_cast<UnaryOp>(p.steps[1].op) == UnaryOp::Reciprocal);
    CHECK(p.steps[1].slots[0] == Slot{Slot::Kind::Result, 0});
    const std::vector<std::int64_t> perm{2, 1, 0};
    p = planTranspose(block({2, 3, 4}), perm);
    REQUIRE(p.steps.size() == 1);
    DeviceWalk w = p.steps[0].walk; // out [4, 3, 2]
    REQUIRE(w.rank == 3);
    CHECK((w.extent[0] == 4 && w.extent[1] == 3 && w.extent[2] == 2));
    CHECK((w.stride[0][0] == 1 && w.stride[0][1] == 4 && w.stride[0][2] == 12));
    CHECK((w.stride[1][0] == 6 && w.stride[1][1] == 2 && w.stride[1][2] == 1));
    // [2, 0, 1] keeps x's dims 0 and 1 together: out [4, 2, 3] walks as [4, 6].
    const std::vector<std::int64_t> roll{2, 0, 1};
    w = planTranspose(block({2, 3, 4}), roll).steps[0].walk;
    REQUIRE(w.rank == 2);
    CHECK((w.extent[0] == 4 && w.extent[1] == 6));
    CHECK((w.stride[0][0] == 1 && w.stride[0][1] == 4));
    CHECK((w.stride[1][0] == 6 && w.stride[1][1] == 1));
  }
  SECTION("casts round through the dtype as stored") {
    Plan p = planCast(block({6}), "bfloat16");
    REQUIRE(p.steps.size() == 2);
    CHECK(p.temps[0] == std::make_pair(ElementType::BFloat16, std::int64_t{6}));
    CHECK((p.steps[0].type == ElementType::Float32 && p.steps[0].to == ElementType::BFloat16));
    CHECK((p.steps[1].type == ElementType::BFloat16 && p.steps[1].to == ElementType::Float32));
    p = planCast(block({6}), "int64");
    REQUIRE(p.steps.size() == 2);
    CHECK(p.resultType == ElementType::Float64);
    CHECK(p.steps[0].to == ElementType::Int64);
    p = planCast(block({6}), "float64");
    REQUIRE(p.steps.size() == 1);
    CHECK((p.steps[0].kind == StepKind::Cast && p.steps[0].to == ElementType::Float64));
    p = planCast(block({6}, "float64"), "float64");
    REQUIRE(p.steps.size() == 1);
    CHECK(p.steps[0].kind == StepKind::Copy);
  }
  SECTION("concat writes each block at its place along the axis") {
    const std::vector<expr::BodyValue> blocks = {block({2, 1, 3}), block({2, 2, 3})};
    const std::vector<std::int64_t> out{2, 3, 3};
    const Plan p = planConcat(blocks, 1, out);
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[0].offsets == std::vector<std::int64_t>{0, 0});
    CHECK(p.steps[1].offsets == std::vector<std::int64_t>{0, 3});
    CHECK(p.steps[1].slots[0] == Slot{Slot::Kind::Operand, 1});
  }
}

TEST_CASE("cuda bodies: transfers walk a view's selection in row-major order", "[cuda][body]") {
  // A [6, 8] tensor of float32 whose buffer holds rows 1..6, columns 0..8,
  // and the selection [2:5, 3:7] of it; then the same tensor stored
  // transposed (column-major strides).
  for (bool columnMajor : {false, true}) {
    backend::TensorView view;
    view.dtype = backend::DType::Float32;
    view.region = ZRange(ZPoint({1, 0}), ZPoint({7, 8}));
    view.strides = columnMajor ? std::vector<std::int64_t>{1, 6} : std::vector<std::int64_t>{8, 1};
    const ZRange region(ZPoint({2, 3}), ZPoint({5, 7}));
    const Transfer t = planTransfer(view, region);
    std::vector<std::int64_t> read(12, -1);
    forWalk(t.read, 2, [&](std::int64_t, const auto& o) {
      REQUIRE(o[1] >= 0);
      REQUIRE(o[1] < 12);
      read[static_cast<std::size_t>(o[1])] = t.base + o[0];
    });
    std::vector<std::int64_t> written(12, -1);
    forWalk(t.write, 2, [&](std::int64_t, const auto& o) {
      REQUIRE(o[0] >= 0);
      REQUIRE(o[0] < 12);
      written[static_cast<std::size_t>(o[0])] = t.base + o[1];
    });
    CHECK(written == read);
    std::size_t i = 0;
    region.forEachPoint([&](const ZPoint& p) {
      INFO("column-major " << columnMajor << " point " << p.toString());
      CHECK(read[i++] == view.offsetOf(p.coords()));
    });
    CHECK(i == 12);
  }
}

TEST_CASE("cuda bodies: a shard through the device body memory writes what the CPU backend writes",
          "[cuda][body]") {
  // Whole tensors as views, so every selection starts inside its buffer;
  // each output a whole-tensor buffer, so every write lands at an offset.
  struct Case {
    std::string graph;
    std::vector<std::int64_t> lo, hi; // the shard
  };
  const std::vector<Case> cases = {
      {R"({"tapestry": "graph/v1", "name": "s", "tensors": {"x": {"dtype": "float32", "shape": [6, 10]}},
          "operations": [{"name": "op", "kernel": "softmax", "inputs": {"input": "x"}}]})",
       {2},
       {5}},
      {R"({"tapestry": "graph/v1", "name": "m", "tensors": {"x": {"dtype": "float64", "shape": [2, 6, 8]},
          "w": {"dtype": "float64", "shape": [8, 5]}},
          "operations": [{"name": "op", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}}]})",
       {1, 2, 1, 3},
       {2, 5, 4, 8}},
      {R"({"tapestry": "graph/v1", "name": "l", "tensors": {"x": {"dtype": "bfloat16", "shape": [4, 12]},
          "g": {"dtype": "bfloat16", "shape": [12]}, "b": {"dtype": "bfloat16", "shape": [12]}},
          "operations": [{"name": "op", "kernel": "layernorm", "inputs": {"input": "x", "gamma": "g", "beta": "b"}}]})",
       {1},
       {3}},
      {R"({"tapestry": "graph/v1", "name": "w", "tensors": {"c": {"dtype": "bool", "shape": [8, 16]},
          "x": {"dtype": "float16", "shape": [2, 8, 16]}, "y": {"dtype": "float16", "shape": [1]}},
          "operations": [{"name": "op", "kernel": "where", "inputs": {"condition": "c", "X": "x", "Y": "y"}}]})",
       {1, 2, 3},
       {2, 7, 12}},
      {R"({"tapestry": "graph/v1", "name": "t", "tensors": {"x": {"dtype": "int32", "shape": [3, 5, 4]}},
          "operations": [{"name": "op", "kernel": "transpose", "params": {"perm": [2, 0, 1]}, "inputs": {"input": "x"}}]})",
       {1, 0, 1},
       {3, 3, 4}},
      {R"({"tapestry": "graph/v1", "name": "r", "tensors": {"x": {"dtype": "float32", "shape": [4, 6, 5]}},
          "operations": [{"name": "op", "kernel": "sum", "params": {"axis": 1}, "inputs": {"input": "x"}}]})",
       {1, 1, 0},
       {3, 5, 4}},
  };
  backend::CpuBackend bodies(1, backend::CpuKernels::Bodies);
  std::uint64_t state = 0x7E57u;
  for (const Case& c : cases) {
    const graph::ExpandedGraph g = testing::expandText(c.graph);
    const graph::Operation& op = g.operations.at(0);
    INFO(op.kernel);
    std::vector<backend::Buffer> keep;
    std::vector<backend::PortViews> in;
    for (const graph::PortTensors& port : op.inputs) {
      backend::PortViews views;
      for (std::size_t t : port.tensors) {
        const metakernel::TensorType& type = g.tensors[t].type;
        keep.push_back(backend::Buffer::host(backend::parseDType(type.dtype), type.shape));
        const std::vector<double> v =
            testing::randomBlock(type.dtype, keep.back().region().size(), state,
                                 [&](std::vector<double>& x) { roundTo(type.dtype, x); });
        backend::dispatchWithBool(keep.back().dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* p = reinterpret_cast<T*>(keep.back().data());
          for (std::size_t i = 0; i < v.size(); ++i) {
            p[i] = backend::cpu::convertValue<T>(v[i]);
          }
        });
        views.push_back(keep.back().view());
      }
      in.push_back(std::move(views));
    }
    std::vector<backend::Buffer> mine;
    std::vector<backend::Buffer> theirs;
    std::vector<backend::PortViews> outMine;
    std::vector<backend::PortViews> outTheirs;
    for (const graph::PortTensors& port : op.outputs) {
      backend::PortViews a;
      backend::PortViews b;
      for (std::size_t t : port.tensors) {
        const metakernel::TensorType& type = g.tensors[t].type;
        mine.push_back(backend::Buffer::host(backend::parseDType(type.dtype), type.shape));
        theirs.push_back(backend::Buffer::host(backend::parseDType(type.dtype), type.shape));
        a.push_back(mine.back().view());
        b.push_back(theirs.back().view());
      }
      outMine.push_back(std::move(a));
      outTheirs.push_back(std::move(b));
    }
    const ZRange shard{ZPoint(c.lo), ZPoint(c.hi)};
    EmuMemory memory;
    backend::cpu::runBodyKernelWith(backend::KernelCall{op, shard, in, outMine, 0}, memory);
    bodies.runKernel(op, shard, in, outTheirs, 0);
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::vector<double> got = valuesOf(mine[i]);
      const std::vector<double> want = valuesOf(theirs[i]);
      REQUIRE(got.size() == want.size());
      // Both round the same float64 numbers once, into the same dtype; only
      // the matrix product's order of sums differs.
      std::size_t nonzero = 0;
      for (std::size_t k = 0; k < want.size(); ++k) {
        INFO("element " << k);
        CHECK(got[k] == Approx(want[k]).epsilon(1e-12).margin(1e-12));
        nonzero += want[k] != 0 ? 1 : 0;
      }
      CHECK(nonzero > 0); // the shard wrote something
    }
  }
}
