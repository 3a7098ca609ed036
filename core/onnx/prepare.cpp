// What the importer does to a model before folding and mapping: old opsets are
// converted to 13 by ONNX's version converter, operators that ONNX defines by a
// function body (and tapestry does not map) are inlined, and the features a
// static-shape, tensor-only graph cannot express are named when refused.
#include <exception>

#include <onnx/defs/function.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "core/diag/error.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

namespace {

constexpr int kConvertTo = 13;
// Below IR 4, ONNX's shape inference ignores initializers that are not also
// graph inputs; a converted model is read as IR 7 (ONNX 1.6, opset 11 era).
constexpr std::int64_t kMinIrVersion = 7;

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  throw Error(SourceLocation{file, 0, 0, {}}, message);
}

// Shape inference that never throws (error mode 0): what it cannot infer
// stays unknown, and the importer's own pass reports what matters.
void inferQuietly(::onnx::ModelProto& model) {
  ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                       ::onnx::ShapeInferenceOptions(false, 0, false));
}

// Operators whose function body libonnx 1.12 cannot expand: LayerNormalization's
// crashes FunctionExpandHelper (and it is mapped natively anyway).
const std::set<std::string>& notExpanded() {
  static const std::set<std::string> ops = {"LayerNormalization"};
  return ops;
}

// The types shape inference knows, by value name (inputs, values, outputs,
// initializers), for context-dependent function bodies.
std::map<std::string, ::onnx::TypeProto> knownTypes(const ::onnx::GraphProto& g) {
  std::map<std::string, ::onnx::TypeProto> types;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()}) {
    for (const ::onnx::ValueInfoProto& v : *list) {
      if (v.has_type()) {
        types[v.name()] = v.type();
      }
    }
  }
  for (const ::onnx::TensorProto& t : g.initializer()) {
    ::onnx::TypeProto type;
    ::onnx::TypeProto_Tensor* tensor = type.mutable_tensor_type();
    tensor->set_elem_type(t.data_type());
    tensor->mutable_shape();
    for (std::int64_t d : t.dims()) {
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
    types[t.name()] = type;
  }
  return types;
}

// The body of `node`'s function at the model's opset, or nullopt when ONNX
// defines none (or cannot build it for these inputs).
std::optional<::onnx::FunctionProto>
functionBody(const ::onnx::NodeProto& node, int opset,
             const std::map<std::string, ::onnx::TypeProto>& types) {
  const ::onnx::OpSchema* schema =
      ::onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  if (schema == nullptr) {
    return std::nullopt;
  }
  ::onnx::FunctionProto body;
  if (schema->HasContextDependentFunction()) {
    std::vector<::onnx::TypeProto> inputTypes;
    for (const std::string& input : node.input()) {
      auto it = types.find(input);
      inputTypes.push_back(it != types.end() ? it->second : ::onnx::TypeProto());
    }
    const ::onnx::FunctionBodyBuildContextImpl context(node, inputTypes);
    if (!schema->BuildContextDependentFunction(context, body)) {
      return std::nullopt;
    }
    return body;
  }
  if (schema->HasFunction() && schema->GetFunction() != nullptr) {
    return *schema->GetFunction();
  }
  return std::nullopt;
}

// One round of inlining over the graph's nodes; true when any node was.
bool expandRound(::onnx::ModelProto& model, int opset, const std::set<std::string>& mapped,
                 std::map<std::string, std::string>& origin) {
  ::onnx::GraphProto& g = *model.mutable_graph();
  inferQuietly(model);
  const std::map<std::string, ::onnx::TypeProto> types = knownTypes(g);
  ::onnx::GraphProto expanded;
  bool changed = false;
  int index = 0;
  for (const ::onnx::NodeProto& node : g.node()) {
    const std::string& op = node.op_type();
    const bool candidate = defaultDomain(node.domain()) && mapped.count(op) == 0 &&
                           notExpanded().count(op) == 0 && !outOfScopeFeature(op);
    std::optional<::onnx::FunctionProto> body;
    if (candidate) {
      body = functionBody(node, opset, types);
    }
    if (!body) {
      *expanded.add_node() = node;
      continue;
    }
    // A prefix that no other value or node of the model uses.
    const std::string prefix = node.name() + "/" + op + "_" + std::to_string(index++) + "/";
    ::onnx::GraphProto inlined;
    ::onnx::FunctionExpandHelper(node, *body, inlined, prefix);
    const auto from = origin.find(node.name());
    const std::string outer = from != origin.end() ? from->second : op;
    int k = 0;
    for (::onnx::NodeProto& inner : *inlined.mutable_node()) {
      // libonnx 1.12 leaves an attribute reference the node does not set (a
      // loss's ignore_index) as an attribute of no type; as it is, a mapping
      // would read it as 0. Dropped, it is absent, as the function means.
      ::google::protobuf::RepeatedPtrField<::onnx::AttributeProto> kept;
      for (const ::onnx::AttributeProto& a : inner.attribute()) {
        if (a.type() != ::onnx::AttributeProto::UNDEFINED) {
          *kept.Add() = a;
        }
      }
      inner.mutable_attribute()->Swap(&kept);
      inner.set_name(prefix + inner.op_type() + "_" + std::to_string(k++));
      origin[inner.name()] = outer;
      *expanded.add_node() = inner;
    }
    changed = true;
  }
  if (changed) {
    g.mutable_node()->Swap(expanded.mutable_node());
  }
  return changed;
}

} // namespace

std::optional<std::string> outOfScopeFeature(const std::string& op) {
  static const std::map<std::string, std::string> features = [] {
    std::map<std::string, std::string> m;
    for (const char* o : {"If", "Loop", "Scan"}) {
      m[o] = "control flow";
    }
    for (const char* o :
         {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
          "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence"}) {
      m[o] = "sequences";
    }
    for (const char* o : {"Optional", "OptionalGetElement", "OptionalHasElement"}) {
      m[o] = "optional values";
    }
    for (const char* o : {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit"}) {
      m[o] = "strings";
    }
    for (const char* o : {"NonZero", "Unique", "NonMaxSuppression", "Compress"}) {
      m[o] = "data-dependent output shapes";
    }
    for (const char* o : {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                          "Multinomial", "Bernoulli"}) {
      m[o] = "random numbers";
    }
    return m;
  }();
  auto it = features.find(op);
  if (it == features.end()) {
    return std::nullopt;
  }
  return it->second;
}

int convertOpset(::onnx::ModelProto& model, const std::string& file) {
  int opset = -1;
  for (const ::onnx::OperatorSetIdProto& o : model.opset_import()) {
    if (defaultDomain(o.domain())) {
      opset = static_cast<int>(o.version());
    }
  }
  if (opset < 1 || opset >= kConvertTo) {
    return opset; // none (the importer says so), or no conversion needed
  }
  // ONNX's converter reads the types shape inference leaves in value_info, and
  // reports what it cannot convert by throwing. Below IR 4 its import wants
  // every initializer listed as a graph input too, which the converted model
  // no longer does: the IR version is raised before and after.
  if (model.ir_version() < kMinIrVersion) {
    model.set_ir_version(kMinIrVersion);
  }
  try {
    inferQuietly(model);
    ::onnx::ModelProto converted = ::onnx::version_conversion::ConvertVersion(model, kConvertTo);
    model = std::move(converted);
  } catch (const std::exception& e) {
    fail(file, "the model imports opset " + std::to_string(opset) +
                   " of the default ONNX domain, and ONNX's version converter cannot convert it "
                   "to opset " +
                   std::to_string(kConvertTo) + ": " + e.what());
  }
  if (model.ir_version() < kMinIrVersion) {
    model.set_ir_version(kMinIrVersion);
  }
  return opset;
}

bool expandFunctions(::onnx::ModelProto& model, int opset, const std::set<std::string>& mapped,
                     std::map<std::string, std::string>& origin, const std::string& file) {
  try {
    return expandRound(model, opset, mapped, origin);
  } catch (const std::exception& e) {
    fail(file, std::string("ONNX could not inline a function body: ") + e.what());
  }
}

} // namespace tapestry::onnx_import::detail
