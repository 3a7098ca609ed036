// Reading graph files (SPEC §5) and the one entry point later subcommands use:
// loadAndExpand() takes a user graph (graph/v1) or an expanded one (expanded/v1)
// and returns the expanded graph. Every problem is an Error located in the file
// (FILE:LINE:COL, "at /operations/2/inputs/X: ...", the line and a caret), exit 1.
#pragma once

#include <string>

#include "core/graph/graph.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::graph {

// Decodes the structure of a graph document: the tag, names, shapes, dtypes,
// port bindings, params as JSON. Kernels are not looked up here (expand() does).
// `root` may sit anywhere in a document (a plan embeds its graph); its document
// must outlive the result.
Graph decodeGraph(const json::Value& root);

// Reads PATH ("-" is standard input) and decodes it; the result owns the parsed
// document. Throws Error "cannot open file" and every parse error, located.
Graph loadGraph(const std::string& path);

// Both tags: a graph/v1 file is expanded; an expanded/v1 file is expanded again
// from its user fields and every stored expanded field must agree, so a stale or
// edited file is an error, and expanding an expanded file gives it back byte for
// byte. What `optimize`, `render` and `run` call for their GRAPH argument.
ExpandedGraph loadAndExpand(const std::string& path, const metakernel::MetakernelLibrary& library);

} // namespace tapestry::graph
