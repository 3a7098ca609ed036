#include "core/cost/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include "core/diag/error.hpp"

namespace tapestry::cost {

namespace {

// A decimal number: (negative ? -1 : 1) * digits * 10^exponent, with `digits`
// free of leading and trailing zeros ("0" for zero).
struct Decimal {
  bool negative = false;
  std::string digits;
  long exponent = 0;
};

struct Split {
  Decimal number;
  std::string_view suffix;
};

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// Splits "3.35 TB/s" into the number and the suffix; nullopt when the text does
// not start with a number, or has anything but one space before the suffix.
std::optional<Split> splitNumber(std::string_view text) {
  std::size_t pos = 0;
  Decimal d;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    d.negative = text[pos] == '-';
    ++pos;
  }
  std::size_t intStart = pos;
  while (pos < text.size() && isDigit(text[pos])) {
    d.digits += text[pos++];
  }
  if (pos == intStart) {
    return std::nullopt;
  }
  long fractionDigits = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::size_t fracStart = pos;
    while (pos < text.size() && isDigit(text[pos])) {
      d.digits += text[pos++];
    }
    fractionDigits = static_cast<long>(pos - fracStart);
    if (fractionDigits == 0) {
      return std::nullopt; // "1." is not a number here
    }
  }
  long exponent = 0;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    bool negativeExponent = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      negativeExponent = text[pos] == '-';
      ++pos;
    }
    std::size_t expStart = pos;
    while (pos < text.size() && isDigit(text[pos])) {
      // Clamped: anything this large is out of range whatever the digits are.
      exponent = std::min(exponent * 10 + (text[pos++] - '0'), 1000000L);
    }
    if (pos == expStart) {
      return std::nullopt;
    }
    exponent = negativeExponent ? -exponent : exponent;
  }
  std::string_view suffix = text.substr(pos);
  if (!suffix.empty() && suffix[0] == ' ') {
    suffix.remove_prefix(1);
    if (suffix.empty() || suffix[0] == ' ') {
      return std::nullopt;
    }
  }
  d.exponent = exponent - fractionDigits;
  std::size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) {
    d.digits = "0";
    d.exponent = 0;
  } else {
    d.digits.erase(0, first);
    std::size_t last = d.digits.find_last_not_of('0');
    d.exponent += static_cast<long>(d.digits.size() - 1 - last);
    d.digits.erase(last + 1);
  }
  return Split{std::move(d), suffix};
}

struct Unit {
  std::string_view suffix;
  int power10;     // decimal prefix: times 10^power10
  int binaryShift; // binary prefix: times 2^binaryShift
};

constexpr Unit kSizeUnits[] = {{"", 0, 0},     {"B", 0, 0},    {"KB", 3, 0},  {"kB", 3, 0},
                               {"MB", 6, 0},   {"GB", 9, 0},   {"TB", 12, 0}, {"KiB", 0, 10},
                               {"MiB", 0, 20}, {"GiB", 0, 30}, {"TiB", 0, 40}};

constexpr Unit kBandwidthUnits[] = {{"", 0, 0},       {"B/s", 0, 0},    {"KB/s", 3, 0},
                                    {"kB/s", 3, 0},   {"MB/s", 6, 0},   {"GB/s", 9, 0},
                                    {"TB/s", 12, 0},  {"KiB/s", 0, 10}, {"MiB/s", 0, 20},
                                    {"GiB/s", 0, 30}, {"TiB/s", 0, 40}};

constexpr Unit kRateUnits[] = {{"", 0, 0},  {"k", 3, 0},  {"K", 3, 0}, {"M", 6, 0},
                               {"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}};

constexpr Unit kTimeUnits[] = {{"", 0, 0},    {"s", 0, 0},        {"ms", -3, 0},
                               {"us", -6, 0}, {"\u00b5s", -6, 0}, {"ns", -9, 0}};

const char* const kSizeExpected =
    "expected a number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB";
const char* const kBandwidthExpected =
    "expected a number followed by B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s or TiB/s";
const char* const kRateExpected =
    "expected a number of FLOP/s, optionally followed by k, M, G, T or P";
const char* const kTimeExpected = "expected a number followed by s, ms, us, \u00b5s or ns";

[[noreturn]] void fail(const char* what, std::string_view text, const std::string& problem) {
  throw Error(std::string("bad ") + what + " \"" + std::string(text) + "\": " + problem);
}

template <std::size_t N>
std::pair<Decimal, Unit> splitWithUnit(std::string_view text, const Unit (&units)[N],
                                       const char* what, const char* expected) {
  std::optional<Split> split = splitNumber(text);
  if (split) {
    for (const Unit& u : units) {
      if (u.suffix == split->suffix) {
        return {std::move(split->number), u};
      }
    }
  }
  fail(what, text, expected);
}

// The double nearest to the exact value (from_chars rounds correctly); a binary
// prefix then scales by a power of two, which is exact.
double toDouble(std::string_view text, const char* what, const Decimal& d, const Unit& u) {
  std::string literal = (d.negative ? "-" : "") + d.digits + "e" +
                        std::to_string(d.exponent + static_cast<long>(u.power10));
  double value = 0;
  auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
  if (ec != std::errc() || end != literal.data() + literal.size()) {
    fail(what, text, "is out of range");
  }
  value = std::ldexp(value, u.binaryShift);
  if (!std::isfinite(value)) {
    fail(what, text, "is out of range");
  }
  return value;
}

template <std::size_t N>
double parseDouble(std::string_view text, const Unit (&units)[N], const char* what,
                   const char* expected) {
  auto [number, unit] = splitWithUnit(text, units, what, expected);
  return toDouble(text, what, number, unit);
}

} // namespace

std::int64_t parseSize(std::string_view text) {
  auto [d, unit] = splitWithUnit(text, kSizeUnits, "size", kSizeExpected);
  if (d.digits == "0") {
    return 0;
  }
  const char* tooLarge = "is too large";
  const char* notWhole = "is not a whole number of bytes";
  if (d.digits.size() > 19) {
    fail("size", text, "has too many digits");
  }
  std::uint64_t v = std::stoull(d.digits);
  long exponent = d.exponent + unit.power10;
  long twos = unit.binaryShift;
  if (exponent >= 0) {
    for (long i = 0; i < exponent; ++i) {
      if (__builtin_mul_overflow(v, std::uint64_t{10}, &v)) {
        fail("size", text, tooLarge);
      }
    }
  } else {
    // Dividing by 10^n is dividing by 5^n, then by 2^n (folded into `twos`).
    long n = -exponent;
    for (long i = 0; i < n; ++i) {
      if (v % 5 != 0) {
        fail("size", text, notWhole);
      }
      v /= 5;
    }
    twos -= n;
  }
  if (twos >= 0) {
    if (twos >= 64 || v > (std::numeric_limits<std::uint64_t>::max() >> twos)) {
      fail("size", text, tooLarge);
    }
    v <<= twos;
  } else {
    long shift = -twos;
    if (shift >= 64 || (v & ((std::uint64_t{1} << shift) - 1)) != 0) {
      fail("size", text, notWhole);
    }
    v >>= shift;
  }
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail("size", text, tooLarge);
  }
  auto value = static_cast<std::int64_t>(v);
  return d.negative ? -value : value;
}

double parseBandwidth(std::string_view text) {
  return parseDouble(text, kBandwidthUnits, "bandwidth", kBandwidthExpected);
}

double parseRate(std::string_view text) {
  return parseDouble(text, kRateUnits, "rate", kRateExpected);
}

double parseTime(std::string_view text) {
  return parseDouble(text, kTimeUnits, "time", kTimeExpected);
}

namespace {

std::string fourDigits(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

struct Scale {
  double factor;
  const char* suffix;
};

// The largest scale that leaves a magnitude of at least 1 (the last one otherwise).
template <std::size_t N> std::string scaled(double v, const Scale (&scales)[N]) {
  if (v == 0 || !std::isfinite(v)) {
    return fourDigits(v) + scales[N - 1].suffix;
  }
  for (const Scale& s : scales) {
    if (std::fabs(v) >= s.factor) {
      return fourDigits(v / s.factor) + s.suffix;
    }
  }
  return fourDigits(v / scales[N - 1].factor) + scales[N - 1].suffix;
}

} // namespace

std::string formatSize(std::int64_t bytes) {
  static constexpr std::pair<std::int64_t, const char*> binary[] = {
      {std::int64_t{1} << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}};
  static constexpr std::pair<std::int64_t, const char*> decimal[] = {
      {1000000000000, "TB"}, {1000000000, "GB"}, {1000000, "MB"}, {1000, "KB"}};
  std::uint64_t magnitude = bytes < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(bytes)
                                      : static_cast<std::uint64_t>(bytes);
  if (magnitude < 1024) {
    return std::to_string(bytes) + "B";
  }
  // A whole number of the largest unit that fits reads best (80GiB, 141GB).
  for (const auto& units : {binary, decimal}) {
    for (std::size_t i = 0; i < 4; ++i) {
      auto [factor, suffix] = units[i];
      if (magnitude >= static_cast<std::uint64_t>(factor)) {
        if (bytes % factor == 0) {
          return std::to_string(bytes / factor) + suffix;
        }
        break;
      }
    }
  }
  static constexpr Scale scales[] = {
      {1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}};
  return scaled(static_cast<double>(bytes), scales);
}

std::string formatBandwidth(double bytesPerSecond) {
  static constexpr Scale scales[] = {
      {1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1, "B/s"}};
  return scaled(bytesPerSecond, scales);
}

std::string formatRate(double flopsPerSecond) {
  static constexpr Scale scales[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                                     {1e6, "M"},  {1e3, "k"},  {1, ""}};
  return scaled(flopsPerSecond, scales);
}

std::string formatTime(double seconds) {
  static constexpr Scale scales[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  return seconds == 0 ? "0s" : scaled(seconds, scales);
}

// ---------------------------------------------------------------- labels

std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

namespace {

// value / scale with three significant digits and a unit.
std::string scaledLabel(double value, double scale, const char* unit) {
  return formatNumber(value / scale) + " " + unit;
}

// The unit a value is shown in: the largest power of `step` (up to the last of
// `units` units) that leaves it under 999.5 (which would print as "1e+03 KiB").
std::pair<double, std::size_t> unitFor(double value, double step, std::size_t units) {
  double scale = 1;
  std::size_t u = 0;
  while (std::fabs(value) / scale >= 999.5 && u + 1 < units) {
    scale *= step;
    ++u;
  }
  return {scale, u};
}

} // namespace

std::string formatBytes(double bytes) {
  static constexpr std::array<const char*, 6> units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const auto [scale, u] = unitFor(bytes, 1024, units.size());
  if (u == 0) {
    return formatNumber(bytes) + " B";
  }
  return scaledLabel(bytes, scale, units[u]);
}

std::string formatFlops(double flops) {
  static constexpr std::array<const char*, 7> units = {"FLOP",  "kFLOP", "MFLOP", "GFLOP",
                                                       "TFLOP", "PFLOP", "EFLOP"};
  const auto [scale, u] = unitFor(flops, 1000, units.size());
  return scaledLabel(flops, scale, units[u]);
}

std::string formatSeconds(double seconds) {
  double magnitude = std::fabs(seconds);
  if (magnitude == 0) {
    return "0 s";
  }
  if (magnitude >= 0.9995) {
    return scaledLabel(seconds, 1, "s");
  }
  if (magnitude >= 0.9995e-3) {
    return scaledLabel(seconds, 1e-3, "ms");
  }
  if (magnitude >= 0.9995e-6) {
    return scaledLabel(seconds, 1e-6, "\xC2\xB5s"); // µs
  }
  return scaledLabel(seconds, 1e-9, "ns");
}

} // namespace tapestry::cost
