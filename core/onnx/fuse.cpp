// Graph-level folds the importer makes between constant folding and mapping:
// a BatchNormalization after a convolution of constant weights becomes part of
// that convolution's weight and bias (ONNX Runtime's ConvBNFusion), as
// PyTorch's own export does for Conv but not for ConvTranspose, and other
// exporters (TensorFlow's, Keras') for neither.
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

// Folds `bn` into `conv` when every value it needs is a float constant of the
// right size: w' = w * s and b' = (b - mean) * s + B per output channel, s =
// scale / sqrt(var + epsilon). True when it did (conv then writes bn's output).
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
  std::vector<std::vector<double>> p; // scale, B, mean, var
  for (int i = 1; i <= 4; ++i) {
    const Constant* c = floatConstant(constants, bn.input(i));
    if (c == nullptr || c->count() != channels) {
      return false;
    }
    p.push_back(c->values());
  }
  if (channel.empty() || (b != nullptr && b->count() != channels)) {
    return false;
  }
  const double epsilon = floatAttribute(bn, "epsilon", 1e-5f);
  std::vector<double> s(static_cast<std::size_t>(channels));
  std::vector<double> bias(static_cast<std::size_t>(channels));
  const std::vector<double> b0 = b != nullptr ? b->values() : std::vector<double>(s.size(), 0.0);
  for (std::size_t o = 0; o < s.size(); ++o) {
    s[o] = p[0][o] / std::sqrt(p[3][o] + epsilon);
    bias[o] = (b0[o] - p[2][o]) * s[o] + p[1][o];
  }
  std::vector<double> weight = w->values();
  for (std::size_t i = 0; i < weight.size(); ++i) {
    weight[i] *= s[static_cast<std::size_t>(channel[i])];
  }
  const std::string wName = freshName(constants, values, conv.input(1), "folded_bn");
  const std::string bName = freshName(constants, values, wName, "bias");
  constants[wName] = makeConstant(w->type, w->shape, weight);
  constants[bName] = makeConstant(w->type, {channels}, bias);
  values.insert(wName);
  values.insert(bName);
  conv.set_input(1, wName);
  if (conv.input_size() > 2) {
    conv.set_input(2, bName);
  } else {
    conv.add_input(bName);
  }
  conv.set_output(0, bn.output(0));
  return true;
}

} // namespace

std::size_t foldBatchNorms(std::vector<::onnx::NodeProto>& live,
                           std::map<std::string, Constant>& constants,
                           const ::onnx::GraphProto& g) {
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
    ::onnx::NodeProto& conv = live[from->second];
    if ((conv.op_type() != "Conv" && conv.op_type() != "ConvTranspose") ||
        !defaultDomain(conv.domain()) || conv.input_size() < 2 || conv.output_size() != 1) {
      continue;
    }
    if (foldInto(conv, bn, constants, values)) {
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

} // namespace tapestry::onnx_import::detail
