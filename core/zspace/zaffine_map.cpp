#include "core/zspace/zaffine_map.hpp"

#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"
#include "core/zspace/wide_int.hpp"

namespace tapestry {

ZMatrix::ZMatrix(std::initializer_list<std::initializer_list<std::int64_t>> rows) {
  rows_ = rows.size();
  cols_ = rows.size() == 0 ? 0 : rows.begin()->size();
  values_.reserve(rows_ * cols_);
  std::size_t r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols_) {
      throw Error("matrix must be rectangular: row " + std::to_string(r) + " has " +
                  std::to_string(row.size()) + " columns, row 0 has " + std::to_string(cols_));
    }
    values_.insert(values_.end(), row.begin(), row.end());
    ++r;
  }
}

ZMatrix ZMatrix::fromRows(const std::vector<std::vector<std::int64_t>>& rows,
                          std::size_t colsIfNoRows) {
  const std::size_t cols = rows.empty() ? colsIfNoRows : rows[0].size();
  std::vector<std::int64_t> values;
  values.reserve(rows.size() * cols);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != cols) {
      throw Error("matrix must be rectangular: row " + std::to_string(r) + " has " +
                  std::to_string(rows[r].size()) + " columns, row 0 has " + std::to_string(cols));
    }
    values.insert(values.end(), rows[r].begin(), rows[r].end());
  }
  return ZMatrix(rows.size(), cols, std::move(values));
}

ZMatrix::ZMatrix(std::size_t rows, std::size_t cols, std::vector<std::int64_t> values)
    : rows_(rows), cols_(cols), values_(std::move(values)) {
  std::size_t cells = 0;
  if (__builtin_mul_overflow(rows, cols, &cells)) {
    throw Error("matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
                " is too large");
  }
  if (cells != values_.size()) {
    throw Error("matrix of " + std::to_string(rows) + " x " + std::to_string(cols) + " needs " +
                std::to_string(cells) + " values, got " + std::to_string(values_.size()));
  }
}

ZMatrix ZMatrix::zeros(std::size_t rows, std::size_t cols) {
  std::size_t cells = 0;
  if (__builtin_mul_overflow(rows, cols, &cells)) {
    throw Error("matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
                " is too large");
  }
  return ZMatrix(rows, cols, std::vector<std::int64_t>(cells, 0));
}

ZMatrix ZMatrix::identity(std::size_t n) {
  std::vector<std::int64_t> values(n * n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    values[i * n + i] = 1;
  }
  return ZMatrix(n, n, std::move(values));
}

std::string ZMatrix::toString() const {
  std::string out = "[";
  for (std::size_t r = 0; r < rows_; ++r) {
    if (r > 0) {
      out += ", ";
    }
    out += formatInts(row(r));
  }
  out += ']';
  return out;
}

ZAffineMap::ZAffineMap(ZMatrix projection, ZPoint offset)
    : projection_(std::move(projection)), offset_(std::move(offset)) {
  if (offset_.rank() != projection_.rows()) {
    throw Error("rank mismatch: projection has " + std::to_string(projection_.rows()) +
                " rows, offset " + offset_.toString() + " has " + std::to_string(offset_.rank()) +
                " dims");
  }
}

ZAffineMap::ZAffineMap(ZMatrix projection)
    : projection_(std::move(projection)), offset_(ZPoint::zeros(projection_.rows())) {}

ZAffineMap ZAffineMap::identity(std::size_t n) {
  return ZAffineMap(ZMatrix::identity(n), ZPoint::zeros(n));
}

ZPoint ZAffineMap::apply(const ZPoint& x) const {
  std::vector<std::int64_t> out(outputRank());
  applyInto(x.coords(), out);
  return ZPoint(std::move(out));
}

void ZAffineMap::applyInto(std::span<const std::int64_t> x, std::span<std::int64_t> out) const {
  if (x.size() != inputRank()) {
    throw Error("rank mismatch: " + toString() + " takes " + std::to_string(inputRank()) +
                " input dims, got " + formatInts(x) + " with " + std::to_string(x.size()));
  }
  checkInvariant(out.size() == outputRank(), "ZAffineMap::applyInto output has the output rank");
  for (std::size_t d = 0; d < outputRank(); ++d) {
    detail::Int128 acc = offset_[d];
    bool ok = true;
    for (std::size_t k = 0; k < x.size() && ok; ++k) {
      ok = detail::accumulate(acc, projection_(d, k), x[k]);
    }
    if (!ok || !detail::fitsInt64(acc)) [[unlikely]] {
      throw Error("integer overflow: " + toString() + " at x = " + formatInts(x) +
                  " does not fit in int64 (output dim " + std::to_string(d) + ")");
    }
    out[d] = static_cast<std::int64_t>(acc);
  }
}

std::string ZAffineMap::toString() const {
  return "λx." + projection_.toString() + "⋅x + " + offset_.toString();
}

} // namespace tapestry
