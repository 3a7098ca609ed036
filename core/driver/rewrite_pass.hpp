// The canonicalising pre-pass that `optimize --rewrites` and `expand
// --rewrites` run on a graph before anything else (docs/rewrites.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.hpp"
#include "core/metakernel/library.hpp"
#include "core/rewrite/apply.hpp"
#include "core/search/space.hpp"

namespace tapestry::driver {

// `mode`: "none" (nothing; -r files are then a UsageError), "default" (every
// rule marked always or search, standard and from `rulePaths`), or a rule file
// whose rules all run too. Rules marked approximate run only when asked for:
// `approximate` (--approximate), or as rules of the --rewrites file. Rewrites
// `graph` in place; returns the sites rewritten. (What `expand --rewrites`
// shows: every choice of the search taken.)
std::vector<rewrite::AppliedSite> preRewrite(graph::ExpandedGraph& graph, const std::string& mode,
                                             const std::vector<std::string>& rulePaths,
                                             const metakernel::MetakernelLibrary& library,
                                             bool approximate = false);

// The graphs `optimize` searches (docs/rewrites.md): the pre-pass (rules marked
// always, and a rule file's unmarked rules) applied to the given graph, with
// each subset of the search rules that match it (rules marked search) applied
// too. Up to kMaxSearchRules such rules every subset is a variant; beyond,
// none, each all-but-one, and all. A rule with kMinGroupedSites sites or more
// in the graph has two site groups, the first half of its sites in graph
// order and the second, each a bit of the masks: with them, all rules but one
// group of one rule's sites is a variant too. Variant 0 applies none of the
// rules; the last, all. With mode "none", one variant: the graph as given.
inline constexpr std::size_t kMaxSearchRules = 3;
inline constexpr std::size_t kMinGroupedSites = 2;
// A variant is a bit mask over the matching search rules: more than this many
// is an error (exit 3) naming the count.
inline constexpr std::size_t kMaxMaskRules = 31;

struct RewriteVariants {
  std::vector<std::string> searchRules; // in order, each one bit of a mask or one per group
  std::vector<std::size_t> groups;      // per search rule: its site groups (1 or 2)
  std::vector<std::uint32_t> masks;     // per variant
  std::vector<std::uint32_t> steps;     // the bits one move flips: a rule's, a group's
  std::vector<graph::ExpandedGraph> graphs;
  std::vector<std::vector<rewrite::AppliedSite>> sites; // per variant, all it rewrote
  std::vector<rewrite::AppliedSite> allSites; // distinct sites of all variants, first seen first
  std::vector<std::vector<std::size_t>> siteIndices; // per variant, into allSites

  std::uint32_t full() const { return static_cast<std::uint32_t>(graphs.size() - 1); }
  // For the search: pointers into `graphs` (so keep this object alive and in
  // place), and per pair of variants which op's choice each op takes on a move
  // between them: the op of the same name; else, for an op a site added, the
  // op holding the first op it replaced; else none.
  search::GraphVariants links() const;
};

RewriteVariants rewriteVariants(const graph::ExpandedGraph& given, const std::string& mode,
                                const std::vector<std::string>& rulePaths,
                                const metakernel::MetakernelLibrary& library,
                                bool approximate = false);

// The sites as JSON: [{rule, replaced, added}], with "approximate": true on a
// site of an approximate rule.
Json rewritesJson(const std::vector<rewrite::AppliedSite>& sites);
// "rewrites: 17 sites (conv_add_relu 8, conv_relu 9)"; "gelu_as_tanh 1
// approximate" for an approximate rule's sites.
std::string rewritesText(const std::vector<rewrite::AppliedSite>& sites);

} // namespace tapestry::driver
