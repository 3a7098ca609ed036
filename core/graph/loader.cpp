// Decoding graph files: structure only (names, shapes, dtypes, port bindings);
// kernels, tensors and cycles are checked by expand().
#include "core/graph/loader.hpp"

#include <unordered_map>
#include <utility>

#include "core/diag/source.hpp"
#include "core/expr/dtype.hpp"
#include "core/graph/expansion.hpp"
#include "core/zspace/zpoint.hpp"

namespace tapestry::graph {

namespace {

constexpr const char* kNameRule =
    "names are 1 to 256 printable ASCII characters other than space, '\"' and '\\'";

// What a value is, for "got ..." in messages.
std::string describe(const json::Value& v) {
  if (v.isObject() || v.isArray() || v.isNull()) {
    return v.typeName();
  }
  return v.typeName() + " " + json::brief(v.json());
}

const std::string& decodeName(const json::Value& v, const char* what) {
  const std::string& name = v.asString();
  if (!isValidName(name)) {
    v.fail(std::string("invalid ") + what + " name " + json::brief(v.json()) + ": " + kNameRule);
  }
  return name;
}

std::string decodeDType(const json::Value& v) {
  const std::string& dtype = v.asString();
  if (!isKnownDType(dtype)) {
    std::string known;
    for (const expr::DTypeInfo& d : expr::dtypes()) {
      known += (known.empty() ? "" : ", ") + std::string(d.name);
    }
    v.fail("unknown dtype " + json::brief(v.json()) + " (expected one of: " + known + ")");
  }
  return dtype;
}

std::vector<std::int64_t> decodeShape(const json::Value& v) {
  v.expectArray();
  if (v.size() > kMaxRank) {
    v.fail("rank " + std::to_string(v.size()) + " is more than the maximum rank " +
           std::to_string(kMaxRank));
  }
  std::vector<std::int64_t> shape;
  shape.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    json::Value element = v.at(i);
    std::int64_t dim = element.asInt64();
    if (dim < 0) {
      element.fail("negative dim " + std::to_string(dim) + ": dims must be >= 0");
    }
    shape.push_back(dim);
  }
  std::int64_t count = 1;
  for (std::int64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      v.fail("shape " + formatInts(shape) +
             " has too many elements: the element count overflows int64");
    }
  }
  return shape;
}

TensorDecl decodeTensor(const std::string& name, const json::Value& v, Format format) {
  if (!isValidName(name)) {
    v.fail("invalid tensor name " + json::brief(Json(name)) + ": " + kNameRule);
  }
  v.expectObject();
  if (format == Format::Graph) {
    v.expectKeys({"dtype", "shape", "constant"});
  } else {
    v.expectKeys({"dtype", "shape", "producer", "constant"});
  }
  TensorDecl decl(name, v);
  decl.type.dtype = decodeDType(v.member("dtype"));
  decl.type.shape = decodeShape(v.member("shape"));
  if (std::optional<json::Value> constant = v.find("constant")) {
    if (!constant->isBool()) {
      constant->fail("\"constant\" must be true or false, not " + json::brief(constant->json()));
    }
    decl.constant = constant->asBool();
  }
  if (format == Format::Expanded) {
    json::Value producer = v.member("producer");
    if (!producer.isNull()) {
      decl.storedProducer = decodeName(producer, "operation");
    }
  }
  return decl;
}

// {"PORT": "tensor"} or {"PORT": ["t0", "t1"]} for a list port.
std::vector<PortRef> decodePorts(const json::Value& v, bool outputs) {
  v.expectObject();
  std::vector<PortRef> ports;
  ports.reserve(v.size());
  for (const auto& [port, value] : v.members()) {
    PortRef ref;
    ref.port = port;
    if (value.isString()) {
      ref.tensors.push_back(outputs ? decodeName(value, "tensor") : value.asString());
    } else if (value.isArray()) {
      ref.list = true;
      for (const json::Value& element : value.elements()) {
        ref.tensors.push_back(outputs ? decodeName(element, "tensor") : element.asString());
      }
    } else {
      value.fail("expected a tensor name, or an array of tensor names for a list port, got " +
                 describe(value));
    }
    ports.push_back(std::move(ref));
  }
  return ports;
}

OperationDecl decodeOperation(const json::Value& v, Format format) {
  v.expectObject();
  if (format == Format::Graph) {
    v.expectKeys({"name", "kernel", "doc", "params", "inputs", "outputs"});
  } else {
    v.expectKeys({"name", "kernel", "doc", "params", "inputs", "outputs", "index", "bindings",
                  "ipf", "combine", "reduction_dims", "reduction_splittable", "flops", "bytes"});
  }
  OperationDecl op(v);
  op.name = decodeName(v.member("name"), "operation");
  op.kernel = v.member("kernel").asString();
  if (std::optional<json::Value> doc = v.find("doc")) {
    op.doc = doc->asString();
  }
  if (std::optional<json::Value> params = v.find("params")) {
    params->expectObject();
    op.params = params->json();
  }
  op.inputs = decodePorts(v.member("inputs"), false);
  if (std::optional<json::Value> outputs = v.find("outputs")) {
    op.outputs = decodePorts(*outputs, true);
  }
  return op;
}

} // namespace

Graph decodeGraph(const json::Value& root) {
  root.expectObject();
  json::Value tag = root.member("tapestry");
  Graph graph(root);
  const std::string& tagText = tag.asString();
  if (tagText == formatTag(Format::Graph)) {
    graph.format = Format::Graph;
  } else if (tagText == formatTag(Format::Expanded)) {
    graph.format = Format::Expanded;
  } else {
    tag.fail("unknown format " + json::brief(tag.json()) +
             " (expected \"graph/v1\" or \"expanded/v1\")");
  }
  root.expectKeys({"tapestry", "name", "doc", "tensors", "operations", "outputs"});
  graph.name = decodeName(root.member("name"), "graph");
  if (std::optional<json::Value> doc = root.find("doc")) {
    graph.doc = doc->asString();
  }

  json::Value tensors = root.member("tensors");
  tensors.expectObject();
  graph.tensors.reserve(tensors.size());
  for (const auto& [name, value] : tensors.members()) {
    graph.tensors.push_back(decodeTensor(name, value, graph.format));
  }

  json::Value operations = root.member("operations");
  operations.expectArray();
  graph.operations.reserve(operations.size());
  std::unordered_map<std::string_view, std::size_t> opByName;
  opByName.reserve(operations.size());
  for (std::size_t i = 0; i < operations.size(); ++i) {
    OperationDecl op = decodeOperation(operations.at(i), graph.format);
    graph.operations.push_back(std::move(op));
    const OperationDecl& added = graph.operations.back();
    auto [it, inserted] = opByName.emplace(added.name, i);
    if (!inserted) {
      added.where.member("name").fail("duplicate operation name " + json::brief(Json(added.name)) +
                                      " (also at " + graph.operations[it->second].where.pointer() +
                                      ")");
    }
  }
  // opByName's keys view the names in graph.operations: reserve() above keeps
  // them in place while the vector grows.

  if (std::optional<json::Value> outputs = root.find("outputs")) {
    outputs->expectArray();
    std::vector<std::string> names;
    names.reserve(outputs->size());
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      json::Value element = outputs->at(i);
      names.push_back(element.asString());
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto [it, inserted] = seen.emplace(names[i], i);
      if (!inserted) {
        outputs->at(i).fail("tensor " + json::brief(Json(names[i])) +
                            " is listed twice in outputs (also at " + outputs->pointer() + "/" +
                            std::to_string(it->second) + ")");
      }
    }
    graph.outputs = std::move(names);
    graph.outputsWhere = *outputs;
  }
  return graph;
}

Graph loadGraph(const std::string& path) {
  auto document = std::make_shared<const json::Document>(
      json::Document::parse(SourceFile::read(path, "a graph file")));
  Graph graph = decodeGraph(json::Value(*document));
  graph.document = std::move(document);
  return graph;
}

ExpandedGraph loadAndExpand(const std::string& path, const metakernel::MetakernelLibrary& library) {
  Graph graph = loadGraph(path);
  ExpandedGraph expanded = expand(graph, library);
  expanded.file = displayName(path);
  return expanded;
}

} // namespace tapestry::graph
