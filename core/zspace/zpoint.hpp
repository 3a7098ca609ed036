// ZPoint: an immutable point of Z^n (a vector of int64 coordinates), the
// coordinate type of every index space and tensor region in Tapestry.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace tapestry {

class ZPoint {
public:
  ZPoint() = default; // rank 0: the single point of Z^0
  ZPoint(std::initializer_list<std::int64_t> coords) : coords_(coords) {}
  explicit ZPoint(std::vector<std::int64_t> coords) : coords_(std::move(coords)) {}
  explicit ZPoint(std::span<const std::int64_t> coords) : coords_(coords.begin(), coords.end()) {}

  static ZPoint zeros(std::size_t rank) { return ZPoint(std::vector<std::int64_t>(rank, 0)); }
  static ZPoint filled(std::size_t rank, std::int64_t value) {
    return ZPoint(std::vector<std::int64_t>(rank, value));
  }

  std::size_t rank() const { return coords_.size(); }
  // Unchecked, like std::vector; the caller knows the rank.
  std::int64_t operator[](std::size_t dim) const { return coords_[dim]; }
  std::span<const std::int64_t> coords() const { return coords_; }
  const std::vector<std::int64_t>& vector() const { return coords_; }
  auto begin() const { return coords_.begin(); }
  auto end() const { return coords_.end(); }

  // Lexicographic, then by rank (as std::vector), so points can key ordered maps.
  friend bool operator==(const ZPoint&, const ZPoint&) = default;
  friend auto operator<=>(const ZPoint&, const ZPoint&) = default;

  // "[1, 2]"; rank 0 is "[]".
  std::string toString() const;

private:
  // ZRange's point iteration advances one point in place instead of allocating.
  friend class ZRange;
  std::vector<std::int64_t> coords_;
};

// "[1, 2]" for any span of int64 (shared by ZPoint, ZMatrix and messages).
std::string formatInts(std::span<const std::int64_t> values);

// Throws Error "shape must be non-negative: [2, -1] has -1 in dim 1" when a
// coordinate of `shape` is negative (ZRange and IndexProjection shapes).
void checkNonNegativeShape(const ZPoint& shape);

} // namespace tapestry
