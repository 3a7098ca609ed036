// How the commands that write one output file (expand, import, render, trace)
// say what they wrote (SPEC §2): one rule for where the summary goes. Internal
// to core/driver.
#pragma once

#include <ostream>
#include <string>

#include "core/json/json.hpp"

namespace tapestry::driver {

// The output path as a summary names it ("-" is "<stdout>").
inline std::string outputName(const std::string& path) {
  return path == "-" ? "<stdout>" : path;
}

// With --format json, `doc` on `out`, unless the file itself went there; else
// `text` on `out` unless -q, or on `err` with -v when the file went to `out`.
// Config has outputPath ("-": stdout), json, quiet and verbose.
template <class Config>
void reportOutput(const Config& config, const Json& doc, const std::string& text, std::ostream& out,
                  std::ostream& err) {
  const bool toStdout = config.outputPath == "-";
  if (!toStdout && config.json) {
    out << doc.dump(2) << "\n";
  } else if (!toStdout && !config.quiet) {
    out << text;
  } else if (toStdout && config.verbose) {
    err << text;
  }
}

} // namespace tapestry::driver
