// The import pipeline: parse the ModelProto, check it, bind --dim values, then
// shape inference and folding to a fixed point (folding a Shape makes the
// Reshape it feeds inferable, whose output a later Shape reads), then one
// pass that maps the remaining nodes to operations.
#include "core/onnx/importer.hpp"

#include <algorithm>
#include <exception>

#include <onnx/shape_inference/implementation.h>

#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import {

using namespace detail;

namespace {

constexpr int kMinOpset = 13;
constexpr int kMaxOpset = 17;
constexpr int kMaxRounds = 64;
constexpr int kMaxExpandPasses = 8;

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  throw Error(SourceLocation{file, 0, 0, {}}, message);
}

// Names every unnamed node OpType_N (N its index), as diagnostics and
// operation names need.
void nameNodes(::onnx::GraphProto& g) {
  for (int i = 0; i < g.node_size(); ++i) {
    ::onnx::NodeProto& node = *g.mutable_node(i);
    if (node.name().empty()) {
      node.set_name(node.op_type() + "_" + std::to_string(i));
    }
  }
}

// The model's default-domain opset: 1 to 17 (convertOpset takes those below
// 13 to 13).
int defaultOpset(const ::onnx::ModelProto& model, const std::string& file) {
  for (const ::onnx::OperatorSetIdProto& o : model.opset_import()) {
    if (defaultDomain(o.domain())) {
      if (o.version() < 1 || o.version() > kMaxOpset) {
        fail(file, "the model imports opset " + std::to_string(o.version()) +
                       " of the default ONNX domain; tapestry imports opsets 1 to " +
                       std::to_string(kMaxOpset) + " (those below " + std::to_string(kMinOpset) +
                       " converted to " + std::to_string(kMinOpset) +
                       "; re-export with opset_version=17)");
      }
      return static_cast<int>(o.version());
    }
  }
  std::string domains;
  for (const ::onnx::OperatorSetIdProto& o : model.opset_import()) {
    domains += (domains.empty() ? "" : ", ") + o.domain();
  }
  fail(file, "the model imports no opset of the default ONNX domain" +
                 (domains.empty() ? std::string()
                                  : " (only " + domains + ", which tapestry does not support)"));
}

// Checks that every value the graph reads (a node's input, a graph output)
// is a graph input, an initializer or a node's output, and that no value is
// defined twice: ONNX's version converter dereferences a missing value
// (a SIGSEGV in libonnx 1.12), and a graph naming one would not expand.
void checkNames(const ::onnx::GraphProto& g, const std::string& file) {
  std::map<std::string, std::string> defined; // value -> what defines it
  auto define = [&](const std::string& name, const std::string& by) {
    auto [it, fresh] = defined.emplace(name, by);
    if (!fresh) {
      fail(file, "value " + name + " is defined twice: by " + it->second + " and by " + by);
    }
  };
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto& t : g.initializer()) {
    initializers.insert(t.name());
    define(t.name(), "an initializer");
  }
  for (const ::onnx::ValueInfoProto& v : g.input()) {
    if (initializers.count(v.name()) == 0) { // an initializer may be listed as an input too
      define(v.name(), "a graph input");
    }
  }
  for (const ::onnx::NodeProto& node : g.node()) {
    for (const std::string& out : node.output()) {
      if (!out.empty()) {
        define(out, "node " + node.name() + " (" + node.op_type() + ")");
      }
    }
  }
  for (const ::onnx::NodeProto& node : g.node()) {
    for (const std::string& in : node.input()) {
      if (!in.empty() && defined.count(in) == 0) {
        fail(file, "node " + node.name() + " (" + node.op_type() + ") reads " + in +
                       ", which is no graph input, initializer or node output");
      }
    }
  }
  for (const ::onnx::ValueInfoProto& v : g.output()) {
    if (defined.count(v.name()) == 0) {
      fail(file, "graph output " + v.name() + " is no graph input, initializer or node output");
    }
  }
}

// Checks each node's input and output counts against its ONNX schema (when
// ONNX knows the operator), so that mapping and folding may read the inputs
// the operator requires.
void checkArity(const ::onnx::GraphProto& g, int opset, const std::string& file) {
  for (const ::onnx::NodeProto& node : g.node()) {
    const ::onnx::OpSchema* schema =
        ::onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
    if (schema == nullptr) {
      continue;
    }
    const int in = node.input_size();
    const int out = node.output_size();
    bool ok = in >= schema->min_input() && in <= schema->max_input() &&
              out >= schema->min_output() && out <= schema->max_output() && out >= 1 &&
              !node.output(0).empty();
    for (int i = 0; ok && i < std::min(in, schema->min_input()); ++i) {
      ok = !node.input(i).empty();
    }
    if (!ok) {
      fail(file, "node " + node.name() + " (" + node.op_type() + ") has " + std::to_string(in) +
                     " inputs and " + std::to_string(out) + " outputs, which opset " +
                     std::to_string(opset) + " of " + node.op_type() + " does not allow");
    }
  }
}

// ONNX's shape inference divides by strides and group and indexes by
// kernel_shape unchecked (a stride of 0 is a SIGFPE in libonnx 1.12): window
// attributes are checked before it runs.
void checkWindows(const ::onnx::GraphProto& g, const std::string& file) {
  static const std::set<std::string> windowed = {"Conv",        "ConvTranspose",  "MaxPool",
                                                 "AveragePool", "LpPool",         "ConvInteger",
                                                 "QLinearConv", "MaxRoundingPool"};
  for (const ::onnx::NodeProto& node : g.node()) {
    if (windowed.count(node.op_type()) == 0) {
      continue;
    }
    for (const ::onnx::AttributeProto& a : node.attribute()) {
      const bool positive = a.name() == "strides" || a.name() == "dilations" ||
                            a.name() == "kernel_shape" || a.name() == "group";
      const bool nonNegative = a.name() == "pads" || a.name() == "output_padding";
      bool ok = true;
      for (std::int64_t v : a.ints()) {
        ok = ok && (positive ? v >= 1 : !nonNegative || v >= 0);
      }
      if (a.name() == "group") {
        ok = a.i() >= 1;
      }
      if (!ok) {
        fail(file, "node " + node.name() + " (" + node.op_type() + "): attribute " + a.name() +
                       " must be " + (positive ? "positive" : "non-negative"));
      }
    }
  }
}

// ONNX's shape inference of Conv and ConvTranspose without a kernel_shape
// attribute takes the window from the weight's dims and indexes the
// input-rank-sized attributes with it unchecked (a weight of another rank than
// the input is a SIGSEGV in libonnx 1.12). The attribute is set from the
// weight's shape before any inference runs, so that inference compares the
// two; a weight whose window is not known from the graph's inputs and
// initializers is refused.
void pinKernelShapes(::onnx::GraphProto& g, const std::string& file) {
  std::map<std::string, const ::onnx::TensorShapeProto*> known;
  std::map<std::string, std::vector<std::int64_t>> initializers;
  for (const ::onnx::TensorProto& t : g.initializer()) {
    initializers[t.name()] = {t.dims().begin(), t.dims().end()};
  }
  for (const ::onnx::ValueInfoProto& v : g.input()) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      known[v.name()] = &v.type().tensor_type().shape();
    }
  }
  for (::onnx::NodeProto& node : *g.mutable_node()) {
    const std::string& op = node.op_type();
    if ((op != "Conv" && op != "ConvTranspose") || !defaultDomain(node.domain()) ||
        node.input_size() < 2) {
      continue;
    }
    bool pinned = false;
    for (const ::onnx::AttributeProto& a : node.attribute()) {
      pinned = pinned || a.name() == "kernel_shape";
    }
    if (pinned) {
      continue;
    }
    const std::string& w = node.input(1);
    std::optional<std::vector<std::int64_t>> dims;
    if (auto it = initializers.find(w); it != initializers.end()) {
      dims = it->second;
    } else if (auto in = known.find(w); in != known.end()) {
      std::vector<std::int64_t> d;
      for (const ::onnx::TensorShapeProto_Dimension& dim : in->second->dim()) {
        d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      }
      dims = d;
    }
    const bool window =
        dims && dims->size() >= 3 &&
        std::all_of(dims->begin() + 2, dims->end(), [](std::int64_t v) { return v >= 1; });
    if (!window) {
      fail(file, "node " + node.name() + " (" + op + "): the shape of its weight " + w +
                     " must be known from the graph's inputs or initializers, with a window of "
                     "positive sizes, or the node must have a kernel_shape attribute");
    }
    ::onnx::AttributeProto& a = *node.add_attribute();
    a.set_name("kernel_shape");
    a.set_type(::onnx::AttributeProto::INTS);
    for (std::size_t i = 2; i < dims->size(); ++i) {
      a.add_ints((*dims)[i]);
    }
  }
}

// Sets every symbolic dim of the graph inputs that --dim names to its value.
void bindDims(::onnx::GraphProto& g, const ImportOptions& options) {
  std::set<std::string> seen;
  for (::onnx::ValueInfoProto& v : *g.mutable_input()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
      continue;
    }
    for (::onnx::TensorShapeProto_Dimension& d :
         *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (d.has_dim_param()) {
        seen.insert(d.dim_param());
        auto it = options.dims.find(d.dim_param());
        if (it != options.dims.end()) {
          d.set_dim_value(it->second);
        }
      }
    }
  }
  for (const auto& [name, value] : options.dims) {
    if (seen.count(name) == 0) {
      std::string known;
      for (const std::string& s : seen) {
        known += (known.empty() ? "" : ", ") + s;
      }
      throw UsageError("--dim " + name + "=" + std::to_string(value) +
                       ": no input of the model has a dim named " + name +
                       (known.empty() ? " (its inputs have no symbolic dims)"
                                      : " (its symbolic dims: " + known + ")"));
    }
  }
}

TensorType typeOf(const ::onnx::TypeProto& t) {
  TensorType out;
  if (!t.has_tensor_type()) {
    return out;
  }
  out.type = t.tensor_type().elem_type();
  if (!t.tensor_type().has_shape()) {
    return out;
  }
  std::vector<std::int64_t> shape;
  for (const ::onnx::TensorShapeProto_Dimension& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) {
      return out;
    }
    shape.push_back(d.dim_value());
  }
  out.shape = std::move(shape);
  return out;
}

void inferShapes(::onnx::ModelProto& model, const std::string& file) {
  model.mutable_graph()->clear_value_info();
  try {
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception& e) {
    fail(file, std::string("ONNX shape inference failed: ") + e.what());
  }
}

std::map<std::string, TensorType> collectTypes(const ::onnx::GraphProto& g,
                                               const std::map<std::string, Constant>& constants) {
  std::map<std::string, TensorType> types;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()}) {
    for (const ::onnx::ValueInfoProto& v : *list) {
      TensorType t = typeOf(v.type());
      TensorType& slot = types[v.name()];
      if (t.type != 0)
        slot.type = t.type;
      if (t.shape)
        slot.shape = t.shape;
    }
  }
  for (const auto& [name, c] : constants) {
    types[name] = TensorType{c.type, c.shape};
  }
  return types;
}

// Tells shape inference about a folded constant: small ones as initializers
// (their values feed Reshape and the like), large ones (a Constant node's
// weights) as typed graph inputs, without copying their data into the model.
void declareConstant(::onnx::GraphProto& g, const Constant& c, const std::string& name) {
  if (c.count() <= kFoldLimit) {
    *g.add_initializer() = encodeTensor(c, name);
    return;
  }
  ::onnx::ValueInfoProto* v = g.add_input();
  v->set_name(name);
  ::onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(c.type);
  for (std::int64_t d : c.shape) {
    t->mutable_shape()->add_dim()->set_dim_value(d);
  }
}

// The state of the fold loop: constants by name and the nodes still to map.
struct Folding {
  std::map<std::string, Constant> constants;
  std::vector<::onnx::NodeProto> live;
  std::size_t folded = 0;
};

// Folds what it can of `f.live` given the current types; true when anything was.
bool foldRound(Folding& f, const std::map<std::string, TensorType>& types, ::onnx::GraphProto& g,
               const std::string& file) {
  std::vector<::onnx::NodeProto> kept;
  bool changed = false;
  for (::onnx::NodeProto& node : f.live) {
    std::optional<std::vector<Constant>> out;
    if (node.op_type() == "Constant" && node.domain().empty()) {
      const ::onnx::AttributeProto* value = findAttribute(node, "value");
      if (value != nullptr) {
        out = std::vector<Constant>{decodeTensor(value->t(), file + ": node " + node.name())};
      } else if (const auto* vf = findAttribute(node, "value_float")) {
        out = std::vector<Constant>{makeConstant(::onnx::TensorProto::FLOAT, {}, {vf->f()})};
      } else if (const auto* vi = findAttribute(node, "value_int")) {
        out = std::vector<Constant>{makeInts({}, {vi->i()})};
      } else if (const auto* vfs = findAttribute(node, "value_floats")) {
        out = std::vector<Constant>{makeConstant(::onnx::TensorProto::FLOAT, {vfs->floats_size()},
                                                 {vfs->floats().begin(), vfs->floats().end()})};
      } else if (const auto* vis = findAttribute(node, "value_ints")) {
        out = std::vector<Constant>{
            makeInts({vis->ints_size()}, {vis->ints().begin(), vis->ints().end()})};
      }
    } else if (node.op_type() == "Shape" && node.domain().empty() && node.input_size() == 1) {
      auto it = types.find(node.input(0));
      if (it != types.end() && it->second.shape) {
        std::vector<std::int64_t> s = *it->second.shape;
        const std::int64_t rank = static_cast<std::int64_t>(s.size());
        std::int64_t start = intAttribute(node, "start", 0);
        std::int64_t end = intAttribute(node, "end", rank);
        start = std::clamp<std::int64_t>(start < 0 ? start + rank : start, 0, rank);
        end = std::clamp<std::int64_t>(end < 0 ? end + rank : end, 0, rank);
        s = std::vector<std::int64_t>(s.begin() + start, s.begin() + std::max(start, end));
        out = std::vector<Constant>{makeInts({static_cast<std::int64_t>(s.size())}, s)};
      }
    } else if (node.op_type() == "Size" && node.domain().empty() && node.input_size() == 1) {
      auto it = types.find(node.input(0));
      if (it != types.end() && it->second.shape) {
        std::int64_t count = 1;
        for (std::int64_t d : *it->second.shape) {
          count *= d;
        }
        out = std::vector<Constant>{makeInts({}, {count})};
      }
    } else {
      std::vector<const Constant*> inputs;
      bool allConstant = node.input_size() > 0;
      for (const std::string& name : node.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        auto it = f.constants.find(name);
        allConstant = allConstant && it != f.constants.end();
        inputs.push_back(it != f.constants.end() ? &it->second : nullptr);
      }
      if (allConstant) {
        try {
          out = fold(node, inputs);
        } catch (Error& e) {
          throw e.locate(SourceLocation{file, 0, 0, {}});
        }
      }
    }
    if (out && out->size() == static_cast<std::size_t>(node.output_size())) {
      for (int i = 0; i < node.output_size(); ++i) {
        const Constant& c = (*out)[static_cast<std::size_t>(i)];
        f.constants[node.output(i)] = c;
        declareConstant(g, c, node.output(i));
      }
      ++f.folded;
      changed = true;
    } else {
      kept.push_back(std::move(node));
    }
  }
  f.live = std::move(kept);
  g.clear_node();
  for (const ::onnx::NodeProto& node : f.live) {
    *g.add_node() = node;
  }
  return changed;
}

// Refuses a node that needs a feature outside a static-shape, tensor-only
// graph (unless a mapping exists for it), naming the feature.
void refuseOutOfScope(const Emitter& e, const ::onnx::NodeProto& node) {
  const std::vector<std::string> mapped = mappedOperators();
  const bool isMapped = std::find(mapped.begin(), mapped.end(), node.op_type()) != mapped.end();
  if (const std::optional<std::string> feature = outOfScopeFeature(node.op_type());
      feature && !isMapped) {
    fail(e.file(), "node " + node.name() + " (" + node.op_type() + ") needs " + *feature +
                       ", which tapestry does not support (graphs of static shapes and tensors)");
  }
}

// The graph inputs that are not initializers, each with a concrete shape.
Json declareInputs(const ::onnx::GraphProto& g, const std::map<std::string, Constant>& constants,
                   const std::string& file) {
  Json tensors = Json::object();
  for (const ::onnx::ValueInfoProto& v : g.input()) {
    if (constants.count(v.name()) != 0) {
      continue;
    }
    if (!v.type().has_tensor_type()) {
      const std::string kind = v.type().has_sequence_type()   ? "a sequence"
                               : v.type().has_optional_type() ? "an optional value"
                               : v.type().has_map_type()      ? "a map"
                                                              : "not a tensor";
      fail(file, "graph input " + v.name() + " is " + kind +
                     "; tapestry graphs hold tensors only (sequences, maps and optional values "
                     "are not supported)");
    }
    const ::onnx::TypeProto_Tensor& t = v.type().tensor_type();
    if (!t.has_shape()) {
      fail(file, "graph input " + v.name() +
                     " has no shape; tapestry needs the shape of every "
                     "input (export with example inputs of fixed shape)");
    }
    Json shape = Json::array();
    for (int i = 0; i < t.shape().dim_size(); ++i) {
      const ::onnx::TensorShapeProto_Dimension& d = t.shape().dim(i);
      if (d.has_dim_value()) {
        shape.push_back(d.dim_value());
      } else if (d.has_dim_param()) {
        fail(file, "graph input " + v.name() + " has the symbolic dim " + d.dim_param() + " (dim " +
                       std::to_string(i) + "); bind it with --dim " + d.dim_param() + "=N");
      } else {
        fail(file, "graph input " + v.name() + " has an unknown dim (dim " + std::to_string(i) +
                       ") with no name to bind");
      }
    }
    const std::string dtype = dtypeName(t.elem_type());
    if (t.elem_type() == ::onnx::TensorProto::STRING) {
      fail(file, "graph input " + v.name() +
                     " is a tensor of strings; tapestry's tensors are numeric (strings are not "
                     "supported)");
    }
    if (dtype.empty()) {
      fail(file, "graph input " + v.name() + " has element type " + std::to_string(t.elem_type()) +
                     ", which tapestry has no dtype for");
    }
    checkName(file, "graph input", v.name());
    tensors[v.name()] = Json{{"dtype", dtype}, {"shape", shape}};
  }
  return tensors;
}

std::string baseName(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

} // namespace

bool available() {
  return true;
}

std::vector<std::string> supportedOperators() {
  return mappedOperators();
}

namespace {

// The ONNX element type of a tapestry dtype name (0 for none).
int onnxType(const std::string& dtype) {
  for (int t = 1; t <= 16; ++t) {
    if (dtypeName(t) == dtype) {
      return t;
    }
  }
  return 0;
}

// Graph inputs given values (ImportOptions::inputValue) become initializers,
// after checking them against the input's declared type.
void bindValues(::onnx::GraphProto& g, const std::map<std::string, TensorData>& bound,
                const std::string& file) {
  for (const auto& [name, data] : bound) {
    const ::onnx::ValueInfoProto* input = nullptr;
    for (const ::onnx::ValueInfoProto& v : g.input()) {
      input = v.name() == name ? &v : input;
    }
    if (input == nullptr || !input->type().has_tensor_type()) {
      fail(file, "--values: " + name + " is not a graph input");
    }
    const ::onnx::TypeProto_Tensor& t = input->type().tensor_type();
    std::string declared = dtypeName(t.elem_type());
    bool same = declared == data.dtype && onnxType(data.dtype) != 0;
    if (t.has_shape()) {
      same = same && t.shape().dim_size() == static_cast<int>(data.shape.size());
      for (int i = 0; same && i < t.shape().dim_size(); ++i) {
        same = !t.shape().dim(i).has_dim_value() ||
               t.shape().dim(i).dim_value() == data.shape[static_cast<std::size_t>(i)];
      }
    }
    if (!same) {
      std::string shape;
      for (std::int64_t d : data.shape) {
        shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      }
      fail(file, "--values: the value of graph input " + name + " is " + data.dtype + " [" + shape +
                     "], which does not match the model's declaration of it");
    }
    Constant c;
    c.type = onnxType(data.dtype);
    c.shape = data.shape;
    c.bytes = data.bytes;
    if (static_cast<std::int64_t>(c.bytes.size()) !=
        c.count() * static_cast<std::int64_t>(elementSize(c.type))) {
      fail(file, "--values: the value of graph input " + name + " has " +
                     std::to_string(c.bytes.size()) + " bytes, not one element per index");
    }
    *g.add_initializer() = encodeTensor(c, name);
  }
}

// Folds to a fixed point, then inlines the function bodies of what did not
// fold (a Range of constants folds; one of run-time values becomes its body),
// and again while bodies appear (bodies call functions). Returns the types of
// the last shape inference; `origin` gets each inlined node's function.
std::map<std::string, TensorType> foldAndInline(::onnx::ModelProto& model, Folding& f, int opset,
                                                std::map<std::string, std::string>& origin,
                                                const std::string& file) {
  ::onnx::GraphProto& g = *model.mutable_graph();
  const std::vector<std::string> mappedList = mappedOperators();
  const std::set<std::string> mapped(mappedList.begin(), mappedList.end());
  std::map<std::string, TensorType> types;
  for (int pass = 0; pass < kMaxExpandPasses; ++pass) {
    for (int round = 0; round < kMaxRounds; ++round) {
      inferShapes(model, file);
      types = collectTypes(g, f.constants);
      if (!foldRound(f, types, g, file)) {
        break;
      }
    }
    if (!expandFunctions(model, opset, mapped, origin, file)) {
      break;
    }
    f.live.assign(g.node().begin(), g.node().end());
  }
  return types;
}

// Zero-size tensors: the standard library's index spaces have at least one
// point per dim, so a node that reads or writes one is refused.
void refuseZeroSizes(const std::vector<::onnx::NodeProto>& live,
                     const std::map<std::string, TensorType>& types, const std::string& file) {
  for (const ::onnx::NodeProto& node : live) {
    // Resize's roi, scales and sizes are read at import, and an empty one
    // stands for one not given (opset 11's scales beside sizes).
    const bool resize = node.op_type() == "Resize" && defaultDomain(node.domain());
    for (const auto* names : {&node.input(), &node.output()}) {
      for (const std::string& name : *names) {
        auto it = types.find(name);
        if (name.empty() || it == types.end() || !it->second.shape ||
            (resize && names == &node.input() && name != node.input(0))) {
          continue;
        }
        const std::vector<std::int64_t>& shape = *it->second.shape;
        if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
          std::string dims;
          for (std::int64_t d : shape) {
            dims += (dims.empty() ? "" : ", ") + std::to_string(d);
          }
          fail(file, "node " + node.name() + " (" + node.op_type() + "): tensor " + name +
                         " has a zero-size dim ([" + dims +
                         "]); tapestry tensors have at least one element along every dim");
        }
      }
    }
  }
}

// The graph's outputs, in order. A constant output (a Constant node, or shape
// arithmetic folded to the end) and an output that repeats another value get
// a reshape copy under their own name.
Json emitOutputs(Emitter& e, const ::onnx::GraphProto& g, const std::string& file) {
  Json outputs = Json::array();
  for (const ::onnx::ValueInfoProto& v : g.output()) {
    const std::string name = e.resolve(v.name());
    if (const Constant* c = e.constant(name); c != nullptr) {
      // A constant output (a Constant node, or shape arithmetic folded to the
      // end): a copy of a constant input computes it. The input takes another
      // name when the output has the constant's own.
      if (!c->present) {
        fail(file, "graph output " + v.name() + " is a constant stored outside the model");
      }
      Json dims = Json::array();
      for (std::int64_t d : c->shape) {
        dims.push_back(d);
      }
      const std::string source =
          name != v.name() ? e.use(name) : e.addConstant(v.name() + "/value", *c);
      e.emit(e.freshOpName(v.name() + "/output"), "reshape", Json{{"shape", dims}},
             Json{{"input", source}}, Json{{"result", v.name()}});
    } else if (name != v.name()) {
      // The output is another value under a new name (Identity, Dropout, a
      // one-input Sum): a copy gives it that name, so that run writes it as
      // the model calls it rather than as the value it repeats.
      const std::optional<std::vector<std::int64_t>> shape = e.knownShape(name);
      if (!shape) {
        fail(file, "graph output " + v.name() + " repeats " + name + ", whose shape is unknown");
      }
      Json dims = Json::array();
      for (std::int64_t d : *shape) {
        dims.push_back(d);
      }
      e.emit(e.freshOpName(v.name() + "/output"), "reshape", Json{{"shape", dims}},
             Json{{"input", e.use(name)}}, Json{{"result", v.name()}});
    }
    outputs.push_back(v.name());
  }
  return outputs;
}

ImportResult importChecked(const std::string& bytes, const std::string& file,
                           const ImportOptions& options,
                           const std::map<std::string, TensorData>& bound) {
  ::onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    fail(file, "not an ONNX model: the file does not parse as an ONNX ModelProto (truncated or "
               "not ONNX)");
  }
  if (!model.has_graph()) {
    fail(file, "not an ONNX model: the file holds no graph");
  }
  const int imported = defaultOpset(model, file);
  if (model.graph().node_size() == 0) {
    fail(file, "the model's graph has no nodes");
  }
  nameNodes(*model.mutable_graph());
  // Before any shape inference (the version converter runs one): it divides
  // by window attributes unchecked.
  checkNames(model.graph(), file);
  checkArity(model.graph(), imported, file);
  checkWindows(model.graph(), file);
  pinKernelShapes(*model.mutable_graph(), file);
  convertOpset(model, file); // replaces the graph
  const int opset = defaultOpset(model, file);
  ::onnx::GraphProto& g = *model.mutable_graph();
  nameNodes(g); // nodes the converter added
  bindDims(g, options);
  bindValues(g, bound, file);

  Folding f;
  for (const ::onnx::TensorProto& t : g.initializer()) {
    f.constants[t.name()] = decodeTensor(t, file + ": initializer " + t.name());
  }
  for (const ::onnx::NodeProto& node : g.node()) {
    f.live.push_back(node);
  }
  std::map<std::string, std::string> origin; // inlined node -> the function it came from
  const std::map<std::string, TensorType> types = foldAndInline(model, f, opset, origin, file);

  dropUnreadOutputs(f.live, g);
  refuseZeroSizes(f.live, types, file);
  f.folded += foldBatchNorms(f.live, f.constants, g, types);
  ImportResult result;
  result.nodes = static_cast<std::size_t>(f.folded + f.live.size());
  result.folded = f.folded;
  Json tensors = declareInputs(g, f.constants, file);
  Emitter e(file, types, f.constants);
  for (const ::onnx::NodeProto& node : f.live) {
    try {
      refuseOutOfScope(e, node);
      mapNode(e, node);
    } catch (Error& err) {
      auto it = origin.find(node.name());
      if (it != origin.end()) {
        err.diagnostic().message += " (in the function body of " + it->second + ")";
      }
      throw;
    }
  }
  const Json outputs = emitOutputs(e, g, file);
  for (const std::string& name : e.constantsUsed()) {
    const Constant& c = e.constants().at(name);
    Json shape = Json::array();
    for (std::int64_t d : c.shape) {
      shape.push_back(d);
    }
    // Initializers and folded values are the same on every run (SPEC §5.1).
    tensors[name] = Json{{"dtype", dtypeName(c.type)}, {"shape", shape}, {"constant", true}};
    result.constants.push_back(TensorData{name, dtypeName(c.type), c.shape, c.bytes, c.present});
  }
  // The file's name, not the graph's: PyTorch names every graph "torch_jit".
  std::string name = file == "<stdin>" ? g.name() : baseName(file);
  if (!graph::isValidName(name)) {
    name = g.name();
  }
  if (!graph::isValidName(name)) {
    name = "model";
  }
  Json doc = Json::object();
  doc["tapestry"] = "graph/v1";
  doc["name"] = name;
  const std::size_t slash = file.find_last_of('/');
  doc["doc"] =
      "imported from " + printable(slash == std::string::npos ? file : file.substr(slash + 1)) +
      " (producer " +
      (model.producer_name().empty() ? std::string("unknown") : printable(model.producer_name())) +
      (model.producer_version().empty() ? "" : " " + printable(model.producer_version())) +
      ", opset " + std::to_string(imported) +
      (imported != opset ? " converted to " + std::to_string(opset) : "") + ")";
  doc["tensors"] = tensors;
  doc["operations"] = std::move(e.operations());
  doc["outputs"] = outputs;
  result.graph = std::move(doc);
  return result;
}

} // namespace

ImportResult importModel(const std::string& bytes, const std::string& file,
                         const ImportOptions& options) {
  try {
    // Import, and again with each graph input whose value import needed (and
    // inputValue gave) bound as a constant, until it needs none.
    std::map<std::string, TensorData> bound;
    for (;;) {
      try {
        return importChecked(bytes, file, options, bound);
      } catch (const NeedsConstant& needs) {
        std::optional<TensorData> value;
        if (options.inputValue && bound.count(needs.name) == 0) {
          value = options.inputValue(needs.name);
        }
        if (!value) {
          throw Error(needs.diagnostic(), needs.exitCode());
        }
        bound.emplace(needs.name, std::move(*value));
      }
    }
  } catch (Error& e) {
    // Names in messages come from the model and may be any bytes; diagnostics
    // (and --format json errors) stay printable ASCII.
    e.diagnostic().message = printable(e.diagnostic().message);
    throw;
  }
}

} // namespace tapestry::onnx_import
