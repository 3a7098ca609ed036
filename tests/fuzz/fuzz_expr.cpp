// Fuzz target: the expression, shape-pattern and IPF parsers (grammar/Tapestry.g4,
// core/expr) and the evaluation of what parses. The first byte picks the entry
// point; inputs with a newline are "PATTERN\nTEXT": the pattern is matched first,
// so TEXT evaluates with real bindings, as in a metakernel. A TEXT starting
// with "body:" is a kernel body instead, evaluated on types over two blocks.
#include "core/expr/body.hpp"
#include "core/expr/expr.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

using namespace tapestry;

namespace {

// Splits "PATTERN\nTEXT"; without a newline the pattern is "[$a, $b, $c]".
std::pair<std::string, std::string> splitPattern(const std::string& source) {
  const std::size_t newline = source.find('\n');
  if (newline == std::string::npos) {
    return {"[$a, $b, $c]", source};
  }
  return {source.substr(0, newline), source.substr(newline + 1)};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::uint8_t mode = data[0] % 4;
  const auto parts = splitPattern(fuzz::text(data + 1, size - 1));
  const std::string& patternText = parts.first;
  const std::string& text = parts.second;
  return fuzz::guarded([&] {
    expr::Bindings bindings;
    if (mode == 3) {
      // A list input of two tensors (concat-style patterns).
      expr::matchList(expr::parsePattern(patternText), {{4, 8}, {4, 6}}, bindings, "X");
    } else {
      expr::match(expr::parsePattern(patternText), {2, 3, 4}, bindings, "X");
    }
    if (text.rfind("body:", 0) == 0) {
      expr::BodyEnvironment env;
      env.bindings = &bindings;
      env.numbers["eps"] = 1e-6;
      env.inputs.emplace("x", expr::BodyValue::block(expr::BlockType{{2, 3, 4}, "float32"}));
      env.inputs.emplace("w", expr::BodyValue::block(expr::BlockType{{4, 5}, "float32"}));
      (void)expr::evaluateBody(expr::parseBody(text.substr(5)), env);
      return;
    }
    switch (mode) {
    case 0:
    case 3: {
      expr::EvalContext context;
      context.bindings = &bindings;
      context.fillLength = 3;
      (void)expr::evaluate(expr::parseExpression(text), context);
      break;
    }
    case 1: {
      expr::Bindings more;
      expr::match(expr::parsePattern(text), {5, 1, 7, 2}, more, "Y");
      break;
    }
    default:
      (void)expr::evaluateIpf(expr::parseIpf(text), bindings, 3, 3);
      break;
    }
  });
}
