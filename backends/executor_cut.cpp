// Cutting a shard into kernel calls where its input selections span several
// regions on its device (see cutShard).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/executor_internal.hpp"
#include "core/diag/error.hpp"
#include "core/zspace/layout.hpp"

namespace tapestry::backend::detail {

// Index dims along which a shard can be cut into pieces that run as separate
// kernel calls writing disjoint parts of its output tiles: not a reduction
// dim, and every output IPF row that mentions the dim mentions nothing else,
// with a tile no longer than its step (so neighbouring pieces write disjoint
// rows). Input rows may mix the dim with others (a convolution's oh·s + kh).
std::vector<char> separableDims(const graph::Operation& op) {
  const metakernel::Application& app = op.application;
  std::vector<char> ok(app.index.rank(), 1);
  for (std::size_t d : app.reductionDims) {
    ok[d] = 0;
  }
  for (const metakernel::PortResult& port : app.outputs) {
    for (const IndexProjection& ipf : port.ipfs) {
      const ZMatrix& m = ipf.map().projection();
      for (std::size_t r = 0; r < m.rows(); ++r) {
        std::size_t terms = 0;
        for (std::size_t c = 0; c < m.cols(); ++c) {
          terms += m(r, c) != 0 ? 1 : 0;
        }
        for (std::size_t c = 0; c < m.cols(); ++c) {
          const std::int64_t coef = m(r, c);
          if (coef != 0 && (terms > 1 || ipf.shape()[r] > (coef < 0 ? -coef : coef))) {
            ok[c] = 0;
          }
        }
      }
    }
  }
  return ok;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// The regions (slots) among `reads` holding parts of `range` of `tensor`, and
// the first that holds all of it (kNone when none does).
u32 findParts(const std::vector<Slot>& slots, const std::vector<u32>& reads, std::size_t tensor,
              const ZRange& range, std::vector<u32>* parts) {
  u32 covering = kNone;
  for (u32 s : reads) {
    const Slot& slot = slots[s];
    if (slot.tensor != tensor || !slot.region.intersects(range)) {
      continue;
    }
    if (parts != nullptr) {
      parts->push_back(s);
    }
    if (covering == kNone && slot.region.contains(range)) {
      covering = s;
    }
  }
  return covering;
}

// Whether the parts' regions tile `range` exactly: pairwise disjoint within
// it, together as large as it (so copying them in leaves no point unwritten).
bool coversExactly(const std::vector<Slot>& slots, const std::vector<u32>& parts,
                   const ZRange& range) {
  std::int64_t covered = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const ZRange mine = slots[parts[i]].region.intersection(range);
    for (std::size_t j = 0; j < i; ++j) {
      if (mine.intersects(slots[parts[j]].region)) {
        return false;
      }
    }
    covered += mine.size();
  }
  return covered == range.size();
}

// Whether the part of `range` cut along dim d stays one contiguous block of
// `slot`'s memory: every dim laid out outside d has extent 1 in it, every dim
// inside d spans the whole region. A convolution or a pool reads such a block
// as it is; any other box of a channels-last region (a column half) it first
// copies into its own layout, whole, on every call.
bool blockAlong(const Slot& slot, const ZRange& range, std::size_t d) {
  const ZRange& region = slot.region;
  const std::vector<std::int64_t> shape = region.shape().vector();
  const std::vector<std::int64_t> strides =
      slot.channelsLast ? channelsLastStrides(shape) : rowMajorStrides(shape);
  std::vector<std::int64_t> extents(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) {
    extents[k] =
        std::min(range.end()[k], region.end()[k]) - std::max(range.start()[k], region.start()[k]);
  }
  return tapestry::blockAlong(extents, shape, strides, d);
}

// Cuts a shard's index range so that, where an input selection spans several
// regions on the device, most of it reads each region in place. An input row
// c·i_j + (other terms) + o with c > 0 and one separable dim j maps a region
// boundary b inside the selection back to two cuts of i_j: below the first,
// every point's window (the other terms over the shard's range, and the
// IPF's tile) lies below b; from the second on, at or above it. A piece
// between them (a convolution's halo rows) still spans both regions and is
// assembled, but only its few rows. Such windowed cuts are made only where
// each piece reads a contiguous block of its region (blockAlong: a
// channels-last tensor's rows, not its columns); otherwise the whole
// selection is assembled, a copy the kernel would make anyway. Pieces are the
// grid of the cuts (just the range when nothing needs cutting).
std::vector<ZRange> cutShard(const graph::Operation& op, const plan::Shard& shard,
                             const std::vector<Slot>& slots, const std::vector<u32>& reads,
                             const std::vector<char>& separable) {
  const ZRange& index = shard.index;
  const std::size_t rank = index.rank();
  std::vector<std::vector<std::int64_t>> cuts(rank);
  bool any = false;
  auto addCut = [&](std::size_t col, std::int64_t cut) {
    if (cut > index.start()[col] && cut < index.end()[col]) {
      cuts[col].push_back(cut);
      any = true;
    }
  };
  for (std::size_t port = 0; port < op.inputs.size(); ++port) {
    for (std::size_t e = 0; e < shard.inputs[port].size(); ++e) {
      const plan::Selection& sel = shard.inputs[port][e];
      std::vector<u32> parts;
      if (sel.range.isEmpty() || findParts(slots, reads, sel.tensor, sel.range, &parts) != kNone) {
        continue;
      }
      const IndexProjection& ipf = op.application.inputs[port].ipfs[e];
      const ZMatrix& m = ipf.map().projection();
      for (std::size_t d = 0; d < sel.range.rank(); ++d) {
        // The row's one separable term, and the span of the others over the shard.
        std::size_t col = 0;
        std::size_t cuttable = 0;
        std::int64_t low = 0;
        std::int64_t high = 0;
        for (std::size_t c = 0; c < m.cols(); ++c) {
          const std::int64_t a = m(d, c);
          if (a == 0) {
            continue;
          }
          if (separable[c] != 0) {
            col = c;
            ++cuttable;
            continue;
          }
          const std::int64_t first = a * index.start()[c];
          const std::int64_t last = a * (index.end()[c] - 1);
          low += std::min(first, last);
          high += std::max(first, last);
        }
        if (cuttable != 1 || m(d, col) <= 0) {
          continue;
        }
        const std::int64_t step = m(d, col);
        const std::int64_t o = ipf.map().offset()[d];
        const std::int64_t tile = ipf.shape()[d];
        const bool windowed = high != low || tile != 1;
        if (windowed && !std::all_of(parts.begin(), parts.end(),
                                     [&](u32 s) { return blockAlong(slots[s], sel.range, d); })) {
          continue;
        }
        for (u32 s : parts) {
          const ZRange& region = slots[s].region;
          for (std::int64_t b : {region.start()[d], region.end()[d]}) {
            if (b <= sel.range.start()[d] || b >= sel.range.end()[d]) {
              continue;
            }
            // Points with step·i + o + high + tile - 1 < b read only below b;
            // points with step·i + o + low >= b only at or above it.
            addCut(col, ceilDiv(b - o - high - tile + 1, step));
            addCut(col, ceilDiv(b - o - low, step));
          }
        }
      }
    }
  }
  if (!any) {
    return {index};
  }
  std::vector<std::vector<std::int64_t>> bounds(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    bounds[d] = cuts[d];
    bounds[d].push_back(index.start()[d]);
    bounds[d].push_back(index.end()[d]);
    std::sort(bounds[d].begin(), bounds[d].end());
    bounds[d].erase(std::unique(bounds[d].begin(), bounds[d].end()), bounds[d].end());
  }
  std::vector<ZRange> pieces;
  std::vector<std::size_t> at(rank, 0);
  while (true) {
    std::vector<std::int64_t> lo(rank);
    std::vector<std::int64_t> hi(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      lo[d] = bounds[d][at[d]];
      hi[d] = bounds[d][at[d] + 1];
    }
    pieces.emplace_back(ZPoint(std::move(lo)), ZPoint(std::move(hi)));
    std::size_t d = rank;
    while (d > 0) {
      --d;
      if (++at[d] + 1 < bounds[d].size()) {
        break;
      }
      at[d] = 0;
      if (d == 0) {
        return pieces;
      }
    }
    if (rank == 0) {
      return pieces;
    }
  }
}

} // namespace tapestry::backend::detail
