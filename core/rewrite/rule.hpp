// Rewrite rules (docs/rewrites.md): substitutions and fusions written as data.
// A rule matches a small connected pattern of operations, bound through tensor
// variables, checks conditions in the expression language, and puts the
// replacement operations in its place. Rules live in YAML files like the
// metakernels; the standard ones (metakernels/rewrites/*.yaml) are embedded,
// users add theirs with -r FILE. Every problem in a rule file is a located
// Error (FILE:LINE:COL, the line and a caret), exit 1.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/expr/expr.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/metakernel/metakernel.hpp"

namespace tapestry::rewrite {

// One port of a pattern or replacement operation bound to a tensor variable.
// `optional` ("b?"): the port may be left out; in a pattern the variable is
// then unbound, in a replacement the port is left out when its variable is.
// In a pattern, a list port (split's `results`) is bound to a list of
// variables, one PortVar per element: `element` k of `listSize` (else -1, 0).
struct PortVar {
  std::string port;
  std::string var;
  bool optional = false;
  int element = -1;
  int listSize = 0;
};

struct PatternOp {
  std::string key; // the rule's name for the operation ("conv")
  std::string kernel;
  std::vector<PortVar> inputs;  // every input port the operation may bind
  std::vector<PortVar> outputs; // every output port
  // `commutative: true`: the two inputs may come in either order (add).
  bool commutative = false;
  // `params: {name: value}`: the values the matched operation's params must
  // have (paramMatches). Float params are matched this way, not in `where`.
  Json params = Json::object();
  SourceLocation location;
};

// Relative tolerance of a float param in a pattern: a float32 constant of the
// value matches (sqrt(2) as 1.41421354 does 1.4142135623730951).
inline constexpr double kFloatParamTolerance = 1e-6;

// Whether a matched operation's param value `have` is the pattern's `want`:
// numbers equal within kFloatParamTolerance (relative) when either is a float,
// everything else equal.
bool paramMatches(const Json& want, const Json& have);

// A `where` entry: an expression that must be true for a site to match.
// Bindings: `$x` is tensor variable x's shape, `$x_dtype` its dtype, `$has_x`
// whether an optional one is bound; `$op_param` a matched operation's int,
// ints or bool param (floats are not expression values).
struct Condition {
  expr::Expr expr;
  metakernel::FieldInfo field;
};

struct ReplaceOp {
  std::string key;
  std::string kernel;
  // Params copied from matched operations (the ones the replacement's kernel
  // declares), in order; then `params` set on top.
  std::vector<std::string> paramsFrom;
  Json params = Json::object();
  // Params given as "= EXPR": evaluated per site with the `where` bindings
  // (an int, a bool, a dtype or a list of ints).
  std::vector<std::pair<std::string, Condition>> computed;
  // Params given as "from OP.PARAM": the value of param PARAM of the matched
  // pattern operation OP, whatever its type (a float too).
  struct Copied {
    std::string key;   // this kernel's param
    std::string op;    // pattern operation key
    std::string param; // its param
  };
  std::vector<Copied> copied;
  std::vector<PortVar> inputs;
  std::vector<PortVar> outputs;
  SourceLocation location;
};

// An example: params per pattern operation and a shape and dtype per input
// variable; `rewrites check` builds the pattern as a graph from it.
struct Example {
  std::map<std::string, Json> params;                   // by pattern op key
  std::map<std::string, metakernel::TensorType> inputs; // by variable
  SourceLocation location;
  std::string lineText; // the example's line, for a caret
};

struct Rule {
  std::string name;
  std::string doc;
  bool approximate = false; // equal only approximately: off unless asked for
  bool always = false;      // applied by the canonicalising pre-pass
  bool search = false;      // a choice of the search: its sites rewritten or not
  std::vector<PatternOp> match;
  std::vector<Condition> where;
  std::vector<ReplaceOp> replace;
  std::vector<Example> examples;
  // Derived at load: the pattern's input variables (bound by no pattern
  // output), its interior ones (produced and consumed inside) and its exits
  // (produced, consumed by no pattern op: the replacement must produce them).
  std::vector<std::string> inputs, interior, exits;
  SourceLocation location; // the rule's name key
  std::string source;      // the rule's YAML text, for `rewrites show`
};

// Generated at build time from metakernels/rewrites/*.yaml, sorted by path.
using metakernel::EmbeddedFile;
std::span<const EmbeddedFile> embeddedStandardRules();

// Rules, in order: the standard ones, then each -r file's.
class RuleSet {
public:
  // The embedded rules (when `standard`), then each path (a file, or a
  // directory of *.yaml / *.yml). Kernels and ports are checked against
  // `library`. Throws the first located Error.
  static RuleSet load(const std::vector<std::string>& paths,
                      const metakernel::MetakernelLibrary& library, bool standard = true);

  // Adds every rule of a file; a name already defined is an Error naming both.
  void addFile(const SourceFile& file, const metakernel::MetakernelLibrary& library);

  const std::vector<std::shared_ptr<const Rule>>& rules() const { return rules_; }
  const Rule* find(std::string_view name) const;
  // Error "unknown rewrite rule \"x\" (known: ...)".
  const Rule& get(std::string_view name) const;

private:
  std::vector<std::shared_ptr<const Rule>> rules_;
};

// Parses one rule file (exposed for tests).
std::vector<Rule> loadRules(const SourceFile& file, const metakernel::MetakernelLibrary& library);

} // namespace tapestry::rewrite
