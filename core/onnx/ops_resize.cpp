// ONNX Resize (and Upsample, which the version converter turns into Resize):
// separable per axis, so each resized axis is one linear map of that axis,
// out[..., o, ...] = sum_i A[o, i] * x[..., i, ...], with A computed at import
// exactly as ONNX's reference defines it (onnx/backend/test/case/node/resize.py:
// the coordinate transformation, the neighbours of the edge-padded axis, the
// nearest / linear / cubic coefficients, exclude_outside). Nearest is a
// gather of the chosen index per output (exact for every dtype); linear and
// cubic a product with the constant A (float32 and float64): on the last axis
// x @ A^T, on the one before A @ x, on any other between two transposes.
// tf_crop_and_resize's points outside the input are rows of A that are zero,
// plus the extrapolation value added as a constant where it is not zero.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/onnx/ops_util.hpp"
#include "core/zspace/zpoint.hpp"

namespace tapestry::onnx_import::detail {

namespace {

struct ResizeAttributes {
  std::string mode;      // nearest | linear | cubic
  std::string transform; // coordinate_transformation_mode
  std::string nearest;   // nearest_mode
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
};

// The coefficients of the neighbours of a point `ratio` in (0, 1] past the
// neighbour left of it (the reference's get_coeffs).
std::vector<double> coefficients(const ResizeAttributes& r, double ratio) {
  if (r.mode == "nearest") {
    if (ratio == 1.0) {
      return {0, 1};
    }
    if (r.nearest == "round_prefer_floor")
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (r.nearest == "round_prefer_ceil")
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (r.nearest == "floor")
      return {1, 0};
    return {0, 1}; // ceil
  }
  if (r.mode == "linear") {
    return {1 - ratio, ratio};
  }
  const double a = r.cubicA;
  const double p = ratio + 1, q = 1 - ratio, s = 2 - ratio;
  return {((a * p - 5 * a) * p + 8 * a) * p - 4 * a,
          ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
          ((a * s - 5 * a) * s + 8 * a) * s - 4 * a};
}

// The longest resized axis, and the most entries of a dense map (64 MiB of
// float32 constant), beyond which import refuses rather than allocate.
inline constexpr std::int64_t kMaxResizedLength = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxMapEntries = std::int64_t{1} << 24;

// One axis' map A [out, in], by rows: each output's (input index,
// coefficient) pairs, an index at most once; and whether a row reads outside
// the input (tf_crop_and_resize: the extrapolation value, an empty row).
struct AxisMap {
  std::int64_t in = 0, out = 0;
  std::vector<std::vector<std::pair<std::int64_t, double>>> rows;
  std::vector<bool> outside;

  std::vector<double> dense() const {
    std::vector<double> a(static_cast<std::size_t>(in * out), 0.0);
    for (std::int64_t o = 0; o < out; ++o) {
      for (const auto& [i, c] : rows[static_cast<std::size_t>(o)]) {
        a[static_cast<std::size_t>(o * in + i)] = c;
      }
    }
    return a;
  }
};

// The source coordinate of output `x` (the reference's x_ori), or nullopt
// where tf_crop_and_resize extrapolates. `width`: scale * in, not rounded.
std::optional<double> sourceCoordinate(const ResizeAttributes& r, double x, double scale,
                                       std::int64_t in, double width, double roiStart,
                                       double roiEnd) {
  const double len = static_cast<double>(in);
  if (r.transform == "align_corners") {
    return width == 1 ? 0.0 : x * (len - 1) / (width - 1);
  }
  if (r.transform == "asymmetric") {
    return x / scale;
  }
  if (r.transform == "tf_half_pixel_for_nn") {
    return (x + 0.5) / scale;
  }
  if (r.transform == "tf_crop_and_resize") {
    double v = width == 1 ? (roiEnd - roiStart) * (len - 1) / 2
                          : x * (roiEnd - roiStart) * (len - 1) / (width - 1);
    v += roiStart * (len - 1);
    if (v < 0 || v > len - 1) {
      return std::nullopt;
    }
    return v;
  }
  if (r.transform == "pytorch_half_pixel" && width == 1) {
    return -0.5;
  }
  return (x + 0.5) / scale - 0.5; // half_pixel, pytorch_half_pixel
}

AxisMap axisMap(const ResizeAttributes& r, std::int64_t in, std::int64_t out, double scale,
                double roiStart, double roiEnd) {
  AxisMap m;
  m.in = in;
  m.out = out;
  m.rows.resize(static_cast<std::size_t>(out));
  m.outside.assign(static_cast<std::size_t>(out), false);
  const double width = scale * static_cast<double>(in);
  for (std::int64_t o = 0; o < out; ++o) {
    const std::optional<double> src =
        sourceCoordinate(r, static_cast<double>(o), scale, in, width, roiStart, roiEnd);
    if (!src) {
      m.outside[static_cast<std::size_t>(o)] = true;
      continue;
    }
    const double floor = std::floor(*src);
    const double ratio = *src == floor ? 1.0 : *src - floor;
    std::vector<double> c = coefficients(r, ratio);
    const auto n = static_cast<std::int64_t>(c.size());
    // The n indices of the axis padded by `pad` at each end (edge mode) nearest
    // to the point, ties to the smaller; then sorted.
    const std::int64_t pad = (n + 1) / 2;
    const double x = *src + static_cast<double>(pad);
    const std::int64_t limit = in + 2 * pad;
    std::vector<std::int64_t> near;
    const auto centre = static_cast<std::int64_t>(std::floor(x));
    for (std::int64_t i = std::max<std::int64_t>(0, centre - n);
         i < std::min<std::int64_t>(limit, centre + n + 1); ++i) {
      near.push_back(i);
    }
    std::stable_sort(near.begin(), near.end(), [&](std::int64_t p, std::int64_t q) {
      return std::abs(x - static_cast<double>(p)) < std::abs(x - static_cast<double>(q));
    });
    near.resize(static_cast<std::size_t>(std::min<std::int64_t>(n, std::ssize(near))));
    std::sort(near.begin(), near.end());
    if (r.excludeOutside) {
      double total = 0;
      for (std::size_t j = 0; j < near.size(); ++j) {
        const std::int64_t i = near[j] - pad;
        if (i < 0 || i >= in) {
          c[j] = 0;
        }
        total += c[j];
      }
      for (double& v : c) {
        v /= total;
      }
    }
    auto& row = m.rows[static_cast<std::size_t>(o)];
    for (std::size_t j = 0; j < near.size(); ++j) {
      const std::int64_t i = std::clamp<std::int64_t>(near[j] - pad, 0, in - 1);
      auto at = std::find_if(row.begin(), row.end(), [&](const auto& p) { return p.first == i; });
      if (at == row.end()) {
        row.emplace_back(i, c[j]);
      } else {
        at->second += c[j];
      }
    }
    // Nearest's neighbour of coefficient 0 is no entry (a gather reads one).
    std::erase_if(row, [](const auto& p) { return p.second == 0.0; });
  }
  return m;
}

bool identity(const AxisMap& m) {
  if (m.in != m.out) {
    return false;
  }
  for (std::int64_t o = 0; o < m.out; ++o) {
    const auto& row = m.rows[static_cast<std::size_t>(o)];
    if (row.size() != 1 || row[0].first != o || row[0].second != 1.0) {
      return false;
    }
  }
  return true;
}

ResizeAttributes resizeAttributes(Emitter& e, const NodeProto& node) {
  ResizeAttributes r;
  r.mode = stringAttribute(node, "mode", "nearest");
  r.transform = stringAttribute(node, "coordinate_transformation_mode", "half_pixel");
  r.nearest = stringAttribute(node, "nearest_mode", "round_prefer_floor");
  r.cubicA = floatAttribute(node, "cubic_coeff_a", -0.75f);
  r.excludeOutside = intAttribute(node, "exclude_outside", 0) != 0;
  r.extrapolation = floatAttribute(node, "extrapolation_value", 0.0f);
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic") {
    e.fail(node,
           "mode " + detail::quoted(r.mode) + "; Resize's modes are nearest, linear and cubic");
  }
  static const char* const transforms[] = {"half_pixel",           "pytorch_half_pixel",
                                           "align_corners",        "asymmetric",
                                           "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(transforms), std::end(transforms), r.transform) ==
      std::end(transforms)) {
    e.fail(node, "coordinate_transformation_mode " + detail::quoted(r.transform) +
                     " is not supported (half_pixel, pytorch_half_pixel, align_corners, "
                     "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize are)");
  }
  static const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  if (std::find(std::begin(nearests), std::end(nearests), r.nearest) == std::end(nearests)) {
    e.fail(node, "nearest_mode " + detail::quoted(r.nearest) +
                     " is not supported (round_prefer_floor, round_prefer_ceil, floor, ceil are)");
  }
  if (intAttribute(node, "antialias", 0) != 0 && r.mode != "nearest") {
    e.fail(node, "antialias is not supported");
  }
  if (stringAttribute(node, "keep_aspect_ratio_policy", "stretch") != "stretch") {
    e.fail(node, "keep_aspect_ratio_policy " +
                     detail::quoted(stringAttribute(node, "keep_aspect_ratio_policy", "")) +
                     " is not supported (stretch is)");
  }
  return r;
}

// A constant operand's values when it holds any (an absent input or an empty
// tensor, as opset 11's absent scales: none). A graph input's value comes as
// constantInts' does (import --values).
std::vector<double> optionalValues(Emitter& e, const NodeProto& node, int i, const char* what) {
  if (!hasInput(node, i)) {
    return {};
  }
  if (const auto shape = e.knownShape(node.input(i));
      shape && std::find(shape->begin(), shape->end(), 0) != shape->end()) {
    return {};
  }
  const Constant* c = e.constant(node.input(i));
  if (c == nullptr) {
    needsConstant(e, node, i, what);
  }
  if (!c->present || !isFoldable(c->type)) {
    e.fail(node, std::string("its ") + what + " input " + detail::quoted(node.input(i)) +
                     " is not a constant; tapestry needs it at import");
  }
  return c->values();
}

// A requested length in a message: as an integer when it is one.
std::string lengthText(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e18) {
    return std::to_string(static_cast<std::int64_t>(v));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

// The maps of the axes that are not the identity, and the output shape.
struct ResizeMaps {
  std::vector<std::pair<std::size_t, AxisMap>> maps; // by axis
  Shape out;
  bool outside = false; // a point outside the input (tf_crop_and_resize)
};

ResizeMaps resizeMaps(Emitter& e, const NodeProto& node, const ResizeAttributes& r,
                      const Shape& in) {
  const auto rank = static_cast<std::int64_t>(in.size());
  Shape axes = intsAttribute(node, "axes");
  if (axes.empty()) {
    axes.resize(in.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (std::int64_t& a : axes) {
    a = normalizeAxis(a, rank, "node " + node.name());
  }
  const bool crop = r.transform == "tf_crop_and_resize";
  const std::vector<double> roi = crop ? optionalValues(e, node, 1, "roi") : std::vector<double>{};
  const std::vector<double> scales = optionalValues(e, node, 2, "scales");
  const std::vector<double> sizes = optionalValues(e, node, 3, "sizes");
  if (scales.empty() == sizes.empty()) {
    e.fail(node, "exactly one of its scales and sizes inputs must hold values");
  }
  const std::size_t given = std::max(scales.size(), sizes.size());
  if (given != axes.size()) {
    e.fail(node, "its " + std::string(scales.empty() ? "sizes" : "scales") + " input has " +
                     std::to_string(given) + " values for " + std::to_string(axes.size()) +
                     " axes");
  }
  if (crop && (roi.size() != 2 * axes.size() ||
               !std::all_of(roi.begin(), roi.end(), [](double v) { return std::isfinite(v); }))) {
    e.fail(node, "tf_crop_and_resize needs a roi input of 2 finite values per axis");
  }
  ResizeMaps result;
  Shape& out = result.out;
  out = in;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const auto a = static_cast<std::size_t>(axes[k]);
    double scale = 0, length = 0;
    if (!scales.empty()) {
      scale = scales[k];
      const double start = crop ? roi[k] : 0, end = crop ? roi[k + axes.size()] : 1;
      length = static_cast<double>(in[a]) * (end - start) * scale;
      if (!(scale > 0) || !std::isfinite(scale) || !std::isfinite(start) || !std::isfinite(end)) {
        e.fail(node, "scale " + std::to_string(scale) + " of axis " + std::to_string(a) +
                         " is not a positive number");
      }
    } else {
      length = sizes[k];
    }
    if (!(length >= 1 && length <= static_cast<double>(kMaxResizedLength)) || in[a] < 1) {
      e.fail(node, "axis " + std::to_string(a) + " would resize from " + std::to_string(in[a]) +
                       " to " + lengthText(length) + " elements (1 to " +
                       std::to_string(kMaxResizedLength) + " are supported)");
    }
    out[a] = static_cast<std::int64_t>(length);
    if (scales.empty()) {
      scale = static_cast<double>(out[a]) / static_cast<double>(in[a]);
    }
    AxisMap m =
        axisMap(r, in[a], out[a], scale, crop ? roi[k] : 0, crop ? roi[k + axes.size()] : 1);
    result.outside =
        result.outside || std::find(m.outside.begin(), m.outside.end(), true) != m.outside.end();
    if (!identity(m)) {
      result.maps.emplace_back(a, std::move(m));
    }
  }
  return result;
}

// tf_crop_and_resize's extrapolation value where any resized axis' coordinate
// is outside the input: a constant of 1 on the other axes, broadcast by an add
// onto `x`, written to `y`.
void addExtrapolation(Emitter& e, const NodeProto& node, const ResizeMaps& rm, double value,
                      int type, const std::string& x, const std::string& y) {
  const std::size_t rank = rm.out.size();
  Shape eshape(rank, 1);
  std::vector<const AxisMap*> byAxis(rank, nullptr);
  for (const auto& [a, m] : rm.maps) {
    eshape[a] = m.out;
    byAxis[a] = &m;
  }
  std::int64_t count = 1;
  for (std::int64_t v : eshape) {
    count *= v;
  }
  std::vector<double> values(static_cast<std::size_t>(count), 0.0);
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t rest = flat;
    bool off = false;
    for (std::size_t d = rank; d-- > 0;) {
      const std::int64_t c = rest % eshape[d];
      rest /= eshape[d];
      off = off || (byAxis[d] != nullptr && byAxis[d]->outside[static_cast<std::size_t>(c)]);
    }
    values[static_cast<std::size_t>(flat)] = off ? value : 0.0;
  }
  const std::string fill =
      e.addConstant(node.name() + "/extrapolation", makeConstant(type, eshape, values));
  e.emit(e.opName(node, "extrapolation"), "add", Json::object(), Json{{"A", x}, {"B", fill}},
         Json{{"result", y}});
}

} // namespace

void resize(Emitter& e, const NodeProto& node) {
  const ResizeAttributes r = resizeAttributes(e, node);
  const Shape in = e.shapeOf(node, node.input(0));
  ResizeMaps rm = resizeMaps(e, node, r, in);
  const Shape& out = rm.out;
  auto& maps = rm.maps;
  const bool outside = rm.outside;
  if (const auto known = e.knownShape(node.output(0)); known && *known != out) {
    e.fail(node, "its output shape " + formatInts(*known) + " disagrees with " + formatInts(out) +
                     ", the size its scales give");
  }
  const int type = e.typeOf(node.input(0));
  const bool byGather = r.mode == "nearest" && !outside;
  for (const auto& [a, m] : maps) {
    if (!byGather && m.in * m.out > kMaxMapEntries) {
      e.fail(node, "axis " + std::to_string(a) + " resizes " + std::to_string(m.in) + " to " +
                       std::to_string(m.out) + " elements by " + r.mode +
                       ": a product with a map of " + std::to_string(m.in * m.out) +
                       " entries (at most " + std::to_string(kMaxMapEntries) + " are supported)");
    }
  }
  if (!byGather && type != ::onnx::TensorProto::FLOAT && type != ::onnx::TensorProto::DOUBLE) {
    e.fail(node, "its input is " + dtypeName(type) + "; tapestry resizes float32 and float64 " +
                     "tensors by " + r.mode + (r.mode == "nearest" ? " with extrapolation" : "") +
                     " (nearest without, every dtype)");
  }
  const bool extrapolate = outside && r.extrapolation != 0;
  if (maps.empty() && !extrapolate) {
    e.alias(node.output(0), node.input(0));
    return;
  }
  // The steps, last axis first; the last writes the node's output.
  std::string x = e.use(node.input(0));
  Shape shape = in;
  const std::size_t steps = maps.size() + (extrapolate ? 1 : 0);
  std::size_t step = 0;
  auto target = [&](const std::string& what) {
    return ++step == steps ? node.output(0) : e.tempName(node, what);
  };
  std::sort(maps.begin(), maps.end(),
            [](const auto& p, const auto& q) { return p.first > q.first; });
  for (auto& [a, m] : maps) {
    const std::string axis = std::to_string(a);
    shape[a] = m.out;
    if (byGather) {
      std::vector<std::int64_t> index(static_cast<std::size_t>(m.out));
      for (std::int64_t o = 0; o < m.out; ++o) {
        const auto& row = m.rows[static_cast<std::size_t>(o)];
        if (row.size() != 1) {
          throw InternalError("Resize: a nearest map's row has " + std::to_string(row.size()) +
                              " entries, not 1");
        }
        index[static_cast<std::size_t>(o)] = row[0].first;
      }
      const std::string idx =
          e.addConstant(node.name() + "/index" + axis, makeInts({m.out}, index));
      const std::string y = target("axis" + axis);
      e.emit(e.opName(node, "axis" + axis), "gather", Json{{"axis", a}},
             Json{{"data", x}, {"indices", idx}}, Json{{"result", y}});
      x = y;
      continue;
    }
    const std::string matrix = e.addConstant(node.name() + "/weights" + axis,
                                             makeConstant(type, {m.out, m.in}, m.dense()));
    const std::size_t last = in.size() - 1;
    if (a + 1 == in.size() || (a + 2 == in.size() && in.size() >= 2)) {
      const bool onLast = a == last;
      Json inputs = onLast ? Json{{"X", x}, {"W", matrix}} : Json{{"X", matrix}, {"W", x}};
      if (in.size() == 1) { // [L] as [1, L]
        const std::string row = e.tempName(node, "row");
        e.emit(e.opName(node, "row"), "reshape", Json{{"shape", intsJson({1, m.in})}},
               Json{{"input", x}}, Json{{"result", row}});
        const std::string product = e.tempName(node, "product");
        e.emit(e.opName(node, "axis" + axis), "matmul", Json{{"transpose_w", true}},
               Json{{"X", row}, {"W", matrix}}, Json{{"result", product}});
        x = target("axis" + axis);
        e.emit(e.opName(node, "unrow"), "reshape", Json{{"shape", intsJson({m.out})}},
               Json{{"input", product}}, Json{{"result", x}});
        continue;
      }
      const std::string y = target("axis" + axis);
      e.emit(e.opName(node, "axis" + axis), "matmul",
             onLast ? Json{{"transpose_w", true}} : Json::object(), inputs, Json{{"result", y}});
      x = y;
      continue;
    }
    // Another axis: swapped with the last, resized there, swapped back.
    Shape perm(in.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[a], perm[last]);
    const std::string moved = e.tempName(node, "moved" + axis);
    e.emit(e.opName(node, "moved" + axis), "transpose", Json{{"perm", intsJson(perm)}},
           Json{{"input", x}}, Json{{"result", moved}});
    const std::string product = e.tempName(node, "product" + axis);
    e.emit(e.opName(node, "axis" + axis), "matmul", Json{{"transpose_w", true}},
           Json{{"X", moved}, {"W", matrix}}, Json{{"result", product}});
    const std::string y = target("axis" + axis);
    e.emit(e.opName(node, "back" + axis), "transpose", Json{{"perm", intsJson(perm)}},
           Json{{"input", product}}, Json{{"result", y}});
    x = y;
  }
  if (extrapolate) {
    addExtrapolation(e, node, rm, r.extrapolation, type, x, target("extrapolated"));
  }
}

} // namespace tapestry::onnx_import::detail
