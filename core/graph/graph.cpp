#include "core/graph/graph.hpp"

#include <algorithm>

#include "core/expr/dtype.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry::graph {

bool isValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c >= 0x21 && c <= 0x7E && c != '"' && c != '\\'; });
}

bool isKnownDType(std::string_view name) {
  return expr::findDType(name) != nullptr;
}

const char* formatTag(Format format) {
  return format == Format::Graph ? "graph/v1" : "expanded/v1";
}

const Tensor* ExpandedGraph::findTensor(std::string_view key) const {
  std::optional<std::size_t> i = tensorIndex(key);
  return i ? &tensors[*i] : nullptr;
}

const Operation* ExpandedGraph::findOperation(std::string_view key) const {
  std::optional<std::size_t> i = operationIndex(key);
  return i ? &operations[*i] : nullptr;
}

std::optional<std::size_t> ExpandedGraph::tensorIndex(std::string_view key) const {
  auto it = tensorByName_.find(std::string(key));
  return it == tensorByName_.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

std::optional<std::size_t> ExpandedGraph::operationIndex(std::string_view key) const {
  auto it = operationByName_.find(std::string(key));
  return it == operationByName_.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

std::int64_t ExpandedGraph::totalFlops() const {
  std::int64_t total = 0;
  for (const Operation& op : operations) {
    total = checkedAdd(total, op.application.flops);
  }
  return total;
}

void ExpandedGraph::buildIndex() {
  tensorByName_.clear();
  operationByName_.clear();
  tensorByName_.reserve(tensors.size());
  operationByName_.reserve(operations.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    tensorByName_.emplace(tensors[i].name, i);
  }
  for (std::size_t i = 0; i < operations.size(); ++i) {
    operationByName_.emplace(operations[i].name, i);
  }
}

} // namespace tapestry::graph
