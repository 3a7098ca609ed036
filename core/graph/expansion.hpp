// Expansion (SPEC §5): checks a decoded graph against the metakernel library
// (kernels, ports, params, unknown tensors, double producers, cycles) and
// applies every operation's metakernel in topological order, giving each
// produced tensor its shape and dtype and each operation its index space, IPFs
// and flops. Declared output tensors assert their shape and dtype.
#pragma once

#include <vector>

#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::graph {

// Throws the first problem as an Error located in the graph's file. Operations
// are applied in Kahn order, ties broken by file order; a cycle is reported as
// "cycle: a -> b -> a" at the first of its operations in the file.
// An expanded file's stored fields must be what expansion gives, but with
// `costWarnings` (the graph a plan embeds) a stored cost (`flops`, `bytes`)
// that differs is no error: the first such difference is appended there as a
// Severity::Warning, and the expansion's cost is used.
ExpandedGraph expand(const Graph& graph, const metakernel::MetakernelLibrary& library,
                     std::vector<Diagnostic>* costWarnings = nullptr);

} // namespace tapestry::graph
