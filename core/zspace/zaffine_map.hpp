// ZMatrix and ZAffineMap: integer affine maps x -> P·x + b from Z^in to Z^out,
// the linear part of every index projection (IPF).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "core/zspace/zpoint.hpp"

namespace tapestry {

// An immutable rows x cols int64 matrix, stored row-major. The column count is
// kept explicitly so a 0-row matrix still knows its input rank (a map onto a
// rank-0 tensor from an n-dim index space is 0 x n).
class ZMatrix {
public:
  ZMatrix() = default; // 0 x 0
  // Rows must all have the same length (Error otherwise); {} is 0 x 0.
  ZMatrix(std::initializer_list<std::initializer_list<std::int64_t>> rows);
  // Throws Error on ragged rows; `colsIfNoRows` gives the width of a 0-row matrix.
  static ZMatrix fromRows(const std::vector<std::vector<std::int64_t>>& rows,
                          std::size_t colsIfNoRows = 0);
  // `values` is row-major with rows * cols entries (Error otherwise).
  ZMatrix(std::size_t rows, std::size_t cols, std::vector<std::int64_t> values);
  static ZMatrix zeros(std::size_t rows, std::size_t cols);
  static ZMatrix identity(std::size_t n);

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  // Unchecked element access.
  std::int64_t operator()(std::size_t row, std::size_t col) const {
    return values_[row * cols_ + col];
  }
  std::span<const std::int64_t> row(std::size_t r) const {
    return std::span<const std::int64_t>(values_).subspan(r * cols_, cols_);
  }
  std::span<const std::int64_t> values() const { return values_; }

  friend bool operator==(const ZMatrix&, const ZMatrix&) = default;

  // "[[1, 0], [0, 1]]"; no rows is "[]".
  std::string toString() const;

private:
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::vector<std::int64_t> values_;
};

// x -> projection·x + offset, with rows = output dims and cols = input dims.
class ZAffineMap {
public:
  // Throws Error when offset.rank() != projection.rows().
  ZAffineMap(ZMatrix projection, ZPoint offset);
  // Zero offset.
  explicit ZAffineMap(ZMatrix projection);
  static ZAffineMap identity(std::size_t n);

  const ZMatrix& projection() const { return projection_; }
  const ZPoint& offset() const { return offset_; }
  std::size_t inputRank() const { return projection_.cols(); }
  std::size_t outputRank() const { return projection_.rows(); }

  // P·x + b, exact: throws Error on a rank mismatch or when a coordinate of the
  // result does not fit in int64.
  ZPoint apply(const ZPoint& x) const;
  // The same without allocating; x.size() == inputRank(), out.size() == outputRank().
  void applyInto(std::span<const std::int64_t> x, std::span<std::int64_t> out) const;

  friend bool operator==(const ZAffineMap&, const ZAffineMap&) = default;

  // Loom's form: "λx.[[1, 0], [0, 1]]⋅x + [0, 0]".
  std::string toString() const;

private:
  ZMatrix projection_;
  ZPoint offset_;
};

} // namespace tapestry
