// Fuzz target: rewrite rules (core/rewrite), from both sides.
// - A rule file (YAML): loaded, then every rule matched against and applied
//   to the pattern graphs of its own examples, as `rewrites check` does
//   before it evaluates them.
// - A graph (an input whose first character is `{`): decoded and expanded as
//   `optimize` reads it, then rewritten by every standard rule (approximate
//   ones too) until none matches, as the pre-pass and the search's variants
//   do.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/graph.hpp"
#include "core/graph/loader.hpp"
#include "core/rewrite/apply.hpp"
#include "core/rewrite/rule.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

using namespace tapestry;

namespace {

void ruleFile(const std::uint8_t* data, std::size_t size,
              const metakernel::MetakernelLibrary& library) {
  const SourceFile file("fuzz.yaml", fuzz::text(data, size));
  for (const rewrite::Rule& rule : rewrite::loadRules(file, library)) {
    for (const rewrite::Example& example : rule.examples) {
      fuzz::rejectingInput([&] {
        const graph::ExpandedGraph g = rewrite::expandDocument(rewrite::exampleGraph(rule, example),
                                                               library, "<" + rule.name + ">");
        (void)rewrite::findSites(g, rule);
        (void)rewrite::rewriteGraph(g, {&rule}, library);
      });
    }
  }
}

void graphFile(const std::uint8_t* data, std::size_t size,
               const metakernel::MetakernelLibrary& library) {
  static const rewrite::RuleSet standard = rewrite::RuleSet::load({}, library);
  static const std::vector<const rewrite::Rule*> rules = [] {
    std::vector<const rewrite::Rule*> all;
    for (const auto& rule : standard.rules()) {
      all.push_back(rule.get());
    }
    return all;
  }();
  const json::Document document = fuzz::parseJson(data, size);
  const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(document)), library);
  // What a rewrite writes is expanded again inside rewriteGraph: an error
  // there is tapestry's, not the input's.
  std::optional<rewrite::RewriteResult> rewritten;
  try {
    rewritten = rewrite::rewriteGraph(g, rules, library);
  } catch (const Error& e) {
    fuzz::finding("a graph that expands does not rewrite", e.what());
  }
  // A rewrite keeps the graph's outputs (names, shapes, dtypes), and reads
  // only inputs the graph has, as it has them (it may stop reading one: a
  // multiplication by a constant one that it drops).
  const graph::ExpandedGraph& r = rewritten->graph;
  const auto outputs = [](const graph::ExpandedGraph& x) {
    std::string out;
    for (const std::size_t t : x.outputs) {
      out += x.tensors[t].name + " " + metakernel::toString(x.tensors[t].type) + "\n";
    }
    return out;
  };
  if (outputs(r) != outputs(g)) {
    fuzz::finding("a rewrite changed the graph's outputs", outputs(g) + "became\n" + outputs(r));
  }
  for (const graph::Tensor& t : r.tensors) {
    if (!t.isGraphInput() || t.consumers.empty()) {
      continue;
    }
    const graph::Tensor* before = g.findTensor(t.name);
    if (before == nullptr || !before->isGraphInput() || before->type != t.type) {
      fuzz::finding("a rewrite reads an input the graph does not have",
                    t.name + " " + metakernel::toString(t.type));
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::MetakernelLibrary& library = fuzz::standardLibrary();
  const std::uint8_t* first =
      std::find_if(data, data + size, [](std::uint8_t c) { return std::isspace(c) == 0; });
  return fuzz::guarded([&] {
    if (first != data + size && *first == '{') {
      graphFile(data, size, library);
    } else {
      ruleFile(data, size, library);
    }
  });
}
