// The canonicalising pre-pass that `optimize --rewrites` and `expand
// --rewrites` run on a graph before anything else (docs/rewrites.md).
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.hpp"
#include "core/metakernel/library.hpp"
#include "core/rewrite/apply.hpp"

namespace tapestry::driver {

// `mode`: "none" (nothing; -r files are then a UsageError), "default" (every
// rule marked always, standard and from `rulePaths`), or a rule file whose
// rules all run too. Rewrites `graph` in place; returns the sites rewritten.
std::vector<rewrite::AppliedSite> preRewrite(graph::ExpandedGraph& graph, const std::string& mode,
                                             const std::vector<std::string>& rulePaths,
                                             const metakernel::MetakernelLibrary& library);

// The sites as JSON: [{rule, replaced, added}].
Json rewritesJson(const std::vector<rewrite::AppliedSite>& sites);
// "rewrites: 17 sites (conv_add_relu 8, conv_relu 9)".
std::string rewritesText(const std::vector<rewrite::AppliedSite>& sites);

} // namespace tapestry::driver
