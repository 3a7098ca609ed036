// Finding a rule's sites in an expanded graph and rewriting them (rule.hpp).
// A site binds every pattern operation to a distinct graph operation through
// the tensor variables: a variable stands for one tensor wherever it appears,
// a port the pattern does not name must be absent, an interior tensor (made
// and read inside the pattern) may be read by nothing else and may not be a
// graph output, and every `where` condition holds. The rewritten graph is a
// graph/v1 document: the graph inputs, every operation outside the sites as it
// was (params resolved), each site's replacement at the place of its first
// operation, and the same graph outputs.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.hpp"
#include "core/rewrite/rule.hpp"

namespace tapestry::rewrite {

struct Site {
  const Rule* rule = nullptr;
  std::vector<std::size_t> ops;               // graph operations, in pattern order
  std::map<std::string, std::size_t> tensors; // variable -> graph tensor
};

// Every site of `rule` in `g`, in the topological order of their first
// operation, overlapping ones included. A condition that does not evaluate to
// a bool is a located Error in the rule file.
std::vector<Site> findSites(const graph::ExpandedGraph& g, const Rule& rule);

// What applying rewrote: the rule, the operations it replaced and those it
// put in their place (by name).
struct AppliedSite {
  std::string rule;
  std::vector<std::string> replaced;
  std::vector<std::string> added;
  bool approximate = false; // the rule's sides are equal only approximately
};

struct Rewritten {
  Json graph; // graph/v1
  std::vector<AppliedSite> applied;
};

// Rewrites the given sites, which must not share an operation (InternalError).
Rewritten applySites(const graph::ExpandedGraph& g, const std::vector<Site>& sites);

// Whether a rewrite may take a site of graph g (the search's site groups:
// rewrite_pass.hpp); an empty filter takes every site.
using SiteFilter = std::function<bool(const graph::ExpandedGraph& g, const Site& site)>;

// The sites of `rules` that do not overlap: rule by rule in order, each
// rule's sites in topological order, a site skipped when it shares an
// operation with one taken before or `allow` refuses it.
std::vector<Site> disjointSites(const graph::ExpandedGraph& g,
                                const std::vector<const Rule*>& rules,
                                const SiteFilter& allow = {});

// Applies `rules` until none matches (at most `maxRounds` rounds of
// disjointSites + applySites + expansion); the result's graph is expanded
// again with `library`. With no site at all the graph comes back as it was.
struct RewriteResult {
  graph::ExpandedGraph graph;
  std::vector<AppliedSite> applied;
};
RewriteResult rewriteGraph(const graph::ExpandedGraph& g, const std::vector<const Rule*>& rules,
                           const metakernel::MetakernelLibrary& library,
                           const SiteFilter& allow = {}, int maxRounds = 16);

// The graph/v1 document of an expanded graph's user fields (params resolved).
Json userGraph(const graph::ExpandedGraph& g);

// Expands a graph/v1 document made here; `what` names it in an error.
graph::ExpandedGraph expandDocument(const Json& doc, const metakernel::MetakernelLibrary& library,
                                    const std::string& what);

// The rule's pattern as a graph/v1 document for one of its examples: its
// input variables as graph inputs (an optional one left out when the example
// does not give it), its operations named by their keys with the example's
// params, its exits as graph outputs. What `rewrites check` rewrites.
Json exampleGraph(const Rule& rule, const Example& example);

} // namespace tapestry::rewrite
