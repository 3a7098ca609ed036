// Graph-level folds the importer makes between constant folding and mapping:
// a BatchNormalization after a convolution of constant weights becomes part of
// that convolution's weight and bias (ONNX Runtime's ConvBNFusion), as
// PyTorch's own export does for Conv but not for ConvTranspose, and other
// exporters (TensorFlow's, Keras') for neither; one after a product of a
// constant weight (Gemm, or a MatMul of rank 2, which becomes a Gemm with the
// folded bias: ONNX Runtime's MatMulBNFusion), as a BatchNorm1d after a
// Linear exports, the same way. And optional outputs that nothing reads lose
// their names.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

namespace {

bool isFloat(int type) {
  return type == ::onnx::TensorProto::FLOAT || type == ::onnx::TensorProto::DOUBLE;
}

// The constant `name` when it holds float32 or float64 values in the model.
const Constant* floatConstant(const std::map<std::string, Constant>& constants,
                              const std::string& name) {
  auto it = constants.find(name);
  if (name.empty() || it == constants.end() || !it->second.present || !isFloat(it->second.type)) {
    return nullptr;
  }
  return &it->second;
}

// `base` + "/" + `what`, or with _2, _3, ... until no value has the name.
std::string freshName(const std::map<std::string, Constant>& constants,
                      const std::set<std::string>& values, const std::string& base,
                      const std::string& what) {
  std::string name = base + "/" + what;
  for (int i = 2; constants.count(name) != 0 || values.count(name) != 0; ++i) {
    name = base + "/" + what + "_" + std::to_string(i);
  }
  return name;
}

// The output channel of each element of a convolution's weight: Conv's
// [O, C/g, K...] its first index; ConvTranspose's [C, O/g, K...] its group's
// first channel plus its second index. Empty when the shape does not fit.
std::vector<std::int64_t> outputChannels(const ::onnx::NodeProto& conv, const Constant& w,
                                         std::int64_t& channels) {
  if (w.shape.size() < 3) {
    return {};
  }
  std::int64_t inner = 1;
  for (std::size_t d = 2; d < w.shape.size(); ++d) {
    inner *= w.shape[d];
  }
  const std::int64_t rows = w.shape[0], cols = w.shape[1];
  std::vector<std::int64_t> channel(static_cast<std::size_t>(w.count()));
  if (conv.op_type() == "Conv") {
    channels = rows;
    for (std::size_t i = 0; i < channel.size(); ++i) {
      channel[i] = static_cast<std::int64_t>(i) / (cols * inner);
    }
    return channel;
  }
  const std::int64_t groups = intAttribute(conv, "group", 1);
  if (groups < 1 || rows % groups != 0) {
    return {};
  }
  channels = cols * groups;
  for (std::size_t i = 0; i < channel.size(); ++i) {
    const std::int64_t row = static_cast<std::int64_t>(i) / (cols * inner);
    const std::int64_t col = static_cast<std::int64_t>(i) / inner % cols;
    channel[i] = row / (rows / groups) * cols + col;
  }
  return channel;
}

// The batch norm as an affine map per channel, y = x * s + shift with s =
// scale / sqrt(var + epsilon) and shift = B - mean * s; false when one of its
// parameters is not a float constant of `channels` values.
bool batchNormAffine(const ::onnx::NodeProto& bn, const std::map<std::string, Constant>& constants,
                     std::int64_t channels, std::vector<double>& s, std::vector<double>& shift) {
  std::vector<std::vector<double>> p; // scale, B, mean, var
  for (int i = 1; i <= 4; ++i) {
    const Constant* c = floatConstant(constants, bn.input(i));
    if (c == nullptr || c->count() != channels) {
      return false;
    }
    p.push_back(c->values());
  }
  const double epsilon = floatAttribute(bn, "epsilon", 1e-5f);
  s.assign(static_cast<std::size_t>(channels), 0.0);
  shift.assign(s.size(), 0.0);
  for (std::size_t o = 0; o < s.size(); ++o) {
    s[o] = p[0][o] / std::sqrt(p[3][o] + epsilon);
    shift[o] = p[1][o] - p[2][o] * s[o];
  }
  return true;
}

// Makes `node` read the folded weight and bias (fresh constants named after
// its weight) and write `bn`'s output.
void rewire(::onnx::NodeProto& node, const ::onnx::NodeProto& bn, const Constant& w,
            const std::vector<double>& weight, std::vector<std::int64_t> biasShape,
            const std::vector<double>& bias, std::map<std::string, Constant>& constants,
            std::set<std::string>& values) {
  const std::string wName = freshName(constants, values, node.input(1), "folded_bn");
  const std::string bName = freshName(constants, values, wName, "bias");
  constants[wName] = makeConstant(w.type, w.shape, weight);
  constants[bName] = makeConstant(w.type, std::move(biasShape), bias);
  values.insert(wName);
  values.insert(bName);
  node.set_input(1, wName);
  if (node.input_size() > 2) {
    node.set_input(2, bName);
  } else {
    node.add_input(bName);
  }
  node.set_output(0, bn.output(0));
}

// Folds `bn` into `conv` when every value it needs is a float constant of the
// right size: w' = w * s and b' = b * s + shift per output channel. True when
// it did (conv then writes bn's output).
bool foldInto(::onnx::NodeProto& conv, const ::onnx::NodeProto& bn,
              std::map<std::string, Constant>& constants, std::set<std::string>& values) {
  const Constant* w = floatConstant(constants, conv.input(1));
  const bool hasBias = conv.input_size() > 2 && !conv.input(2).empty();
  const Constant* b = hasBias ? floatConstant(constants, conv.input(2)) : nullptr;
  if (w == nullptr || (hasBias && b == nullptr)) {
    return false;
  }
  std::int64_t channels = 0;
  const std::vector<std::int64_t> channel = outputChannels(conv, *w, channels);
  std::vector<double> s, shift;
  if (channel.empty() || !batchNormAffine(bn, constants, channels, s, shift) ||
      (b != nullptr && b->count() != channels)) {
    return false;
  }
  std::vector<double> bias = b != nullptr ? b->values() : std::vector<double>(s.size(), 0.0);
  for (std::size_t o = 0; o < s.size(); ++o) {
    bias[o] = bias[o] * s[o] + shift[o];
  }
  std::vector<double> weight = w->values();
  for (std::size_t i = 0; i < weight.size(); ++i) {
    weight[i] *= s[static_cast<std::size_t>(channel[i])];
  }
  rewire(conv, bn, *w, weight, {channels}, bias, constants, values);
  return true;
}

void setFloatAttribute(::onnx::NodeProto& node, const std::string& name, float value) {
  for (::onnx::AttributeProto& a : *node.mutable_attribute()) {
    if (a.name() == name) {
      a.set_type(::onnx::AttributeProto::FLOAT);
      a.set_f(value);
      return;
    }
  }
  ::onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::FLOAT);
  a.set_f(value);
}

// Gemm's C times beta, as the folded bias starts from: [N] (absent: zeros;
// one value, [N] or [1, N]: broadcast along the rows), or [M, N] as it is.
// False for any other shape.
bool gemmAddend(const ::onnx::NodeProto& gemm, const std::map<std::string, Constant>& constants,
                std::int64_t channels, std::vector<std::int64_t>& shape,
                std::vector<double>& addend) {
  shape = {channels};
  addend.assign(static_cast<std::size_t>(channels), 0.0);
  if (gemm.op_type() != "Gemm" || gemm.input_size() < 3 || gemm.input(2).empty()) {
    return true;
  }
  const Constant* c = floatConstant(constants, gemm.input(2));
  if (c == nullptr) {
    return false;
  }
  const double beta = floatAttribute(gemm, "beta", 1.0f);
  std::vector<double> v = c->values();
  if (v.size() == 1) {
    std::fill(addend.begin(), addend.end(), beta * v[0]);
    return true;
  }
  const bool row = c->shape.size() == 1 || (c->shape.size() == 2 && c->shape[0] == 1);
  if (c->shape.size() > 2 || c->shape.back() != channels || (!row && c->shape.size() != 2)) {
    return false;
  }
  if (!row) {
    shape = c->shape;
  }
  addend = std::move(v);
  for (double& x : addend) {
    x *= beta;
  }
  return true;
}

// Folds `bn` into a product of a constant weight: a Gemm, or a MatMul whose
// result has rank 2 (its columns the batch norm's channels), which becomes a
// Gemm with the folded bias as C: B' = B * s per column of the result, C' =
// beta * C * s + shift, beta 1.
bool foldIntoProduct(::onnx::NodeProto& product, const ::onnx::NodeProto& bn,
                     std::map<std::string, Constant>& constants, std::set<std::string>& values,
                     const std::map<std::string, TensorType>& types) {
  const Constant* w = floatConstant(constants, product.input(1));
  if (w == nullptr || w->shape.size() != 2) {
    return false;
  }
  const bool gemm = product.op_type() == "Gemm";
  if (!gemm) {
    auto t = types.find(product.output(0));
    if (t == types.end() || !t->second.shape || t->second.shape->size() != 2) {
      return false;
    }
  }
  const bool transB = gemm && intAttribute(product, "transB", 0) != 0;
  const std::int64_t cols = w->shape[1];
  const std::int64_t channels = transB ? w->shape[0] : cols;
  if (channels < 1 || cols < 1) {
    return false; // (zero-size tensors are refused before)
  }
  std::vector<double> s, shift, bias;
  std::vector<std::int64_t> biasShape;
  if (!batchNormAffine(bn, constants, channels, s, shift) ||
      !gemmAddend(product, constants, channels, biasShape, bias)) {
    return false;
  }
  for (std::size_t i = 0; i < bias.size(); ++i) {
    const std::size_t n = i % s.size();
    bias[i] = bias[i] * s[n] + shift[n];
  }
  std::vector<double> weight = w->values();
  for (std::size_t i = 0; i < weight.size(); ++i) {
    const std::int64_t at = static_cast<std::int64_t>(i);
    weight[i] *= s[static_cast<std::size_t>(transB ? at / cols : at % cols)];
  }
  product.set_op_type("Gemm");
  rewire(product, bn, *w, weight, std::move(biasShape), bias, constants, values);
  setFloatAttribute(product, "beta", 1.0f);
  return true;
}

} // namespace

std::size_t foldBatchNorms(std::vector<::onnx::NodeProto>& live,
                           std::map<std::string, Constant>& constants, const ::onnx::GraphProto& g,
                           const std::map<std::string, TensorType>& types) {
  std::map<std::string, int> readers; // value -> readers (a graph output counts)
  std::map<std::string, std::size_t> producer;
  std::set<std::string> values;
  for (std::size_t i = 0; i < live.size(); ++i) {
    for (const std::string& in : live[i].input()) {
      ++readers[in];
      values.insert(in);
    }
    for (const std::string& out : live[i].output()) {
      producer[out] = i;
      values.insert(out);
    }
  }
  for (const ::onnx::ValueInfoProto& v : g.output()) {
    ++readers[v.name()];
  }
  std::vector<bool> gone(live.size(), false);
  std::size_t folded = 0;
  for (std::size_t i = 0; i < live.size(); ++i) {
    const ::onnx::NodeProto& bn = live[i];
    if (bn.op_type() != "BatchNormalization" || !defaultDomain(bn.domain()) ||
        bn.input_size() != 5 || intAttribute(bn, "training_mode", 0) != 0 ||
        intAttribute(bn, "spatial", 1) != 1) {
      continue;
    }
    bool statsRead = false; // training outputs (mean, var) that something reads
    for (int k = 1; k < bn.output_size(); ++k) {
      statsRead = statsRead || (!bn.output(k).empty() && readers.count(bn.output(k)) != 0);
    }
    auto from = producer.find(bn.input(0));
    if (statsRead || from == producer.end() || readers[bn.input(0)] != 1) {
      continue;
    }
    ::onnx::NodeProto& node = live[from->second];
    const std::string& kind = node.op_type();
    const bool conv = kind == "Conv" || kind == "ConvTranspose";
    if ((!conv && kind != "Gemm" && kind != "MatMul") || !defaultDomain(node.domain()) ||
        node.input_size() < 2 || node.output_size() != 1) {
      continue;
    }
    if (conv ? foldInto(node, bn, constants, values)
             : foldIntoProduct(node, bn, constants, values, types)) {
      gone[i] = true;
      ++folded;
    }
  }
  std::vector<::onnx::NodeProto> kept;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (!gone[i]) {
      kept.push_back(std::move(live[i]));
    }
  }
  live = std::move(kept);
  return folded;
}

// Clears the names of the optional outputs past the first that no node reads
// and the graph does not return, of the operators whose mappings take a named
// one for a used one (a Dropout's mask, a MaxPool's indices, a
// LayerNormalization's mean and inverse deviation, a BatchNormalization's
// running statistics): ONNX exporters name outputs that nothing uses. (A
// Split's results are not optional: each keeps its name.)
void dropUnreadOutputs(std::vector<::onnx::NodeProto>& live, const ::onnx::GraphProto& g) {
  std::set<std::string> read;
  for (const ::onnx::NodeProto& node : live) {
    read.insert(node.input().begin(), node.input().end());
  }
  for (const ::onnx::ValueInfoProto& v : g.output()) {
    read.insert(v.name());
  }
  static const std::set<std::string> optional = {"Dropout", "MaxPool", "LayerNormalization",
                                                 "BatchNormalization"};
  for (::onnx::NodeProto& node : live) {
    if (!defaultDomain(node.domain()) || optional.count(node.op_type()) == 0) {
      continue;
    }
    for (int i = 1; i < node.output_size(); ++i) {
      if (read.count(node.output(i)) == 0) {
        node.set_output(i, "");
      }
    }
  }
}

} // namespace tapestry::onnx_import::detail
