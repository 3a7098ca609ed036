// Quantities with units as target files write them ("80GiB", "3.35TB/s", "989.5T",
// "2us"), parsed exactly into SI base units: bytes, bytes/s, FLOP/s, seconds.
//
// Grammar: [+-] DIGITS [. DIGITS] [(e|E) [+-] DIGITS] [one space] [SUFFIX].
// Decimal prefixes k/K, M, G, T, P are powers of 1000; KiB, MiB, GiB, TiB are powers
// of 1024. A number without suffix is already in base units. The double results are
// the correctly rounded value of the decimal text (so "3.35TB/s" is the double
// nearest 3.35e12, the same as the JSON number 3350000000000.0); sizes are exact
// integers. Signs parse so that callers can say "must be greater than 0".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tapestry::cost {

// Sizes in bytes: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of
// 1024). Throws Error (no location; the caller adds it), e.g.
//   bad size "80Gb": expected a number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB
// and "... is not a whole number of bytes" / "... is too large".
std::int64_t parseSize(std::string_view text);
// Bandwidths in bytes/s: a size suffix followed by "/s" (B/s, KB/s, ..., GB/s, TiB/s).
double parseBandwidth(std::string_view text);
// Compute rates in FLOP/s: k, M, G, T or P (powers of 1000), or none.
double parseRate(std::string_view text);
// Times in seconds: s, ms, us (or µs), ns. A plain number is seconds.
double parseTime(std::string_view text);

// Short readable forms for messages and toString (at most 4 significant digits,
// so not for round trips): "80GiB", "3.35TB/s", "989.5T", "2us".
std::string formatSize(std::int64_t bytes);
std::string formatBandwidth(double bytesPerSecond);
std::string formatRate(double flopsPerSecond);
std::string formatTime(double seconds);

// Labels for pictures and tables, three significant digits and a space before
// the unit: "196 KiB", "1.5 MiB", "12 B" (binary prefixes); "51.4 MFLOP";
// "1.23 ms", "456 µs", "2.5 s"; and a bare number "0.5", "12.3", "1e+09".
std::string formatBytes(double bytes);
std::string formatFlops(double flops);
std::string formatSeconds(double seconds);
std::string formatNumber(double value);

} // namespace tapestry::cost
