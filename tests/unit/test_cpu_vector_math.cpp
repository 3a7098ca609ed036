// Tests for the CPU backend's vectorised float32 loops (backends/cpu/
// vector_math.hpp) on every ISA level this CPU has, and for the prepared
// elementwise, reduction, normalization and data-movement kernels built on
// them: each loop against float64 over lengths that cover every vector tail,
// with NaN, infinities, huge and subnormal inputs; each kernel in float32
// against the same kernel in float64 (and the template's body) on strided and
// broadcast views and special values; a prepared kernel run again with other
// data at other addresses; and run() allocating nothing.
//
// Longer than 800 lines on purpose: the loops' cases and the kernels' cases
// share their value sets, tolerances and ISA loop, and read best side by side.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/vector_math.hpp"
#include "backends/reference.hpp"
#include "fixtures.hpp"

// Counts heap allocations (every operator new of this test binary), so a test
// can say that a prepared kernel's run() makes none. Every unaligned form is
// replaced, nothrow and array ones included (Catch allocates its test
// invokers with new(std::nothrow)): a form left to the runtime would hand
// ASan's allocation to this file's free() and be reported as a mismatch.
namespace {
std::atomic<std::int64_t> allocations{0};

void* countedAlloc(std::size_t size) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
} // namespace

void* operator new(std::size_t size) {
  if (void* p = countedAlloc(size)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  if (void* p = countedAlloc(size)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return countedAlloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return countedAlloc(size);
}
// GCC 12 flags free() of what this operator new returned once both are
// inlined (-Wmismatched-new-delete): they are a matching pair here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

using namespace tapestry;
using namespace tapestry::backend;
using cpu::VBinary;
using cpu::VectorKernels;
using cpu::VScalar;
using cpu::VUnary;
using testing::expandText;

namespace {

using Shape = std::vector<std::int64_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<CpuIsa> levels() {
  std::vector<CpuIsa> out;
  for (int i = 0; i < kIsaCount; ++i) {
    if (cpuHasIsa(static_cast<CpuIsa>(i))) {
      out.push_back(static_cast<CpuIsa>(i));
    }
  }
  return out;
}

// Restores the default level when a test leaves (pass or fail).
struct IsaGuard {
  ~IsaGuard() { setCpuIsa(std::nullopt); }
};

// ---------------------------------------------------------------- values

// Special values first (zeros, subnormals, the largest floats, infinities,
// NaN, exp's overflow and underflow edges), then a deterministic mix of
// magnitudes from 1e-6 to 1e6 and of signs.
std::vector<float> testValues(std::size_t n, bool specials = true) {
  const std::vector<float> special = {0.0f,    -0.0f,   1.0f,     -1.0f,       0.5f,     -2.5f,
                                      1e-40f,  -1e-40f, 1.2e-38f, 3.0e38f,     -3.0e38f, 1e30f,
                                      -1e30f,  kInf,    -kInf,    kNaN,        88.5f,    -88.5f,
                                      -103.0f, 100.0f,  -100.0f,  0.70710677f, 6.0f,     -6.0f};
  std::vector<float> out;
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (std::size_t i = 0; i < n; ++i) {
    if (specials && i < special.size()) {
      out.push_back(special[i]);
      continue;
    }
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    const double magnitude = i % 3 == 0 ? std::pow(10.0, 12 * u - 6) : 8 * u;
    out.push_back(static_cast<float>((state >> 7) & 1 ? magnitude : -magnitude));
  }
  return out;
}

// The distance from |r| to the next float up: one unit in the last place.
double ulp(double r) {
  const float f = static_cast<float>(std::fabs(r));
  if (std::isinf(f)) {
    return std::numeric_limits<float>::max() -
           std::nextafter(std::numeric_limits<float>::max(), 0.f);
  }
  return std::nextafter(f, kInf) - f;
}

// got agrees with the float64 value want within `ulps` units (plus `abs`):
// NaN with NaN, an infinity with the same infinity.
bool close(float got, double want, double ulps, double abs = 0) {
  if (std::isnan(want) || std::isnan(got)) {
    return std::isnan(want) && std::isnan(got);
  }
  const float rounded = static_cast<float>(want);
  if (std::isinf(rounded) || std::isinf(got)) {
    // Beyond float's range the float64 value rounds to an infinity; within
    // one unit of the largest float either is right.
    return got == rounded || std::fabs(static_cast<double>(got) - want) <= ulps * ulp(want);
  }
  return std::fabs(static_cast<double>(got) - want) <= ulps * ulp(want) + abs;
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// ---------------------------------------------------------------- loops

struct UnaryCase {
  VUnary op;
  const char* name;
  float p, q;
  // The float64 value, and the tolerance in units of it.
  double (*want)(double x, double p, double q);
  double ulps;
  bool exact; // correctly rounded: bit for bit the float operation
};

double gelu64(double x, double, double) {
  return 0.5 * x * (1 + std::erf(x * 0.70710678118654752440));
}

const std::vector<UnaryCase>& unaryCases() {
  static const std::vector<UnaryCase> cases = {
      {VUnary::Relu, "relu", 0, 0, [](double x, double, double) { return x < 0 ? 0.0 : x; }, 0,
       true},
      {VUnary::Neg, "neg", 0, 0, [](double x, double, double) { return -x; }, 0, true},
      {VUnary::Abs, "abs", 0, 0, [](double x, double, double) { return std::fabs(x); }, 0, true},
      {VUnary::Sqrt, "sqrt", 0, 0, [](double x, double, double) { return std::sqrt(x); }, 0, true},
      {VUnary::Reciprocal, "reciprocal", 0, 0, [](double x, double, double) { return 1 / x; }, 0,
       true},
      {VUnary::Clip, "clip", -1.5f, 6.0f,
       [](double x, double p, double q) { return std::isnan(x) ? x : std::min(std::max(x, p), q); },
       0, true},
      {VUnary::Clip, "clip lo > hi", 2.0f, 1.0f,
       [](double x, double p, double q) { return std::isnan(x) ? x : std::min(std::max(x, p), q); },
       0, true},
      {VUnary::AddScalar, "add_scalar", 2.5f, 0, [](double x, double p, double) { return x + p; },
       0, true},
      {VUnary::MulScalar, "mul_scalar", -3.0f, 0, [](double x, double p, double) { return x * p; },
       0, true},
      {VUnary::RsubScalar, "rsub_scalar", 1.0f, 0, [](double x, double p, double) { return p - x; },
       0, true},
      {VUnary::RdivScalar, "rdiv_scalar", 2.0f, 0, [](double x, double p, double) { return p / x; },
       0, true},
      {VUnary::DivScalar, "div_scalar", 1.41421356f, 0,
       [](double x, double p, double) { return x / p; }, 0, true},
      // Two or three roundings before the clamp: x * p + q, x / 6 + 1/2 (an
      // absolute tolerance below, for the cancellation near the clamp's 0).
      {VUnary::HardSigmoid, "hard_sigmoid", 0.2f, 0.5f,
       [](double x, double p, double q) {
         return std::isnan(x) ? x : std::min(1.0, std::max(0.0, x * p + q));
       },
       2, false},
      {VUnary::HardSwish, "hard_swish", 0, 0,
       [](double x, double, double) {
         return std::isnan(x) ? x : x * std::min(1.0, std::max(0.0, x / 6 + 0.5));
       },
       3, false},
      // SLEEF's u10 functions: within 1 ULP of the exact value, which is
      // itself within half a unit of the float64 value rounded.
      {VUnary::Exp, "exp", 0, 0, [](double x, double, double) { return std::exp(x); }, 2, false},
      {VUnary::Log, "log", 0, 0, [](double x, double, double) { return std::log(x); }, 2, false},
      {VUnary::Tanh, "tanh", 0, 0, [](double x, double, double) { return std::tanh(x); }, 2, false},
      {VUnary::Erf, "erf", 0, 0, [](double x, double, double) { return std::erf(x); }, 2, false},
      {VUnary::PowScalar, "pow_scalar 0.5", 0.5f, 0,
       [](double x, double p, double) { return std::pow(x, p); }, 2, false},
      {VUnary::PowScalar, "pow_scalar 2", 2.0f, 0,
       [](double x, double p, double) { return std::pow(x, p); }, 1, false},
      {VUnary::PowScalar, "pow_scalar -1.5", -1.5f, 0,
       [](double x, double p, double) { return std::pow(x, p); }, 2, false},
      {VUnary::PowScalar, "pow_scalar 1", 1.0f, 0,
       [](double x, double p, double) { return std::pow(x, p); }, 0, false},
      // Compositions: 1 + exp(-x) and its division add a few roundings.
      {VUnary::Sigmoid, "sigmoid", 0, 0,
       [](double x, double, double) { return 1 / (1 + std::exp(-x)); }, 4, false},
      {VUnary::Gelu, "gelu", 0, 0, &gelu64, 4, false},
  };
  return cases;
}

// The float32 operation an exact case computes (the scalar kernels' order).
float exactFloat(const UnaryCase& c, float x) {
  switch (c.op) {
  case VUnary::Relu:
    return x < 0 ? 0.0f : x;
  case VUnary::Neg:
    return -x;
  case VUnary::Abs:
    return std::fabs(x);
  case VUnary::Sqrt:
    return std::sqrt(x);
  case VUnary::Reciprocal:
    return 1.0f / x;
  case VUnary::Clip: {
    const float t = x < c.p ? c.p : x;
    return c.q < t ? c.q : t;
  }
  case VUnary::AddScalar:
    return x + c.p;
  case VUnary::MulScalar:
    return x * c.p;
  case VUnary::RsubScalar:
    return c.p - x;
  case VUnary::RdivScalar:
    return c.p / x;
  case VUnary::DivScalar:
    return x / c.p;
  default:
    break;
  }
  FAIL("not an exact case");
  return 0;
}

// Lengths around every vector width and unrolled step (4, 8, 16; 2x and 4x).
const std::vector<std::int64_t> kLengths = {0,  1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17,
                                            31, 32, 33, 47, 63, 64, 65, 100, 255, 257, 1000};

} // namespace

TEST_CASE("cpu ISA levels: names, detection, the test hook", "[cpu][vector]") {
  IsaGuard guard;
  for (int i = 0; i < kIsaCount; ++i) {
    const auto isa = static_cast<CpuIsa>(i);
    CHECK(parseIsa(isaName(isa)) == isa);
  }
  CHECK_FALSE(parseIsa("avx").has_value());
  CHECK(cpuHasIsa(CpuIsa::Sse2));
  CHECK(cpuHasIsa(detectedIsa()));
  for (CpuIsa isa : levels()) {
    setCpuIsa(isa);
    CHECK(activeIsa() == isa);
  }
  setCpuIsa(std::nullopt);
  for (int i = static_cast<int>(detectedIsa()) + 1; i < kIsaCount; ++i) {
    CHECK_THROWS_AS(setCpuIsa(static_cast<CpuIsa>(i)), InternalError);
  }
}

TEST_CASE("vector unary loops agree with float64 on every level", "[cpu][vector]") {
  const std::vector<float> x = testValues(1000);
  for (CpuIsa isa : levels()) {
    const VectorKernels& vk = cpu::vectorKernels(isa);
    REQUIRE(vk.isa == isa);
    for (const UnaryCase& c : unaryCases()) {
      for (std::int64_t n : kLengths) {
        INFO(isaName(isa) << " " << c.name << " n=" << n);
        // Both ways: out of place with a sentinel after the end, and in place.
        std::vector<float> y(static_cast<std::size_t>(n) + 1, 1234.5f);
        vk.unary[static_cast<int>(c.op)](x.data(), y.data(), n, c.p, c.q);
        std::vector<float> inPlace(x.begin(), x.begin() + n);
        vk.unary[static_cast<int>(c.op)](inPlace.data(), inPlace.data(), n, c.p, c.q);
        CHECK(y[static_cast<std::size_t>(n)] == 1234.5f);
        int bad = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const auto k = static_cast<std::size_t>(i);
          const double want = c.want(x[k], c.p, c.q);
          // gelu's 1 + erf cancels for negative x: its error is relative to x;
          // so do the hard activations' x * p + q before the clamp (and
          // hard_swish's product by x after it).
          const double ax = std::fabs(x[k]);
          const double abs = c.op == VUnary::Gelu          ? ax * 0x1.0p-22
                             : c.op == VUnary::HardSigmoid ? (ax + 1) * 0x1.0p-22
                             : c.op == VUnary::HardSwish   ? (ax * ax + ax + 1) * 0x1.0p-22
                                                           : 0;
          const bool ok =
              c.exact ? sameBits(y[k], exactFloat(c, x[k])) : close(y[k], want, c.ulps, abs);
          if (!ok || !sameBits(y[k], inPlace[k])) {
            if (bad++ < 5) {
              FAIL_CHECK("x = " << x[k] << ": got " << y[k] << " (in place " << inPlace[k]
                                << "), float64 " << want);
            }
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("erf and gelu of large arguments: exactly +-1 and x or -0 on every level",
          "[cpu][vector]") {
  // erf's argument is held to [-5, 5] (no subnormal steps inside SLEEF's
  // erff from |x| of about 9): the results are those of the whole range.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // gelu's erf reads x / sqrt(2): from x = 4 sqrt(2), about 5.66, it is +-1.
  const std::vector<float> x = {6.0f,   9.5f,   20.0f, 1e30f, inf,  -6.0f, -9.5f,
                                -20.0f, -1e30f, -inf,  nan,   0.5f, 0.0f,  -0.0f};
  for (CpuIsa isa : levels()) {
    INFO(isaName(isa));
    const VectorKernels& vk = cpu::vectorKernels(isa);
    const auto n = static_cast<std::int64_t>(x.size());
    std::vector<float> e(x.size());
    std::vector<float> g(x.size());
    vk.unary[static_cast<int>(VUnary::Erf)](x.data(), e.data(), n, 0, 0);
    vk.unary[static_cast<int>(VUnary::Gelu)](x.data(), g.data(), n, 0, 0);
    for (std::size_t i = 0; i < 5; ++i) {
      INFO("x = " << x[i]);
      CHECK(sameBits(e[i], 1.0f));
      CHECK(sameBits(e[i + 5], -1.0f));
      CHECK(sameBits(g[i], x[i])); // x * (1 + 1) / 2
      if (i < 4) {
        CHECK(sameBits(g[i + 5], -0.0f)); // x/2 * (1 - 1)
      }
    }
    CHECK(std::isnan(g[9])); // -inf * 0, as the float64 reference
    CHECK(std::isnan(e[10]));
    CHECK(std::isnan(g[10]));
    CHECK(e[11] == Approx(std::erf(0.5)).epsilon(1e-6));
    CHECK(sameBits(e[12], 0.0f));
    CHECK(sameBits(e[13], -0.0f));
  }
}

TEST_CASE("vector binary loops: every scalar mode, NaN-propagating max", "[cpu][vector]") {
  const std::vector<float> a = testValues(300);
  std::vector<float> b = testValues(300, false);
  for (std::size_t i = 0; i < b.size(); i += 7) {
    b[i] = i % 2 ? kNaN : -kInf;
  }
  struct Case {
    VBinary op;
    const char* name;
    double ulps; // 0: bit for bit the float operation
  };
  const Case cases[] = {{VBinary::Add, "add", 0}, {VBinary::Sub, "sub", 0},
                        {VBinary::Mul, "mul", 0}, {VBinary::Div, "div", 0},
                        {VBinary::Pow, "pow", 2}, {VBinary::MaxNan, "max", 0}};
  auto floatOp = [](VBinary op, float x, float y) {
    switch (op) {
    case VBinary::Add:
      return x + y;
    case VBinary::Sub:
      return x - y;
    case VBinary::Mul:
      return x * y;
    case VBinary::Div:
      return x / y;
    case VBinary::MaxNan:
      return (y > x || std::isnan(y)) ? y : x;
    case VBinary::Pow:
      break;
    }
    return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  };
  for (CpuIsa isa : levels()) {
    const VectorKernels& vk = cpu::vectorKernels(isa);
    for (const Case& c : cases) {
      for (int mode = 0; mode < 3; ++mode) {
        for (std::int64_t n : kLengths) {
          if (n > 300) {
            continue;
          }
          INFO(isaName(isa) << " " << c.name << " mode " << mode << " n=" << n);
          std::vector<float> y(static_cast<std::size_t>(n));
          vk.binary[static_cast<int>(c.op)][mode](a.data(), b.data() + 1, y.data(), n);
          int bad = 0;
          for (std::int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            const float xa = mode == static_cast<int>(VScalar::A) ? a[0] : a[k];
            const float xb = mode == static_cast<int>(VScalar::B) ? b[1] : b[k + 1];
            const bool ok = c.ulps == 0
                                ? sameBits(y[k], floatOp(c.op, xa, xb))
                                : close(y[k], std::pow(static_cast<double>(xa), xb), c.ulps);
            if (!ok && bad++ < 5) {
              FAIL_CHECK(xa << " " << c.name << " " << xb << ": got " << y[k]);
            }
          }
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("vector transposes: every element moved bitwise, edges and strides, on every level",
          "[cpu][vector]") {
  // Extents around the register tiles (4 or 8 wide, 2 or 4 for 8 bytes) and
  // the 32 x 32 blocks; strides wider than the extents; the bit patterns of
  // every index, so a NaN payload or an integer would show any rounding.
  const std::vector<std::int64_t> extents = {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 70};
  auto check = [&](auto zero, auto fn, const char* what) {
    using I = decltype(zero);
    for (std::int64_t na : extents) {
      for (std::int64_t nb : extents) {
        const std::int64_t fs = na + 3; // from: nb rows of na (+3 unread)
        const std::int64_t ts = nb + 5; // to: na rows of nb (+5 left alone)
        std::vector<I> from(static_cast<std::size_t>(nb * fs));
        for (std::size_t k = 0; k < from.size(); ++k) {
          // A float32 / float64 NaN with payload k (and sign) as bits.
          from[k] = static_cast<I>(sizeof(I) == 4 ? 0xFFC00000u + k : 0xFFF8000000000000ull + k);
        }
        std::vector<I> to(static_cast<std::size_t>(na * ts), I{7});
        fn(from.data(), fs, to.data(), ts, na, nb);
        INFO(what << " na=" << na << " nb=" << nb);
        bool same = true;
        for (std::int64_t a = 0; a < na; ++a) {
          for (std::int64_t b = 0; b < ts; ++b) {
            const I want = b < nb ? from[static_cast<std::size_t>(b * fs + a)] : I{7};
            same = same && to[static_cast<std::size_t>(a * ts + b)] == want;
          }
        }
        CHECK(same);
      }
    }
  };
  for (CpuIsa isa : levels()) {
    INFO(isaName(isa));
    const VectorKernels& vk = cpu::vectorKernels(isa);
    check(std::uint32_t{0}, vk.transpose4, "4 bytes");
    check(std::uint64_t{0}, vk.transpose8, "8 bytes");
  }
}

TEST_CASE("vector sum, max, dot, softmax and layernorm rows against float64", "[cpu][vector]") {
  // Rows start 3 elements in (not 64-byte aligned), so the longest needs 3 more.
  const std::vector<float> x = testValues(1003, false);
  for (CpuIsa isa : levels()) {
    const VectorKernels& vk = cpu::vectorKernels(isa);
    for (std::int64_t n : kLengths) {
      INFO(isaName(isa) << " n=" << n);
      const float* row = x.data() + 3;
      double sum = 0;
      double magnitude = 0;
      double max = -INFINITY;
      for (std::int64_t i = 0; i < n; ++i) {
        sum += row[i];
        magnitude += std::fabs(row[i]);
        max = std::max(max, static_cast<double>(row[i]));
      }
      // Float accumulators: each partial sum rounds at most n times.
      CHECK(std::fabs(vk.sum(row, n) - sum) <= static_cast<double>(n) * 0x1.0p-24 * magnitude);
      CHECK(vk.max(row, n) == static_cast<float>(max));
      // dot with a second row (the GEMV of one-row products): as the sum.
      const float* other = x.data() + (1003 - n);
      double dot = 0;
      double dotMagnitude = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        dot += static_cast<double>(row[i]) * other[i];
        dotMagnitude += std::fabs(static_cast<double>(row[i]) * other[i]);
      }
      CHECK(std::fabs(vk.dot(row, other, n) - dot) <=
            static_cast<double>(n + 1) * 0x1.0p-24 * dotMagnitude);
      if (n == 0) {
        continue;
      }
      // softmax: scale the row to logits in [-8, 8].
      std::vector<float> logits(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        logits[static_cast<std::size_t>(i)] = std::fmod(row[i], 8.0f);
      }
      std::vector<double> e(logits.size());
      double total = 0;
      const double m = *std::max_element(logits.begin(), logits.end());
      for (std::size_t i = 0; i < e.size(); ++i) {
        e[i] = std::exp(logits[i] - m);
        total += e[i];
      }
      std::vector<float> y(logits.size());
      vk.softmax(logits.data(), y.data(), n);
      std::vector<float> g(logits.size());
      std::vector<float> b(logits.size());
      for (std::size_t i = 0; i < g.size(); ++i) {
        g[i] = 0.5f + static_cast<float>(i % 5) * 0.25f;
        b[i] = static_cast<float>(i % 3) - 1.0f;
      }
      std::vector<float> ln(logits.size());
      vk.layernorm(logits.data(), ln.data(), n, g.data(), b.data(), 1e-5f);
      double mean = 0;
      for (float v : logits) {
        mean += v;
      }
      mean /= static_cast<double>(n);
      double var = 0;
      for (float v : logits) {
        var += (v - mean) * (v - mean);
      }
      var /= static_cast<double>(n);
      int bad = 0;
      for (std::size_t i = 0; i < y.size(); ++i) {
        // exp within 1 ULP, the sum within n roundings: relative 1e-6 of each value.
        const double want = e[i] / total;
        const double lnWant = (logits[i] - mean) / std::sqrt(var + 1e-5) * g[i] + b[i];
        if (std::fabs(y[i] - want) > 1e-6 * want + 1e-30 ||
            std::fabs(ln[i] - lnWant) > 1e-5 * (std::fabs(lnWant) + 1)) {
          if (bad++ < 5) {
            FAIL_CHECK("element " << i << ": softmax " << y[i] << " vs " << want << ", layernorm "
                                  << ln[i] << " vs " << lnWant);
          }
        }
      }
      CHECK(bad == 0);
      // In place gives the same bits.
      std::vector<float> again = logits;
      vk.softmax(again.data(), again.data(), n);
      CHECK(again == y);
    }
    // NaN anywhere: max and softmax are NaN; an infinite logit is NaN (inf - inf),
    // as the float64 reference; -inf logits are 0.
    const float nanRow[5] = {1, 2, kNaN, 4, 5};
    CHECK(std::isnan(vk.max(nanRow, 5)));
    CHECK(vk.max(nanRow, 2) == 2.0f);
    CHECK(vk.max(nanRow, 0) == -kInf);
    const float infRow[3] = {0, -kInf, 1};
    float out[3];
    vk.softmax(infRow, out, 3);
    CHECK(out[1] == 0.0f);
    CHECK(out[0] + out[2] == Approx(1.0f));
    const float posInf[3] = {0, kInf, 1};
    vk.softmax(posInf, out, 3);
    CHECK(std::isnan(out[1]));
  }
}

TEST_CASE("vector row sums and maxes: each row as sum and max give it, strided rows and outputs",
          "[cpu][vector]") {
  const std::vector<float> x = testValues(4096, false);
  for (CpuIsa isa : levels()) {
    const VectorKernels& vk = cpu::vectorKernels(isa);
    // (row length, rows, row stride, output stride): contiguous rows of 16 (a
    // conv output's rows), rows shorter and longer than a vector, gaps.
    for (const auto& [n, rows, ldx, ldy] : std::vector<std::array<std::int64_t, 4>>{{16, 64, 16, 1},
                                                                                    {3, 17, 3, 1},
                                                                                    {5, 9, 8, 3},
                                                                                    {40, 20, 41, 2},
                                                                                    {1, 30, 1, 1},
                                                                                    {0, 4, 2, 1},
                                                                                    {7, 0, 7, 1}}) {
      INFO(isaName(isa) << " n=" << n << " rows=" << rows << " ldx=" << ldx << " ldy=" << ldy);
      const std::size_t size = static_cast<std::size_t>(std::max<std::int64_t>(rows * ldy, 1));
      std::vector<float> sums(size, -1.0f);
      std::vector<float> maxes(size, -1.0f);
      vk.rowSums(x.data() + 1, ldx, n, rows, sums.data(), ldy);
      vk.rowMaxes(x.data() + 1, ldx, n, rows, maxes.data(), ldy);
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = x.data() + 1 + r * ldx;
        CHECK(sums[static_cast<std::size_t>(r * ldy)] == vk.sum(row, n));
        CHECK(maxes[static_cast<std::size_t>(r * ldy)] == vk.max(row, n));
        for (std::int64_t j = 1; j < ldy; ++j) { // the gaps stay untouched
          CHECK(sums[static_cast<std::size_t>(r * ldy + j)] == -1.0f);
        }
      }
    }
    // A NaN in one row makes that row's max NaN, no other.
    const float nanRows[6] = {1, kNaN, 3, 4, 5, 6};
    float maxes[3];
    vk.rowMaxes(nanRows, 2, 2, 3, maxes, 1);
    CHECK(std::isnan(maxes[0]));
    CHECK(maxes[1] == 4.0f);
    CHECK(maxes[2] == 6.0f);
  }
}

TEST_CASE("vector column sums and maxes: the rows folded one by one, bit for bit",
          "[cpu][vector]") {
  std::vector<float> x = testValues(128 * 192, false);
  x[5 * 70 + 3] = kNaN; // row 5, column 3 of the [m, 70] cases
  for (CpuIsa isa : levels()) {
    const VectorKernels& vk = cpu::vectorKernels(isa);
    // (rows, columns, row stride): columns past 4 vectors, one vector, a
    // tail shorter than a vector, one row, a stride wider than the columns.
    for (const auto& [m, n, ldk] : std::vector<std::array<std::int64_t, 3>>{
             {128, 192, 192}, {9, 70, 70}, {3, 5, 5}, {1, 33, 33}, {17, 16, 40}, {4, 1, 3}}) {
      INFO(isaName(isa) << " m=" << m << " n=" << n << " ldk=" << ldk);
      const auto add = vk.binary[static_cast<int>(VBinary::Add)][0];
      const auto maxNan = vk.binary[static_cast<int>(VBinary::MaxNan)][0];
      std::vector<float> wantSum(x.begin(), x.begin() + n);
      std::vector<float> wantMax = wantSum;
      for (std::int64_t k = 1; k < m; ++k) {
        add(wantSum.data(), x.data() + k * ldk, wantSum.data(), n);
        maxNan(wantMax.data(), x.data() + k * ldk, wantMax.data(), n);
      }
      std::vector<float> sums(static_cast<std::size_t>(n) + 1, -7.0f);
      std::vector<float> maxes(static_cast<std::size_t>(n) + 1, -7.0f);
      vk.columnSums(x.data(), ldk, m, n, sums.data());
      vk.columnMaxes(x.data(), ldk, m, n, maxes.data());
      CHECK(sums.back() == -7.0f); // nothing past n written
      CHECK(maxes.back() == -7.0f);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::size_t i = static_cast<std::size_t>(j);
        CHECK(std::memcmp(&sums[i], &wantSum[i], sizeof(float)) == 0);
        CHECK(std::memcmp(&maxes[i], &wantMax[i], sizeof(float)) == 0);
      }
      if (m > 5 && n == 70) { // the NaN reaches its column's max, and no other
        CHECK(std::isnan(maxes[3]));
        CHECK_FALSE(std::isnan(maxes[4]));
      }
    }
  }
}

// ---------------------------------------------------------------- kernels

namespace {

CpuBackend& backendCpu() {
  static CpuBackend backend(2);
  return backend;
}

struct Spec {
  std::string name;
  std::string dtype;
  Shape shape;
};

std::string shapeJson(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

// A one-operation graph "op"; "$T" in the dtypes stands for `dtype`.
graph::ExpandedGraph oneOp(const std::string& kernel, const std::vector<Spec>& tensors,
                           const std::string& dtype, const std::string& inputs,
                           const std::string& params = "{}", const std::string& outputs = "") {
  std::string text = R"({"tapestry": "graph/v1", "name": "g", "tensors": {)";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string dt = tensors[i].dtype == "$T" ? dtype : tensors[i].dtype;
    text += (i ? ", " : "") + ("\"" + tensors[i].name + "\": {\"dtype\": \"" + dt +
                               "\", \"shape\": " + shapeJson(tensors[i].shape) + "}");
  }
  text += R"(}, "operations": [{"name": "op", "kernel": ")" + kernel + R"(", "params": )" + params +
          R"(, "inputs": )" + inputs +
          (outputs.empty() ? std::string() : R"(, "outputs": )" + outputs) + "}]}";
  return expandText(text);
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) {
    n *= e;
  }
  return n;
}

// How a test lays a tensor out in its buffer: dense row-major; every stride
// doubled and the first element 3 elements in (gaps everywhere); or
// column-major (the first dim fastest).
enum class Layout { Dense, Padded, Reversed };

struct Stored {
  Buffer buffer;
  TensorView view;
};

Stored storeValues(DType dtype, const Shape& shape, Layout layout,
                   const std::vector<double>& values) {
  std::vector<std::int64_t> strides = rowMajorStrides(shape);
  std::int64_t start = 0;
  if (layout == Layout::Padded) {
    for (std::int64_t& st : strides) {
      st *= 2;
    }
    start = 3;
  } else if (layout == Layout::Reversed) {
    std::int64_t step = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      strides[d] = step;
      step *= shape[d];
    }
  }
  Stored s;
  s.buffer = Buffer::host(dtype, ZRange::fromShape(ZPoint(Shape{2 * numel(shape) + 4})));
  s.view = TensorView{s.buffer.data() + start * static_cast<std::int64_t>(dtypeSize(dtype)), dtype,
                      ZRange::fromShape(ZPoint(shape)), strides};
  std::int64_t i = 0;
  s.view.region.forEachPoint([&](const ZPoint& pt) {
    std::byte* at =
        s.view.data + s.view.offsetOf(pt.coords()) * static_cast<std::int64_t>(dtypeSize(dtype));
    const double v = values[static_cast<std::size_t>(i++)];
    if (dtype == DType::Float32) {
      const auto f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
    } else if (dtype == DType::Float64) {
      std::memcpy(at, &v, 8);
    } else {
      *at = static_cast<std::byte>(v != 0 ? 1 : 0); // bool
    }
  });
  return s;
}

std::vector<double> readValues(const TensorView& view) {
  std::vector<double> out;
  view.region.forEachPoint([&](const ZPoint& pt) {
    const std::byte* at =
        view.data + view.offsetOf(pt.coords()) * static_cast<std::int64_t>(dtypeSize(view.dtype));
    if (view.dtype == DType::Float32) {
      float f;
      std::memcpy(&f, at, 4);
      out.push_back(f);
    } else {
      double d;
      std::memcpy(&d, at, 8);
      out.push_back(d);
    }
  });
  return out;
}

// The op of g run whole on inputs of the given values and layouts (the
// output in `outLayout`): its output 0's values, row-major.
std::vector<double> runWith(Backend& backend, const graph::ExpandedGraph& g,
                            const std::vector<std::vector<double>>& values,
                            const std::vector<Layout>& layouts, Layout outLayout) {
  const graph::Operation& op = g.operations[0];
  std::vector<Stored> keep;
  std::vector<PortViews> ins;
  std::size_t flat = 0;
  for (const auto& port : op.application.inputs) {
    PortViews pv;
    for (const auto& t : port.tensors) {
      keep.push_back(storeValues(parseDType(t.dtype), t.shape, layouts[flat], values[flat]));
      pv.push_back(keep.back().view);
      ++flat;
    }
    ins.push_back(std::move(pv));
  }
  const auto& result = op.application.outputs[0].tensors[0];
  Stored out = storeValues(parseDType(result.dtype), result.shape, outLayout,
                           std::vector<double>(static_cast<std::size_t>(numel(result.shape)), 0));
  std::vector<PortViews> outs = {{out.view}};
  runUnsharded(backend, op, ins, outs);
  return readValues(out.view);
}

struct KernelCase {
  std::string kernel;
  std::vector<Spec> tensors;
  std::string inputs;
  std::string params;
  bool rows; // reductions and normalizations: compared relative to the output's largest value
};

const std::vector<KernelCase>& kernelCases() {
  const Shape s = {3, 5, 7};
  static const std::vector<KernelCase> cases = [&] {
    std::vector<KernelCase> out;
    for (const char* k : {"relu", "gelu", "tanh", "exp", "sigmoid", "neg", "erf", "sqrt",
                          "reciprocal", "log", "abs"}) {
      out.push_back({k, {{"x", "$T", s}}, R"({"input": "x"})", "{}", false});
    }
    for (const char* p : {R"({"min": 0, "max": 6})", "{}", R"({"min": 2, "max": 1})"}) {
      out.push_back({"clip", {{"x", "$T", s}}, R"({"input": "x"})", p, false});
    }
    for (const char* k :
         {"add_scalar", "mul_scalar", "rsub_scalar", "rdiv_scalar", "div_scalar", "pow_scalar"}) {
      out.push_back({k, {{"x", "$T", s}}, R"({"input": "x"})", R"({"value": 0.5})", false});
    }
    for (const char* k : {"add", "sub", "mul", "div", "pow"}) {
      for (const auto& [a, b] :
           std::vector<std::pair<Shape, Shape>>{{s, s}, {s, {7}}, {{3, 1, 7}, {5, 1}}, {{1}, s}}) {
        out.push_back(
            {k, {{"a", "$T", a}, {"b", "$T", b}}, R"({"A": "a", "B": "b"})", "{}", false});
      }
    }
    out.push_back({"where",
                   {{"c", "bool", {3, 1, 7}}, {"x", "$T", s}, {"y", "$T", {7}}},
                   R"({"condition": "c", "X": "x", "Y": "y"})",
                   "{}",
                   false});
    for (const char* k : {"sum", "mean", "max"}) {
      for (const char* p : {R"({"axis": 0})", R"({"axis": 1})", R"({"axis": -1})"}) {
        out.push_back({k, {{"x", "$T", s}}, R"({"input": "x"})", p, true});
      }
    }
    out.push_back({"softmax", {{"x", "$T", s}}, R"({"input": "x"})", "{}", true});
    out.push_back({"softmax", {{"x", "$T", s}}, R"({"input": "x"})", R"({"axis": 1})", true});
    out.push_back({"layernorm",
                   {{"x", "$T", s}, {"g", "$T", {7}}, {"b", "$T", {7}}},
                   R"({"input": "x", "gamma": "g", "beta": "b"})",
                   "{}",
                   true});
    return out;
  }();
  return cases;
}

} // namespace

TEST_CASE("float32 kernels agree with float64 on strided and broadcast views and special values",
          "[cpu][vector][kernel]") {
  IsaGuard guard;
  const std::vector<Layout> allLayouts = {Layout::Dense, Layout::Padded, Layout::Reversed};
  for (const KernelCase& c : kernelCases()) {
    const graph::ExpandedGraph g32 = oneOp(c.kernel, c.tensors, "float32", c.inputs, c.params);
    const graph::ExpandedGraph g64 = oneOp(c.kernel, c.tensors, "float64", c.inputs, c.params);
    // Elementwise kernels read every special value; rows read [-8, 8) with a
    // NaN in one row and infinities in another (finite sums stay finite in float).
    std::vector<std::vector<double>> values;
    for (const auto& port : g32.operations[0].application.inputs) {
      for (const auto& t : port.tensors) {
        const auto n = static_cast<std::size_t>(numel(t.shape));
        std::vector<float> v = testValues(n + values.size() * 5, !c.rows);
        std::vector<double> d(v.begin() + static_cast<std::ptrdiff_t>(values.size() * 5), v.end());
        if (t.dtype == "bool") {
          for (std::size_t i = 0; i < n; ++i) {
            d[i] = i % 3 == 0 ? 1 : 0;
          }
        } else if (c.rows) {
          for (double& x : d) {
            x = std::fmod(x, 8.0);
          }
          if (values.empty() && n > 30) { // the input, not gamma or beta
            d[2] = NAN;
            d[n - 3] = INFINITY;
            d[n - 9] = -INFINITY;
          }
        }
        values.push_back(d);
      }
    }
    const std::vector<double> want =
        runWith(backendCpu(), g64, values, std::vector<Layout>(values.size(), Layout::Dense),
                Layout::Dense);
    // The float64 reference evaluation of the template's body agrees too.
    CpuBackend bodies(1, CpuKernels::Bodies);
    const std::vector<double> body = runWith(
        bodies, g64, values, std::vector<Layout>(values.size(), Layout::Dense), Layout::Dense);
    for (CpuIsa isa : levels()) {
      setCpuIsa(isa);
      for (Layout layout : allLayouts) {
        INFO(c.kernel << " " << c.params << " " << isaName(isa) << " layout "
                      << static_cast<int>(layout));
        std::vector<Layout> layouts(values.size(), layout);
        const std::vector<double> got =
            runWith(backendCpu(), g32, values, layouts,
                    layout == Layout::Dense ? Layout::Reversed : Layout::Padded);
        REQUIRE(got.size() == want.size());
        double scale = 0;
        for (double w : want) {
          scale = std::isfinite(w) ? std::max(scale, std::fabs(w)) : scale;
        }
        int bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          const auto f = static_cast<float>(got[i]);
          bool ok = false;
          if (c.rows) {
            ok = std::isnan(want[i])   ? std::isnan(f)
                 : std::isinf(want[i]) ? f == static_cast<float>(want[i])
                                       : std::fabs(f - want[i]) <= 1e-5 * scale;
          } else {
            const bool gelu = c.kernel == "gelu" || c.kernel == "sigmoid";
            ok = close(f, want[i], 4, gelu ? 0x1.0p-21 : 0);
          }
          const bool bodyAgrees =
              std::isnan(body[i]) == std::isnan(want[i]) &&
              (std::isnan(body[i]) || std::isinf(body[i]) == std::isinf(want[i]));
          if ((!ok || !bodyAgrees) && bad++ < 5) {
            FAIL_CHECK("element " << i << ": float32 " << f << ", float64 " << want[i] << ", body "
                                  << body[i]);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("clip keeps NaN and infinities and gives max for min > max, as the float64 body",
          "[cpu][vector][kernel]") {
  IsaGuard guard;
  const std::vector<double> x = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 3.0, -3.0, 1.5};
  // The default bounds are float64's largest values: they clip nothing in
  // float32 (they round to infinities) and turn float64 infinities into them.
  constexpr double kMax = std::numeric_limits<double>::max();
  struct Case {
    std::string params;
    std::vector<std::string> dtypes;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"{}", {"float32"}, {NAN, INFINITY, -INFINITY, -0.0, 0.0, 3.0, -3.0, 1.5}},
      {"{}", {"float64"}, {NAN, kMax, -kMax, -0.0, 0.0, 3.0, -3.0, 1.5}},
      {R"({"min": 0, "max": 2})", {"float32", "float64"}, {NAN, 2, 0, -0.0, 0, 2, 0, 1.5}},
      {R"({"min": 2, "max": 1})", {"float32", "float64"}, {NAN, 1, 1, 1, 1, 1, 1, 1}},
  };
  CpuBackend bodies(1, CpuKernels::Bodies);
  for (const auto& [params, dtypes, want] : cases) {
    for (const std::string& dtype : dtypes) {
      const graph::ExpandedGraph g =
          oneOp("clip", {{"x", "$T", {8}}}, dtype, R"({"input": "x"})", params);
      for (CpuIsa isa : levels()) {
        setCpuIsa(isa);
        INFO(params << " " << dtype << " " << isaName(isa));
        const std::vector<double> got =
            runWith(backendCpu(), g, {x}, {Layout::Dense}, Layout::Dense);
        const std::vector<double> body = runWith(bodies, g, {x}, {Layout::Dense}, Layout::Dense);
        for (std::size_t i = 0; i < want.size(); ++i) {
          CHECK((std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]));
          CHECK((std::isnan(want[i]) ? std::isnan(body[i]) : body[i] == want[i]));
          CHECK((std::isnan(want[i]) || std::signbit(got[i]) == std::signbit(want[i])));
        }
      }
    }
  }
}

namespace {

// A prepared call on views of one layout, with a second set of buffers of
// the same layout to move it to.
struct PreparedCase {
  std::string kernel;
  std::vector<Spec> tensors;
  std::string inputs;
  std::string params;
  std::string outputs;
};

const std::vector<PreparedCase>& preparedCases() {
  const Shape s = {2, 3, 4, 5};
  static const std::vector<PreparedCase> cases = {
      {"relu", {{"x", "$T", {512}}}, R"({"input": "x"})", "{}", ""},
      {"gelu", {{"x", "$T", {512}}}, R"({"input": "x"})", "{}", ""},
      {"erf", {{"x", "$T", s}}, R"({"input": "x"})", "{}", ""},
      {"clip", {{"x", "$T", s}}, R"({"input": "x"})", R"({"min": 0, "max": 6})", ""},
      {"add", {{"a", "$T", {512}}, {"b", "$T", {512}}}, R"({"A": "a", "B": "b"})", "{}", ""},
      {"mul", {{"a", "$T", s}, {"b", "$T", {5}}}, R"({"A": "a", "B": "b"})", "{}", ""},
      {"div", {{"a", "$T", s}, {"b", "$T", {3, 1, 5}}}, R"({"A": "a", "B": "b"})", "{}", ""},
      {"where",
       {{"c", "bool", {4, 5}}, {"x", "$T", s}, {"y", "$T", {1}}},
       R"({"condition": "c", "X": "x", "Y": "y"})",
       "{}",
       ""},
      {"sum", {{"x", "$T", s}}, R"({"input": "x"})", R"({"axis": -1})", ""},
      {"mean", {{"x", "$T", s}}, R"({"input": "x"})", R"({"axis": 1})", ""},
      {"max", {{"x", "$T", s}}, R"({"input": "x"})", R"({"axis": 0})", ""},
      {"softmax", {{"x", "$T", {4, 128}}}, R"({"input": "x"})", "{}", ""},
      {"softmax", {{"x", "$T", s}}, R"({"input": "x"})", R"({"axis": 2})", ""},
      {"layernorm",
       {{"x", "$T", {4, 128}}, {"g", "$T", {128}}, {"b", "$T", {128}}},
       R"({"input": "x", "gamma": "g", "beta": "b"})",
       "{}",
       ""},
      {"transpose", {{"x", "$T", s}}, R"({"input": "x"})", R"({"perm": [0, 3, 1, 2]})", ""},
      {"transpose", {{"x", "$T", {40, 70}}}, R"({"input": "x"})", R"({"perm": [1, 0]})", ""},
      {"slice",
       {{"x", "$T", s}},
       R"({"input": "x"})",
       R"({"starts": [0, 1, 1, 0], "ends": [2, 3, 4, 4]})",
       ""},
      {"reshape", {{"x", "$T", s}}, R"({"input": "x"})", R"({"shape": [6, 20]})", ""},
      {"reshape", {{"x", "$T", {4, 6}}}, R"({"input": "x"})", R"({"shape": [3, 8]})", ""},
      {"cast", {{"x", "$T", s}}, R"({"input": "x"})", R"({"dtype": "float16"})", ""},
      {"concat",
       {{"a", "$T", {2, 3, 5}}, {"b", "$T", {2, 1, 5}}},
       R"({"tensors": ["a", "b"]})",
       R"({"axis": 1})",
       ""},
      {"split",
       {{"x", "$T", s}},
       R"({"input": "x"})",
       R"({"axis": 2, "sections": [1, 3]})",
       R"({"results": ["p", "q"]})"},
  };
  return cases;
}

// Views of every tensor of the op (inputs filled from `seed`, outputs zero)
// in one layout.
struct CallViews {
  std::vector<Stored> keep;
  std::vector<PortViews> ins, outs;
};

CallViews makeViews(const graph::Operation& op, Layout layout, std::uint64_t seed) {
  CallViews cv;
  cv.keep.reserve(16);
  auto add = [&](const metakernel::TensorType& t, bool input, std::size_t k) {
    const DType dtype = parseDType(t.dtype);
    const auto n = static_cast<std::size_t>(numel(t.shape));
    std::vector<double> values(n, 0);
    if (input) {
      const std::vector<float> v = testValues(n + seed * 11 + k, false);
      for (std::size_t i = 0; i < n; ++i) {
        values[i] = dtype == DType::Bool ? (i + seed) % 2 : v[i + seed * 11 + k];
      }
    }
    // Outputs of a float16 dtype are kept dense (storeValues writes floats only).
    const bool plain = dtype != DType::Float32 && dtype != DType::Float64 && dtype != DType::Bool;
    if (plain) {
      cv.keep.push_back(Stored{Buffer::host(dtype, t.shape), {}});
      cv.keep.back().view = cv.keep.back().buffer.view();
    } else {
      cv.keep.push_back(storeValues(dtype, t.shape, layout, values));
    }
    return cv.keep.back().view;
  };
  std::size_t k = 0;
  for (const auto& port : op.application.inputs) {
    PortViews pv;
    for (const auto& t : port.tensors) {
      pv.push_back(add(t, true, k++));
    }
    cv.ins.push_back(std::move(pv));
  }
  for (const auto& port : op.application.outputs) {
    PortViews pv;
    for (const auto& t : port.tensors) {
      pv.push_back(add(t, false, k++));
    }
    cv.outs.push_back(std::move(pv));
  }
  return cv;
}

// Every output's bytes, view by view (through the views' strides).
std::vector<std::byte> outputBytes(const CallViews& cv) {
  std::vector<std::byte> out;
  for (const PortViews& pv : cv.outs) {
    for (const TensorView& v : pv) {
      const auto size = static_cast<std::int64_t>(dtypeSize(v.dtype));
      v.region.forEachPoint([&](const ZPoint& pt) {
        const std::byte* at = v.data + v.offsetOf(pt.coords()) * size;
        out.insert(out.end(), at, at + size);
      });
    }
  }
  return out;
}

} // namespace

TEST_CASE("a prepared kernel runs again with other data at other addresses, allocating nothing",
          "[cpu][vector][kernel]") {
  IsaGuard guard;
  for (const PreparedCase& c : preparedCases()) {
    const graph::ExpandedGraph g =
        oneOp(c.kernel, c.tensors, "float32", c.inputs, c.params, c.outputs);
    const graph::Operation& op = g.operations[0];
    for (CpuIsa isa : levels()) {
      setCpuIsa(isa);
      for (Layout layout : {Layout::Dense, Layout::Padded, Layout::Reversed}) {
        INFO(c.kernel << " " << c.params << " " << isaName(isa) << " layout "
                      << static_cast<int>(layout));
        CallViews first = makeViews(op, layout, 1);
        CallViews second = makeViews(op, layout, 2);
        CallViews check = makeViews(op, layout, 2);
        std::unique_ptr<PreparedKernel> prepared = backendCpu().prepareKernel(
            KernelCall{op, op.application.index, first.ins, first.outs, 0});
        REQUIRE(prepared != nullptr);
        prepared->run(KernelCall{op, op.application.index, first.ins, first.outs, 0});
        const std::vector<std::byte> firstOut = outputBytes(first);
        // The same prepared kernel on the second buffers: what a fresh call gives.
        const std::int64_t before = allocations.load();
        for (int r = 0; r < 3; ++r) {
          prepared->run(KernelCall{op, op.application.index, second.ins, second.outs, 0});
        }
        const std::int64_t allocated = allocations.load() - before;
        CHECK(allocated == 0);
        backendCpu().runKernel(op, op.application.index, check.ins, check.outs, 0);
        CHECK(outputBytes(second) == outputBytes(check));
        CHECK(outputBytes(second) != firstOut);
        // And back on the first ones.
        prepared->run(KernelCall{op, op.application.index, first.ins, first.outs, 0});
        CHECK(outputBytes(first) == firstOut);
      }
    }
  }
}

TEST_CASE("a run loop's points in ranges: the same pieces in the same order as the whole loop",
          "[cpu][kernel]") {
  using cpu::RunDim;
  using cpu::RunLoop;
  // Three outer dims (4, 3, 5) around single points, operand strides in
  // elements of 4 bytes: operand 0 row-major, operand 1 transposed.
  const std::vector<RunDim<2>> dims = {{4, {15, 1}}, {3, {5, 4}}, {5, {1, 12}}};
  const RunLoop<2> loop({2, 7}, dims, {4, 4});
  REQUIRE(loop.rangeable());
  REQUIRE(loop.runCount() == 60);
  std::vector<std::byte> buffer(4096);
  const std::array<std::byte*, 2> data{buffer.data(), buffer.data() + 1024};
  std::vector<std::array<std::byte*, 2>> whole;
  loop.forEach(data, [&](const auto& at) { whole.push_back(at); });
  REQUIRE(whole.size() == 60);
  for (const auto& [lo, hi] :
       std::vector<std::pair<int, int>>{{0, 60}, {0, 1}, {7, 23}, {59, 60}, {30, 30}}) {
    INFO("points " << lo << " to " << hi);
    std::vector<std::array<std::byte*, 2>> part;
    loop.forRange(data, lo, hi, [&](const auto& at, std::int64_t m) {
      CHECK(m == 1);
      part.push_back(at);
    });
    CHECK(part == std::vector<std::array<std::byte*, 2>>(whole.begin() + lo, whole.begin() + hi));
  }
}
