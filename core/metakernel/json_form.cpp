// The parsed form of a template as JSON (`kernels show --format json`).
#include "core/metakernel/metakernel.hpp"

namespace tapestry::metakernel {

namespace {

Json tensorsJson(const std::vector<std::pair<std::string, std::vector<TensorType>>>& ports) {
  Json out = Json::object();
  for (const auto& [name, tensors] : ports) {
    Json list = Json::array();
    for (const TensorType& t : tensors) {
      list.push_back(Json{{"shape", t.shape}, {"dtype", t.dtype}});
    }
    out[name] = list;
  }
  return out;
}

} // namespace

Json toJson(const Metakernel& k) {
  Json out = Json::object();
  out["name"] = k.name;
  out["file"] = k.location.file;
  out["line"] = k.location.line;
  out["doc"] = k.doc;
  Json params = Json::object();
  for (const ParamSpec& p : k.params) {
    Json j = Json::object();
    j["type"] = paramTypeName(p.type);
    if (p.defaultValue) {
      j["default"] = *p.defaultValue;
    }
    params[p.name] = j;
  }
  out["params"] = params;
  Json constraints = Json::object();
  for (const Constraint& c : k.constraints) {
    constraints[c.variable] = Json{{"enum", c.allowed}};
  }
  out["constraints"] = constraints;
  Json inputs = Json::object();
  for (const InputSpec& in : k.inputs) {
    Json j = Json::object();
    j["shape"] = in.shape.text();
    if (in.dtype) {
      j["dtype"] = in.dtype->field.text;
    }
    j["ipf"] = in.ipf.ipf.text();
    j["list"] = in.list;
    j["optional"] = in.optional;
    j["packed"] = in.packed;
    inputs[in.name] = j;
  }
  out["inputs"] = inputs;
  Json let = Json::object();
  for (const LetSpec& l : k.let) {
    let[l.name] = l.field.text;
  }
  out["let"] = let;
  out["index"] = k.index.text();
  Json outputs = Json::object();
  for (const OutputSpec& o : k.outputs) {
    Json j = Json::object();
    j["shape"] = o.shape ? o.shape->text() : k.index.text();
    j["dtype"] = o.dtype.field.text;
    j["ipf"] = o.ipf.ipf.text();
    j["combine"] = o.combine ? Json(combineName(*o.combine)) : Json(nullptr);
    j["list"] = o.list;
    if (o.count) {
      j["count"] = o.count->text();
    }
    outputs[o.name] = j;
  }
  out["outputs"] = outputs;
  Json cost = Json::object();
  cost["flops"] = k.flops ? k.flops->text() : "0";
  if (k.bytes) {
    cost["bytes"] = k.bytes->text();
  }
  out["cost"] = cost;
  Json where = Json::array();
  for (const WhereSpec& w : k.where) {
    if (w.message.empty()) {
      where.push_back(w.field.text);
    } else if (w.given.empty()) {
      where.push_back(Json{{"check", w.field.text}, {"message", w.message}});
    } else {
      where.push_back(Json{{"check", w.field.text}, {"message", w.message}, {"given", w.given}});
    }
  }
  out["where"] = where;
  Json examples = Json::array();
  for (const ExampleSpec& ex : k.examples) {
    Json j = Json::object();
    j["inputs"] = tensorsJson(ex.inputs);
    j["params"] = ex.params;
    if (ex.expectIndex || !ex.expectOutputs.empty() || ex.expectFlops) {
      Json expect = Json::object();
      if (ex.expectIndex) {
        expect["index"] = *ex.expectIndex;
      }
      if (!ex.expectOutputs.empty()) {
        expect["outputs"] = tensorsJson(ex.expectOutputs);
      }
      if (ex.expectFlops) {
        expect["flops"] = *ex.expectFlops;
      }
      j["expect"] = expect;
    }
    if (ex.expectError) {
      j["error"] = *ex.expectError;
    }
    examples.push_back(j);
  }
  out["examples"] = examples;
  out["body"] = k.body ? Json(k.body->field.text) : Json(nullptr);
  if (k.externKernel) {
    out["extern"] = Json{{"library", k.externKernel->library}, {"symbol", k.externKernel->symbol}};
  }
  return out;
}

} // namespace tapestry::metakernel
