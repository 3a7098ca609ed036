// Expansion: resolve kernels, ports and tensors, order the operations (Kahn),
// apply each metakernel, and check what the file asserts.
#include "core/graph/expansion.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "core/diag/suggest.hpp"
#include "core/graph/json_layout.hpp"
#include "core/zspace/zpoint.hpp"

namespace tapestry::graph {

namespace {

using metakernel::Metakernel;
using metakernel::TensorType;

std::string nameText(std::string_view text) {
  return json::brief(Json(std::string(text)));
}

std::string typeText(const TensorType& t) {
  return formatInts(t.shape) + " " + t.dtype;
}

// " (did you mean \"x\"?)" for the closest candidate (core/diag/suggest.hpp),
// else "".
std::string suggestion(std::string_view name, const std::vector<std::string_view>& candidates) {
  const std::optional<std::string_view> found = closestName(name, candidates);
  return found ? " (did you mean " + nameText(*found) + "?)" : "";
}

template <class Specs> std::string portList(const Specs& specs) {
  std::string out;
  for (const auto& spec : specs) {
    out += (out.empty() ? "" : ", ") + spec.name;
  }
  return out;
}

template <class Specs> std::vector<std::string_view> portNames(const Specs& specs) {
  std::vector<std::string_view> out;
  for (const auto& spec : specs) {
    out.push_back(spec.name);
  }
  return out;
}

// Locates an error that carries no file position (metakernel application, checked
// arithmetic) at `where`, and prefixes its message with the JSON pointer.
void locateAt(Error& e, const json::Value& where) {
  if (e.exitCode() != ExitCode::InvalidInput || e.diagnostic().location.hasPosition()) {
    return;
  }
  Error located = where.error("");
  if (!where.pointer().empty()) {
    e.prefix("at " + where.pointer() + ": ");
  }
  e.locate(located.diagnostic().location, located.diagnostic().snippet);
}

// A note pointing at `where` ("FILE:LINE:COL: note: MESSAGE" and the line).
Diagnostic noteAt(const json::Value& where, const std::string& message) {
  Diagnostic note = where.error(message).diagnostic();
  note.severity = Severity::Note;
  return note;
}

// A port of an operation resolved against its kernel, in template order.
struct ResolvedPort {
  std::string port;
  bool list = false;
  std::vector<std::string> names;
  std::vector<std::size_t> tensors; // indices into Expander::tensors_
  bool given = true;                // false: a default output name, or an optional input left out
};

struct OpState {
  const Metakernel* kernel = nullptr;
  std::vector<ResolvedPort> inputs;
  std::vector<ResolvedPort> outputs;
  std::vector<std::size_t> predecessors; // producer operations, no repeats
  std::vector<std::size_t> successors;
  std::optional<metakernel::Application> application;
};

struct TensorState {
  std::string name;
  const TensorDecl* decl = nullptr;
  std::optional<std::size_t> producer;
  std::optional<TensorType> type; // known once declared-only, or produced
};

class Expander {
public:
  Expander(const Graph& graph, const metakernel::MetakernelLibrary& library,
           std::vector<Diagnostic>* costWarnings)
      : graph_(graph), library_(library), costWarnings_(costWarnings),
        costWarningsBefore_(costWarnings != nullptr ? costWarnings->size() : 0) {}

  ExpandedGraph run() {
    ops_.resize(graph_.operations.size());
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      resolveOperation(i);
    }
    declareTensors();
    resolveProducers();
    resolveConsumers();
    checkGraphOutputs();
    std::vector<std::size_t> order = topologicalOrder();
    for (std::size_t i : order) {
      applyOperation(i);
    }
    return build(order);
  }

private:
  const OperationDecl& decl(std::size_t op) const { return graph_.operations[op]; }

  // The value of port `port` under "inputs"/"outputs" of operation `op`, or of its
  // element `element` for a list port.
  json::Value portWhere(std::size_t op, const char* side, const std::string& port,
                        std::optional<std::size_t> element = std::nullopt) const {
    json::Value v = decl(op).where.member(side).member(port);
    if (element && v.isArray() && *element < v.size()) {
      return v.at(*element);
    }
    return v;
  }

  void resolveOperation(std::size_t i) {
    const OperationDecl& op = decl(i);
    OpState& state = ops_[i];
    std::string why; // fuse(P, C) whose templates do not compose
    state.kernel = library_.find(op.kernel, why);
    if (!why.empty()) {
      op.where.member("kernel").fail(why);
    }
    if (state.kernel == nullptr) {
      std::vector<std::string_view> known;
      for (const Metakernel* k : library_.kernels()) {
        known.push_back(k->name);
      }
      std::string hint = suggestion(op.kernel, known);
      op.where.member("kernel").fail("unknown kernel " + nameText(op.kernel) +
                                     (hint.empty() ? " (see 'tapestry kernels list')" : hint));
    }
    const Metakernel& k = *state.kernel;
    checkParams(i, k);
    resolveInputs(i, k);
    resolveOutputs(i, k);
  }

  void checkParams(std::size_t i, const Metakernel& k) {
    const OperationDecl& op = decl(i);
    for (const auto& item : op.params.items()) {
      const std::string& name = item.key();
      const Json& value = item.value();
      const metakernel::ParamSpec* spec = k.findParam(name);
      auto where = [&] { return op.where.member("params").member(name); };
      if (spec == nullptr) {
        std::string hint = suggestion(name, portNames(k.params));
        where().fail("kernel " + k.name + " has no param " + nameText(name) +
                     (k.params.empty() ? " (it takes none)"
                      : hint.empty()   ? " (its params: " + portList(k.params) + ")"
                                       : hint));
      }
      if (std::optional<std::string> problem = metakernel::checkParamValue(spec->type, value)) {
        where().fail("param " + name + " of " + k.name + ": " + *problem);
      }
    }
    for (const metakernel::ParamSpec& p : k.params) {
      if (!p.defaultValue && !op.params.contains(p.name)) {
        json::Value where = op.where.find("params").value_or(op.where);
        where.fail("missing param " + p.name + " of kernel " + k.name + " (" +
                   metakernel::paramTypeName(p.type) + ", no default)");
      }
    }
  }

  // The kernel's ports of one side ("inputs" or "outputs"; a port is an
  // `what`), in the kernel's order, each with the tensors the operation names
  // for it; a port the operation leaves out is `missing(spec)` (or fails).
  // First, every port the operation names must be one of the kernel's.
  template <class Spec, class Missing>
  std::vector<ResolvedPort> resolvePorts(std::size_t i, const Metakernel& k,
                                         const std::vector<PortRef>& refs,
                                         const std::vector<Spec>& specs, const char* side,
                                         const char* what, Missing missing) {
    for (const PortRef& ref : refs) {
      const Spec* spec = metakernel::findByName(specs, ref.port);
      if (spec == nullptr) {
        std::string hint = suggestion(ref.port, portNames(specs));
        portWhere(i, side, ref.port)
            .fail("kernel " + k.name + " has no " + what + " port " + nameText(ref.port) +
                  (specs.empty()  ? " (it takes no " + std::string(side) + ")"
                   : hint.empty() ? " (its " + std::string(side) + ": " + portList(specs) + ")"
                                  : hint));
      }
      checkListness(i, side, what, ref, spec->list, k);
    }
    std::vector<ResolvedPort> out;
    out.reserve(specs.size());
    for (const Spec& spec : specs) {
      auto ref = std::find_if(refs.begin(), refs.end(),
                              [&](const PortRef& r) { return r.port == spec.name; });
      out.push_back(ref != refs.end() ? ResolvedPort{spec.name, spec.list, ref->tensors, {}, true}
                                      : missing(spec));
    }
    return out;
  }

  // An optional input port the operation leaves out has no tensors.
  void resolveInputs(std::size_t i, const Metakernel& k) {
    const OperationDecl& op = decl(i);
    ops_[i].inputs = resolvePorts(
        i, k, op.inputs, k.inputs, "inputs", "input",
        [&](const metakernel::InputSpec& spec) -> ResolvedPort {
          if (spec.optional) {
            return ResolvedPort{spec.name, spec.list, {}, {}, false};
          }
          std::string ports;
          for (const metakernel::InputSpec& in : k.inputs) {
            ports += (ports.empty() ? "" : ", ") + in.name + (in.optional ? " (optional)" : "");
          }
          op.where.member("inputs").fail("missing input port " + spec.name + " of kernel " +
                                         k.name + " (its inputs: " + ports + ")");
        });
  }

  void resolveOutputs(std::size_t i, const Metakernel& k) {
    const OperationDecl& op = decl(i);
    ops_[i].outputs = resolvePorts(
        i, k, op.outputs, k.outputs, "outputs", "output", [&](const metakernel::OutputSpec& spec) {
          if (spec.list) {
            op.where.find("outputs").value_or(op.where).fail(
                "output port " + spec.name + " of kernel " + k.name +
                " is a list port: name its tensors in \"outputs\" (\"" + spec.name +
                "\": [\"a\", \"b\", ...])");
          }
          // An unnamed output is "OPERATION.PORT".
          return ResolvedPort{spec.name, false, {op.name + "." + spec.name}, {}, false};
        });
  }

  void checkListness(std::size_t i, const char* side, const char* what, const PortRef& ref,
                     bool list, const Metakernel& k) {
    if (list && !ref.list) {
      portWhere(i, side, ref.port)
          .fail(std::string(what) + " port " + ref.port + " of kernel " + k.name +
                " is a list port: give an array of tensor names");
    }
    if (!list && ref.list) {
      portWhere(i, side, ref.port)
          .fail(std::string(what) + " port " + ref.port + " of kernel " + k.name +
                " takes one tensor: give a tensor name, not an array");
    }
  }

  std::size_t addTensor(std::string name) {
    std::size_t index = tensors_.size();
    byName_.emplace(name, index);
    tensors_.emplace_back();
    tensors_.back().name = std::move(name);
    return index;
  }

  void declareTensors() {
    tensors_.reserve(graph_.tensors.size() + graph_.operations.size());
    byName_.reserve(graph_.tensors.size() + graph_.operations.size());
    for (const TensorDecl& d : graph_.tensors) {
      std::size_t index = addTensor(d.name);
      tensors_[index].decl = &d;
      tensors_[index].type = d.type;
    }
  }

  void resolveProducers() {
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      for (ResolvedPort& port : ops_[i].outputs) {
        for (std::size_t j = 0; j < port.names.size(); ++j) {
          auto found = byName_.find(port.names[j]);
          std::size_t t = found == byName_.end() ? addTensor(port.names[j]) : found->second;
          TensorState& tensor = tensors_[t];
          if (tensor.producer) {
            json::Value where = port.given ? portWhere(i, "outputs", port.port, j) : decl(i).where;
            std::size_t first = *tensor.producer;
            where.fail("tensor " + nameText(tensor.name) +
                       " has two producers: " + decl(first).name + " (at " +
                       decl(first).where.pointer() + ") and " + decl(i).name);
          }
          if (tensor.decl != nullptr && tensor.decl->constant) {
            tensor.decl->where.member("constant")
                .fail("tensor " + nameText(tensor.name) + " is produced by " + decl(i).name +
                      "; only graph inputs can be constant");
          }
          tensor.producer = i;
          tensor.type.reset(); // known once the producer is applied
          port.tensors.push_back(t);
        }
      }
    }
    if (graph_.format == Format::Expanded) {
      for (const TensorState& tensor : tensors_) {
        if (tensor.decl == nullptr) {
          continue;
        }
        const std::optional<std::string>& stored = tensor.decl->storedProducer;
        std::optional<std::string> actual;
        if (tensor.producer) {
          actual = decl(*tensor.producer).name;
        }
        if (stored != actual) {
          tensor.decl->where.member("producer")
              .fail("the stored producer " + (stored ? nameText(*stored) : std::string("null")) +
                    " disagrees with the graph, where " +
                    (actual ? "operation " + *actual + " produces " + tensor.name
                            : std::string("no operation produces ") + tensor.name));
        }
      }
    }
  }

  std::string unknownTensorHint(std::string_view name) const {
    std::vector<std::string_view> known;
    known.reserve(tensors_.size());
    for (const TensorState& t : tensors_) {
      known.push_back(t.name);
    }
    return suggestion(name, known);
  }

  void resolveConsumers() {
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      OpState& state = ops_[i];
      for (ResolvedPort& port : state.inputs) {
        for (std::size_t j = 0; j < port.names.size(); ++j) {
          auto found = byName_.find(port.names[j]);
          if (found == byName_.end()) {
            portWhere(i, "inputs", port.port, j)
                .fail("unknown tensor " + nameText(port.names[j]) +
                      ": no operation produces it and \"tensors\" does not declare it" +
                      unknownTensorHint(port.names[j]));
          }
          port.tensors.push_back(found->second);
          if (std::optional<std::size_t> producer = tensors_[found->second].producer) {
            std::vector<std::size_t>& preds = state.predecessors;
            if (std::find(preds.begin(), preds.end(), *producer) == preds.end()) {
              preds.push_back(*producer);
              ops_[*producer].successors.push_back(i);
            }
          }
        }
      }
    }
  }

  void checkGraphOutputs() {
    if (!graph_.outputs) {
      return;
    }
    for (std::size_t k = 0; k < graph_.outputs->size(); ++k) {
      const std::string& name = (*graph_.outputs)[k];
      if (!byName_.contains(name)) {
        graph_.outputsWhere->at(k).fail("unknown tensor " + nameText(name) +
                                        ": no operation produces it and \"tensors\" does not "
                                        "declare it" +
                                        unknownTensorHint(name));
      }
    }
  }

  // Kahn's algorithm; among ready operations the first in the file goes first.
  std::vector<std::size_t> topologicalOrder() {
    std::vector<std::size_t> pending(ops_.size());
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      pending[i] = ops_[i].predecessors.size();
      if (pending[i] == 0) {
        ready.push(i);
      }
    }
    std::vector<std::size_t> order;
    order.reserve(ops_.size());
    while (!ready.empty()) {
      std::size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (std::size_t s : ops_[i].successors) {
        if (--pending[s] == 0) {
          ready.push(s);
        }
      }
    }
    if (order.size() != ops_.size()) {
      reportCycle(pending);
    }
    return order;
  }

  // Walks back from the first blocked operation through blocked producers until
  // an operation repeats; that loop is a cycle. Printed in data-flow order,
  // starting at its first operation in the file.
  [[noreturn]] void reportCycle(const std::vector<std::size_t>& pending) {
    std::size_t start = 0;
    while (pending[start] == 0) {
      ++start;
    }
    std::vector<std::size_t> walk;
    std::unordered_map<std::size_t, std::size_t> position;
    std::size_t current = start;
    while (!position.contains(current)) {
      position.emplace(current, walk.size());
      walk.push_back(current);
      for (std::size_t p : ops_[current].predecessors) {
        if (pending[p] != 0) {
          current = p;
          break;
        }
      }
    }
    std::vector<std::size_t> cycle(walk.begin() + static_cast<std::ptrdiff_t>(position[current]),
                                   walk.end());
    std::reverse(cycle.begin(), cycle.end()); // producer before consumer
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    std::string text;
    for (std::size_t op : cycle) {
      text += decl(op).name + " -> ";
    }
    text += decl(cycle.front()).name;
    decl(cycle.front()).where.fail("cycle: " + text);
  }

  void applyOperation(std::size_t i) {
    const OperationDecl& op = decl(i);
    OpState& state = ops_[i];
    metakernel::Operation input;
    input.name = op.name;
    input.params = op.params;
    for (const ResolvedPort& port : state.inputs) {
      if (!port.given) {
        continue; // an optional input left out
      }
      std::vector<TensorType> types;
      types.reserve(port.tensors.size());
      for (std::size_t t : port.tensors) {
        types.push_back(*tensors_[t].type);
      }
      input.inputs.emplace(port.port, std::move(types));
    }
    try {
      state.application = metakernel::apply(*state.kernel, input);
    } catch (Error& e) {
      locateAt(e, op.where);
      throw;
    }
    const metakernel::Application& app = *state.application;
    for (std::size_t p = 0; p < state.outputs.size(); ++p) {
      const ResolvedPort& port = state.outputs[p];
      const metakernel::PortResult& result = app.outputs[p];
      if (result.tensors.size() != port.tensors.size()) {
        portWhere(i, "outputs", port.port)
            .fail(op.name + " (" + state.kernel->name + ") produces " +
                  std::to_string(result.tensors.size()) + " tensors on " + port.port + ", but " +
                  std::to_string(port.tensors.size()) + " names are given");
      }
      for (std::size_t j = 0; j < port.tensors.size(); ++j) {
        produce(i, port.tensors[j], result.tensors[j]);
      }
    }
    if (graph_.format == Format::Expanded) {
      checkStoredFields(i);
    }
  }

  void produce(std::size_t i, std::size_t t, const TensorType& type) {
    const OperationDecl& op = decl(i);
    TensorState& tensor = tensors_[t];
    std::string who = op.name + " (" + ops_[i].kernel->name + ")";
    if (type.shape.size() > kMaxRank) {
      op.where.fail(who + " produces " + tensor.name + " with shape " + formatInts(type.shape) +
                    ": rank " + std::to_string(type.shape.size()) +
                    " is more than the maximum rank " + std::to_string(kMaxRank));
    }
    std::int64_t count = 1;
    for (std::int64_t d : type.shape) {
      if (__builtin_mul_overflow(count, d, &count)) {
        op.where.fail(who + " produces " + tensor.name + " with shape " + formatInts(type.shape) +
                      ": the element count overflows int64");
      }
    }
    if (tensor.decl != nullptr && tensor.decl->type != type) {
      const TensorDecl& d = *tensor.decl;
      json::Value where =
          d.type.shape != type.shape ? d.where.member("shape") : d.where.member("dtype");
      Error e = where.error("tensor " + tensor.name + " is declared as " + typeText(d.type) +
                            ", but " + who + " produces " + typeText(type));
      e.addNote(noteAt(op.where, op.name + " produces " + tensor.name + " here"));
      throw e;
    }
    tensor.type = type;
  }

  // Whether the stored bindings are the computed ones but for params the
  // kernel gained after the file was written: a param with a default that
  // the operation's params leave out and the stored bindings lack. The
  // operation then means what it meant when it was written (conv2d_act's
  // silu and hard_swish, added at false, left every older plan as it was).
  bool bindingsAgreeBut(std::size_t i, const json::Value& stored) {
    const OperationDecl& op = decl(i);
    const Metakernel& k = *ops_[i].kernel;
    if (!stored.isObject()) {
      return false;
    }
    auto gained = [&](std::string_view name) {
      const auto spec =
          std::find_if(k.params.begin(), k.params.end(),
                       [&](const metakernel::ParamSpec& p) { return p.name == name; });
      return spec != k.params.end() && spec->defaultValue && !op.params.contains(name) &&
             !stored.find(name);
    };
    detail::JsonLayout lenient;
    lenient.beginObject();
    detail::expandedBindings(lenient, *ops_[i].application, gained);
    lenient.end();
    return lenient.oneLine() == stored_.oneLine();
  }

  // An expanded file's per-operation fields must be what expansion gives now,
  // compared as one-line JSON text (the writer's own rendering of both), but
  // for the bindings of params added since (bindingsAgreeBut). With
  // costWarnings_, a cost (flops, bytes) that differs is no error: the first
  // such difference becomes a warning there.
  void checkStoredFields(std::size_t i) {
    const OperationDecl& op = decl(i);
    const metakernel::Application& app = *ops_[i].application;
    for (std::string_view name : detail::expandedFieldNames(app)) {
      const bool cost = costWarnings_ != nullptr && (name == "flops" || name == "bytes");
      if (cost && !op.where.has(name)) {
        costDiffers(op.where.error("the stored operation has no " + std::string(name) +
                                   ", which the expansion gives"));
        continue;
      }
      json::Value stored = op.where.member(name);
      computed_.clear();
      computed_.beginObject();
      detail::expandedFields(computed_, app, name);
      computed_.end();
      stored_.clear();
      stored_.beginObject().key(name).json(stored.json()).end();
      if (computed_.oneLine() != stored_.oneLine() &&
          !(name == "bindings" && bindingsAgreeBut(i, stored))) {
        std::size_t prefix = name.size() + 5; // {"NAME": ...}
        auto valueText = [prefix](const std::string& text) {
          return json::briefText(text.substr(prefix, text.size() - prefix - 1));
        };
        Error e = stored.error("the stored " + std::string(name) + " " +
                               valueText(stored_.oneLine()) + " disagrees with the expansion, " +
                               "which gives " + valueText(computed_.oneLine()) +
                               " (was the file edited, or expanded with other kernels?)");
        if (!cost) {
          throw e;
        }
        costDiffers(std::move(e));
      }
    }
    if (!app.bytes) {
      if (std::optional<json::Value> bytes = op.where.find("bytes")) {
        Error e = bytes->error("the stored bytes disagree with the expansion, which gives none "
                               "(was the file edited, or expanded with other kernels?)");
        if (costWarnings_ == nullptr) {
          throw e;
        }
        costDiffers(std::move(e));
      }
    }
  }

  // The first cost difference, as a warning.
  void costDiffers(Error e) {
    if (costWarnings_->size() > costWarningsBefore_) {
      return;
    }
    Diagnostic d = e.diagnostic();
    d.severity = Severity::Warning;
    d.notes.push_back(Diagnostic{Severity::Note,
                                 {},
                                 "the graph was expanded with other cost formulas for its "
                                 "kernels (saved by another version, or edited); this version's "
                                 "costs are used",
                                 {},
                                 {}});
    costWarnings_->push_back(std::move(d));
  }

  ExpandedGraph build(const std::vector<std::size_t>& order) {
    ExpandedGraph out;
    out.name = graph_.name;
    out.doc = graph_.doc;
    out.order = order;
    // Declared tensors keep their file order; produced ones follow in the order
    // their producers run.
    std::vector<std::size_t> newIndex(tensors_.size(), 0);
    std::vector<std::size_t> tensorOrder;
    tensorOrder.reserve(tensors_.size());
    for (std::size_t t = 0; t < graph_.tensors.size(); ++t) {
      tensorOrder.push_back(t);
    }
    for (std::size_t i : order) {
      for (const ResolvedPort& port : ops_[i].outputs) {
        for (std::size_t t : port.tensors) {
          if (tensors_[t].decl == nullptr) {
            tensorOrder.push_back(t);
          }
        }
      }
    }
    out.tensors.reserve(tensorOrder.size());
    for (std::size_t t : tensorOrder) {
      newIndex[t] = out.tensors.size();
      TensorState& state = tensors_[t];
      Tensor tensor;
      tensor.name = std::move(state.name);
      tensor.type = std::move(*state.type);
      tensor.producer = state.producer;
      tensor.declared = state.decl != nullptr;
      tensor.constant = state.decl != nullptr && state.decl->constant;
      out.tensors.push_back(std::move(tensor));
    }
    auto ports = [&](const std::vector<ResolvedPort>& resolved) {
      std::vector<PortTensors> result;
      result.reserve(resolved.size());
      for (const ResolvedPort& port : resolved) {
        PortTensors p{port.port, port.list, {}};
        p.tensors.reserve(port.tensors.size());
        for (std::size_t t : port.tensors) {
          p.tensors.push_back(newIndex[t]);
        }
        result.push_back(std::move(p));
      }
      return result;
    };
    out.operations.reserve(ops_.size());
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const OperationDecl& d = decl(i);
      Operation op;
      op.name = d.name;
      op.kernel = d.kernel;
      op.doc = d.doc;
      op.inputs = ports(ops_[i].inputs);
      op.outputs = ports(ops_[i].outputs);
      op.application = std::move(*ops_[i].application);
      op.pointer = d.where.pointer();
      out.operations.push_back(std::move(op));
    }
    for (std::size_t i : order) {
      for (const PortTensors& port : out.operations[i].inputs) {
        for (std::size_t t : port.tensors) {
          std::vector<std::size_t>& consumers = out.tensors[t].consumers;
          if (consumers.empty() || consumers.back() != i) {
            consumers.push_back(i);
          }
        }
      }
    }
    out.buildIndex();
    if (graph_.outputs) {
      for (const std::string& name : *graph_.outputs) {
        out.outputs.push_back(*out.tensorIndex(name));
      }
    } else {
      // Default: what operations produce and nothing consumes.
      for (std::size_t t = 0; t < out.tensors.size(); ++t) {
        if (out.tensors[t].producer && out.tensors[t].consumers.empty()) {
          out.outputs.push_back(t);
        }
      }
    }
    return out;
  }

  const Graph& graph_;
  const metakernel::MetakernelLibrary& library_;
  std::vector<OpState> ops_;
  std::vector<TensorState> tensors_;
  std::unordered_map<std::string, std::size_t> byName_;
  std::vector<Diagnostic>* costWarnings_; // null: a cost that differs is an error
  std::size_t costWarningsBefore_;
  detail::JsonLayout computed_; // scratch for checkStoredFields
  detail::JsonLayout stored_;
};

} // namespace

ExpandedGraph expand(const Graph& graph, const metakernel::MetakernelLibrary& library,
                     std::vector<Diagnostic>* costWarnings) {
  ExpandedGraph expanded = Expander(graph, library, costWarnings).run();
  if (graph.document) {
    expanded.file = graph.document->source().name();
  }
  return expanded;
}

} // namespace tapestry::graph
