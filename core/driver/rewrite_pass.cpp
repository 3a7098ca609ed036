#include "core/driver/rewrite_pass.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "core/diag/error.hpp"

namespace tapestry::driver {

namespace {

// The rules a mode selects: those the pre-pass runs, and those the search
// chooses (in file order).
struct SelectedRules {
  rewrite::RuleSet set;
  std::vector<const rewrite::Rule*> always;
  std::vector<const rewrite::Rule*> search;
};

SelectedRules selectRules(const std::string& mode, const std::vector<std::string>& rulePaths,
                          const metakernel::MetakernelLibrary& library, bool approximate) {
  std::vector<std::string> paths = rulePaths;
  const bool file = mode != "default";
  std::error_code ec;
  if (file && mode != "-" && !std::filesystem::exists(mode, ec)) {
    throw UsageError("--rewrites: \"" + mode +
                     "\" is neither none, default nor a rule file that exists");
  }
  if (file) {
    paths.push_back(mode);
  }
  SelectedRules out{rewrite::RuleSet::load(paths, library), {}, {}};
  for (const auto& r : out.set.rules()) {
    const bool builtIn = metakernel::isStandardLibraryFile(r->location.file);
    const bool asked = file && !builtIn; // a rule of the --rewrites file
    if (r->approximate && !asked && !approximate) {
      continue; // approximate rules are off unless asked for
    }
    if (r->search) {
      out.search.push_back(r.get());
    } else if (r->always || asked) {
      out.always.push_back(r.get());
    }
  }
  return out;
}

// The rules of `set` for which `chosen` holds, in file order.
template <class Pred>
std::vector<const rewrite::Rule*> inFileOrder(const rewrite::RuleSet& set, Pred chosen) {
  std::vector<const rewrite::Rule*> out;
  for (const auto& r : set.rules()) {
    if (chosen(r.get())) {
      out.push_back(r.get());
    }
  }
  return out;
}

bool contains(const std::vector<const rewrite::Rule*>& rules, const rewrite::Rule* r) {
  return std::find(rules.begin(), rules.end(), r) != rules.end();
}

void checkNone(const std::vector<std::string>& rulePaths, bool approximate) {
  if (!rulePaths.empty()) {
    throw UsageError("-r/--rules cannot go with --rewrites none");
  }
  if (approximate) {
    throw UsageError("--approximate cannot go with --rewrites none");
  }
}

bool sameSite(const rewrite::AppliedSite& a, const rewrite::AppliedSite& b) {
  return a.rule == b.rule && a.replaced == b.replaced && a.added == b.added;
}

} // namespace

std::vector<rewrite::AppliedSite> preRewrite(graph::ExpandedGraph& graph, const std::string& mode,
                                             const std::vector<std::string>& rulePaths,
                                             const metakernel::MetakernelLibrary& library,
                                             bool approximate) {
  if (mode == "none") {
    checkNone(rulePaths, approximate);
    return {};
  }
  const SelectedRules rules = selectRules(mode, rulePaths, library, approximate);
  const std::vector<const rewrite::Rule*> chosen =
      inFileOrder(rules.set, [&](const rewrite::Rule* r) {
        return contains(rules.always, r) || contains(rules.search, r);
      });
  rewrite::RewriteResult out = rewrite::rewriteGraph(graph, chosen, library);
  graph = std::move(out.graph);
  return std::move(out.applied);
}

namespace {

// A matching search rule's bits: one, or one per group of its sites (the
// first half of them in the base graph's order, then the second), so that a
// plan may fuse a rule's sites in one part of the graph and not the other.
struct SearchUnit {
  const rewrite::Rule* rule = nullptr;
  std::vector<std::uint32_t> bits;    // one per group
  std::map<std::string, int> groupOf; // base-graph site's first op -> group
  std::uint32_t mask() const {
    std::uint32_t m = 0;
    for (std::uint32_t b : bits) {
      m |= b;
    }
    return m;
  }
  // The group of a site of this rule in a variant graph: by its first op's
  // name where the base graph had that site, else by its position.
  int group(const graph::ExpandedGraph& g, const rewrite::Site& site) const {
    if (bits.size() < 2) {
      return 0;
    }
    const auto at = groupOf.find(g.operations[site.ops.front()].name);
    if (at != groupOf.end()) {
      return at->second;
    }
    return site.ops.front() * 2 >= g.operations.size() ? 1 : 0;
  }
};

// The units of the matching rules, given each one's sites in the base graph;
// two groups each for rules with kMinGroupedSites sites, unless that takes
// more bits than a mask has.
std::vector<SearchUnit> searchUnits(const graph::ExpandedGraph& base,
                                    const std::vector<const rewrite::Rule*>& matching,
                                    const std::vector<std::vector<rewrite::Site>>& sites) {
  std::size_t bits = 0;
  for (const std::vector<rewrite::Site>& own : sites) {
    bits += own.size() >= kMinGroupedSites ? 2 : 1;
  }
  const bool grouped = bits <= kMaxMaskRules;
  std::vector<SearchUnit> units;
  std::uint32_t next = 1;
  for (std::size_t i = 0; i < matching.size(); ++i) {
    SearchUnit u;
    u.rule = matching[i];
    const std::vector<rewrite::Site>& own = sites[i];
    const std::size_t groups = grouped && own.size() >= kMinGroupedSites ? 2 : 1;
    for (std::size_t k = 0; k < own.size() && groups > 1; ++k) {
      u.groupOf[base.operations[own[k].ops.front()].name] =
          static_cast<int>(k * groups / own.size());
    }
    for (std::size_t g = 0; g < groups; ++g) {
      u.bits.push_back(next);
      next <<= 1;
    }
    units.push_back(std::move(u));
  }
  return units;
}

// The variants' masks: every subset of the rules (each rule's bits all on or
// all off) up to kMaxSearchRules rules, else none, all but one rule and all;
// then all but one group of a grouped rule's sites.
std::vector<std::uint32_t> variantMasks(const std::vector<SearchUnit>& units) {
  const std::size_t n = units.size();
  std::uint32_t all = 0;
  for (const SearchUnit& u : units) {
    all |= u.mask();
  }
  std::vector<std::uint32_t> masks;
  if (n <= kMaxSearchRules) {
    for (std::uint32_t subset = 0; subset < (std::uint32_t{1} << n); ++subset) {
      std::uint32_t m = 0;
      for (std::size_t r = 0; r < n; ++r) {
        m |= ((subset >> r) & 1) != 0 ? units[r].mask() : 0;
      }
      masks.push_back(m);
    }
  } else {
    masks.push_back(0);
    for (const SearchUnit& u : units) {
      masks.push_back(all & ~u.mask());
    }
  }
  for (const SearchUnit& u : units) {
    for (std::size_t g = 0; g < u.bits.size() && u.bits.size() > 1; ++g) {
      masks.push_back(all & ~u.bits[g]);
    }
  }
  // all last (full()); with fewer than kMaxSearchRules it is the last subset.
  masks.erase(std::remove(masks.begin() + 1, masks.end(), all), masks.end());
  if (all != 0) {
    masks.push_back(all);
  }
  return masks;
}

} // namespace

RewriteVariants rewriteVariants(const graph::ExpandedGraph& given, const std::string& mode,
                                const std::vector<std::string>& rulePaths,
                                const metakernel::MetakernelLibrary& library, bool approximate) {
  RewriteVariants out;
  if (mode == "none") {
    checkNone(rulePaths, approximate);
    out.masks = {0};
    out.graphs.push_back(given);
    out.sites.emplace_back();
    out.siteIndices.emplace_back();
    return out;
  }
  const SelectedRules rules = selectRules(mode, rulePaths, library, approximate);
  rewrite::RewriteResult base = rewrite::rewriteGraph(given, rules.always, library);
  std::vector<const rewrite::Rule*> matching;
  std::vector<std::vector<rewrite::Site>> matchingSites; // each rule's own, disjoint
  for (const rewrite::Rule* r : rules.search) {
    std::vector<rewrite::Site> own = rewrite::disjointSites(base.graph, {r});
    if (!own.empty()) {
      matching.push_back(r);
      matchingSites.push_back(std::move(own));
      out.searchRules.push_back(r->name);
    }
  }
  const std::size_t n = matching.size();
  if (n > kMaxMaskRules) {
    throw Error(std::to_string(n) + " rules marked search match graph " + given.name +
                    "; at most " + std::to_string(kMaxMaskRules) +
                    " can be searched (mark some always, or leave their files out)",
                ExitCode::InvalidInput);
  }
  const std::vector<SearchUnit> units = searchUnits(base.graph, matching, matchingSites);
  out.masks = variantMasks(units);
  for (const SearchUnit& u : units) {
    out.steps.push_back(u.mask());
    for (std::size_t g = 0; g < u.bits.size() && u.bits.size() > 1; ++g) {
      out.steps.push_back(u.bits[g]);
    }
    out.groups.push_back(u.bits.size());
  }
  for (std::uint32_t mask : out.masks) {
    if (mask == 0) {
      out.graphs.push_back(std::move(base.graph));
      out.sites.push_back(std::move(base.applied));
      continue;
    }
    // The pre-pass rules and the search rules with a bit of the mask, in file
    // order; a grouped rule's sites only in the groups the mask has.
    auto unitOf = [&](const rewrite::Rule* r) -> const SearchUnit* {
      for (const SearchUnit& u : units) {
        if (u.rule == r) {
          return &u;
        }
      }
      return nullptr;
    };
    const std::vector<const rewrite::Rule*> chosen =
        inFileOrder(rules.set, [&](const rewrite::Rule* r) {
          const SearchUnit* u = unitOf(r);
          return (u != nullptr && (mask & u->mask()) != 0) || contains(rules.always, r);
        });
    const rewrite::SiteFilter allow = [&](const graph::ExpandedGraph& g,
                                          const rewrite::Site& site) {
      const SearchUnit* u = unitOf(site.rule);
      return u == nullptr || (mask & u->bits[static_cast<std::size_t>(u->group(g, site))]) != 0;
    };
    rewrite::RewriteResult v = rewrite::rewriteGraph(given, chosen, library, allow);
    out.graphs.push_back(std::move(v.graph));
    out.sites.push_back(std::move(v.applied));
  }
  for (const std::vector<rewrite::AppliedSite>& sites : out.sites) {
    std::vector<std::size_t> indices;
    for (const rewrite::AppliedSite& site : sites) {
      std::size_t i = 0;
      while (i < out.allSites.size() && !sameSite(out.allSites[i], site)) {
        ++i;
      }
      if (i == out.allSites.size()) {
        out.allSites.push_back(site);
      }
      indices.push_back(i);
    }
    out.siteIndices.push_back(std::move(indices));
  }
  return out;
}

search::GraphVariants RewriteVariants::links() const {
  search::GraphVariants v;
  v.masks = masks;
  v.steps = steps;
  v.reported = full();
  const std::size_t n = graphs.size();
  std::vector<std::map<std::string, std::int64_t>> index(n);
  for (std::size_t k = 0; k < n; ++k) {
    v.graphs.push_back(&graphs[k]);
    for (std::size_t i = 0; i < graphs[k].operations.size(); ++i) {
      index[k].emplace(graphs[k].operations[i].name, static_cast<std::int64_t>(i));
    }
  }
  // An op name of any variant, resolved in variant `k`: itself, or the first
  // op added by the site of k that replaced it.
  auto resolve = [&](std::size_t k, const std::string& name) -> std::int64_t {
    if (auto it = index[k].find(name); it != index[k].end()) {
      return it->second;
    }
    for (const rewrite::AppliedSite& site : sites[k]) {
      if (std::find(site.replaced.begin(), site.replaced.end(), name) != site.replaced.end()) {
        for (const std::string& added : site.added) {
          if (auto it = index[k].find(added); it != index[k].end()) {
            return it->second;
          }
        }
      }
    }
    return -1;
  };
  v.from.assign(n, std::vector<std::vector<std::int64_t>>(n));
  for (std::size_t w = 0; w < n; ++w) {
    for (std::size_t k = 0; k < n; ++k) {
      std::vector<std::int64_t>& from = v.from[w][k];
      for (const graph::Operation& op : graphs[w].operations) {
        std::int64_t j = resolve(k, op.name);
        for (const rewrite::AppliedSite& site : sites[w]) {
          if (j >= 0) {
            break;
          }
          if (std::find(site.added.begin(), site.added.end(), op.name) != site.added.end()) {
            for (const std::string& replaced : site.replaced) {
              if ((j = resolve(k, replaced)) >= 0) {
                break;
              }
            }
          }
        }
        from.push_back(j);
      }
    }
  }
  return v;
}

Json rewritesJson(const std::vector<rewrite::AppliedSite>& sites) {
  return json::arrayOf(sites, [](const rewrite::AppliedSite& a) {
    Json j = Json::object();
    j["rule"] = a.rule;
    j["replaced"] = a.replaced;
    j["added"] = a.added;
    if (a.approximate) {
      j["approximate"] = true;
    }
    return j;
  });
}

std::string rewritesText(const std::vector<rewrite::AppliedSite>& sites) {
  std::map<std::string, int> byRule;
  std::set<std::string> approximate;
  for (const rewrite::AppliedSite& a : sites) {
    ++byRule[a.rule];
    if (a.approximate) {
      approximate.insert(a.rule);
    }
  }
  std::string out =
      "rewrites: " + std::to_string(sites.size()) + (sites.size() == 1 ? " site" : " sites");
  std::string parts;
  for (const auto& [rule, n] : byRule) {
    parts += (parts.empty() ? "" : ", ") + rule + " " + std::to_string(n) +
             (approximate.count(rule) > 0 ? " approximate" : "");
  }
  return out + (parts.empty() ? "" : " (" + parts + ")");
}

} // namespace tapestry::driver
