// Expansion (SPEC §5): checks a decoded graph against the metakernel library
// (kernels, ports, params, unknown tensors, double producers, cycles) and
// applies every operation's metakernel in topological order, giving each
// produced tensor its shape and dtype and each operation its index space, IPFs
// and flops. Declared output tensors assert their shape and dtype.
#pragma once

#include "core/graph/graph.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::graph {

// Throws the first problem as an Error located in the graph's file. Operations
// are applied in Kahn order, ties broken by file order; a cycle is reported as
// "cycle: a -> b -> a" at the first of its operations in the file.
ExpandedGraph expand(const Graph& graph, const metakernel::MetakernelLibrary& library);

} // namespace tapestry::graph
