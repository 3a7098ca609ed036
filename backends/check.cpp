#include "backends/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/reference.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

double unitRoundoff(DType dtype) {
  switch (dtype) {
  case DType::Float64:
    return std::ldexp(1.0, -53);
  case DType::Float32:
    return std::ldexp(1.0, -24);
  case DType::Float16:
    return std::ldexp(1.0, -11);
  case DType::BFloat16:
    return std::ldexp(1.0, -8);
  case DType::Int32:
  case DType::Int64:
  case DType::Bool:
    break;
  }
  return 0;
}

namespace {

template <class T> double asDouble(T x) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfToFloat(x);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16ToFloat(x);
  } else if constexpr (std::is_same_v<T, Bool>) {
    return x.bits != 0 ? 1.0 : 0.0;
  } else {
    return static_cast<double>(x);
  }
}

// The elements of a host buffer as doubles (exact for every dtype but int64
// beyond 2^53, which only scales the error measure; bool as 0 and 1).
std::vector<double> asDoubles(const Buffer& b) {
  std::vector<double> values(static_cast<std::size_t>(b.elementCount()));
  dispatchWithBool(b.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::span<T> e = b.elements<T>();
    std::transform(e.begin(), e.end(), values.begin(), [](T x) { return asDouble(x); });
  });
  return values;
}

// A float buffer as a float64 host buffer (exact); other dtypes as they are.
Buffer widened(const Buffer& b) {
  if (!isFloat(b.dtype()) || b.dtype() == DType::Float64) {
    return b;
  }
  Buffer wide = Buffer::host(DType::Float64, b.region());
  const std::vector<double> values = asDoubles(b);
  std::copy(values.begin(), values.end(), wide.elements<double>().begin());
  return wide;
}

// Every graph output of an evaluation as a host buffer.
TensorBuffers outputsOnHost(Backend& backend, const graph::ExpandedGraph& g,
                            const TensorBuffers& all) {
  TensorBuffers out;
  for (std::size_t t : g.outputs) {
    const Buffer& buffer = all.at(g.tensors[t].name);
    Buffer host = Buffer::host(buffer.dtype(), buffer.region());
    backend.copyRegion(buffer.view(), host.view(), buffer.region());
    out.emplace(g.tensors[t].name, std::move(host));
  }
  backend.synchronize();
  return out;
}

// The least precise dtype among the tensors `out` is computed from (itself
// included): a bfloat16 intermediate makes a float32 output as precise as a
// bfloat16 one. Integers count only when nothing upstream is a float.
DType leastPrecise(const graph::ExpandedGraph& g, std::size_t out) {
  std::vector<char> seen(g.tensors.size(), 0);
  std::vector<std::size_t> stack{out};
  seen[out] = 1;
  std::optional<DType> least;
  while (!stack.empty()) {
    const std::size_t t = stack.back();
    stack.pop_back();
    const DType d = parseDType(g.tensors[t].type.dtype);
    if (isFloat(d) && (!least || unitRoundoff(d) > unitRoundoff(*least))) {
      least = d;
    }
    if (const std::optional<std::size_t> producer = g.tensors[t].producer) {
      for (const graph::PortTensors& port : g.operations[*producer].inputs) {
        for (std::size_t in : port.tensors) {
          if (seen[in] == 0) {
            seen[in] = 1;
            stack.push_back(in);
          }
        }
      }
    }
  }
  return least.value_or(parseDType(g.tensors[out].type.dtype));
}

std::string sci(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2g", value);
  return buffer;
}

} // namespace

double maxRelativeError(const Buffer& actual, const Buffer& reference) {
  if (actual.region() != reference.region()) {
    throw InternalError("maxRelativeError: " + std::string(dtypeName(actual.dtype())) + " " +
                        actual.region().toString() + " against " + dtypeName(reference.dtype()) +
                        " " + reference.region().toString());
  }
  const std::vector<double> a = asDoubles(actual);
  const std::vector<double> r = asDoubles(reference);
  double diff = 0;
  double scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(r[i])) {
      return std::nan("");
    }
    if (std::isfinite(r[i])) {
      scale = std::max(scale, std::abs(r[i]));
    }
    if (a[i] != r[i]) {
      diff = std::max(diff, std::abs(a[i] - r[i])); // inf when only one is infinite
    }
  }
  return scale > 0 ? diff / scale : diff;
}

namespace {

void widen(metakernel::TensorType& t) {
  if (isFloat(parseDType(t.dtype))) {
    t.dtype = dtypeName(DType::Float64);
  }
}

void widen(metakernel::Application& app) {
  // Float dtype values ($dtype, a cast's target) widen too, so that a body
  // that names a dtype computes the float64 graph.
  std::vector<std::pair<std::string, std::string>> dtypes;
  for (const auto& [name, binding] : app.bindings.all()) {
    if (!binding.value.isDType()) {
      continue;
    }
    const std::string& d = binding.value.asDType().name;
    if (d == "float32" || d == "float16" || d == "bfloat16") {
      dtypes.emplace_back(name, binding.source);
    }
  }
  for (const auto& [name, source] : dtypes) {
    app.bindings.set(name, expr::Value(expr::DType{dtypeName(DType::Float64)}), source);
  }
  for (auto* ports : {&app.inputs, &app.outputs}) {
    for (metakernel::PortResult& port : *ports) {
      for (metakernel::TensorType& t : port.tensors) {
        widen(t);
      }
    }
  }
  if (app.fused) { // a fuse(P, C) operation's parts run in float64 too
    auto parts = std::make_shared<metakernel::FusedParts>(*app.fused);
    auto producer = std::make_shared<metakernel::Application>(*parts->producer);
    auto consumer = std::make_shared<metakernel::Application>(*parts->consumer);
    widen(*producer);
    widen(*consumer);
    parts->producer = std::move(producer);
    parts->consumer = std::move(consumer);
    app.fused = std::move(parts);
  }
}

} // namespace

graph::ExpandedGraph widenToFloat64(const graph::ExpandedGraph& g) {
  graph::ExpandedGraph wide = g;
  for (graph::Tensor& t : wide.tensors) {
    widen(t.type);
  }
  for (graph::Operation& op : wide.operations) {
    widen(op.application);
  }
  return wide;
}

CheckReference unshardedReference(Backend& baselineBackend, const graph::ExpandedGraph& g,
                                  const TensorBuffers& inputs) {
  CheckReference result;
  result.baseline = outputsOnHost(baselineBackend, g, evaluateGraph(baselineBackend, g, inputs, 0));
  result.reference = float64Reference(baselineBackend, g, inputs);
  return result;
}

TensorBuffers float64Reference(Backend& inputsBackend, const graph::ExpandedGraph& g,
                               const TensorBuffers& inputs) {
  const graph::ExpandedGraph wide = widenToFloat64(g);
  TensorBuffers wideInputs;
  for (const auto& [name, buffer] : inputs) {
    if (buffer.device() == kHostDevice) {
      wideInputs.emplace(name, widened(buffer));
    } else {
      Buffer host = Buffer::host(buffer.dtype(), buffer.region());
      inputsBackend.copyRegion(buffer.view(), host.view(), buffer.region());
      inputsBackend.synchronize();
      wideInputs.emplace(name, widened(host));
    }
  }
  // The reference runs every kernel that has a body from its body: the
  // template's meaning, not the native kernel the sharded run used.
  CpuBackend cpu(1, CpuKernels::Bodies);
  return outputsOnHost(cpu, wide, evaluateGraph(cpu, wide, wideInputs, 0));
}

double checkBound(DType precision, double baselineError) {
  if (!isFloat(precision)) {
    return 0;
  }
  const double floor = kFloorUnits * unitRoundoff(precision);
  if (std::isnan(baselineError)) {
    return floor;
  }
  return std::max(kBaselineMultiple * baselineError, floor);
}

std::vector<OutputCheck> compareOutputs(const graph::ExpandedGraph& g, const TensorBuffers& actual,
                                        const CheckReference& reference) {
  std::vector<OutputCheck> checks;
  for (std::size_t out : g.outputs) {
    const graph::Tensor& tensor = g.tensors[out];
    auto a = actual.find(tensor.name);
    auto r = reference.reference.find(tensor.name);
    auto b = reference.baseline.find(tensor.name);
    if (a == actual.end() || r == reference.reference.end() || b == reference.baseline.end()) {
      throw InternalError("compareOutputs: output " + tensor.name + " is missing");
    }
    OutputCheck c;
    c.tensor = tensor.name;
    c.dtype = parseDType(tensor.type.dtype);
    c.precision = leastPrecise(g, out);
    if (isFloat(c.dtype)) {
      c.error = maxRelativeError(a->second, r->second);
      c.baselineError = maxRelativeError(b->second, r->second);
    } else {
      // Integers and bools are exact: the sharded output equals the unsharded one.
      c.error = maxRelativeError(a->second, b->second);
      c.baselineError = 0;
    }
    c.bound = isFloat(c.dtype) ? checkBound(c.precision, c.baselineError) : 0;
    c.ok = !std::isnan(c.error) && c.error <= c.bound;
    checks.push_back(std::move(c));
  }
  return checks;
}

std::string describeCheck(const OutputCheck& c) {
  std::string text = "max error " + sci(c.error) + ", unsharded " + sci(c.baselineError) +
                     ", bound " + sci(c.bound);
  if (c.approximation) {
    text += ", approximation " + sci(*c.approximation) + " (at most " + sci(kApproximateTolerance) +
            ")";
  }
  return text;
}

} // namespace tapestry::backend
