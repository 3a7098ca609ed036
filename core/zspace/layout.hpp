// Dense layouts of a box in memory: the strides of a row-major box and of an
// image box kept channels last, and which cuts of a box inside such a region
// stay contiguous blocks of it. The CPU executor lays out and cuts regions by
// these rules; the plan builder prices the copies they imply (Shard::assembled)
// by the same ones.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tapestry {

// Row-major strides (in elements) of a dense box of the given shape.
std::vector<std::int64_t> rowMajorStrides(std::span<const std::int64_t> shape);
// The strides of a dense 4-d box [N, C, H, W] laid out channels last (nhwc:
// C innermost, then W, H, N). InternalError for another rank.
std::vector<std::int64_t> channelsLastStrides(std::span<const std::int64_t> shape);
// The same without allocating.
std::array<std::int64_t, 4> channelsLastStrides4(std::span<const std::int64_t, 4> shape);

// Whether a box of `extents` inside a region of `shape` laid out with
// `strides`, cut into pieces along dim `d`, leaves each piece one contiguous
// block of the region: every dim laid out outside d has extent 1 in the box,
// every dim inside d spans the region (dims of extent 1 in the region aside).
// Where a dim of extent 1 makes two strides equal (a region one column wide
// cut along its columns), the dim of the equal stride counts as inside: the
// rule may then miss a block, never call a non-block one.
bool blockAlong(std::span<const std::int64_t> extents, std::span<const std::int64_t> shape,
                std::span<const std::int64_t> strides, std::size_t d);

} // namespace tapestry
