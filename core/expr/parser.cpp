// Parses expressions, patterns and IPFs with the ANTLR4 grammar, then converts the
// parse tree into our own AST (core/expr/ast.hpp). ANTLR types stay in this file.
//
// Syntax errors become one ExprError: the first one, at its column, worded as
// "expected ',' or ']'" from the parser's expected-token set rather than ANTLR's
// "mismatched input" prose.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <antlr4-runtime.h>

#include "TapestryLexer.h"
#include "TapestryParser.h"
#include "core/diag/utf8.hpp"
#include "core/expr/ast.hpp"
#include "core/expr/body.hpp"
#include "core/expr/body_internal.hpp"
#include "core/expr/dtype.hpp"
#include "core/expr/expr.hpp"
#include "core/expr/syntax_internal.hpp"

namespace tapestry::expr {

namespace {

using grammar::TapestryLexer;
using grammar::TapestryParser;

int columnOf(const antlr4::Token* t) {
  return static_cast<int>(t->getStartIndex()) + 1;
}

// Runs the lexer and parser over `text`, calls `entry` for the parse tree and
// `convert` on it while the parser (which owns the tree) is alive.
template <class Tree>
void runParser(std::string_view text, Tree* (TapestryParser::*entry)(),
               const std::function<void(Tree*)>& convert) {
  syntax::run(
      text, [entry](TapestryParser& parser) { return (parser.*entry)(); },
      [&convert](antlr4::ParserRuleContext* tree) { convert(static_cast<Tree*>(tree)); });
}

struct FunctionInfo {
  Function function;
  int minArgs;
  int maxArgs; // -1: no limit
};

const std::map<std::string, FunctionInfo, std::less<>>& functions() {
  static const std::map<std::string, FunctionInfo, std::less<>> table = {
      {"len", {Function::Len, 1, 1}},
      {"sum", {Function::Sum, 1, 1}},
      {"prod", {Function::Prod, 1, 1}},
      {"min", {Function::Min, 1, -1}},
      {"max", {Function::Max, 1, -1}},
      {"ones", {Function::Ones, 1, 1}},
      {"zeros", {Function::Zeros, 1, 1}},
      {"range", {Function::Range, 1, 1}},
      {"ceil_div", {Function::CeilDiv, 2, 2}},
      {"if", {Function::If, 3, 3}},
      {"broadcast", {Function::Broadcast, 2, 2}},
      {"broadcast_rows", {Function::BroadcastRows, 2, 2}},
      {"refine", {Function::Refine, 2, 2}},
      {"refine_rows", {Function::RefineRows, 3, 3}},
      {"all_equal", {Function::AllEqual, 1, 1}},
  };
  return table;
}

std::string knownFunctions() {
  std::string out;
  for (const auto& [name, info] : functions()) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

class ExprConverter {
public:
  bool usesAt = false;

  ExprNode convert(TapestryParser::ExprContext* c) {
    ExprNode n;
    n.column = columnOf(c->getStart());
    n.length = static_cast<int>(c->getStop()->getStopIndex() - c->getStart()->getStartIndex()) + 1;
    n.opColumn = n.column;
    if (auto* s = dynamic_cast<TapestryParser::SelectExprContext*>(c)) {
      auto* sel = s->selector();
      n.opColumn = columnOf(s->open);
      n.children.push_back(convert(s->expr()));
      if (sel->colon) {
        n.kind = ExprKind::Slice;
        n.hasLo = sel->lo != nullptr;
        n.hasHi = sel->hi != nullptr;
        if (sel->lo) {
          n.children.push_back(convert(sel->lo));
        }
        if (sel->hi) {
          n.children.push_back(convert(sel->hi));
        }
      } else {
        n.kind = ExprKind::Select;
        n.children.push_back(convert(sel->lo));
      }
    } else if (auto* p = dynamic_cast<TapestryParser::PowExprContext*>(c)) {
      binary(n, p->op, p->expr(0), p->expr(1));
    } else if (auto* m = dynamic_cast<TapestryParser::MulExprContext*>(c)) {
      binary(n, m->op, m->expr(0), m->expr(1));
    } else if (auto* a = dynamic_cast<TapestryParser::AddExprContext*>(c)) {
      binary(n, a->op, a->expr(0), a->expr(1));
    } else if (auto* cmp = dynamic_cast<TapestryParser::CmpExprContext*>(c)) {
      binary(n, cmp->op, cmp->expr(0), cmp->expr(1));
    } else if (auto* neg = dynamic_cast<TapestryParser::NegExprContext*>(c)) {
      ExprNode operand = convert(neg->expr());
      if (operand.kind == ExprKind::Int && operand.intValue != 0) {
        // Fold "-5" into a literal; the positive literal always negates safely.
        operand.intValue = -operand.intValue;
        operand.column = n.column;
        operand.length = n.length;
        operand.opColumn = n.column;
        return operand;
      }
      n.kind = ExprKind::Neg;
      n.children.push_back(std::move(operand));
    } else if (auto* no = dynamic_cast<TapestryParser::NotExprContext*>(c)) {
      n.kind = ExprKind::Not;
      n.children.push_back(convert(no->expr()));
    } else if (auto* an = dynamic_cast<TapestryParser::AndExprContext*>(c)) {
      n.kind = ExprKind::And;
      n.opColumn = columnOf(an->op);
      n.children.push_back(convert(an->expr(0)));
      n.children.push_back(convert(an->expr(1)));
    } else if (auto* o = dynamic_cast<TapestryParser::OrExprContext*>(c)) {
      n.kind = ExprKind::Or;
      n.opColumn = columnOf(o->op);
      n.children.push_back(convert(o->expr(0)));
      n.children.push_back(convert(o->expr(1)));
    } else if (auto* i = dynamic_cast<TapestryParser::IntExprContext*>(c)) {
      n.kind = ExprKind::Int;
      std::string digits = i->INT()->getText();
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n.intValue);
      if (ec != std::errc()) {
        throw ExprError(n.column, "integer literal " + digits + " does not fit in int64");
      }
    } else if (auto* b = dynamic_cast<TapestryParser::BoolExprContext*>(c)) {
      n.kind = ExprKind::Bool;
      n.boolValue = b->value->getText() == "true";
    } else if (auto* v = dynamic_cast<TapestryParser::VarExprContext*>(c)) {
      n.kind = ExprKind::Var;
      n.name = v->VAR()->getText().substr(1);
    } else if (dynamic_cast<TapestryParser::AtExprContext*>(c)) {
      n.kind = ExprKind::IndexPoint;
      usesAt = true;
    } else if (auto* nm = dynamic_cast<TapestryParser::NameExprContext*>(c)) {
      name(n, nm);
    } else if (auto* l = dynamic_cast<TapestryParser::ListExprContext*>(c)) {
      if (l->forKw != nullptr) {
        comprehension(n, l);
        return n;
      }
      n.kind = ExprKind::List;
      std::vector<TapestryParser::ListElemContext*> elems = l->listElem();
      // An empty element is only allowed last: "[]" and a trailing comma.
      if (isEmpty(elems.back())) {
        elems.pop_back();
      }
      for (auto* e : elems) {
        if (isEmpty(e)) {
          throw ExprError(columnOf(e->getStart()), "expected an expression or '...'");
        }
        if (e->expr()) {
          n.children.push_back(convert(e->expr()));
        } else {
          // A bare `...` is `1...`.
          ExprNode one;
          one.kind = ExprKind::Int;
          one.intValue = 1;
          one.column = one.opColumn = columnOf(e->ellipsis);
          one.length = 3;
          n.children.push_back(std::move(one));
        }
        n.expanded.push_back(e->ellipsis != nullptr);
      }
    } else if (auto* pa = dynamic_cast<TapestryParser::ParenExprContext*>(c)) {
      return convert(pa->expr());
    } else {
      throw InternalError("expr parser: unknown parse tree node " + c->getText());
    }
    return n;
  }

private:
  static bool isEmpty(TapestryParser::ListElemContext* e) {
    return e->expr() == nullptr && e->ellipsis == nullptr;
  }

  // [body for $x in source]: exactly one element, not spliced.
  void comprehension(ExprNode& n, TapestryParser::ListExprContext* l) {
    std::vector<TapestryParser::ListElemContext*> elems = l->listElem();
    n.kind = ExprKind::Comprehension;
    n.opColumn = columnOf(l->forKw);
    if (elems.size() > 1) {
      throw ExprError(columnOf(elems[1]->getStart()),
                      "a comprehension has one element: [EXPR for $x in LIST]");
    }
    if (isEmpty(elems[0])) {
      throw ExprError(n.opColumn, "expected an expression before 'for'");
    }
    if (elems[0]->ellipsis != nullptr) {
      throw ExprError(columnOf(elems[0]->ellipsis),
                      "the element of a comprehension cannot be spliced with '...'");
    }
    n.name = l->var->getText().substr(1);
    n.children.push_back(convert(elems[0]->expr()));
    n.children.push_back(convert(l->source));
  }

  void binary(ExprNode& n, antlr4::Token* op, TapestryParser::ExprContext* lhs,
              TapestryParser::ExprContext* rhs) {
    static const std::map<std::string, BinaryOp, std::less<>> ops = {
        {"+", BinaryOp::Add}, {"-", BinaryOp::Sub},  {"*", BinaryOp::Mul}, {"/", BinaryOp::Div},
        {"%", BinaryOp::Mod}, {"**", BinaryOp::Pow}, {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne},
        {"<", BinaryOp::Lt},  {"<=", BinaryOp::Le},  {">", BinaryOp::Gt},  {">=", BinaryOp::Ge}};
    n.kind = ExprKind::Binary;
    n.op = ops.at(op->getText());
    n.opColumn = columnOf(op);
    n.children.push_back(convert(lhs));
    n.children.push_back(convert(rhs));
  }

  void name(ExprNode& n, TapestryParser::NameExprContext* c) {
    std::string id = c->ID()->getText();
    auto fn = functions().find(id);
    if (c->open == nullptr) {
      if (fn != functions().end()) {
        throw ExprError(n.column, "'" + id + "' is a function: call it as " + id + "(...)");
      }
      if (findDType(id) == nullptr) {
        throw ExprError(n.column, "unknown name '" + id +
                                      "' (variables start with '$'; a bare name is a dtype "
                                      "such as float32)");
      }
      n.kind = ExprKind::DType;
      n.name = id;
      return;
    }
    if (fn == functions().end()) {
      throw ExprError(n.column,
                      "unknown function '" + id + "'; known functions: " + knownFunctions());
    }
    const FunctionInfo& info = fn->second;
    int args = static_cast<int>(c->expr().size());
    if (args < info.minArgs || (info.maxArgs >= 0 && args > info.maxArgs)) {
      std::string want = info.maxArgs < 0 ? "at least " + plural(info.minArgs, "argument")
                         : info.minArgs == info.maxArgs ? plural(info.minArgs, "argument")
                                                        : std::to_string(info.minArgs) + " to " +
                                                              plural(info.maxArgs, "argument");
      throw ExprError(n.column, id + "() takes " + want + ", got " + std::to_string(args));
    }
    n.kind = ExprKind::Call;
    n.function = info.function;
    n.name = id;
    for (auto* a : c->expr()) {
      n.children.push_back(convert(a));
    }
  }
};

// Body statements and block expressions (rule bodyInput) into BodyNodes.
class BodyConverter {
public:
  BodyNode convert(TapestryParser::BexprContext* c) {
    BodyNode n;
    n.column = columnOf(c->getStart());
    n.length = static_cast<int>(c->getStop()->getStopIndex() - c->getStart()->getStartIndex()) + 1;
    n.opColumn = n.column;
    if (auto* p = dynamic_cast<TapestryParser::BPowExprContext*>(c)) {
      binary(n, p->op, p->bexpr(0), p->bexpr(1));
    } else if (auto* m = dynamic_cast<TapestryParser::BMulExprContext*>(c)) {
      binary(n, m->op, m->bexpr(0), m->bexpr(1));
    } else if (auto* a = dynamic_cast<TapestryParser::BAddExprContext*>(c)) {
      binary(n, a->op, a->bexpr(0), a->bexpr(1));
    } else if (auto* neg = dynamic_cast<TapestryParser::BNegExprContext*>(c)) {
      BodyNode operand = convert(neg->bexpr());
      if (operand.kind == BodyKind::Number) {
        operand.number = -operand.number;
        operand.column = operand.opColumn = n.column;
        operand.length = n.length;
        return operand;
      }
      n.kind = BodyKind::Neg;
      n.children.push_back(std::move(operand));
    } else if (auto* f = dynamic_cast<TapestryParser::BFloatExprContext*>(c)) {
      n.kind = BodyKind::Number;
      number(n, f->FLOAT()->getText(), false);
    } else if (auto* i = dynamic_cast<TapestryParser::BIntExprContext*>(c)) {
      n.kind = BodyKind::Number;
      number(n, i->INT()->getText(), true);
    } else if (auto* b = dynamic_cast<TapestryParser::BBoolExprContext*>(c)) {
      n.kind = BodyKind::Bool;
      n.boolValue = b->value->getText() == "true";
    } else if (auto* v = dynamic_cast<TapestryParser::BVarExprContext*>(c)) {
      n.kind = BodyKind::Var;
      n.name = v->VAR()->getText().substr(1);
    } else if (auto* nm = dynamic_cast<TapestryParser::BNameExprContext*>(c)) {
      n.name = nm->ID()->getText();
      if (nm->open == nullptr) {
        n.kind = BodyKind::Name;
        return n;
      }
      n.kind = BodyKind::Call;
      bool keyword = false;
      for (auto* arg : nm->barg()) {
        if (arg->key != nullptr) {
          keyword = true;
          n.keys.push_back(arg->key->getText());
          n.keyColumns.push_back(columnOf(arg->key));
        } else if (keyword) {
          throw ExprError(columnOf(arg->getStart()),
                          "a positional argument cannot follow a keyword argument");
        } else {
          n.keys.emplace_back();
          n.keyColumns.push_back(columnOf(arg->getStart()));
        }
        n.children.push_back(convert(arg->bexpr()));
      }
    } else if (auto* l = dynamic_cast<TapestryParser::BListExprContext*>(c)) {
      n.kind = BodyKind::ListOf;
      for (auto* e : l->bexpr()) {
        n.children.push_back(convert(e));
      }
    } else if (auto* pa = dynamic_cast<TapestryParser::BParenExprContext*>(c)) {
      return convert(pa->bexpr());
    } else {
      throw InternalError("body parser: unknown parse tree node " + c->getText());
    }
    return n;
  }

private:
  static void number(BodyNode& n, const std::string& text, bool isInt) {
    n.isInt = isInt;
    if (isInt) {
      std::int64_t value = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc()) {
        throw ExprError(n.column, "integer literal " + text + " does not fit in int64");
      }
      n.number = static_cast<double>(value);
      return;
    }
    char* end = nullptr;
    n.number = std::strtod(text.c_str(), &end);
    if (!std::isfinite(n.number)) {
      throw ExprError(n.column, "number " + text + " is out of range");
    }
  }

  void binary(BodyNode& n, antlr4::Token* op, TapestryParser::BexprContext* lhs,
              TapestryParser::BexprContext* rhs) {
    static const std::map<std::string, BodyOp, std::less<>> ops = {
        {"+", BodyOp::Add}, {"-", BodyOp::Sub},  {"*", BodyOp::Mul},
        {"/", BodyOp::Div}, {"**", BodyOp::Pow}, {"@", BodyOp::MatMul}};
    n.kind = BodyKind::Binary;
    n.op = ops.at(op->getText());
    n.opColumn = columnOf(op);
    n.children.push_back(convert(lhs));
    n.children.push_back(convert(rhs));
  }
};

enum class Role { Dim, List, Group, Indexed, IndexedList, Count };

const char* roleName(Role r) {
  switch (r) {
  case Role::Dim:
    return "a dim";
  case Role::List:
    return "a list (...)";
  case Role::Group:
    return "a group";
  case Role::Indexed:
    return "an indexed dim";
  case Role::IndexedList:
    return "an indexed list ([$i]...)";
  case Role::Count:
    return "an element count";
  }
  return "?";
}

class PatternConverter {
public:
  std::vector<std::string> variables;

  PatternNode convertList(TapestryParser::PatternContext* c) {
    PatternNode n;
    n.kind = PatternKind::List;
    n.column = columnOf(c->getStart());
    n.length = static_cast<int>(c->getStop()->getStopIndex() - c->getStart()->getStartIndex()) + 1;
    elements(n, c->patElem());
    return n;
  }

private:
  std::map<std::string, Role, std::less<>> roles_;

  void use(const std::string& name, Role role, int column) {
    auto [it, inserted] = roles_.emplace(name, role);
    if (inserted) {
      variables.push_back(name);
    } else if (it->second != role) {
      throw ExprError(column, "$" + name + " is used both as " + roleName(it->second) + " and as " +
                                  roleName(role));
    }
  }

  static bool isEmpty(TapestryParser::PatElemContext* e) {
    return e->name == nullptr && e->any == nullptr && e->INT() == nullptr;
  }

  // An empty element is only allowed last: "[]" and a trailing comma.
  void elements(PatternNode& n, std::vector<TapestryParser::PatElemContext*> elems) {
    if (isEmpty(elems.back())) {
      elems.pop_back();
    }
    for (auto* e : elems) {
      if (isEmpty(e)) {
        throw ExprError(columnOf(e->getStart()), "expected a variable, an integer or '_'");
      }
      n.children.push_back(convert(e));
    }
    checkLevel(n);
  }

  // At most one variadic element per level, else the split would be ambiguous.
  static void checkLevel(PatternNode& n) {
    bool seen = false;
    n.minWidth = 0;
    n.variadic = false;
    for (const PatternNode& child : n.children) {
      if (child.variadic) {
        if (seen) {
          throw ExprError(child.column, "at most one '...' per pattern level");
        }
        seen = true;
        n.variadic = true;
      }
      n.minWidth += child.minWidth;
    }
  }

  PatternNode convert(TapestryParser::PatElemContext* c) {
    PatternNode n;
    n.column = columnOf(c->getStart());
    n.length = static_cast<int>(c->getStop()->getStopIndex() - c->getStart()->getStartIndex()) + 1;
    if (c->name) {
      n.name = c->name->getText().substr(1);
      if (c->ellipsis) {
        n.kind = PatternKind::Rest;
        n.minWidth = 0;
        n.variadic = true;
        use(n.name, Role::List, n.column);
      } else if (c->eq) {
        n.kind = PatternKind::Group;
        use(n.name, Role::Group, n.column);
        elements(n, c->patElem());
        if (n.children.empty()) {
          throw ExprError(columnOf(c->eq) + 2, "a group needs at least one element");
        }
      } else if (c->index) {
        n.indexName = c->index->getText().substr(1);
        if (c->indexEllipsis) {
          n.kind = PatternKind::IndexedRest;
          n.minWidth = 0;
          n.variadic = true;
          use(n.name, Role::IndexedList, n.column);
        } else {
          n.kind = PatternKind::Indexed;
          use(n.name, Role::Indexed, n.column);
        }
        use(n.indexName, Role::Count, columnOf(c->index));
      } else {
        n.kind = PatternKind::Dim;
        use(n.name, Role::Dim, n.column);
      }
    } else if (c->any) {
      n.kind = c->ellipsis ? PatternKind::AnyRest : PatternKind::Any;
      n.minWidth = c->ellipsis ? 0 : 1;
      n.variadic = c->ellipsis != nullptr;
    } else {
      n.kind = PatternKind::Int;
      std::string digits = c->INT()->getText();
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n.value);
      if (ec != std::errc()) {
        throw ExprError(n.column, "integer literal " + digits + " does not fit in int64");
      }
    }
    return n;
  }
};

} // namespace

struct Parser {
  static Expr makeExpr(std::string_view text, std::shared_ptr<const std::string> source,
                       ExprNode root, bool usesAt) {
    Expr e;
    e.text_ = std::string(text);
    e.source_ = std::move(source);
    e.root_ = std::make_shared<const ExprNode>(std::move(root));
    e.usesAt_ = usesAt;
    return e;
  }

  static Expr expression(std::string_view text) {
    auto source = std::make_shared<const std::string>(text);
    std::optional<Expr> out;
    runParser<TapestryParser::ExpressionInputContext>(
        text, &TapestryParser::expressionInput, [&](TapestryParser::ExpressionInputContext* t) {
          ExprConverter conv;
          ExprNode root = conv.convert(t->expr());
          out = makeExpr(text, source, std::move(root), conv.usesAt);
        });
    return std::move(*out);
  }

  static Pattern pattern(std::string_view text) {
    Pattern p;
    p.text_ = std::string(text);
    runParser<TapestryParser::PatternInputContext>(
        text, &TapestryParser::patternInput, [&](TapestryParser::PatternInputContext* t) {
          PatternConverter conv;
          p.root_ = std::make_shared<const PatternNode>(conv.convertList(t->pattern()));
          p.variables_ = std::move(conv.variables);
        });
    return p;
  }

  static IpfTemplate ipf(std::string_view text) {
    auto source = std::make_shared<const std::string>(text);
    IpfTemplate out;
    out.text_ = std::string(text);
    auto part = [&](TapestryParser::ExprContext* c) {
      ExprConverter conv;
      ExprNode root = conv.convert(c);
      std::size_t start = c->getStart()->getStartIndex();
      std::size_t stop = c->getStop()->getStopIndex();
      return makeExpr(text.substr(start, stop - start + 1), source, std::move(root), conv.usesAt);
    };
    runParser<TapestryParser::IpfInputContext>(text, &TapestryParser::ipfInput,
                                               [&](TapestryParser::IpfInputContext* t) {
                                                 out.rows_ = part(t->rows);
                                                 out.shape_ = part(t->shape);
                                               });
    return out;
  }
};

Expr parseExpression(std::string_view text) {
  return Parser::expression(text);
}
Pattern parsePattern(std::string_view text) {
  return Parser::pattern(text);
}
IpfTemplate parseIpf(std::string_view text) {
  return Parser::ipf(text);
}

Body parseBody(std::string_view text) {
  std::vector<BodyStatement> statements;
  runParser<TapestryParser::BodyInputContext>(text, &TapestryParser::bodyInput,
                                              [&](TapestryParser::BodyInputContext* t) {
                                                BodyConverter conv;
                                                for (auto* s : t->statement()) {
                                                  BodyStatement st;
                                                  for (antlr4::Token* target : s->targets) {
                                                    st.targets.push_back(target->getText());
                                                    st.targetColumns.push_back(columnOf(target));
                                                  }
                                                  st.value = conv.convert(s->value);
                                                  statements.push_back(std::move(st));
                                                }
                                              });
  checkBodyNames(statements);
  Body body;
  body.text_ = std::make_shared<const std::string>(text);
  body.statements_ = std::make_shared<const std::vector<BodyStatement>>(std::move(statements));
  return body;
}

} // namespace tapestry::expr
