#include "core/driver/rewrite_pass.hpp"

#include <filesystem>
#include <map>
#include <system_error>

#include "core/diag/error.hpp"

namespace tapestry::driver {

std::vector<rewrite::AppliedSite> preRewrite(graph::ExpandedGraph& graph, const std::string& mode,
                                             const std::vector<std::string>& rulePaths,
                                             const metakernel::MetakernelLibrary& library) {
  if (mode == "none") {
    if (!rulePaths.empty()) {
      throw UsageError("-r/--rules cannot go with --rewrites none");
    }
    return {};
  }
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
  const rewrite::RuleSet rules = rewrite::RuleSet::load(paths, library);
  std::vector<const rewrite::Rule*> chosen;
  for (const auto& r : rules.rules()) {
    const bool builtIn = metakernel::isStandardLibraryFile(r->location.file);
    if (r->always || (file && !builtIn)) {
      chosen.push_back(r.get());
    }
  }
  rewrite::RewriteResult out = rewrite::rewriteGraph(graph, chosen, library);
  graph = std::move(out.graph);
  return std::move(out.applied);
}

Json rewritesJson(const std::vector<rewrite::AppliedSite>& sites) {
  return json::arrayOf(sites, [](const rewrite::AppliedSite& a) {
    Json j = Json::object();
    j["rule"] = a.rule;
    j["replaced"] = a.replaced;
    j["added"] = a.added;
    return j;
  });
}

std::string rewritesText(const std::vector<rewrite::AppliedSite>& sites) {
  std::map<std::string, int> byRule;
  for (const rewrite::AppliedSite& a : sites) {
    ++byRule[a.rule];
  }
  std::string out =
      "rewrites: " + std::to_string(sites.size()) + (sites.size() == 1 ? " site" : " sites");
  std::string parts;
  for (const auto& [rule, n] : byRule) {
    parts += (parts.empty() ? "" : ", ") + rule + " " + std::to_string(n);
  }
  return out + (parts.empty() ? "" : " (" + parts + ")");
}

} // namespace tapestry::driver
