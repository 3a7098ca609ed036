// Metakernel templates (SPEC §4.1): the parsed, immutable form of one YAML
// template, and the loader that turns a YAML file into templates. Every string of
// a template is parsed once here (patterns, expressions, IPFs); applying a
// template to an operation (application.hpp) only evaluates.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/expr/body.hpp"
#include "core/expr/expr.hpp"
#include "core/json/json.hpp"

namespace tapestry::metakernel {

// The first element of `items` (params, ports) named `name`, or nullptr.
template <class Named>
const Named* findByName(const std::vector<Named>& items, std::string_view name) {
  for (const Named& item : items) {
    if (item.name == name) {
      return &item;
    }
  }
  return nullptr;
}

enum class ParamType { Int, Ints, Bool, Float, DType };
const char* paramTypeName(ParamType type); // "int", "ints", "bool", "float", "dtype"

// nullopt when `value` (a JSON param value) has the type, else the problem:
// "expected int, got string".
std::optional<std::string> checkParamValue(ParamType type, const Json& value);

// The monoid that combines index points projecting onto one output element.
enum class Combine { Sum, Max, Min, Prod };
const char* combineName(Combine combine); // "sum", "max", "min", "prod"

// One string field of a template: its text, role ("shape pattern", "index
// expression", ...) and where it sits in the YAML file, so errors found while
// applying the template can point at the column inside the string.
struct FieldInfo {
  std::string role;
  std::string text;
  SourceLocation location; // the scalar's first character (the quote, if quoted)
  int textColumn = 1;      // file column of the string's first character
  std::string lineText;    // the YAML line, for carets

  // Location of 1-based column `exprColumn` inside the string.
  SourceLocation at(int exprColumn) const;
  Snippet snippetAt(int exprColumn) const;
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Int;
  std::optional<Json> defaultValue; // already checked against `type`
  SourceLocation location;
};

// constraints: {VAR: {enum: [...]}}: the bound value of $VAR (as text) must be one of.
struct Constraint {
  std::string variable; // without '$'
  std::vector<std::string> allowed;
  SourceLocation location;
};

// A dtype field: a literal name ("float32"), a variable ("$dtype": binds on inputs,
// reads on outputs), or any other expression (evaluated; must give a dtype).
struct DTypeSpec {
  enum class Kind { Literal, Variable, Expression };
  Kind kind = Kind::Literal;
  std::string name; // the literal, or the variable without '$'
  std::optional<expr::Expr> expression;
  FieldInfo field;
};

struct IpfSpec {
  expr::IpfTemplate ipf;
  FieldInfo field;
  bool isDefault = false; // "[@...] :> [1...]", only legal when ranks agree
};

struct InputSpec {
  std::string name;
  expr::Pattern shape;
  FieldInfo shapeField;
  std::optional<DTypeSpec> dtype; // absent: any dtype
  IpfSpec ipf;
  bool list = false; // a list of tensors; per-tensor evaluation binds $j
  // `optional: true`: an operation may leave the port out of its "inputs";
  // then the port has no tensors, its pattern binds nothing and it has no IPFs.
  bool optional = false;
  // `packed: true`: a backend may keep its own copy of a constant tensor bound
  // here, laid out for its kernel and made once (conv weights, product
  // weights); the cost model counts that copy for the whole run.
  bool packed = false;
  // `default: NUMBER` (optional ports only): what the body reads for the port
  // when an operation leaves it out, a number that broadcasts as a scalar
  // (0 for an additive bias); without it the body sees no block of that name.
  std::optional<double> absent;
  SourceLocation location;
};

struct LetSpec {
  std::string name; // without '$'
  expr::Expr expression;
  FieldInfo field;
};

struct OutputSpec {
  std::string name;
  std::optional<expr::Expr> shape; // absent: the index shape
  FieldInfo shapeField;
  DTypeSpec dtype;
  IpfSpec ipf;
  std::optional<Combine> combine;
  bool list = false;
  std::optional<expr::Expr> count; // list outputs: how many tensors ($j = 0..count-1)
  FieldInfo countField;
  SourceLocation location;
};

struct WhereSpec {
  expr::Expr expression;
  FieldInfo field;
  bool afterLet = false; // mentions a `let` variable, so it is checked after them
  std::string message;   // the {check, message} form: what a failure says ("" for a bare clause)
  std::string given;     // {..., given: PORT}: checked only when optional input PORT is given
};

// `body`: what one shard computes (core/expr/body.hpp), and where it is written.
struct BodySpec {
  expr::Body body;
  FieldInfo field;
};

// `extern: {library, symbol}`: a C function of a shared library runs the
// kernel on the CPU backend (backends/tapestry_kernel.h is the ABI).
struct ExternSpec {
  std::string library;     // as written
  std::string path;        // resolved (relative: against the template file's directory)
  std::string symbol;      // a C identifier
  SourceLocation location; // the library's value, for errors while loading it
  std::string lineText;
};

struct TensorType {
  std::vector<std::int64_t> shape;
  std::string dtype;
  bool operator==(const TensorType&) const = default;
};
std::string toString(const TensorType& t); // "[2, 3] float32"

// examples: [{inputs: {PORT: {shape, dtype} | [{shape, dtype}, ...]}, params: {...},
//             expect: {index: [...], outputs: {PORT: {shape, dtype} | [...]}, flops: N},
//             error: "substring of the expected error"}]
struct ExampleSpec {
  std::vector<std::pair<std::string, std::vector<TensorType>>> inputs;
  Json params = Json::object();
  std::optional<std::vector<std::int64_t>> expectIndex;
  std::vector<std::pair<std::string, std::vector<TensorType>>> expectOutputs;
  std::optional<std::int64_t> expectFlops;
  std::optional<std::string> expectError;
  SourceLocation location;
  std::string lineText; // the YAML line at `location`, for carets
};

struct Metakernel;

// What a fuse(P, C[.PORT]) template is made of (core/metakernel/fuse.hpp), so
// that a backend can run it as P's kernel, then C's on P's result, where the
// two have kernels of their own.
struct FusedSpec {
  std::shared_ptr<const Metakernel> producer;
  std::shared_ptr<const Metakernel> consumer;
  std::string port;   // C's input that reads P's result
  std::string prefix; // C's other inputs and params are PREFIX + name in the fused template
};

struct Metakernel {
  std::string name;
  std::string doc;
  std::vector<ParamSpec> params;
  std::vector<Constraint> constraints;
  std::vector<InputSpec> inputs;
  std::vector<LetSpec> let;
  expr::Expr index;
  FieldInfo indexField;
  std::vector<OutputSpec> outputs;
  std::optional<expr::Expr> flops; // per index point; absent: 0
  FieldInfo flopsField;
  std::optional<expr::Expr> bytes; // per index point; absent: the cost model's default
  FieldInfo bytesField;
  std::vector<WhereSpec> where;
  std::vector<ExampleSpec> examples;
  std::shared_ptr<const BodySpec> body; // absent: the kernel runs only where a backend has it
  std::shared_ptr<const ExternSpec> externKernel; // absent: no shared-library kernel
  std::shared_ptr<const FusedSpec> fused;         // absent: not a fuse(...) template

  SourceLocation location; // the kernel's name key
  std::string sourceText;  // the kernel's YAML text, as written

  const ParamSpec* findParam(std::string_view n) const { return findByName(params, n); }
  const InputSpec* findInput(std::string_view n) const { return findByName(inputs, n); }
  const OutputSpec* findOutput(std::string_view n) const { return findByName(outputs, n); }
};

// Parses a YAML file of templates (top-level map NAME -> template). Throws a
// located Error ("FILE:LINE:COL: error: ...", with the YAML line and a caret) on
// the first problem; expression errors point at the column inside the string.
// `directory` resolves relative extern library paths (default: the directory
// of file.name()).
std::vector<Metakernel> loadMetakernels(const SourceFile& file, const std::string& directory = "");

// The parsed form as JSON (what `kernels show --format json` prints): strings as
// written, defaults filled in.
Json toJson(const Metakernel& kernel);

} // namespace tapestry::metakernel
