// Syntax errors of the one grammar, worded for people: the first error, at its
// column, as "expected ',' or ']'" from the parser's expected-token set rather
// than ANTLR's "mismatched input" prose; and the checks that run before ANTLR
// sees a text (valid UTF-8, bounded nesting and operator chains).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <antlr4-runtime.h>

#include "TapestryLexer.h"
#include "core/diag/utf8.hpp"
#include "core/expr/expr.hpp"
#include "core/expr/syntax_internal.hpp"

namespace tapestry::expr::syntax {

namespace {

using grammar::TapestryLexer;
using grammar::TapestryParser;

struct SyntaxError {
  int column = 0;
  std::string message;
};

int columnOf(const antlr4::Token* t) {
  return static_cast<int>(t->getStartIndex()) + 1;
}

// Lexer errors are recorded, not thrown: a parser error earlier in the string
// must win over a bad character later in it (the token stream is filled first).
class LexerErrors : public antlr4::BaseErrorListener {
public:
  std::optional<SyntaxError> first;

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token*, size_t, size_t,
                   const std::string&, std::exception_ptr) override {
    if (first) {
      return;
    }
    auto* lexer = static_cast<antlr4::Lexer*>(recognizer);
    std::size_t start = lexer->tokenStartCharIndex;
    std::string ch = lexer->getInputStream()->getText(antlr4::misc::Interval(start, start));
    std::string message;
    if (ch == "$") {
      message = "expected a variable name after '$'";
    } else if (ch == ".") {
      message = "unexpected '.' (an ellipsis is '...')";
    } else {
      message = "unexpected character '" + ch + "'";
    }
    first = SyntaxError{static_cast<int>(start) + 1, message};
  }
};

bool isCloser(std::size_t type) {
  switch (type) {
  case antlr4::Token::EOF:
  case TapestryParser::IPF_ARROW:
    return true;
  default:
    return false;
  }
}

class ParserErrors : public antlr4::BaseErrorListener {
public:
  explicit ParserErrors(const LexerErrors& lexerErrors) : lexerErrors_(lexerErrors) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t, size_t,
                   const std::string&, std::exception_ptr) override {
    auto* parser = static_cast<antlr4::Parser*>(recognizer);
    int column = offending ? columnOf(offending) : 1;
    if (lexerErrors_.first && lexerErrors_.first->column <= column) {
      throw ExprError(lexerErrors_.first->column, lexerErrors_.first->message);
    }
    throw ExprError(column, "expected " + describe(*parser, parser->getExpectedTokens()));
  }

private:
  static std::string describe(const antlr4::Parser& parser, const antlr4::misc::IntervalSet& set) {
    const auto& vocab = parser.getVocabulary();
    std::vector<std::size_t> types;
    for (std::ptrdiff_t t : set.toList()) {
      types.push_back(static_cast<std::size_t>(t));
    }
    auto literal = [&](std::size_t t) { return vocab.getLiteralName(t); };
    auto has = [&](const std::string& lit) {
      return std::any_of(types.begin(), types.end(),
                         [&](std::size_t t) { return literal(t) == lit; });
    };
    auto hasType = [&](std::size_t type) {
      return std::find(types.begin(), types.end(), type) != types.end();
    };
    // Where the construct may end (a separator or a closer), those are worth naming
    // with what may start a new element, not every token that could continue the
    // current one: "expected ',' or ']'" rather than "'...', '[', ',' or ']'".
    static const std::set<std::string> closers = {"','", "']'", "')'"};
    static const std::set<std::string> exprStarts = {"'('",    "'['",     "'-'", "'not'",
                                                     "'true'", "'false'", "'@'"};
    static const std::set<std::string> operators = {"'+'",  "'*'",   "'/'", "'%'",  "'**'",
                                                    "'=='", "'!='",  "'<'", "'<='", "'>'",
                                                    "'>='", "'and'", "'or'"};
    auto closes = [&](std::size_t t) { return isCloser(t) || closers.count(literal(t)) > 0; };
    auto patternStart = [&](std::size_t t) {
      return t == TapestryParser::VAR || t == TapestryParser::INT || literal(t) == "'_'";
    };
    bool anyCloser = std::any_of(types.begin(), types.end(), closes);
    bool expression = hasType(TapestryParser::INT) && hasType(TapestryParser::VAR) && has("'('");
    bool anOperator = !anyCloser && has("'+'") && has("'*'");
    std::vector<std::string> names;
    std::vector<std::size_t> kept;
    if (expression) {
      names.push_back("an expression");
    }
    if (anOperator) {
      names.push_back("an operator");
    }
    for (std::size_t t : types) {
      bool isStart = exprStarts.count(literal(t)) > 0 || t == TapestryParser::INT ||
                     t == TapestryParser::FLOAT || t == TapestryParser::VAR ||
                     t == TapestryParser::ID;
      if ((expression && isStart) || (anOperator && operators.count(literal(t)) > 0)) {
        continue;
      }
      if (anyCloser && !closes(t) && !patternStart(t)) {
        continue;
      }
      // Where an element may start, a ',' would only make an empty element.
      if ((expression || hasType(TapestryParser::VAR)) && literal(t) == "','") {
        continue;
      }
      kept.push_back(t);
    }
    // Element starts, then ',', then closers, end of input last.
    std::stable_sort(kept.begin(), kept.end(), [&](std::size_t a, std::size_t b) {
      auto rank = [&](std::size_t t) {
        return t == TapestryParser::VAR   ? 0
               : t == TapestryParser::INT ? 1
               : literal(t) == "'_'"      ? 2
               : literal(t) == "','"      ? 3
               : t == antlr4::Token::EOF  ? 5
                                          : 4;
      };
      return rank(a) < rank(b);
    });
    for (std::size_t t : kept) {
      if (t == antlr4::Token::EOF) {
        names.push_back("end of input");
      } else if (t == TapestryParser::INT) {
        names.push_back("an integer");
      } else if (t == TapestryParser::VAR) {
        names.push_back("a variable");
      } else if (t == TapestryParser::ID) {
        names.push_back("a name");
      } else if (t == TapestryParser::FLOAT) {
        names.push_back("a number");
      } else {
        names.push_back(literal(t));
      }
    }
    if (names.empty()) {
      return "something else";
    }
    std::string out = names[0];
    for (std::size_t i = 1; i < names.size(); ++i) {
      out += (i + 1 == names.size() ? " or " : ", ") + names[i];
    }
    return out;
  }

  const LexerErrors& lexerErrors_;
};

// ANTLR's input stream throws std::range_error on invalid UTF-8 (found by the
// fuzzer); report it as a syntax error at its column (columns count characters).
void checkUtf8(std::string_view text) {
  const std::optional<std::size_t> bad = findInvalidUtf8(text);
  if (!bad) {
    return;
  }
  int column = 1;
  for (std::size_t i = 0; i < *bad; ++column) {
    i += static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8SequenceLength(text, i);
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[*bad]));
  throw ExprError(column, std::string("invalid UTF-8 byte ") + hex);
}

// The parser and the tree walks recurse once per bracket level and per
// operator in a chain (unary minus, not, a + b + ...): bound both before ANTLR
// sees the text, so no input can exhaust the stack (a 4000-deep chain did,
// under AddressSanitizer). Every operator character counts, so "---1" is 3.
constexpr int kMaxNesting = 256;
constexpr int kMaxOperators = 1000;

void checkSize(std::string_view text) {
  int depth = 0;
  int operators = 0;
  int column = 1;
  for (std::size_t i = 0; i < text.size(); ++column) {
    const char c = text[i];
    if (c == '(' || c == '[') {
      if (++depth > kMaxNesting) {
        throw ExprError(column, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
      }
    } else if (c == ')' || c == ']') {
      depth = std::max(depth - 1, 0);
    } else if (std::string_view("+-*/%<>=!").find(c) != std::string_view::npos) {
      ++operators;
    } else if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_') {
      const bool variable = i > 0 && text[i - 1] == '$';
      std::size_t end = i;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '_')) {
        ++end;
      }
      const std::string_view word = text.substr(i, end - i);
      if (!variable && (word == "not" || word == "and" || word == "or") &&
          ++operators > kMaxOperators) {
        throw ExprError(column, "more than " + std::to_string(kMaxOperators) + " operators");
      }
      column += static_cast<int>(end - i) - 1;
      i = end;
      continue;
    }
    if (operators > kMaxOperators) {
      throw ExprError(column, "more than " + std::to_string(kMaxOperators) + " operators");
    }
    i += static_cast<unsigned char>(c) < 0x80 ? 1 : utf8SequenceLength(text, i);
  }
}

} // namespace

void run(std::string_view text,
         const std::function<antlr4::ParserRuleContext*(TapestryParser&)>& entry,
         const std::function<void(antlr4::ParserRuleContext*)>& convert) {
  checkUtf8(text);
  checkSize(text);
  antlr4::ANTLRInputStream input{std::string(text)};
  TapestryLexer lexer(&input);
  LexerErrors lexerErrors;
  lexer.removeErrorListeners();
  lexer.addErrorListener(&lexerErrors);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  TapestryParser parser(&tokens);
  ParserErrors parserErrors(lexerErrors);
  parser.removeErrorListeners();
  parser.addErrorListener(&parserErrors);
  antlr4::ParserRuleContext* tree = entry(parser);
  if (lexerErrors.first) {
    throw ExprError(lexerErrors.first->column, lexerErrors.first->message);
  }
  convert(tree);
}

} // namespace tapestry::expr::syntax
