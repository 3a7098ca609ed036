// What the conv2d kernels (conv.cpp, conv_panels.cpp) read off a shard: the
// window geometry, the shard's box of the index space, its input selection,
// whether it adds the bias. Not a public header.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "backends/backend.hpp"
#include "backends/cpu/conv_epilogue.hpp"
#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

// The window geometry the conv2d template binds: stride, padding and dilation
// (height, width), and the input's H and W.
struct ConvGeometry {
  std::int64_t sh, sw, ph, pw, dh, dw, H, W;
};

inline ConvGeometry convGeometry(const graph::Operation& op) {
  return {intBinding(op, "sh"), intBinding(op, "sw"), intBinding(op, "ph"), intBinding(op, "pw"),
          intBinding(op, "dh"), intBinding(op, "dw"), intBinding(op, "H"),  intBinding(op, "W")};
}

// The shard's index range in conv2d's terms [N, O, OH, OW, C, KH, KW]: first
// point and extent.
struct Box {
  std::int64_t n0, N, o0, O, oh0, OH, ow0, OW, c0, C, kh0, KH, kw0, KW;
};

inline Box boxOf(const ZRange& index) {
  const ZPoint& s = index.start();
  const ZPoint& e = index.end();
  return {s[0], e[0] - s[0], s[1], e[1] - s[1], s[2], e[2] - s[2], s[3], e[3] - s[3],
          s[4], e[4] - s[4], s[5], e[5] - s[5], s[6], e[6] - s[6]};
}

// Which input channels output channel o reads: (o div og)*gmul + c for c in
// [0, C/groups). conv2d's groups == 1 is gmul 0 (every channel), its
// depthwise style og 1 and gmul C/groups; conv2d_grouped's og = O/groups and
// gmul = C/groups.
struct ConvGroups {
  std::int64_t gmul = 0, og = 1;
  std::int64_t base(std::int64_t o) const { return o / og * gmul; }
  bool grouped() const { return gmul != 0; }
};

// conv2d_grouped and conv2d_grouped_act: index [N, G, OH, OW, KH, KW].
inline bool groupedIndex(const graph::Operation& op) {
  return op.kernel == "conv2d_grouped" || op.kernel == "conv2d_grouped_act";
}

inline ConvGroups convGroups(const graph::Operation& op) {
  if (groupedIndex(op)) {
    return {intBinding(op, "CG"), intBinding(op, "OG")};
  }
  return {intBinding(op, "gmul"), 1};
}

// The shard's box in conv2d's terms. conv2d_grouped's index [N, G, OH, OW, KH,
// KW] holds whole groups (each point a group's OG x CG block): its output
// channels are OG*g0 to OG*g1 - 1, and c runs over one group's CG.
inline Box boxOf(const KernelCall& call) {
  if (!groupedIndex(call.op)) {
    return boxOf(call.index);
  }
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  const std::int64_t og = intBinding(call.op, "OG");
  return {s[0], e[0] - s[0], og * s[1], og * (e[1] - s[1]),        s[2], e[2] - s[2],
          s[3], e[3] - s[3], 0,         intBinding(call.op, "CG"), s[4], e[4] - s[4],
          s[5], e[5] - s[5]};
}

inline OutputBox outputBox(const Box& b) {
  return {{b.n0, b.o0, b.oh0, b.ow0}, {b.N, b.O, b.OH, b.OW}};
}

// The shard adds bias: the operation has one, and the shard's reduction range
// starts at 0 in C, KH and KW.
inline bool addsBias(const KernelCall& call, const Box& b) {
  return call.inputs.size() > 2 && !call.inputs[2].empty() && b.c0 == 0 && b.kh0 == 0 && b.kw0 == 0;
}

// The shard's input selection (empty: it sees only padding).
inline ZRange inputSelection(const KernelCall& call) {
  return selection(inputIpf(call, 0), call.index, call.op.application.inputs[0].tensors[0].shape);
}

// The element offset of tensor point p in a view (regions are fixed between
// runs, so kernels work it out once).
inline std::int64_t offsetIn(const TensorView& view, std::initializer_list<std::int64_t> p) {
  return view.offsetOf(std::span<const std::int64_t>(p.begin(), p.size()));
}

} // namespace tapestry::backend::cpu
