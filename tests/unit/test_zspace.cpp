// Tests for core/zspace: checked arithmetic, ZPoint, ZRange, ZMatrix, ZAffineMap,
// IndexProjection, their JSON forms, and property tests of projection and splitting.
//
// Longer than 800 lines on purpose: tests/unit keeps one file per module, and
// this module's cases read best side by side (each is short and independent).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/json/json.hpp"
#include "core/zspace/checked.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/layout.hpp"
#include "core/zspace/zaffine_map.hpp"
#include "core/zspace/zpoint.hpp"
#include "core/zspace/zrange.hpp"
#include "core/zspace/zspace.hpp"
#include "core/zspace/zspace_json.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;

using tapestry::testing::Failure;
using tapestry::testing::failureOf;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

template <class F> std::string errorOf(F&& f) {
  Failure failure = failureOf(f);
  CHECK(failure.code == (failure.message == "<no error>" ? ExitCode::Ok : ExitCode::InvalidInput));
  return failure.message;
}

// Decodes `text` (parsed in memory, so errors carry only a JSON pointer) with `decode`.
template <class Decode> Failure decodeFailure(const std::string& text, Decode decode) {
  const Json doc = Json::parse(text);
  const json::Value value(doc);
  return failureOf([&] { decode(value); });
}

template <class T, class Decode> T decodeText(const std::string& text, Decode decode) {
  const Json doc = Json::parse(text);
  return decode(json::Value(doc));
}

std::vector<ZPoint> pointsOf(const ZRange& range) {
  std::vector<ZPoint> out;
  for (const ZPoint& p : range.points()) {
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> strings(const std::vector<ZRange>& ranges) {
  std::vector<std::string> out;
  for (const ZRange& r : ranges) {
    out.push_back(r.toString());
  }
  return out;
}

using Strings = std::vector<std::string>;

} // namespace

// ---------------------------------------------------------------- checked ints

TEST_CASE("checked arithmetic is exact within int64", "[zspace][checked]") {
  CHECK(checkedAdd(2, 3) == 5);
  CHECK(checkedAdd(kMax, 0) == kMax);
  CHECK(checkedAdd(kMin, kMax) == -1);
  CHECK(checkedSub(kMin, 0) == kMin);
  CHECK(checkedSub(-1, kMax) == kMin);
  CHECK(checkedMul(-3, 7) == -21);
  CHECK(checkedMul(kMin, 1) == kMin);
  CHECK(checkedMul(kMax, -1) == -kMax);
  CHECK(checkedMul(std::int64_t{1} << 31, std::int64_t{1} << 31) == std::int64_t{1} << 62);
  CHECK(checkedNeg(kMax) == -kMax);
  CHECK(checkedNeg(0) == 0);
}

TEST_CASE("checked arithmetic reports overflow naming the operation", "[zspace][checked]") {
  CHECK(errorOf([] { checkedAdd(kMax, 1); }) ==
        "integer overflow: 9223372036854775807 + 1 does not fit in int64");
  CHECK(errorOf([] { checkedAdd(kMin, -1); }) ==
        "integer overflow: -9223372036854775808 + -1 does not fit in int64");
  CHECK(errorOf([] { checkedSub(kMin, 1); }) ==
        "integer overflow: -9223372036854775808 - 1 does not fit in int64");
  CHECK(errorOf([] { checkedSub(0, kMin); }) ==
        "integer overflow: 0 - -9223372036854775808 does not fit in int64");
  CHECK(errorOf([] { checkedMul(std::int64_t{1} << 62, 2); }) ==
        "integer overflow: 4611686018427387904 * 2 does not fit in int64");
  CHECK(errorOf([] { checkedMul(kMin, -1); }) ==
        "integer overflow: -9223372036854775808 * -1 does not fit in int64");
  CHECK(errorOf([] { checkedNeg(kMin); }) ==
        "integer overflow: -(-9223372036854775808) does not fit in int64");
}

// ---------------------------------------------------------------------- ZPoint

TEST_CASE("ZPoint basics", "[zspace][zpoint]") {
  const ZPoint p{3, -1, 7};
  CHECK(p.rank() == 3);
  CHECK(p[0] == 3);
  CHECK(p[1] == -1);
  CHECK(p[2] == 7);
  CHECK(std::vector<std::int64_t>(p.begin(), p.end()) == std::vector<std::int64_t>{3, -1, 7});
  CHECK(p.coords().size() == 3);
  CHECK(p.vector() == std::vector<std::int64_t>{3, -1, 7});
  CHECK(p.toString() == "[3, -1, 7]");
  CHECK(ZPoint{}.rank() == 0);
  CHECK(ZPoint{}.toString() == "[]");
  CHECK(ZPoint{kMin}.toString() == "[-9223372036854775808]");
  CHECK(ZPoint::zeros(2) == ZPoint{0, 0});
  CHECK(ZPoint::filled(3, 4) == ZPoint{4, 4, 4});
  CHECK(ZPoint(std::vector<std::int64_t>{1, 2}) == ZPoint{1, 2});
  const std::int64_t raw[] = {5, 6};
  CHECK(ZPoint(std::span<const std::int64_t>(raw)) == ZPoint{5, 6});
}

TEST_CASE("ZPoint compares lexicographically", "[zspace][zpoint]") {
  CHECK(ZPoint{1, 2} == ZPoint{1, 2});
  CHECK(ZPoint{1, 2} != ZPoint{2, 1});
  CHECK(ZPoint{1, 2} < ZPoint{1, 3});
  CHECK(ZPoint{1, 9} < ZPoint{2, 0});
  CHECK(ZPoint{1} < ZPoint{1, 0});
  CHECK(ZPoint{} < ZPoint{kMin});
  CHECK((ZPoint{4} <=> ZPoint{4}) == std::strong_ordering::equal);
  CHECK((ZPoint{5} <=> ZPoint{4}) == std::strong_ordering::greater);
  std::map<ZPoint, int> byPoint{{ZPoint{2}, 2}, {ZPoint{1}, 1}};
  CHECK(byPoint.begin()->second == 1);
}

// ---------------------------------------------------------------------- ZRange

TEST_CASE("ZRange construction and toString", "[zspace][zrange]") {
  const ZRange r(ZPoint{0, 0}, ZPoint{10, 5});
  CHECK(r.toString() == "zr[0:10, 0:5]");
  CHECK(r.start() == ZPoint{0, 0});
  CHECK(r.end() == ZPoint{10, 5});
  CHECK(r.rank() == 2);
  CHECK(ZRange().toString() == "zr[]");
  CHECK(ZRange({-3}, {-1}).toString() == "zr[-3:-1]");
  CHECK(ZRange({4}, {4}).toString() == "zr[4:4]");
  CHECK(ZRange::fromShape({10, 5}) == r);
  CHECK(ZRange::fromShape({}) == ZRange());
  CHECK(ZRange::fromStartAndShape({1, 2}, {3, 0}) == ZRange({1, 2}, {4, 2}));
  CHECK(ZRange::empty(2).toString() == "zr[0:0, 0:0]");
  CHECK(ZRange({0, 1}, {2, 3}) < ZRange({0, 1}, {2, 4}));
}

TEST_CASE("ZRange construction errors", "[zspace][zrange]") {
  CHECK(errorOf([] { ZRange({5}, {3}); }) == "start [5] > end [3] in dim 0");
  CHECK(errorOf([] { ZRange({0, 7}, {1, 6}); }) == "start [0, 7] > end [1, 6] in dim 1");
  CHECK(errorOf([] { ZRange({0, 0}, {1, 1, 1}); }) == "rank mismatch: start has 2 dims, end has 3");
  CHECK(errorOf([] {
          ZRange::fromShape({2, -1});
        }) == "shape must be non-negative: [2, -1] has -1 in dim 1");
  CHECK(errorOf([] {
          ZRange::fromStartAndShape({0}, {1, 1});
        }) == "rank mismatch: start has 1 dims, shape has 2");
  CHECK(errorOf([] { ZRange::fromStartAndShape({0}, {-2}); }) ==
        "shape must be non-negative: [-2] has -2 in dim 0");
  CHECK(errorOf([] { ZRange::fromStartAndShape({kMax}, {1}); }) ==
        "integer overflow: 9223372036854775807 + 1 does not fit in int64");
  Failure bug = failureOf([] { ZRange::empty(0); });
  CHECK(bug.internal);
  CHECK(bug.code == ExitCode::Internal);
  CHECK_THAT(bug.message, Catch::Contains("ZRange::empty needs rank >= 1"));
}

TEST_CASE("ZRange shape, extent, size, isEmpty", "[zspace][zrange]") {
  const ZRange r({-2, 3}, {4, 8});
  CHECK(r.shape() == ZPoint{6, 5});
  CHECK(r.extent(0) == 6);
  CHECK(r.extent(1) == 5);
  CHECK(r.size() == 30);
  CHECK_FALSE(r.isEmpty());
  CHECK(ZRange().size() == 1);
  CHECK_FALSE(ZRange().isEmpty());
  CHECK(ZRange().shape() == ZPoint{});
  CHECK(ZRange({0, 5}, {3, 5}).isEmpty());
  CHECK(ZRange({0, 5}, {3, 5}).size() == 0);
  CHECK(ZRange::empty(3).isEmpty());
  CHECK(errorOf([&] { r.extent(2); }) == "dim 2 is out of range for zr[-2:4, 3:8] with 2 dims");
}

TEST_CASE("ZRange size and shape overflow are errors, not UB", "[zspace][zrange][overflow]") {
  const ZRange whole({kMin}, {kMax});
  CHECK(errorOf([&] { whole.shape(); }) ==
        "integer overflow: 9223372036854775807 - -9223372036854775808 does not fit in int64");
  CHECK(errorOf([&] { whole.size(); }) ==
        "integer overflow: 9223372036854775807 - -9223372036854775808 does not fit in int64");
  const ZRange big = ZRange::fromShape({std::int64_t{1} << 32, std::int64_t{1} << 32});
  CHECK(errorOf([&] { big.size(); }) ==
        "integer overflow: 4294967296 * 4294967296 does not fit in int64");
  // Empty along one dim: size 0 even though the other extents overflow.
  CHECK(ZRange::fromShape({std::int64_t{1} << 32, std::int64_t{1} << 32, 0}).size() == 0);
  CHECK(ZRange({0}, {kMax}).size() == kMax);
  CHECK(ZRange({kMin}, {-1}).size() == kMax);
  CHECK(errorOf([] { ZRange({kMin}, {0}).extent(0); }) ==
        "integer overflow: 0 - -9223372036854775808 does not fit in int64");
}

TEST_CASE("ZRange contains points and ranges", "[zspace][zrange]") {
  const ZRange r({0, 0}, {3, 4});
  CHECK(r.contains(ZPoint{0, 0}));
  CHECK(r.contains(ZPoint{2, 3}));
  CHECK_FALSE(r.contains(ZPoint{3, 0}));
  CHECK_FALSE(r.contains(ZPoint{0, 4}));
  CHECK_FALSE(r.contains(ZPoint{-1, 0}));
  CHECK(ZRange().contains(ZPoint{}));
  CHECK_FALSE(ZRange({1}, {1}).contains(ZPoint{1}));

  CHECK(r.contains(r));
  CHECK(r.contains(ZRange({1, 1}, {3, 4})));
  CHECK_FALSE(r.contains(ZRange({1, 1}, {4, 4})));
  CHECK_FALSE(r.contains(ZRange({-1, 0}, {1, 1})));
  CHECK(r.contains(ZRange({100, 100}, {100, 200}))); // empty: in anything
  CHECK(ZRange::empty(2).contains(ZRange({7, 7}, {7, 9})));
  CHECK_FALSE(ZRange::empty(2).contains(r));
  CHECK(ZRange().contains(ZRange()));

  CHECK(errorOf([&] { r.contains(ZPoint{1}); }) ==
        "rank mismatch: zr[0:3, 0:4] has 2 dims, point [1] has 1");
  CHECK(errorOf([&] { r.contains(ZRange({0}, {1})); }) ==
        "rank mismatch: zr[0:3, 0:4] has 2 dims, zr[0:1] has 1");
}

TEST_CASE("ZRange intersection", "[zspace][zrange]") {
  const ZRange a({0, 0}, {4, 4});
  CHECK(a.intersection(ZRange({2, -1}, {6, 3})) == ZRange({2, 0}, {4, 3}));
  CHECK(a.intersection(a) == a);
  CHECK(a.intersection(ZRange({1, 1}, {2, 2})) == ZRange({1, 1}, {2, 2}));
  // Touching half-open ranges share no point: the canonical empty range.
  CHECK(a.intersection(ZRange({4, 0}, {8, 4})) == ZRange::empty(2));
  CHECK(a.intersection(ZRange({10, 10}, {12, 12})) == ZRange::empty(2));
  CHECK(a.intersection(ZRange({1, 1}, {1, 3})) == ZRange::empty(2));
  CHECK(a.intersection(ZRange({10, 10}, {12, 12})).toString() == "zr[0:0, 0:0]");
  CHECK(a.intersects(ZRange({3, 3}, {5, 5})));
  CHECK_FALSE(a.intersects(ZRange({4, 3}, {5, 5})));
  CHECK_FALSE(a.intersects(ZRange({1, 1}, {1, 3})));
  CHECK(ZRange().intersects(ZRange()));
  CHECK(errorOf([&] { a.intersects(ZRange({0}, {1})); }) ==
        "rank mismatch: zr[0:4, 0:4] has 2 dims, zr[0:1] has 1");
  CHECK(ZRange().intersection(ZRange()) == ZRange());
  CHECK(ZRange({kMin}, {kMax}).intersection(ZRange({kMax - 1}, {kMax})) ==
        ZRange({kMax - 1}, {kMax}));
  CHECK(errorOf([&] { a.intersection(ZRange()); }) ==
        "rank mismatch: zr[0:4, 0:4] has 2 dims, zr[] has 0");
}

TEST_CASE("ZRange boundingRange", "[zspace][zrange]") {
  const ZRange a({0, 5}, {2, 6});
  const ZRange b({-3, 0}, {1, 2});
  CHECK(ZRange::boundingRange(a, b) == ZRange({-3, 0}, {2, 6}));
  CHECK(ZRange::boundingRange({a}) == a);
  CHECK(ZRange::boundingRange({a, b, ZRange({9, 9}, {10, 10})}) == ZRange({-3, 0}, {10, 10}));
  // Empty ranges hold no points and do not stretch the bound.
  CHECK(ZRange::boundingRange(a, ZRange({100, 100}, {100, 200})) == a);
  CHECK(ZRange::boundingRange({ZRange({1, 1}, {1, 2}), ZRange({5, 5}, {6, 5})}) ==
        ZRange::empty(2));
  const std::vector<ZRange> list{a, b};
  CHECK(ZRange::boundingRange(list) == ZRange({-3, 0}, {2, 6}));
  CHECK(ZRange::boundingRange(ZRange(), ZRange()) == ZRange());
  CHECK(errorOf([] { ZRange::boundingRange(std::vector<ZRange>{}); }) ==
        "cannot take the bounding range of no ranges: expected at least one");
  CHECK(errorOf([&] { ZRange::boundingRange(a, ZRange({0}, {1})); }) ==
        "rank mismatch: zr[0:2, 5:6] has 2 dims, zr[0:1] has 1");
}

TEST_CASE("ZRange split into near-equal parts, larger first", "[zspace][zrange][split]") {
  CHECK(strings(ZRange({0}, {10}).split(0, 3)) == Strings{"zr[0:4]", "zr[4:7]", "zr[7:10]"});
  CHECK(strings(ZRange({0}, {10}).split(0, 1)) == Strings{"zr[0:10]"});
  CHECK(strings(ZRange({0}, {4}).split(0, 4)) ==
        Strings{"zr[0:1]", "zr[1:2]", "zr[2:3]", "zr[3:4]"});
  CHECK(strings(ZRange({-5}, {2}).split(0, 2)) == Strings{"zr[-5:-1]", "zr[-1:2]"});
  CHECK(strings(ZRange({0, 3}, {2, 8}).split(1, 2)) == Strings{"zr[0:2, 3:6]", "zr[0:2, 6:8]"});
  CHECK(strings(ZRange({0, 3}, {2, 8}).split(0, 2)) == Strings{"zr[0:1, 3:8]", "zr[1:2, 3:8]"});
  // Along a non-empty dim of a range empty elsewhere: parts are empty there too.
  CHECK(strings(ZRange({0, 0}, {4, 0}).split(0, 2)) == Strings{"zr[0:2, 0:0]", "zr[2:4, 0:0]"});
  // At the edges of int64, without overflow.
  CHECK(strings(ZRange({kMax - 3}, {kMax}).split(0, 2)) ==
        Strings{"zr[9223372036854775804:9223372036854775806]",
                "zr[9223372036854775806:9223372036854775807]"});
  CHECK(strings(ZRange({kMin}, {kMin + 3}).split(0, 3)) ==
        Strings{"zr[-9223372036854775808:-9223372036854775807]",
                "zr[-9223372036854775807:-9223372036854775806]",
                "zr[-9223372036854775806:-9223372036854775805]"});
  const ZRange huge({0}, {kMax});
  const std::vector<ZRange> halves = huge.split(0, 2);
  CHECK(halves.at(0) == ZRange({0}, {kMax / 2 + 1}));
  CHECK(halves.at(1) == ZRange({kMax / 2 + 1}, {kMax}));
}

TEST_CASE("ZRange split errors", "[zspace][zrange][split]") {
  const ZRange r({0, 0}, {4, 0});
  CHECK(errorOf([&] { r.split(0, 0); }) ==
        "cannot split zr[0:4, 0:0] into 0 parts along dim 0: expected 1 to 4 parts (its extent)");
  CHECK(errorOf([&] { r.split(0, -1); }) ==
        "cannot split zr[0:4, 0:0] into -1 parts along dim 0: expected 1 to 4 parts (its "
        "extent)");
  CHECK(errorOf([&] { r.split(0, 5); }) ==
        "cannot split zr[0:4, 0:0] into 5 parts along dim 0: expected 1 to 4 parts (its extent)");
  CHECK(errorOf([&] { r.split(1, 1); }) ==
        "cannot split zr[0:4, 0:0] into 1 parts along dim 1: its extent there is 0");
  CHECK(errorOf([&] { r.split(2, 1); }) == "cannot split zr[0:4, 0:0] along dim 2: it has 2 dims");
  CHECK(errorOf([] { ZRange().split(0, 1); }) == "cannot split zr[] along dim 0: it has 0 dims");
  CHECK(errorOf([] { ZRange({kMin}, {kMax}).split(0, 2); }) ==
        "integer overflow: 9223372036854775807 - -9223372036854775808 does not fit in int64");
}

TEST_CASE("ZRange tile is a row-major grid of splits", "[zspace][zrange][split]") {
  const ZRange r({0, 10}, {4, 16});
  CHECK(strings(r.tile({2, 3})) == Strings{"zr[0:2, 10:12]", "zr[0:2, 12:14]", "zr[0:2, 14:16]",
                                           "zr[2:4, 10:12]", "zr[2:4, 12:14]", "zr[2:4, 14:16]"});
  CHECK(strings(r.tile({1, 1})) == Strings{"zr[0:4, 10:16]"});
  CHECK(strings(ZRange({0}, {5}).tile({2})) == Strings{"zr[0:3]", "zr[3:5]"});
  CHECK(strings(ZRange().tile({})) == Strings{"zr[]"});
  const std::vector<std::int64_t> parts{3, 1};
  CHECK(strings(ZRange::fromShape({3, 2}).tile(parts)) ==
        Strings{"zr[0:1, 0:2]", "zr[1:2, 0:2]", "zr[2:3, 0:2]"});
  CHECK(errorOf([&] { r.tile({2}); }) ==
        "cannot tile zr[0:4, 10:16] with 1 part counts [2]: expected 2 (one per dim)");
  CHECK(errorOf([&] {
          r.tile({2, 7});
        }) == "cannot split zr[0:4, 10:16] into 7 parts along dim 1: expected 1 to 6 parts (its "
              "extent)");
  CHECK(errorOf([&] {
          r.tile({0, 1});
        }) == "cannot split zr[0:4, 10:16] into 0 parts along dim 0: expected 1 to 4 parts (its "
              "extent)");
}

TEST_CASE("ZRange point iteration is row-major", "[zspace][zrange][points]") {
  const ZRange r({0, 5}, {2, 8});
  const std::vector<ZPoint> expected{{0, 5}, {0, 6}, {0, 7}, {1, 5}, {1, 6}, {1, 7}};
  CHECK(pointsOf(r) == expected);
  std::vector<ZPoint> visited;
  r.forEachPoint([&](const ZPoint& p) { visited.push_back(p); });
  CHECK(visited == expected);
  CHECK(std::distance(r.points().begin(), r.points().end()) == 6);

  auto it = r.points().begin();
  CHECK(*it++ == ZPoint{0, 5});
  CHECK(it->toString() == "[0, 6]");
  CHECK(it != r.points().end());

  CHECK(pointsOf(ZRange()) == std::vector<ZPoint>{ZPoint{}});
  int calls = 0;
  ZRange().forEachPoint([&](const ZPoint& p) {
    CHECK(p.rank() == 0);
    ++calls;
  });
  CHECK(calls == 1);
  CHECK(pointsOf(ZRange({0, 0}, {3, 0})).empty());
  ZRange({0, 0}, {3, 0}).forEachPoint([&](const ZPoint&) { ++calls; });
  CHECK(calls == 1);
  // The last points of int64: stepping stops at end without overflowing.
  CHECK(pointsOf(ZRange({kMax - 2}, {kMax})) == std::vector<ZPoint>{{kMax - 2}, {kMax - 1}});
  visited.clear();
  ZRange({kMax - 1, kMin}, {kMax, kMin + 2}).forEachPoint([&](const ZPoint& p) {
    visited.push_back(p);
  });
  CHECK(visited == std::vector<ZPoint>{{kMax - 1, kMin}, {kMax - 1, kMin + 1}});
  CHECK(pointsOf(ZRange({0, 0, 0}, {2, 2, 2})).size() == 8);
}

// ------------------------------------------------------------- ZMatrix / map

TEST_CASE("ZMatrix construction and access", "[zspace][zmatrix]") {
  const ZMatrix m{{1, 2, 3}, {4, 5, 6}};
  CHECK(m.rows() == 2);
  CHECK(m.cols() == 3);
  CHECK(m(1, 2) == 6);
  CHECK(std::vector<std::int64_t>(m.row(1).begin(), m.row(1).end()) ==
        std::vector<std::int64_t>{4, 5, 6});
  CHECK(m.values().size() == 6);
  CHECK(m.toString() == "[[1, 2, 3], [4, 5, 6]]");
  CHECK(ZMatrix::fromRows({{1, 2, 3}, {4, 5, 6}}) == m);
  CHECK(ZMatrix(2, 3, {1, 2, 3, 4, 5, 6}) == m);
  CHECK(ZMatrix::identity(2) == ZMatrix{{1, 0}, {0, 1}});
  CHECK(ZMatrix::zeros(1, 2) == ZMatrix{{0, 0}});
  CHECK(ZMatrix().rows() == 0);
  CHECK(ZMatrix().cols() == 0);
  CHECK(ZMatrix().toString() == "[]");
  const ZMatrix noRows = ZMatrix::fromRows({}, 3);
  CHECK(noRows.rows() == 0);
  CHECK(noRows.cols() == 3);
  CHECK(noRows == ZMatrix::zeros(0, 3));
  CHECK(noRows != ZMatrix());
  CHECK(noRows.toString() == "[]");
  CHECK(ZMatrix::identity(0) == ZMatrix());

  CHECK(errorOf([] {
          ZMatrix{{1, 2}, {3}};
        }) == "matrix must be rectangular: row 1 has 1 columns, row 0 has 2");
  CHECK(errorOf([] {
          ZMatrix::fromRows({{1}, {2}, {3, 4}});
        }) == "matrix must be rectangular: row 2 has 2 columns, row 0 has 1");
  CHECK(errorOf([] { ZMatrix(2, 2, {1, 2, 3}); }) == "matrix of 2 x 2 needs 4 values, got 3");
  const std::size_t huge = std::size_t{1} << 40;
  CHECK(errorOf([&] { ZMatrix(huge, huge, {}); }) ==
        "matrix of 1099511627776 x 1099511627776 is too large");
  CHECK(errorOf([&] { ZMatrix::zeros(huge, huge); }) ==
        "matrix of 1099511627776 x 1099511627776 is too large");
}

TEST_CASE("ZAffineMap apply and toString", "[zspace][zaffine]") {
  const ZAffineMap m(ZMatrix{{1, 0}, {0, 2}, {1, 2}}, ZPoint{4, 5, 6});
  CHECK(m.inputRank() == 2);
  CHECK(m.outputRank() == 3);
  CHECK(m.apply(ZPoint{1, 1}) == ZPoint{5, 7, 9});
  CHECK(m.apply(ZPoint{-2, 3}) == ZPoint{2, 11, 10});
  CHECK(m.projection() == ZMatrix{{1, 0}, {0, 2}, {1, 2}});
  CHECK(m.offset() == ZPoint{4, 5, 6});
  CHECK(m.toString() == "λx.[[1, 0], [0, 2], [1, 2]]⋅x + [4, 5, 6]");

  const ZAffineMap id = ZAffineMap::identity(2);
  CHECK(id.toString() == "λx.[[1, 0], [0, 1]]⋅x + [0, 0]");
  CHECK(id.apply(ZPoint{7, -8}) == ZPoint{7, -8});
  CHECK(ZAffineMap(ZMatrix{{2, 0}}) == ZAffineMap(ZMatrix{{2, 0}}, ZPoint{0}));
  CHECK(ZAffineMap(ZMatrix{{2, 0}}) != ZAffineMap(ZMatrix{{2, 0}}, ZPoint{1}));

  std::int64_t out[3] = {};
  const std::int64_t x[2] = {1, 1};
  m.applyInto(x, out);
  CHECK(ZPoint(std::span<const std::int64_t>(out)) == ZPoint{5, 7, 9});

  // A map onto rank 0 still knows its input rank.
  const ZAffineMap toScalar(ZMatrix::zeros(0, 3), ZPoint{});
  CHECK(toScalar.inputRank() == 3);
  CHECK(toScalar.outputRank() == 0);
  CHECK(toScalar.apply(ZPoint{1, 2, 3}) == ZPoint{});
  CHECK(toScalar.toString() == "λx.[]⋅x + []");
  const ZAffineMap fromScalar(ZMatrix::zeros(2, 0), ZPoint{3, 4});
  CHECK(fromScalar.apply(ZPoint{}) == ZPoint{3, 4});
}

TEST_CASE("ZAffineMap errors", "[zspace][zaffine]") {
  CHECK(errorOf([] {
          ZAffineMap(ZMatrix{{1, 0}}, ZPoint{0, 0});
        }) == "rank mismatch: projection has 1 rows, offset [0, 0] has 2 dims");
  const ZAffineMap m(ZMatrix{{1, 0}, {0, 1}}, ZPoint{0, 0});
  CHECK(errorOf([&] {
          m.apply(ZPoint{1, 2, 3});
        }) ==
        "rank mismatch: λx.[[1, 0], [0, 1]]⋅x + [0, 0] takes 2 input dims, got [1, 2, 3] with 3");
  std::int64_t out[1] = {};
  const std::int64_t x[2] = {1, 2};
  Failure bug = failureOf([&] { m.applyInto(x, out); });
  CHECK(bug.internal);
}

TEST_CASE("ZAffineMap overflow is exact", "[zspace][zaffine][overflow]") {
  const ZAffineMap twice(ZMatrix{{2}}, ZPoint{0});
  CHECK(twice.apply(ZPoint{kMax / 2}) == ZPoint{kMax - 1});
  CHECK(errorOf([&] { twice.apply(ZPoint{std::int64_t{1} << 62}); }) ==
        "integer overflow: λx.[[2]]⋅x + [0] at x = [4611686018427387904] does not fit in int64 "
        "(output dim 0)");
  const ZAffineMap shifted(ZMatrix{{1}}, ZPoint{1});
  CHECK(errorOf([&] { shifted.apply(ZPoint{kMax}); }) ==
        "integer overflow: λx.[[1]]⋅x + [1] at x = [9223372036854775807] does not fit in int64 "
        "(output dim 0)");
  CHECK(errorOf([] { ZAffineMap(ZMatrix{{-1}}).apply(ZPoint{kMin}); }) ==
        "integer overflow: λx.[[-1]]⋅x + [0] at x = [-9223372036854775808] does not fit in "
        "int64 (output dim 0)");
  // Intermediate sums outside int64 are fine when the result fits.
  const ZAffineMap cancel(ZMatrix{{1, -1}}, ZPoint{1});
  CHECK(cancel.apply(ZPoint{kMax, 1}) == ZPoint{kMax});
  const ZAffineMap squares(ZMatrix{{kMax, -kMax}, {-1, 1}}, ZPoint{0, -1});
  CHECK(squares.apply(ZPoint{kMax, kMax}) == ZPoint{0, -1});
}

// ------------------------------------------------------------------------ IPF

TEST_CASE("IndexProjection maps points and ranges", "[zspace][ipf]") {
  // Loom's matmul-like example: rows and cols of a block plus a diagonal dim.
  const IPF ipf(ZAffineMap(ZMatrix{{1, 0}, {0, 1}, {1, 1}}, ZPoint{10, 20, 30}), ZPoint{4, 4, 1});
  CHECK(ipf.inputRank() == 2);
  CHECK(ipf.outputRank() == 3);
  CHECK(ipf.shape() == ZPoint{4, 4, 1});
  CHECK(ipf.apply(ZPoint{0, 0}) == ZRange({10, 20, 30}, {14, 24, 31}));
  CHECK(ipf.apply(ZPoint{2, 3}) == ZRange({12, 23, 35}, {16, 27, 36}));
  CHECK(ipf.apply(ZRange({0, 0}, {1, 1})) == ipf.apply(ZPoint{0, 0}));
  CHECK(ipf.apply(ZRange({0, 0}, {3, 2})) == ZRange({10, 20, 30}, {16, 25, 34}));
  CHECK(ipf.toString() == "ipf(λx.[[1, 0], [0, 1], [1, 1]]⋅x + [10, 20, 30], shape=[4, 4, 1])");

  // Negative coefficients flip which corner gives the start.
  const IPF flip(ZAffineMap(ZMatrix{{-1}}, ZPoint{10}), ZPoint{1});
  CHECK(flip.apply(ZRange({0}, {4})) == ZRange({7}, {11}));
  CHECK(flip.apply(ZPoint{3}) == ZRange({7}, {8}));
  // Mixed signs in one row: min and max are taken per term.
  const IPF mixed(ZAffineMap(ZMatrix{{2, -3}}, ZPoint{0}), ZPoint{2});
  CHECK(mixed.apply(ZRange({0, 0}, {2, 3})) == ZRange({-6}, {4}));

  const IPF id = IPF::identity(2);
  CHECK(id.apply(ZRange({1, 2}, {5, 7})) == ZRange({1, 2}, {5, 7}));
  CHECK(id.toString() == "ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])");
  // Zero shape: empty regions at the projected corner.
  const IPF flat(ZAffineMap::identity(1), ZPoint{0});
  CHECK(flat.apply(ZPoint{5}) == ZRange({5}, {5}));

  // A rank-0 tensor (e.g. a scalar reduction result) read by every index point.
  const IPF scalar(ZAffineMap(ZMatrix::zeros(0, 2), ZPoint{}), ZPoint{});
  CHECK(scalar.apply(ZRange({0, 0}, {4, 4})) == ZRange());
  CHECK(scalar.apply(ZPoint{1, 1}) == ZRange());
  // A broadcast: the index dim does not move the region.
  const IPF bcast(ZAffineMap(ZMatrix{{0}}, ZPoint{0}), ZPoint{8});
  CHECK(bcast.apply(ZRange({3}, {9})) == ZRange({0}, {8}));
}

TEST_CASE("IndexProjection errors", "[zspace][ipf]") {
  CHECK(errorOf([] { IPF(ZAffineMap::identity(2), ZPoint{1}); }) ==
        "rank mismatch: map λx.[[1, 0], [0, 1]]⋅x + [0, 0] has 2 output dims, shape [1] has 1");
  CHECK(errorOf([] {
          IPF(ZAffineMap::identity(2), ZPoint{1, -1});
        }) == "shape must be non-negative: [1, -1] has -1 in dim 1");
  const IPF id = IPF::identity(1);
  CHECK(errorOf([&] { id.apply(ZRange({3}, {3})); }) ==
        "cannot project the empty index range zr[3:3]: expected a non-empty range");
  CHECK(errorOf([&] {
          id.apply(ZRange({0, 0}, {1, 1}));
        }) ==
        "rank mismatch: ipf(λx.[[1]]⋅x + [0], shape=[1]) takes 1 index dims, got zr[0:1, 0:1] "
        "with 2");
  CHECK(errorOf([&] { id.apply(ZPoint{}); }) ==
        "rank mismatch: ipf(λx.[[1]]⋅x + [0], shape=[1]) takes 1 index dims, got [] with 0");
}

TEST_CASE("IndexProjection overflow is an error, exact at the edges", "[zspace][ipf][overflow]") {
  const IPF id = IPF::identity(1);
  // [kMax - 1, kMax) is fine: its region ends exactly at kMax.
  CHECK(id.apply(ZPoint{kMax - 1}) == ZRange({kMax - 1}, {kMax}));
  CHECK(id.apply(ZRange({kMin}, {kMax})) == ZRange({kMin}, {kMax}));
  CHECK(errorOf([&] { id.apply(ZPoint{kMax}); }) ==
        "integer overflow: projecting [9223372036854775807] through ipf(λx.[[1]]⋅x + [0], "
        "shape=[1]) gives a region outside int64 (output dim 0)");
  const IPF twice(ZAffineMap(ZMatrix{{2}}, ZPoint{0}), ZPoint{1});
  CHECK(errorOf([&] { twice.apply(ZRange({0}, {(std::int64_t{1} << 62) + 1})); }) ==
        "integer overflow: projecting zr[0:4611686018427387905] through ipf(λx.[[2]]⋅x + [0], "
        "shape=[1]) gives a region outside int64 (output dim 0)");
  const IPF neg(ZAffineMap(ZMatrix{{0, -1}}, ZPoint{-3}), ZPoint{1});
  CHECK(errorOf([&] {
          neg.apply(ZRange({0, 0}, {1, kMax}));
        }) ==
        "integer overflow: projecting zr[0:1, 0:9223372036854775807] through ipf(λx.[[0, -1]]⋅x "
        "+ [-3], shape=[1]) gives a region outside int64 (output dim 0)");
  // Terms that cancel: the result fits even though a partial sum would not.
  const IPF cancel(ZAffineMap(ZMatrix{{1, -1}}, ZPoint{1}), ZPoint{0});
  CHECK(cancel.apply(ZPoint{kMax, 1}) == ZRange({kMax}, {kMax}));
  const IPF big(ZAffineMap(ZMatrix{{kMax, kMax, kMax}}, ZPoint{0}), ZPoint{0});
  CHECK(errorOf([&] {
          big.apply(ZPoint{kMax, kMax, kMax});
        }) ==
        "integer overflow: projecting [9223372036854775807, 9223372036854775807, "
        "9223372036854775807] through ipf(λx.[[9223372036854775807, 9223372036854775807, "
        "9223372036854775807]]⋅x + [0], shape=[0]) gives a region outside int64 (output dim 0)");
}

// ----------------------------------------------------------------------- JSON

TEST_CASE("ZSpace JSON encoding", "[zspace][json]") {
  CHECK(toJson(ZPoint{1, -2}).dump() == "[1,-2]");
  CHECK(toJson(ZPoint{}).dump() == "[]");
  CHECK(toJson(ZRange({0, 0}, {10, 5})).dump() == R"({"start":[0,0],"end":[10,5]})");
  CHECK(toJson(ZRange()).dump() == R"({"start":[],"end":[]})");
  CHECK(toJson(ZMatrix{{1, 0}, {0, 1}}).dump() == "[[1,0],[0,1]]");
  CHECK(toJson(ZAffineMap::identity(2)).dump() == R"({"projection":[[1,0],[0,1]],"offset":[0,0]})");
  CHECK(
      toJson(IPF(ZAffineMap(ZMatrix{{1, 0}, {0, 1}, {1, 1}}, ZPoint{10, 20, 30}), ZPoint{4, 4, 1}))
          .dump() == R"({"affineMap":{"projection":[[1,0],[0,1],[1,1]],"offset":[10,20,30]},)"
                     R"("shape":[4,4,1]})");
  // Only a 0-row map needs its input rank spelled out.
  CHECK(toJson(ZAffineMap(ZMatrix::zeros(0, 2), ZPoint{})).dump() ==
        R"({"projection":[],"offset":[],"inputRank":2})");
  CHECK(toJson(ZAffineMap(ZMatrix(), ZPoint{})).dump() == R"({"projection":[],"offset":[]})");
  CHECK(toJson(ZPoint{kMin, kMax}).dump() == "[-9223372036854775808,9223372036854775807]");
}

TEST_CASE("ZSpace JSON round trips", "[zspace][json]") {
  const std::vector<ZPoint> points{{}, {0}, {kMin, kMax, -1}};
  for (const ZPoint& p : points) {
    CHECK(decodeZPoint(json::Value(toJson(p))) == p);
  }
  const std::vector<ZRange> ranges{ZRange(), ZRange({0, 0}, {10, 5}), ZRange({kMin}, {kMax}),
                                   ZRange({3, 3}, {3, 9})};
  for (const ZRange& r : ranges) {
    const Json j = toJson(r);
    CHECK(decodeZRange(json::Value(j)) == r);
  }
  const std::vector<ZAffineMap> maps{
      ZAffineMap::identity(3), ZAffineMap(ZMatrix{{1, -2}, {0, 7}}, ZPoint{-1, 4}),
      ZAffineMap(ZMatrix::zeros(0, 4), ZPoint{}), ZAffineMap(ZMatrix(), ZPoint{}),
      ZAffineMap(ZMatrix::zeros(2, 0), ZPoint{5, 6})};
  for (const ZAffineMap& m : maps) {
    const Json j = toJson(m);
    CHECK(decodeZAffineMap(json::Value(j)) == m);
  }
  const std::vector<IPF> ipfs{IPF::identity(2),
                              IPF(ZAffineMap(ZMatrix{{1, 0}, {0, -1}}, ZPoint{0, 9}), ZPoint{2, 3}),
                              IPF(ZAffineMap(ZMatrix::zeros(0, 3), ZPoint{}), ZPoint{})};
  for (const IPF& ipf : ipfs) {
    const Json j = toJson(ipf);
    CHECK(decodeIndexProjection(json::Value(j)) == ipf);
    CHECK(decodeIndexProjection(json::Value(j), ipf.inputRank()) == ipf);
  }
  const Json matrix = toJson(ZMatrix{{1, 2}, {3, 4}});
  CHECK(decodeZMatrix(json::Value(matrix)) == ZMatrix{{1, 2}, {3, 4}});
}

TEST_CASE("ZSpace JSON decoding defaults", "[zspace][json]") {
  // Loom allows a missing offset (zeros).
  CHECK(decodeText<ZAffineMap>(R"({"projection":[[1,2]]})", [](const json::Value& v) {
          return decodeZAffineMap(v);
        }) == ZAffineMap(ZMatrix{{1, 2}}, ZPoint{0}));
  // A 0-row projection takes its input rank from the caller, else 0 as in Loom.
  const std::string scalar = R"({"affineMap":{"projection":[],"offset":[]},"shape":[]})";
  CHECK(decodeText<IPF>(scalar, [](const json::Value& v) {
          return decodeIndexProjection(v);
        }).inputRank() == 0);
  CHECK(decodeText<IPF>(scalar, [](const json::Value& v) {
          return decodeIndexProjection(v, 3);
        }).inputRank() == 3);
  CHECK(decodeText<ZAffineMap>(R"({"projection":[[1,2]],"offset":[0],"inputRank":2})",
                               [](const json::Value& v) { return decodeZAffineMap(v); }) ==
        ZAffineMap(ZMatrix{{1, 2}}, ZPoint{0}));
  CHECK(decodeText<ZMatrix>("[]", [](const json::Value& v) { return decodeZMatrix(v, 5); }) ==
        ZMatrix::zeros(0, 5));
}

TEST_CASE("ZSpace JSON decoding errors are located", "[zspace][json]") {
  auto point = [](const json::Value& v) { decodeZPoint(v); };
  auto range = [](const json::Value& v) { decodeZRange(v); };
  auto map = [](const json::Value& v) { decodeZAffineMap(v); };
  auto ipf = [](const json::Value& v) { decodeIndexProjection(v); };

  struct Case {
    std::string text;
    std::function<void(const json::Value&)> decode;
    std::string pointer;
    std::string message;
  };
  const std::vector<Case> cases{
      {R"({"a":1})", point, "", "expected an array, got object"},
      {R"([1,"x"])", point, "/1", "expected an integer, got string \"x\""},
      {R"([1,2.5])", point, "/1", "expected an integer"},
      {R"([0,1])", range, "", "expected an object, got array"},
      {R"({"start":[0,0]})", range, "", "missing required key \"end\""},
      {R"({"start":[0],"end":[1],"step":[1]})", range, "/step", "unknown key \"step\""},
      {R"({"start":[0,0],"end":[1,"x"]})", range, "/end/1",
       "expected an integer, got string \"x\""},
      {R"({"start":[0,0],"end":[1,1,1]})", range, "/end",
       "rank mismatch: start has 2 dims, end has 3"},
      {R"({"start":[5],"end":[3]})", range, "/end/0", "start [5] > end [3] in dim 0"},
      {R"({"projection":[[1,0],[0]],"offset":[0,0]})", map, "/projection/1",
       "matrix must be rectangular: row 1 has 1 columns, row 0 has 2"},
      {R"({"projection":[1,0],"offset":[0,0]})", map, "/projection/0",
       "expected an array, got integer"},
      {R"({"projection":[[1,0]],"offset":[0,0]})", map, "/offset",
       "rank mismatch: offset has 2 dims, projection has 1 row"},
      {R"({"projection":[[1,0]],"offset":[0],"bias":[0]})", map, "/bias", "unknown key \"bias\""},
      {R"({"offset":[0]})", map, "", "missing required key \"projection\""},
      {R"({"projection":[[1,0]],"offset":[0],"inputRank":3})", map, "/inputRank",
       "inputRank 3 does not match the projection's 2 columns"},
      {R"({"projection":[],"offset":[],"inputRank":-1})", map, "/inputRank",
       "inputRank must be non-negative, got -1"},
      {R"({"affineMap":{"projection":[[1,0],[0,1]],"offset":[0,0]},"shape":[1]})", ipf, "/shape",
       "rank mismatch: shape has 1 dim, projection has 2 rows"},
      {R"({"affineMap":{"projection":[[1,0]],"offset":[0]},"shape":[-1]})", ipf, "/shape/0",
       "shape must be non-negative, got -1"},
      {R"({"affineMap":{"projection":[[1,0]],"offset":["a"]},"shape":[1]})", ipf,
       "/affineMap/offset/0", "expected an integer, got string \"a\""},
      {R"({"affineMap":{"projection":[[1,0]],"offset":[0]}})", ipf, "",
       "missing required key \"shape\""},
      {R"({"map":{},"shape":[]})", ipf, "/map", "unknown key \"map\""},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const Failure f = decodeFailure(c.text, c.decode);
    CHECK(f.code == ExitCode::InvalidInput);
    CHECK_THAT(f.message, Catch::Contains(c.message));
    CHECK(f.pointer == c.pointer);
  }
}

TEST_CASE("ZSpace JSON decoding checks the expected input rank", "[zspace][json]") {
  const Failure wide =
      decodeFailure(R"({"affineMap":{"projection":[[1,0]],"offset":[0]},"shape":[1]})",
                    [](const json::Value& v) { decodeIndexProjection(v, 3); });
  CHECK(wide.pointer == "/affineMap/projection");
  CHECK_THAT(wide.message,
             Catch::Contains("rank mismatch: the map takes 2 dims, expected 3 (the index rank)"));
  const Failure declared = decodeFailure(R"({"projection":[],"offset":[],"inputRank":2})",
                                         [](const json::Value& v) { decodeZAffineMap(v, 1); });
  CHECK(declared.pointer == "/inputRank");
  CHECK_THAT(declared.message,
             Catch::Contains("rank mismatch: the map takes 2 dims, expected 1 (the index rank)"));
}

TEST_CASE("ZSpace JSON errors from a file name the file, line and column", "[zspace][json]") {
  const std::string text = "{\n  \"start\": [0, 0],\n  \"end\": [1, \"x\"]\n}\n";
  const Failure f = failureOf([&] {
    const json::Document doc = json::Document::parse(SourceFile("r.json", text));
    decodeZRange(json::Value(doc));
  });
  CHECK_THAT(f.what, Catch::Contains("r.json:3:14"));
  CHECK_THAT(f.what, Catch::Contains("expected an integer, got string \"x\""));

  const std::string bad = "{\"start\": [5],\n \"end\": [3]}";
  const Failure g = failureOf([&] {
    const json::Document doc = json::Document::parse(SourceFile("r.json", bad));
    decodeZRange(json::Value(doc));
  });
  CHECK_THAT(g.what, Catch::Contains("r.json:2:10"));
  CHECK_THAT(g.what, Catch::Contains("start [5] > end [3] in dim 0"));
}

// ------------------------------------------------------------------ properties

TEST_CASE("Property: projecting a range = bounding box of its points' regions",
          "[zspace][ipf][property]") {
  std::mt19937_64 rng(20240517);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 500; ++trial) {
    const std::size_t in = static_cast<std::size_t>(uniform(1, 3));
    const std::size_t out = static_cast<std::size_t>(uniform(0, 3));
    std::vector<std::int64_t> values;
    for (std::size_t i = 0; i < in * out; ++i) {
      values.push_back(uniform(-3, 3));
    }
    std::vector<std::int64_t> offset;
    std::vector<std::int64_t> shape;
    for (std::size_t d = 0; d < out; ++d) {
      offset.push_back(uniform(-10, 10));
      shape.push_back(uniform(0, 3));
    }
    std::vector<std::int64_t> start;
    std::vector<std::int64_t> end;
    for (std::size_t k = 0; k < in; ++k) {
      start.push_back(uniform(-5, 5));
      end.push_back(start.back() + uniform(1, 4));
    }
    const IPF ipf(ZAffineMap(ZMatrix(out, in, values), ZPoint(offset)), ZPoint(shape));
    const ZRange index{ZPoint(start), ZPoint(end)};
    INFO(ipf.toString() << " on " << index.toString());

    // The min start and max end over the regions of every point.
    std::vector<std::int64_t> lo(out, kMax);
    std::vector<std::int64_t> hi(out, kMin);
    std::vector<ZRange> regions;
    index.forEachPoint([&](const ZPoint& i) {
      const ZRange region = ipf.apply(i);
      CHECK(region.start() == ipf.map().apply(i));
      for (std::size_t d = 0; d < out; ++d) {
        lo[d] = std::min(lo[d], region.start()[d]);
        hi[d] = std::max(hi[d], region.end()[d]);
      }
      regions.push_back(region);
    });
    const ZRange projected = ipf.apply(index);
    CHECK(projected == ZRange(ZPoint(lo), ZPoint(hi)));
    for (const ZRange& region : regions) {
      CHECK(projected.contains(region));
    }
    if (std::all_of(shape.begin(), shape.end(), [](std::int64_t s) { return s > 0; })) {
      CHECK(projected == ZRange::boundingRange(regions));
    }
  }
}

TEST_CASE("Property: split and tile partition a range exactly", "[zspace][zrange][property]") {
  std::mt19937_64 rng(7);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto checkPartition = [](const ZRange& whole, const std::vector<ZRange>& parts) {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      CHECK_FALSE(parts[i].isEmpty());
      CHECK(whole.contains(parts[i]));
      total += parts[i].size();
      for (std::size_t j = i + 1; j < parts.size(); ++j) {
        CHECK_FALSE(parts[i].intersects(parts[j]));
      }
    }
    CHECK(total == whole.size());
    CHECK(ZRange::boundingRange(parts) == whole);
    // Every point lies in exactly one part.
    whole.forEachPoint([&](const ZPoint& p) {
      CHECK(std::count_if(parts.begin(), parts.end(),
                          [&](const ZRange& r) { return r.contains(p); }) == 1);
    });
  };
  // Extents along `dim` are near-equal, larger first.
  auto checkExtents = [](const std::vector<ZRange>& parts, std::size_t dim) {
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      const std::int64_t a = parts[i].extent(dim);
      const std::int64_t b = parts[i + 1].extent(dim);
      CHECK((a == b || a == b + 1));
    }
  };
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t rank = static_cast<std::size_t>(uniform(1, 3));
    std::vector<std::int64_t> start;
    std::vector<std::int64_t> end;
    for (std::size_t d = 0; d < rank; ++d) {
      start.push_back(uniform(-20, 20));
      end.push_back(start.back() + uniform(1, 9));
    }
    const ZRange whole{ZPoint(start), ZPoint(end)};
    INFO(whole.toString());

    const std::size_t dim =
        static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(rank) - 1));
    const std::int64_t n = uniform(1, whole.extent(dim));
    const std::vector<ZRange> parts = whole.split(dim, n);
    CHECK(parts.size() == static_cast<std::size_t>(n));
    checkPartition(whole, parts);
    checkExtents(parts, dim);
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      CHECK(parts[i].end()[dim] == parts[i + 1].start()[dim]); // contiguous, in order
    }

    std::vector<std::int64_t> grid;
    std::int64_t cells = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      grid.push_back(uniform(1, whole.extent(d)));
      cells *= grid.back();
    }
    const std::vector<ZRange> tiles = whole.tile(grid);
    CHECK(tiles.size() == static_cast<std::size_t>(cells));
    checkPartition(whole, tiles);
    CHECK(std::is_sorted(tiles.begin(), tiles.end())); // row-major = lexicographic starts
    // Each grid line is the split of the whole along that dim.
    for (std::size_t d = 0; d < rank; ++d) {
      const std::vector<ZRange> line = whole.split(d, grid[d]);
      for (const ZRange& t : tiles) {
        CHECK(std::count_if(line.begin(), line.end(), [&](const ZRange& s) {
                return s.start()[d] == t.start()[d] && s.end()[d] == t.end()[d];
              }) == 1);
      }
    }
  }
}

// A box cut along one dim reads contiguous blocks of its region only where
// every dim laid out outside the cut has extent 1 and every dim inside spans
// the region: the rule the CPU executor cuts convolution inputs by and the
// plan builder prices their copies by (core/zspace/layout.hpp).
TEST_CASE("layouts: strides, and which cuts stay blocks", "[zspace][layout]") {
  using V = std::vector<std::int64_t>;
  CHECK(rowMajorStrides(V{2, 3, 4}) == V{12, 4, 1});
  CHECK(rowMajorStrides(V{}).empty());
  CHECK(rowMajorStrides(V{3, 0, 2}) == V{2, 2, 1}); // empty dims count as 1
  CHECK(channelsLastStrides(V{2, 3, 4, 5}) == V{60, 1, 15, 3});
  CHECK_THROWS_AS(channelsLastStrides(V{2, 3}), InternalError);
  const std::array<std::int64_t, 4> shape = {2, 3, 4, 5};
  CHECK(channelsLastStrides4(shape) == std::array<std::int64_t, 4>{60, 1, 15, 3});

  // [N, C, H, W] = [2, 8, 6, 6] channels last: memory order N, H, W, C.
  const V region = {2, 8, 6, 6};
  const V last = channelsLastStrides(region);
  // Rows of one image, every column and channel: cut along H, blocks.
  CHECK(blockAlong(V{1, 8, 3, 6}, region, last, 2));
  // A column half of one image: cut along W, H lies outside W with extent 3.
  CHECK_FALSE(blockAlong(V{1, 8, 3, 3}, region, last, 3));
  // Columns of a single row are a block.
  CHECK(blockAlong(V{1, 8, 1, 3}, region, last, 3));
  // Half the channels: C is innermost, so no cut leaves blocks.
  CHECK_FALSE(blockAlong(V{1, 4, 6, 6}, region, last, 2));
  // Both images whole along H: N lies outside H with extent 2.
  CHECK_FALSE(blockAlong(V{2, 8, 3, 6}, region, last, 2));
  // Cut along N: everything inside spans the region.
  CHECK(blockAlong(V{1, 8, 6, 6}, region, last, 0));
  // Row-major [N, C, H, W]: rows of one channel of one image are blocks.
  const V rows = rowMajorStrides(region);
  CHECK(blockAlong(V{1, 1, 3, 6}, region, rows, 2));
  CHECK_FALSE(blockAlong(V{1, 2, 3, 6}, region, rows, 2));
  // Dims of extent 1 in the region never matter.
  CHECK(blockAlong(V{1, 8, 3, 1}, V{1, 8, 6, 1}, channelsLastStrides(V{1, 8, 6, 1}), 2));
}
