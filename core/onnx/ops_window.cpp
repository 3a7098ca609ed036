// ONNX's windowed operators: Conv, MaxPool, AveragePool and
// GlobalAveragePool as conv2d and the pools of metakernels/pool.yaml, with
// their attributes resolved into symmetric padding; a 1-D operator over
// [N, C, L] runs as the 2-D one of height 1 between two reshapes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

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

// Per spatial dim (the last kernel.size() dims of `in`): the symmetric
// padding of pads/auto_pad, or an error.
Shape symmetricPads(Emitter& e, const NodeProto& node, const Shape& in, const Shape& kernel,
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
      pads[i] = total / 2;
      pads[i + n] = total - total / 2;
    }
  }
  if (pads.empty()) {
    pads.assign(2 * n, 0);
  }
  bool symmetric = pads.size() == 2 * n;
  for (std::size_t i = 0; symmetric && i < n; ++i) {
    symmetric = pads[i] == pads[i + n];
  }
  if (!symmetric) {
    e.fail(node, "padding " + formatPads(pads) +
                     (n == 1 ? " is not symmetric ([begin, end] with begin == end)"
                             : " is not symmetric ([top, left, bottom, right] with top == bottom "
                               "and left == right)") +
                     "; tapestry's kernels pad both sides alike");
  }
  return Shape(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
}

// Kernel, stride and dilation attributes of a 2-D window (Conv, pools); a
// 1-D window over [N, C, L] as the 2-D one of height 1 over [N, C, 1, L].
struct Window {
  Shape kernel, stride, dilation, padding;
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
  w.padding = symmetricPads(e, node, in, w.kernel, w.stride, w.dilation);
  if (n == 1) { // height 1: one row, no stride, dilation or padding along it
    w.kernel.insert(w.kernel.begin(), 1);
    w.stride.insert(w.stride.begin(), 1);
    w.dilation.insert(w.dilation.begin(), 1);
    w.padding.insert(w.padding.begin(), 0);
  }
  return w;
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
  if (groups != 1 && groups != weight[0]) {
    e.fail(node, "group " + std::to_string(groups) +
                     " is neither 1 nor the number of output channels (depthwise)");
  }
  Json params{{"stride", intsJson(w.stride)},
              {"padding", intsJson(w.padding)},
              {"dilation", intsJson(w.dilation)}};
  if (groups != 1) {
    params["groups"] = groups;
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
  Json inputs{{"input", asImage(e, node, in, node.input(0), "input_2d")}, {"weight", w4}};
  if (hasInput(node, 2)) {
    inputs["bias"] = e.use(node.input(2)); // conv2d's optional bias port ([O])
  }
  emitWindowed(e, node, in, "conv2d", params, inputs);
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
  if (node.op_type() == "MaxPool") {
    params["dilation"] = intsJson(w.dilation);
  } else {
    kernel = "avgpool2d";
    params["count_include_pad"] = intAttribute(node, "count_include_pad", 0) != 0;
  }
  emitWindowed(e, node, in, kernel, params,
               Json{{"input", asImage(e, node, in, node.input(0), "input_2d")}});
}

void globalAvgPool(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "global_avgpool", Json::object(),
         Json{{"input", e.use(node.input(0))}}, result(node));
}

} // namespace tapestry::onnx_import::detail
