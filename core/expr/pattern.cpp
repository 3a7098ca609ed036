// Matches shapes against patterns, binding their variables. A level of a pattern
// holds at most one variadic element (checked at parse time), so matching is a
// single left-to-right pass: the variadic element takes whatever the fixed ones
// leave over.
#include <map>
#include <span>

#include "core/expr/ast.hpp"
#include "core/expr/expr.hpp"
#include "core/zspace/zpoint.hpp"

namespace tapestry::expr {

namespace {

class Matcher {
public:
  // `indexed` collects the per-element values of `$n[$i]` (a dim) and `$s[$i]...`
  // (a list of dims); null outside list inputs.
  Matcher(const Pattern& p, std::span<const std::int64_t> shape, Bindings& bindings,
          const std::string& source, std::map<std::string, Value, std::less<>>* indexed)
      : p_(p), shape_(shape), bindings_(bindings), source_(source), indexed_(indexed) {}

  void run() {
    const PatternNode& root = p_.root();
    auto rank = static_cast<std::int64_t>(shape_.size());
    if (root.variadic ? rank < root.minWidth : rank != root.minWidth) {
      throw ExprError(root.column, source_ + " is " + formatInts(shape_) + " but pattern " +
                                       p_.text() + " expects rank " +
                                       (root.variadic ? "at least " : "") +
                                       std::to_string(root.minWidth));
    }
    level(root, 0, shape_.size());
  }

private:
  void level(const PatternNode& parent, std::size_t begin, std::size_t end) {
    std::size_t extra = end - begin - static_cast<std::size_t>(parent.minWidth);
    std::size_t pos = begin;
    for (const PatternNode& child : parent.children) {
      std::size_t width = static_cast<std::size_t>(child.minWidth) + (child.variadic ? extra : 0);
      element(child, pos, pos + width);
      pos += width;
    }
  }

  Value dims(std::size_t begin, std::size_t end) const {
    return Value::ints(
        std::vector<std::int64_t>(shape_.begin() + static_cast<std::ptrdiff_t>(begin),
                                  shape_.begin() + static_cast<std::ptrdiff_t>(end)));
  }

  void element(const PatternNode& n, std::size_t begin, std::size_t end) {
    switch (n.kind) {
    case PatternKind::Dim:
      bindings_.bind(n.name, shape_[begin], source_);
      return;
    case PatternKind::Rest:
      bindings_.bind(n.name, dims(begin, end), source_);
      return;
    case PatternKind::Any:
    case PatternKind::AnyRest:
      return;
    case PatternKind::Int:
      if (shape_[begin] != n.value) {
        throw ExprError(n.column, source_ + " is " + formatInts(shape_) + ": dim " +
                                      std::to_string(begin) + " is " +
                                      std::to_string(shape_[begin]) + ", pattern " + p_.text() +
                                      " expects " + std::to_string(n.value));
      }
      return;
    case PatternKind::Group:
      bindings_.bind(n.name, dims(begin, end), source_);
      level(n, begin, end);
      return;
    case PatternKind::Indexed:
      if (indexed_ == nullptr) {
        throw ExprError(n.column, "indexed dims ($" + n.name + "[$" + n.indexName +
                                      "]) are only allowed in list inputs");
      }
      (*indexed_)[n.name] = Value(shape_[begin]);
      return;
    case PatternKind::IndexedRest:
      if (indexed_ == nullptr) {
        throw ExprError(n.column, "indexed lists ($" + n.name + "[$" + n.indexName +
                                      "]...) are only allowed in list inputs");
      }
      (*indexed_)[n.name] = dims(begin, end);
      return;
    case PatternKind::List:
      level(n, begin, end);
      return;
    }
  }

  const Pattern& p_;
  std::span<const std::int64_t> shape_;
  Bindings& bindings_;
  const std::string& source_;
  std::map<std::string, Value, std::less<>>* indexed_;
};

void collectIndexed(const PatternNode& n, std::vector<const PatternNode*>& out) {
  if (n.kind == PatternKind::Indexed || n.kind == PatternKind::IndexedRest) {
    out.push_back(&n);
  }
  for (const PatternNode& c : n.children) {
    collectIndexed(c, out);
  }
}

} // namespace

void match(const Pattern& p, const std::vector<std::int64_t>& shape, Bindings& bindings,
           const std::string& source) {
  Matcher(p, shape, bindings, source, nullptr).run();
}

void matchList(const Pattern& p, const std::vector<std::vector<std::int64_t>>& shapes,
               Bindings& bindings, const std::string& source) {
  std::vector<const PatternNode*> indexedNodes;
  collectIndexed(p.root(), indexedNodes);
  std::map<std::string, List, std::less<>> perElement;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::map<std::string, Value, std::less<>> indexed;
    std::string elementSource = source + "[" + std::to_string(i) + "]";
    Matcher(p, shapes[i], bindings, elementSource, &indexed).run();
    for (auto& [name, value] : indexed) {
      perElement[name].push_back(std::move(value));
    }
  }
  auto count = static_cast<std::int64_t>(shapes.size());
  for (const PatternNode* n : indexedNodes) {
    bindings.bind(n->name, Value(perElement[n->name]), source);
    bindings.bind(n->indexName, Value(count), source);
  }
}

} // namespace tapestry::expr
