// ONNX's windowed operators: Conv, ConvTranspose, MaxPool, AveragePool and
// GlobalAveragePool as conv2d and the pools of metakernels/pool.yaml, with
// their attributes resolved into the kernels' symmetric padding (what one side
// has beyond it padded onto the input first); a 1-D operator over [N, C, L]
// runs as the 2-D one of height 1 between two reshapes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/onnx/ops_util.hpp"

namespace tapestry::onnx_import::detail {

namespace {

std::string formatPads(const Shape& pads) {
  std::string s = "[";
  for (std::size_t i = 0; i < pads.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(pads[i]);
  }
  return s + "]";
}

// The padding of pads/auto_pad per spatial dim (the last kernel.size() dims
// of `in`): [begin..., end...], as ONNX lists it. SAME_UPPER puts the odd
// element at the end, SAME_LOWER at the beginning.
Shape padsOf(Emitter& e, const NodeProto& node, const Shape& in, const Shape& kernel,
             const Shape& stride, const Shape& dilation) {
  const std::size_t n = kernel.size();
  const std::size_t first = in.size() - n;
  const std::string autoPad = stringAttribute(node, "auto_pad", "NOTSET");
  Shape pads = intsAttribute(node, "pads");
  if (autoPad == "VALID") {
    pads.assign(2 * n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    pads.assign(2 * n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t out = (in[first + i] + stride[i] - 1) / stride[i];
      const std::int64_t total = std::max<std::int64_t>(
          0, (out - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1 - in[first + i]);
      const std::int64_t small = total / 2;
      pads[i] = autoPad == "SAME_LOWER" ? total - small : small;
      pads[i + n] = total - pads[i];
    }
  }
  if (pads.empty()) {
    pads.assign(2 * n, 0);
  }
  if (pads.size() != 2 * n || *std::min_element(pads.begin(), pads.end()) < 0) {
    e.fail(node, "pads " + formatPads(pads) + " must be " + std::to_string(2 * n) +
                     " numbers of at least 0 (the beginnings, then the ends)");
  }
  return pads;
}

// Kernel, stride and dilation attributes of a 2-D window (Conv, pools); a
// 1-D window over [N, C, L] as the 2-D one of height 1 over [N, C, 1, L].
// The kernels pad both sides alike (`padding`); what a side has beyond that
// (asymmetric pads, as TensorFlow's SAME padding exports) is `before` and
// `after`, per dim, which the input is padded with first.
struct Window {
  Shape kernel, stride, dilation, padding;
  Shape before, after;
  bool asymmetric() const {
    return *std::max_element(before.begin(), before.end()) > 0 ||
           *std::max_element(after.begin(), after.end()) > 0;
  }
};

Window window(Emitter& e, const NodeProto& node, const Shape& in, Shape kernel) {
  const std::size_t n = kernel.size();
  if (!((in.size() == 4 && n == 2) || (in.size() == 3 && n == 1))) {
    e.fail(node, "only 1-D and 2-D windows over [N, C, L] and [N, C, H, W] inputs are supported");
  }
  Window w;
  w.kernel = std::move(kernel);
  w.stride = intsAttribute(node, "strides");
  w.dilation = intsAttribute(node, "dilations");
  if (w.stride.empty())
    w.stride = Shape(n, 1);
  if (w.dilation.empty())
    w.dilation = Shape(n, 1);
  for (const Shape* v : {&w.kernel, &w.stride, &w.dilation}) {
    if (v->size() != n || *std::min_element(v->begin(), v->end()) < 1) {
      e.fail(node, "kernel_shape, strides and dilations must be " + std::to_string(n) +
                       " positive number" + (n == 1 ? "" : "s") + " each");
    }
  }
  const Shape pads = padsOf(e, node, in, w.kernel, w.stride, w.dilation);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t both = std::min(pads[i], pads[i + n]);
    w.padding.push_back(both);
    w.before.push_back(pads[i] - both);
    w.after.push_back(pads[i + n] - both);
  }
  if (n == 1) { // height 1: one row, no stride, dilation or padding along it
    for (Shape* v : {&w.kernel, &w.stride, &w.dilation}) {
      v->insert(v->begin(), 1);
    }
    for (Shape* v : {&w.padding, &w.before, &w.after}) {
      v->insert(v->begin(), 0);
    }
  }
  return w;
}

// `image` [N, C, H, W] with w.before / w.after more rows and columns of
// `value` (zeros for a convolution, -infinity for a max pool) on either side:
// constant blocks concatenated to it, as the Pad operator's constant mode.
std::string padAsymmetric(Emitter& e, const NodeProto& node, std::string image, Shape shape,
                          const Window& w, double value) {
  const int type = e.typeOf(node.input(0));
  if (!isFoldable(type)) {
    e.fail(node, "its pads are not symmetric, and tapestry pads a " + dtypeName(type) +
                     " input with constants it cannot make");
  }
  for (std::size_t d = 0; d < 2; ++d) {
    if (w.before[d] == 0 && w.after[d] == 0) {
      continue;
    }
    const std::size_t axis = d + 2;
    const std::string tag = d == 0 ? "pad_rows" : "pad_columns";
    auto block = [&](std::int64_t width, const char* side) {
      return constantBlock(e, node.name() + "/" + tag + "_" + side, type, shape, axis, width,
                           value);
    };
    Json tensors = Json::array();
    if (w.before[d] > 0) {
      tensors.push_back(block(w.before[d], "before"));
    }
    tensors.push_back(image);
    if (w.after[d] > 0) {
      tensors.push_back(block(w.after[d], "after"));
    }
    image = e.tempName(node, tag);
    e.emit(e.opName(node, tag), "concat", Json{{"axis", static_cast<std::int64_t>(axis)}},
           Json{{"tensors", tensors}}, Json{{"result", image}});
    shape[axis] += w.before[d] + w.after[d];
  }
  return image;
}

// The [N, C, H, W] shape of a 1-D ([N, C, L] -> [N, C, 1, L]) or 2-D input.
Shape imageShape(const Shape& in) {
  return in.size() == 3 ? Shape{in[0], in[1], 1, in[2]} : in;
}

// A 1-D Conv's or pool's [N, C, L] input as [N, C, 1, L] (a reshape), or the
// tensor as it is for 2-D.
std::string asImage(Emitter& e, const NodeProto& node, const Shape& in, const std::string& name,
                    const std::string& what) {
  const std::string used = e.use(name);
  if (in.size() != 3) {
    return used;
  }
  const std::string image = e.tempName(node, what);
  e.emit(e.opName(node, what), "reshape", Json{{"shape", intsJson({in[0], in[1], 1, in[2]})}},
         Json{{"input", used}}, Json{{"result", image}});
  return image;
}

// Emits `kernel` on the [N, C, 1, L] image of a 1-D node's input and
// reshapes its [N, O, 1, L'] result to the node's [N, O, L'] output; a 2-D
// node's kernel writes the output directly.
void emitWindowed(Emitter& e, const NodeProto& node, const Shape& in, const std::string& kernel,
                  Json params, Json inputs) {
  if (in.size() != 3) {
    e.emit(e.opName(node, ""), kernel, std::move(params), std::move(inputs), result(node));
    return;
  }
  const std::string image = e.tempName(node, "result_2d");
  e.emit(e.opName(node, ""), kernel, std::move(params), std::move(inputs), Json{{"result", image}});
  e.emit(e.opName(node, "result_1d"), "reshape",
         Json{{"shape", intsJson(e.shapeOf(node, node.output(0)))}}, Json{{"input", image}},
         result(node));
}

// conv2d of `image` by `weight` ([O, C/groups, KH, KW]) with the given
// stride, padding and dilation (groups when not 1; conv2d_grouped where groups
// is neither 1 nor O), the node's bias B on its optional `bias` port ([O]):
// what Conv and ConvTranspose end in.
void emitConv2d(Emitter& e, const NodeProto& node, const Shape& in, const std::string& image,
                const std::string& weight, const Shape& stride, const Shape& padding,
                const Shape& dilation, std::int64_t groups, std::int64_t outChannels) {
  Json params{{"stride", intsJson(stride)},
              {"padding", intsJson(padding)},
              {"dilation", intsJson(dilation)}};
  if (groups != 1) {
    params["groups"] = groups;
  }
  Json inputs{{"input", image}, {"weight", weight}};
  if (hasInput(node, 2)) {
    inputs["bias"] = e.use(node.input(2));
  }
  const bool grouped = groups != 1 && groups != outChannels;
  emitWindowed(e, node, in, grouped ? "conv2d_grouped" : "conv2d", params, inputs);
}

} // namespace

void conv(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const Shape weight = e.shapeOf(node, node.input(1));
  if (!(in.size() == 4 && weight.size() == 4) && !(in.size() == 3 && weight.size() == 3)) {
    e.fail(node, "only 1-D and 2-D convolutions ([N, C, L] input and [O, C, K] weight, or "
                 "[N, C, H, W] and [O, C, KH, KW]) are supported");
  }
  Shape kernel = intsAttribute(node, "kernel_shape");
  if (kernel.empty() && weight.size() >= 2) {
    kernel.assign(weight.begin() + 2, weight.end());
  }
  const Window w = window(e, node, in, kernel);
  const std::int64_t groups = intAttribute(node, "group", 1);
  if (groups < 1 || weight[0] % groups != 0 || in[1] != groups * weight[1]) {
    e.fail(node, "group " + std::to_string(groups) + " does not divide the weight's " +
                     std::to_string(weight[0]) + " output channels, or the input's " +
                     std::to_string(in[1]) + " channels are not group x the weight's " +
                     std::to_string(weight[1]));
  }
  std::string w4;
  if (weight.size() == 4) {
    w4 = e.use(node.input(1));
  } else { // [O, C, K] as [O, C, 1, K]: a constant reshaped here
    const Shape image = {weight[0], weight[1], 1, weight[2]};
    if (const Constant* c = e.constant(node.input(1))) {
      Constant reshaped = *c;
      reshaped.shape = image;
      w4 = e.addConstant(e.resolve(node.input(1)) + "/2d", std::move(reshaped));
    } else {
      w4 = e.tempName(node, "weight_2d");
      e.emit(e.opName(node, "weight_2d"), "reshape", Json{{"shape", intsJson(image)}},
             Json{{"input", e.use(node.input(1))}}, Json{{"result", w4}});
    }
  }
  std::string image = asImage(e, node, in, node.input(0), "input_2d");
  if (w.asymmetric()) {
    image = padAsymmetric(e, node, image, imageShape(in), w, 0.0);
  }
  emitConv2d(e, node, in, image, w4, w.stride, w.padding, w.dilation, groups, weight[0]);
}

namespace {

// The largest kernel, stride, dilation, stride cell and padding a
// ConvTranspose may have (import refuses rather than allocate beyond).
inline constexpr std::int64_t kMaxTransposedWindow = 1 << 16;

// A ConvTranspose's spatial attributes, lifted to 2-D ([1, ...] / [0, ...]
// for a 1-D one) and its pads resolved: output_shape and auto_pad as ONNX's
// reference computes them (floor halves; SAME_UPPER puts the odd element at
// the end), else pads.
struct TransposedWindow {
  Shape kernel, stride, dilation, outputPadding, begin, end;
};

TransposedWindow transposedWindow(Emitter& e, const NodeProto& node, const Shape& image,
                                  const Shape& weight4, std::size_t n) {
  TransposedWindow t;
  Shape kernel = intsAttribute(node, "kernel_shape");
  t.kernel = kernel.empty() ? Shape(weight4.end() - static_cast<std::ptrdiff_t>(n), weight4.end())
                            : kernel;
  t.stride = intsAttribute(node, "strides");
  t.dilation = intsAttribute(node, "dilations");
  t.outputPadding = intsAttribute(node, "output_padding");
  for (Shape* v : {&t.stride, &t.dilation}) {
    if (v->empty())
      v->assign(n, 1);
  }
  if (t.outputPadding.empty())
    t.outputPadding.assign(n, 0);
  for (const Shape* v : {&t.kernel, &t.stride, &t.dilation}) {
    if (v->size() != n || *std::min_element(v->begin(), v->end()) < 1 ||
        *std::max_element(v->begin(), v->end()) > kMaxTransposedWindow) {
      e.fail(node, "kernel_shape, strides and dilations must be " + std::to_string(n) + " number" +
                       (n == 1 ? "" : "s") + " each, from 1 to " +
                       std::to_string(kMaxTransposedWindow));
    }
  }
  if (!kernel.empty() &&
      !std::equal(kernel.begin(), kernel.end(), weight4.end() - static_cast<std::ptrdiff_t>(n))) {
    e.fail(node, "kernel_shape " + formatPads(kernel) + " is not the weight's spatial shape");
  }
  std::int64_t cells = 1;
  for (std::int64_t v : t.stride) {
    cells *= v;
  }
  if (cells > kMaxTransposedWindow) {
    e.fail(node, "strides " + formatPads(t.stride) + " spread each input element over " +
                     std::to_string(cells) + " cells (at most " +
                     std::to_string(kMaxTransposedWindow) + ")");
  }
  if (t.outputPadding.size() != n ||
      *std::min_element(t.outputPadding.begin(), t.outputPadding.end()) < 0) {
    e.fail(node, "output_padding must be " + std::to_string(n) + " numbers of at least 0");
  }
  Shape outputShape = intsAttribute(node, "output_shape");
  if (outputShape.size() == n + 2) {
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  }
  const std::string autoPad = stringAttribute(node, "auto_pad", "NOTSET");
  Shape pads = intsAttribute(node, "pads");
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!outputShape.empty() || same) {
    if (!outputShape.empty() &&
        (outputShape.size() != n || *std::min_element(outputShape.begin(), outputShape.end()) < 1 ||
         *std::max_element(outputShape.begin(), outputShape.end()) > (std::int64_t{1} << 40))) {
      e.fail(node, "output_shape must be " + std::to_string(n) + " positive sizes");
    }
    pads.assign(2 * n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t in = image[image.size() - n + i];
      const std::int64_t out = outputShape.empty() ? in * t.stride[i] : outputShape[i];
      const std::int64_t total =
          t.stride[i] * (in - 1) + t.outputPadding[i] + (t.kernel[i] - 1) * t.dilation[i] + 1 - out;
      const std::int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); // floor
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[i + n] = total - pads[i];
    }
  } else if (autoPad == "VALID" || pads.empty()) {
    pads.assign(2 * n, 0);
  }
  if (pads.size() != 2 * n) {
    e.fail(node, "pads " + formatPads(pads) + " must be " + std::to_string(2 * n) + " numbers");
  }
  t.begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  t.end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  if (n == 1) {
    for (Shape* v : {&t.kernel, &t.stride, &t.dilation}) {
      v->insert(v->begin(), 1);
    }
    for (Shape* v : {&t.outputPadding, &t.begin, &t.end}) {
      v->insert(v->begin(), 0);
    }
  }
  return t;
}

// ConvTranspose's weight [C, O/g, KH, KW] as conv2d's [O, C/g, KH, KW],
// flipped in both spatial dims: w'[g*O/g + o, c, i, j] = w[g*C/g + c, o,
// KH-1-i, KW-1-j]. A constant is made here; any other is gathered in
// reverse along both dims (and, with one group, transposed).
std::string flippedWeight(Emitter& e, const NodeProto& node, const Shape& weight,
                          std::int64_t groups) {
  const Shape w4 = imageShape(weight);
  const std::int64_t c = w4[0], og = w4[1], kh = w4[2], kw = w4[3], cg = c / groups;
  const Shape out = {og * groups, cg, kh, kw};
  const Constant* k = e.constant(node.input(1));
  if (k != nullptr && k->present && isFoldable(k->type)) {
    const std::vector<double> v = k->values();
    std::vector<double> f(v.size());
    for (std::int64_t g = 0; g < groups; ++g)
      for (std::int64_t o = 0; o < og; ++o)
        for (std::int64_t ci = 0; ci < cg; ++ci)
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t from =
                  (((g * cg + ci) * og + o) * kh + (kh - 1 - i)) * kw + (kw - 1 - j);
              const std::int64_t to = (((g * og + o) * cg + ci) * kh + i) * kw + j;
              f[static_cast<std::size_t>(to)] = v[static_cast<std::size_t>(from)];
            }
    return e.addConstant(e.resolve(node.input(1)) + "/flipped", makeConstant(k->type, out, f));
  }
  if (groups != 1 && og != 1) {
    e.fail(node, "a grouped ConvTranspose needs a constant weight");
  }
  std::string x = e.use(node.input(1));
  if (weight.size() == 3) { // [C, O, K] as [C, O, 1, K]
    const std::string lifted = e.tempName(node, "weight_2d");
    e.emit(e.opName(node, "weight_2d"), "reshape", Json{{"shape", intsJson(w4)}},
           Json{{"input", x}}, Json{{"result", lifted}});
    x = lifted;
  }
  for (const std::int64_t axis : {2, 3}) {
    const std::int64_t len = w4[static_cast<std::size_t>(axis)];
    if (len == 1) {
      continue;
    }
    Shape reversed(static_cast<std::size_t>(len));
    for (std::int64_t i = 0; i < len; ++i) {
      reversed[static_cast<std::size_t>(i)] = len - 1 - i;
    }
    const std::string tag = "weight_flip" + std::to_string(axis);
    const std::string index = e.addConstant(node.name() + "/" + tag, makeInts({len}, reversed));
    const std::string y = e.tempName(node, tag);
    e.emit(e.opName(node, tag), "gather", Json{{"axis", axis}},
           Json{{"data", x}, {"indices", index}}, Json{{"result", y}});
    x = y;
  }
  if (groups == 1 && c != 1 && og != 1) {
    const std::string y = e.tempName(node, "weight_transposed");
    e.emit(e.opName(node, "weight_transposed"), "transpose", Json{{"perm", intsJson({1, 0, 2, 3})}},
           Json{{"input", x}}, Json{{"result", y}});
    x = y;
  } else if (groups == 1 && !(c == 1 && og == 1)) { // [C, 1] <-> [1, O]: a reshape
    const std::string y = e.tempName(node, "weight_transposed");
    e.emit(e.opName(node, "weight_transposed"), "reshape", Json{{"shape", intsJson(out)}},
           Json{{"input", x}}, Json{{"result", y}});
    x = y;
  }
  return x;
}

// `x` [N, C, H, W] (`shape`, updated) read with before[d] more rows (d = 0)
// or columns (d = 1) before it and after[d] after it: a negative amount crops
// (one slice for all), a positive one pads zeros, the smaller of each dim's two
// as the convolution's padding (returned) and the rest as constant blocks.
Shape padOrCrop(Emitter& e, const NodeProto& node, std::string& x, Shape& shape, Shape before,
                Shape after) {
  Window w;
  Shape starts(4, 0), ends = shape;
  bool crop = false;
  for (std::size_t d = 0; d < 2; ++d) {
    if (before[d] < 0 || after[d] < 0) {
      crop = true;
      starts[d + 2] = std::max<std::int64_t>(0, -before[d]);
      ends[d + 2] -= std::max<std::int64_t>(0, -after[d]);
      if (ends[d + 2] - starts[d + 2] < 1) {
        e.fail(node, "its pads leave no output along spatial dim " + std::to_string(d));
      }
      before[d] = std::max<std::int64_t>(0, before[d]);
      after[d] = std::max<std::int64_t>(0, after[d]);
    }
    if (std::max(before[d], after[d]) > kMaxTransposedWindow) {
      e.fail(node, "its pads or output_shape would pad the input by " +
                       std::to_string(std::max(before[d], after[d])) + " along spatial dim " +
                       std::to_string(d) + " (at most " + std::to_string(kMaxTransposedWindow) +
                       ")");
    }
    const std::int64_t both = std::min(before[d], after[d]);
    w.padding.push_back(both);
    w.before.push_back(before[d] - both);
    w.after.push_back(after[d] - both);
  }
  if (crop) {
    const std::string cut = e.tempName(node, "crop");
    e.emit(e.opName(node, "crop"), "slice",
           Json{{"starts", intsJson(starts)}, {"ends", intsJson(ends)}}, Json{{"input", x}},
           Json{{"result", cut}});
    x = cut;
    for (std::size_t d = 2; d < 4; ++d) {
      shape[d] = ends[d] - starts[d];
    }
  }
  if (w.asymmetric()) {
    x = padAsymmetric(e, node, x, shape, w, 0.0);
  }
  return w.padding;
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// How a ConvTranspose of stride s > 1 runs as its stride phases
// (convTransposePhases): along each spatial dim, the outputs u = q * s + a
// (u counted from the first unpadded output) of one phase a read the inputs
// x[q - j] through the taps a + s * j of the kernel, j < J = ceil(K / s).
struct TransposedPhases {
  Shape taps;                // J per dim
  Shape first;               // q0: the first q an output needs
  Shape count;               // Q: how many q the outputs need
  Shape out;                 // the output's spatial sizes
  double weightElements = 0; // the phases' weight (in floating point: no overflow)
};

// The longest output side of a ConvTranspose (import refuses beyond, before
// any integer arithmetic on it could overflow).
inline constexpr double kMaxTransposedSide = 1099511627776.0; // 2^40

TransposedPhases transposedPhases(Emitter& e, const NodeProto& node, const Shape& image,
                                  const Shape& w4, const TransposedWindow& t) {
  TransposedPhases p;
  p.weightElements = static_cast<double>(w4[0]) * static_cast<double>(w4[1]);
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t s = t.stride[d];
    const double side = static_cast<double>(image[d + 2] - 1) * static_cast<double>(s) +
                        static_cast<double>(t.kernel[d] + t.outputPadding[d]) -
                        static_cast<double>(t.begin[d]) - static_cast<double>(t.end[d]);
    if (side > kMaxTransposedSide ||
        std::abs(static_cast<double>(t.begin[d])) > kMaxTransposedSide ||
        std::abs(static_cast<double>(t.end[d])) > kMaxTransposedSide) {
      e.fail(node, "its output along spatial dim " + std::to_string(d) +
                       " or its pads would be longer than 2^40");
    }
    p.taps.push_back((t.kernel[d] + s - 1) / s);
    p.out.push_back((image[d + 2] - 1) * s + t.kernel[d] - t.begin[d] - t.end[d] +
                    t.outputPadding[d]);
    if (p.out[d] < 1) {
      e.fail(node, "its pads leave no output along spatial dim " + std::to_string(d));
    }
    p.first.push_back(floorDiv(t.begin[d], s));
    p.count.push_back(floorDiv(t.begin[d] + p.out[d] - 1, s) - p.first[d] + 1);
    p.weightElements *= static_cast<double>(s * p.taps[d]);
  }
  return p;
}

// The largest weight, in elements, that the phases of a ConvTranspose may
// take when it is more than kPhaseGrowth times the weight given (a kernel
// much smaller than the stride: its phases' taps are mostly zeros).
inline constexpr double kPhaseWeightElements = 4194304.0; // 2^22
inline constexpr double kPhaseGrowth = 4;

// Whether a ConvTranspose runs as its stride phases: one group, dilation 1, a
// stride above 1, and a weight either constant (made into the phases' at
// import) or of the stride's shape (each phase one tap: a transpose).
bool phasedTransposed(const TransposedWindow& t, std::int64_t groups, const Constant* weight,
                      const TransposedPhases& p, double weightElements) {
  const bool constant = weight != nullptr && weight->present && isFoldable(weight->type);
  return groups == 1 && t.dilation == Shape{1, 1} && (t.stride[0] > 1 || t.stride[1] > 1) &&
         (t.kernel == t.stride || constant) && p.weightElements <= kMaxTransposedSide &&
         (p.weightElements <= kPhaseGrowth * weightElements ||
          p.weightElements <= kPhaseWeightElements);
}

// The phases' results y, [N, O * s_h * s_w, Q_h, Q_w] with channel (o, a,
// b): phase (a, b)'s row q and column r are the output's row q * s_h + a and
// column r * s_w + b counted from `starts`. Moved into place (DepthToSpace's
// reshape, transpose, reshape), cut to `out` by a slice where they overrun
// it, a 1-D node's made [N, O, L]; `column` (the bias as [O, 1, 1] or [O,
// 1]) added last where not empty. The last step writes the node's output.
void interleavePhases(Emitter& e, const NodeProto& node, const Shape& in, std::string y,
                      const Shape& stride, const Shape& count, const Shape& starts,
                      const Shape& out, const std::string& column) {
  const std::int64_t n = in[0], o = imageShape(e.shapeOf(node, node.output(0)))[1];
  const std::int64_t sh = stride[0], sw = stride[1], qh = count[0], qw = count[1];
  struct Step {
    std::string tag, kernel;
    Json params;
  };
  std::vector<Step> steps;
  steps.push_back({"phase_cells", "reshape", Json{{"shape", intsJson({n, o, sh, sw, qh, qw})}}});
  steps.push_back({"placed", "transpose", Json{{"perm", intsJson({0, 1, 4, 2, 5, 3})}}});
  steps.push_back({"interleaved", "reshape", Json{{"shape", intsJson({n, o, qh * sh, qw * sw})}}});
  const Shape begin = {0, 0, starts[0], starts[1]};
  const Shape end = {n, o, starts[0] + out[0], starts[1] + out[1]};
  if (begin[2] != 0 || begin[3] != 0 || end[2] != qh * sh || end[3] != qw * sw) {
    steps.push_back({"cut", "slice", Json{{"starts", intsJson(begin)}, {"ends", intsJson(end)}}});
  }
  if (in.size() == 3) {
    steps.push_back({"result_1d", "reshape", Json{{"shape", intsJson({n, o, out[1]})}}});
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const bool last = i + 1 == steps.size() && column.empty();
    const std::string next = last ? std::string() : e.tempName(node, steps[i].tag);
    e.emit(e.opName(node, last ? "" : steps[i].tag), steps[i].kernel, steps[i].params,
           Json{{"input", y}}, last ? result(node) : Json{{"result", next}});
    y = next;
  }
  if (!column.empty()) {
    e.emit(e.opName(node, ""), "add", Json::object(), Json{{"A", y}, {"B", column}}, result(node));
  }
}

// ConvTranspose as its stride phases: one stride-1 convolution of the input
// to O * s_h * s_w channels, channel (o, a, b) the outputs of phase (a, b)
// (the weight's taps a + s_h * j, b + s_w * i, flipped: w'[(o, a, b), c,
// J_h - 1 - j, J_w - 1 - i] = w[c, o, a + s_h * j, b + s_w * i], zero past the
// kernel; the bias repeated), padded so that it yields exactly the q the
// output needs, then the channels moved into place (DepthToSpace's reshape,
// transpose, reshape) and the pads cut off by a slice. No zeros multiplied
// where s divides K (U-Net's 2 x 2 of stride 2 is one 1 x 1 convolution;
// DCGAN's 4 x 4 of stride 2 one 2 x 2), but the rows and columns of q that
// only some phases need (one more per dim where the pads are odd: (Q + 1)^2 /
// Q^2 of the work). One convolution per phase, each by its own taps, would do
// a direct kernel's work exactly; tried, it ran slower on the CPU (DCGAN's
// generator 1.4 -> 1.7 ms: four convolutions of a quarter of the channels
// each, and their inputs padded apart), so not kept.
void convTransposePhases(Emitter& e, const NodeProto& node, const Shape& in, const Shape& weight,
                         const TransposedWindow& t, const TransposedPhases& p) {
  Shape shape = imageShape(in);
  const Shape w4 = imageShape(weight);
  const std::int64_t c = w4[0], o = w4[1], kh = w4[2], kw = w4[3];
  const std::int64_t sh = t.stride[0], sw = t.stride[1], jh = p.taps[0], jw = p.taps[1];
  const std::int64_t cells = o * sh * sw;
  const Shape phased = {cells, c, jh, jw};
  std::string wname;
  const Constant* k = e.constant(node.input(1));
  if (k != nullptr && k->present && isFoldable(k->type)) {
    const std::vector<double> v = k->values();
    std::vector<double> f(static_cast<std::size_t>(cells * c * jh * jw), 0.0);
    for (std::int64_t cell = 0; cell < cells; ++cell) // (o, a, b)
      for (std::int64_t ci = 0; ci < c; ++ci)
        for (std::int64_t j = 0; j < jh; ++j)
          for (std::int64_t i = 0; i < jw; ++i) {
            const std::int64_t row = cell / sw % sh + sh * (jh - 1 - j);
            const std::int64_t col = cell % sw + sw * (jw - 1 - i);
            if (row < kh && col < kw) {
              const std::int64_t from = ((ci * o + cell / (sh * sw)) * kh + row) * kw + col;
              f[static_cast<std::size_t>(((cell * c + ci) * jh + j) * jw + i)] =
                  v[static_cast<std::size_t>(from)];
            }
          }
    wname = e.addConstant(e.resolve(node.input(1)) + "/phases", makeConstant(k->type, phased, f));
  } else { // the kernel is the stride: one tap per phase, [C, O, s_h, s_w] moved
    const std::string moved = e.tempName(node, "weight_moved");
    e.emit(e.opName(node, "weight_moved"), "transpose",
           Json{{"perm", weight.size() == 4 ? intsJson({1, 2, 3, 0}) : intsJson({1, 2, 0})}},
           Json{{"input", e.use(node.input(1))}}, Json{{"result", moved}});
    wname = e.tempName(node, "weight_phases");
    e.emit(e.opName(node, "weight_phases"), "reshape", Json{{"shape", intsJson(phased)}},
           Json{{"input", moved}}, Json{{"result", wname}});
  }
  std::string x = asImage(e, node, in, node.input(0), "input_2d");
  Shape before, after;
  for (std::size_t d = 0; d < 2; ++d) { // x[q0 - (J - 1)] to x[q0 + Q - 1]
    before.push_back(p.taps[d] - 1 - p.first[d]);
    after.push_back(p.first[d] + p.count[d] - shape[d + 2]);
  }
  const Shape padding = padOrCrop(e, node, x, shape, before, after);
  Json inputs{{"input", x}, {"weight", wname}};
  bool biasAfter = false;
  if (hasInput(node, 2)) {
    const Constant* b = e.constant(node.input(2));
    if (b != nullptr && b->present && isFoldable(b->type)) {
      const std::vector<double> v = b->values();
      std::vector<double> repeated(static_cast<std::size_t>(cells));
      for (std::int64_t cell = 0; cell < cells; ++cell) {
        repeated[static_cast<std::size_t>(cell)] = v[static_cast<std::size_t>(cell / (sh * sw))];
      }
      inputs["bias"] = e.addConstant(e.resolve(node.input(2)) + "/phases",
                                     makeConstant(b->type, {cells}, repeated));
    } else {
      biasAfter = true;
    }
  }
  const std::int64_t qh = p.count[0], qw = p.count[1];
  const std::string y = e.tempName(node, "phases");
  e.emit(e.opName(node, "phases"), "conv2d",
         Json{{"stride", intsJson({1, 1})},
              {"padding", intsJson(padding)},
              {"dilation", intsJson({1, 1})}},
         inputs, Json{{"result", y}});
  std::string column;
  if (biasAfter) {
    column = e.tempName(node, "bias_column");
    e.emit(e.opName(node, "bias_column"), "reshape",
           Json{{"shape", in.size() == 3 ? intsJson({o, 1}) : intsJson({o, 1, 1})}},
           Json{{"input", e.use(node.input(2))}}, Json{{"result", column}});
  }
  interleavePhases(e, node, in, y, t.stride, {qh, qw},
                   {t.begin[0] - p.first[0] * sh, t.begin[1] - p.first[1] * sw}, p.out, column);
}

} // namespace

// ConvTranspose (1-D and 2-D; one group, depthwise, or any group count with a
// constant weight) as the convolution it is the gradient of: the input spread
// out by the stride (a `where` that puts
// each element first in a [s_h, s_w] block of zeros, then a reshape), padded
// by (K - 1) * dilation less the pads on each side (output_padding at the
// end; a negative amount crops by a slice), convolved with stride 1 by the
// weight flipped and transposed to [O, C/g, KH, KW]. Exact; the convolution
// also multiplies the zeros in between, s_h * s_w times the work a direct
// kernel would do. With one group, dilation 1 and a constant weight (or a
// kernel the stride's size), a strided one runs as its stride phases instead
// (convTransposePhases): no zeros multiplied where the stride divides the
// kernel.
void convTranspose(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const Shape weight = e.shapeOf(node, node.input(1));
  if (!(in.size() == 4 && weight.size() == 4) && !(in.size() == 3 && weight.size() == 3)) {
    e.fail(node, "only 1-D and 2-D transposed convolutions ([N, C, L] input and [C, O, K] "
                 "weight, or [N, C, H, W] and [C, O, KH, KW]) are supported");
  }
  const std::size_t n = in.size() - 2;
  const Shape image = imageShape(in);
  const Shape w4 = imageShape(weight);
  const std::int64_t groups = intAttribute(node, "group", 1);
  if (groups < 1 || image[1] % groups != 0 || w4[0] != image[1]) {
    e.fail(node, "group " + std::to_string(groups) + " with " + std::to_string(image[1]) +
                     " input channels and a weight of " + std::to_string(w4[0]) +
                     ": the group count must divide the input channels, which the weight's "
                     "first dim must equal");
  }
  const TransposedWindow t = transposedWindow(e, node, in, w4, n);
  const TransposedPhases phases = transposedPhases(e, node, image, w4, t);
  double weightElements = 1;
  for (std::int64_t v : w4) {
    weightElements *= static_cast<double>(v);
  }
  if (phasedTransposed(t, groups, e.constant(node.input(1)), phases, weightElements)) {
    return convTransposePhases(e, node, in, weight, t, phases);
  }
  const int type = e.typeOf(node.input(0));
  std::string x = asImage(e, node, in, node.input(0), "input_2d");
  Shape shape = image;
  if (t.stride[0] > 1 || t.stride[1] > 1) {
    if (!isFoldable(type)) {
      e.fail(node, "its input is " + dtypeName(type) +
                       "; tapestry spreads out float32, float64, int32 and int64 inputs");
    }
    const std::int64_t sh = t.stride[0], sw = t.stride[1];
    const std::string six = e.tempName(node, "cells");
    e.emit(e.opName(node, "cells"), "reshape",
           Json{{"shape", intsJson({shape[0], shape[1], shape[2], 1, shape[3], 1})}},
           Json{{"input", x}}, Json{{"result", six}});
    std::vector<double> first(static_cast<std::size_t>(sh * sw), 0.0);
    first[0] = 1.0;
    const std::string mask =
        e.addConstant(node.name() + "/spread_mask",
                      makeConstant(::onnx::TensorProto::BOOL, {1, 1, 1, sh, 1, sw}, first));
    const std::string zero =
        e.addConstant(node.name() + "/zero", makeConstant(type, {1}, std::vector<double>{0.0}));
    const std::string spread = e.tempName(node, "spread_cells");
    e.emit(e.opName(node, "spread_cells"), "where", Json::object(),
           Json{{"condition", mask}, {"X", six}, {"Y", zero}}, Json{{"result", spread}});
    shape[2] *= sh;
    shape[3] *= sw;
    x = e.tempName(node, "spread");
    e.emit(e.opName(node, "spread"), "reshape", Json{{"shape", intsJson(shape)}},
           Json{{"input", spread}}, Json{{"result", x}});
  }
  // Each side's padding of the spread input (its last stride - 1 zeros
  // counted), negative ones cropped first.
  Shape before, after;
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t reach = (t.kernel[d] - 1) * t.dilation[d];
    before.push_back(reach - t.begin[d]);
    after.push_back(reach - t.end[d] + t.outputPadding[d] - (t.stride[d] - 1));
  }
  const Shape padding = padOrCrop(e, node, x, shape, before, after);
  const std::string flipped = flippedWeight(e, node, weight, groups);
  emitConv2d(e, node, in, x, flipped, {1, 1}, padding, t.dilation, groups, w4[1] * groups);
}

void pool(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const Window w = window(e, node, in, intsAttribute(node, "kernel_shape"));
  if (outputUsed(node, 1)) {
    e.fail(node, "its Indices output is used; tapestry pools give values only");
  }
  Json params{{"kernel", intsJson(w.kernel)},
              {"stride", intsJson(w.stride)},
              {"padding", intsJson(w.padding)}};
  if (intAttribute(node, "ceil_mode", 0) != 0) {
    params["ceil_mode"] = true;
  }
  std::string kernel = "maxpool2d";
  const bool includePad = intAttribute(node, "count_include_pad", 0) != 0;
  if (node.op_type() == "MaxPool") {
    params["dilation"] = intsJson(w.dilation);
  } else {
    kernel = "avgpool2d";
    params["count_include_pad"] = includePad;
  }
  std::string image = asImage(e, node, in, node.input(0), "input_2d");
  if (w.asymmetric()) {
    if (params.contains("ceil_mode")) {
      e.fail(node, "ceil_mode 1 with pads that are not symmetric is not supported");
    }
    if (kernel == "avgpool2d" && !includePad) {
      e.fail(node, "pads that are not symmetric with count_include_pad 0 are not supported (the "
                   "divisor would count the side padded first)");
    }
    // A max pool's padding is -infinity, an average's that counts it zeros.
    image = padAsymmetric(e, node, image, imageShape(in), w,
                          kernel == "maxpool2d" ? -std::numeric_limits<double>::infinity() : 0.0);
  }
  emitWindowed(e, node, in, kernel, params, Json{{"input", image}});
}

void globalAvgPool(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "global_avgpool", Json::object(),
         Json{{"input", e.use(node.input(0))}}, result(node));
}

} // namespace tapestry::onnx_import::detail
