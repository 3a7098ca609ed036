// The expanded/v1 document. writeExpanded() lays the text out directly from the
// expanded graph (JsonLayout); toJson() builds the same document as a Json
// value for callers that embed it (a plan holds its graph). A unit test keeps
// json::format(toJson(g), kExpandedWidth) == writeExpanded(g).
#include "core/graph/writer.hpp"

#include <utility>

#include "core/graph/json_layout.hpp"
#include "core/json/layout.hpp"
#include "core/metakernel/application.hpp"

namespace tapestry::graph {

namespace {

// Appends members without ordered_json's per-insert key search (linear per key,
// quadratic over a graph's tensors); callers guarantee unique keys.
void append(Json& object, std::string key, Json value) {
  json::appendMember(object, std::move(key), std::move(value));
}

Json portsJson(const ExpandedGraph& graph, const std::vector<PortTensors>& ports) {
  Json out = Json::object();
  for (const PortTensors& port : ports) {
    if (port.tensors.empty()) {
      continue; // an optional input left out
    }
    if (port.list) {
      Json names = Json::array();
      for (std::size_t t : port.tensors) {
        names.push_back(graph.tensors[t].name);
      }
      append(out, port.port, std::move(names));
    } else {
      append(out, port.port, graph.tensors[port.tensors.front()].name);
    }
  }
  return out;
}

Json operationJson(const ExpandedGraph& graph, const Operation& op) {
  Json out = userOperationJson(graph, op);
  Json expanded = metakernel::toJson(op.application);
  for (auto& [key, value] : expanded.get_ref<Json::object_t&>()) {
    append(out, key, std::move(value));
  }
  return out;
}

// An array of tensor names: one atom, as json::format lays out arrays of scalars.
void namesAtom(detail::JsonLayout& out, const ExpandedGraph& graph,
               const std::vector<std::size_t>& tensors) {
  out.atomWith([&](std::string& text) {
    text += '[';
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      text += i > 0 ? ", " : "";
      detail::appendJsonString(graph.tensors[tensors[i]].name, text);
    }
    text += ']';
  });
}

void portsLayout(detail::JsonLayout& out, const ExpandedGraph& graph,
                 const std::vector<PortTensors>& ports) {
  out.beginObject();
  for (const PortTensors& port : ports) {
    if (port.tensors.empty()) {
      continue; // an optional input left out
    }
    out.key(port.port);
    if (port.list) {
      namesAtom(out, graph, port.tensors);
    } else {
      out.string(graph.tensors[port.tensors.front()].name);
    }
  }
  out.end();
}

} // namespace

Json userOperationJson(const ExpandedGraph& graph, const Operation& op) {
  Json out = Json::object();
  append(out, "name", op.name);
  append(out, "kernel", op.kernel);
  if (op.doc) {
    append(out, "doc", *op.doc);
  }
  append(out, "params", op.application.params);
  append(out, "inputs", portsJson(graph, op.inputs));
  append(out, "outputs", portsJson(graph, op.outputs));
  return out;
}

Json toJson(const ExpandedGraph& graph) {
  Json doc = Json::object();
  append(doc, "tapestry", formatTag(Format::Expanded));
  append(doc, "name", graph.name);
  if (graph.doc) {
    append(doc, "doc", *graph.doc);
  }
  Json tensors = Json::object();
  for (const Tensor& t : graph.tensors) {
    Json entry = Json::object();
    append(entry, "dtype", t.type.dtype);
    append(entry, "shape", t.type.shape);
    append(entry, "producer",
           t.producer ? Json(graph.operations[*t.producer].name) : Json(nullptr));
    if (t.constant) {
      append(entry, "constant", true);
    }
    append(tensors, t.name, std::move(entry));
  }
  append(doc, "tensors", std::move(tensors));
  Json operations = Json::array();
  operations.get_ref<Json::array_t&>().reserve(graph.operations.size());
  for (const Operation& op : graph.operations) {
    operations.push_back(operationJson(graph, op));
  }
  append(doc, "operations", std::move(operations));
  Json outputs = Json::array();
  for (std::size_t t : graph.outputs) {
    outputs.push_back(graph.tensors[t].name);
  }
  append(doc, "outputs", std::move(outputs));
  return doc;
}

namespace {

void tensorsLayout(detail::JsonLayout& out, const ExpandedGraph& graph) {
  out.beginObject();
  for (const Tensor& t : graph.tensors) {
    out.key(t.name).beginObject();
    out.key("dtype").string(t.type.dtype);
    out.key("shape").integers(t.type.shape);
    out.key("producer");
    if (t.producer) {
      out.string(graph.operations[*t.producer].name);
    } else {
      out.null();
    }
    if (t.constant) {
      out.key("constant").boolean(true);
    }
    out.end();
  }
  out.end();
}

void operationLayout(detail::JsonLayout& out, const ExpandedGraph& graph, const Operation& op) {
  out.beginObject();
  out.key("name").string(op.name);
  out.key("kernel").string(op.kernel);
  if (op.doc) {
    out.key("doc").string(*op.doc);
  }
  out.key("params").json(op.application.params);
  out.key("inputs");
  portsLayout(out, graph, op.inputs);
  out.key("outputs");
  portsLayout(out, graph, op.outputs);
  detail::expandedFields(out, op.application);
  out.end();
}

} // namespace

std::string writeExpanded(const ExpandedGraph& graph) {
  detail::JsonLayout op;
  if (!graph.operations.empty()) {
    operationLayout(op, graph, graph.operations.front());
  }
  if (graph.operations.empty() || op.oneLine().size() <= kExpandedWidth) {
    // Small: lay the whole document out at once (it may even fit on one line).
    detail::JsonLayout out;
    out.beginObject();
    out.key("tapestry").string(formatTag(Format::Expanded));
    out.key("name").string(graph.name);
    if (graph.doc) {
      out.key("doc").string(*graph.doc);
    }
    out.key("tensors");
    tensorsLayout(out, graph);
    out.key("operations").beginArray();
    for (const Operation& operation : graph.operations) {
      operationLayout(out, graph, operation);
    }
    out.end();
    out.key("outputs");
    namesAtom(out, graph, graph.outputs);
    out.end();
    return out.print(kExpandedWidth);
  }

  // An operation too long for one line makes the document and its "operations"
  // array multi-line too; each operation is then laid out on its own, exactly as
  // it would be inside the whole document, so memory stays at one operation's worth.
  std::string text = "{\n  \"tapestry\": ";
  detail::appendJsonString(formatTag(Format::Expanded), text);
  text += ",\n  \"name\": ";
  detail::appendJsonString(graph.name, text);
  if (graph.doc) {
    text += ",\n  \"doc\": ";
    detail::appendJsonString(*graph.doc, text);
  }
  text += ",\n  \"tensors\": ";
  detail::JsonLayout tensors;
  tensorsLayout(tensors, graph);
  tensors.printTo(text, kExpandedWidth, 2, 2 + std::string_view("\"tensors\": ").size());
  text += ",\n  \"operations\": [\n";
  for (std::size_t i = 0; i < graph.operations.size(); ++i) {
    if (i > 0) {
      op.clear();
      operationLayout(op, graph, graph.operations[i]);
    }
    text += "    ";
    op.printTo(text, kExpandedWidth, 4, 4);
    text += i + 1 < graph.operations.size() ? ",\n" : "\n";
  }
  text += "  ],\n  \"outputs\": ";
  detail::JsonLayout outputs;
  namesAtom(outputs, graph, graph.outputs);
  outputs.printTo(text, kExpandedWidth, 2, 2);
  text += "\n}\n";
  return text;
}

} // namespace tapestry::graph
