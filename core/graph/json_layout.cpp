#include "core/graph/json_layout.hpp"

#include <charconv>
#include <cstdio>

#include "core/diag/error.hpp"

namespace tapestry::graph::detail {

namespace {

template <class Int> void appendNumber(Int value, std::string& out) {
  json::appendInteger(static_cast<std::int64_t>(value), out);
}

} // namespace

// ---------------------------------------------------------------- expanded fields

namespace {

bool isScalarList(const expr::Value& value) {
  for (const expr::Value& element : value.asList()) {
    if (element.isList()) {
      return false;
    }
  }
  return true;
}

void appendScalarValue(const expr::Value& v, std::string& out) {
  if (v.isInt()) {
    appendNumber(v.asInt(), out);
  } else if (v.isBool()) {
    out += v.asBool() ? "true" : "false";
  } else if (v.isDType()) {
    appendJsonString(v.asDType().name, out);
  } else {
    appendJsonString(v.toString(), out);
  }
}

// metakernel's valueToJson: ints, bools, dtype names, lists; anything else as text.
void bindingValue(JsonLayout& out, const expr::Value& v) {
  if (v.isList() && !isScalarList(v)) {
    out.beginArray();
    for (const expr::Value& element : v.asList()) {
      bindingValue(out, element);
    }
    out.end();
    return;
  }
  out.atomWith([&v](std::string& text) {
    if (!v.isList()) {
      appendScalarValue(v, text);
      return;
    }
    text += '[';
    bool first = true;
    for (const expr::Value& element : v.asList()) {
      text += first ? "" : ", ";
      first = false;
      appendScalarValue(element, text);
    }
    text += ']';
  });
}

// zspace's toJson(IndexProjection), Loom's form.
void indexProjection(JsonLayout& out, const IndexProjection& ipf) {
  const ZAffineMap& map = ipf.map();
  const ZMatrix& projection = map.projection();
  out.beginObject().key("affineMap").beginObject().key("projection");
  if (projection.rows() == 0) {
    out.integers({});
  } else {
    out.beginArray();
    for (std::size_t r = 0; r < projection.rows(); ++r) {
      out.integers(projection.row(r));
    }
    out.end();
  }
  out.key("offset").integers(map.offset().coords());
  if (map.outputRank() == 0 && map.inputRank() != 0) {
    out.key("inputRank").integer(static_cast<std::int64_t>(map.inputRank()));
  }
  out.end().key("shape").integers(ipf.shape().coords()).end();
}

} // namespace

std::vector<std::string_view> expandedFieldNames(const metakernel::Application& app) {
  std::vector<std::string_view> names = {
      "index", "bindings", "ipf", "combine", "reduction_dims", "reduction_splittable", "flops"};
  if (app.bytes) {
    names.push_back("bytes");
  }
  return names;
}

void expandedBindings(JsonLayout& out, const metakernel::Application& app,
                      const std::function<bool(std::string_view)>& skip) {
  out.key("bindings").beginObject();
  for (const auto& [name, binding] : app.bindings.all()) {
    if (skip(name)) {
      continue;
    }
    out.key(name);
    bindingValue(out, binding.value);
  }
  out.end();
}

void expandedFields(JsonLayout& out, const metakernel::Application& app, std::string_view only) {
  auto wanted = [only](std::string_view name) { return only.empty() || only == name; };
  if (wanted("index")) {
    out.key("index").beginObject();
    out.key("start").integers(app.index.start().coords());
    out.key("end").integers(app.index.end().coords());
    out.end();
  }
  if (wanted("bindings")) {
    expandedBindings(out, app, [](std::string_view) { return false; });
  }
  if (wanted("ipf")) {
    out.key("ipf").beginObject();
    for (const auto* side : {&app.inputs, &app.outputs}) {
      out.key(side == &app.inputs ? "inputs" : "outputs").beginObject();
      for (const metakernel::PortResult& port : *side) {
        if (port.tensors.empty()) {
          continue; // an optional input left out has no IPFs
        }
        out.key(port.name).beginArray();
        for (const IndexProjection& ipf : port.ipfs) {
          indexProjection(out, ipf);
        }
        out.end();
      }
      out.end();
    }
    out.end();
  }
  if (wanted("combine")) {
    out.key("combine").beginObject();
    for (const metakernel::PortResult& port : app.outputs) {
      out.key(port.name);
      if (port.combine) {
        out.string(metakernel::combineName(*port.combine));
      } else {
        out.null();
      }
    }
    out.end();
  }
  if (wanted("reduction_dims")) {
    out.key("reduction_dims").atomWith([&app](std::string& text) {
      text += '[';
      for (std::size_t i = 0; i < app.reductionDims.size(); ++i) {
        text += i > 0 ? ", " : "";
        appendNumber(app.reductionDims[i], text);
      }
      text += ']';
    });
  }
  if (wanted("reduction_splittable")) {
    out.key("reduction_splittable").boolean(app.reductionSplittable);
  }
  if (wanted("flops")) {
    out.key("flops").integer(app.flops);
  }
  if (app.bytes && wanted("bytes")) {
    out.key("bytes").integer(*app.bytes);
  }
}

} // namespace tapestry::graph::detail
