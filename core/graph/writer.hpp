// The expanded/v1 writer (SPEC §5): the user's fields, then per tensor dtype,
// shape, producer and per operation index, bindings, ipf (Loom's JSON), combine,
// reduction_dims, flops. Deterministic: the same graph gives the same bytes.
#pragma once

#include <cstddef>
#include <string>

#include "core/graph/graph.hpp"
#include "core/json/json.hpp"

namespace tapestry::graph {

// The expanded/v1 document. Key order is fixed: tapestry, name, doc, tensors,
// operations, outputs; per operation name, kernel, doc, params (resolved, with
// defaults), inputs, outputs (template order), then metakernel::toJson's fields.
Json toJson(const ExpandedGraph& graph);

// One operation's user fields as a graph/v1 file has them: name, kernel, doc,
// params (resolved, with defaults), inputs and outputs (template order).
Json userOperationJson(const ExpandedGraph& graph, const Operation& op);

// The line width of expanded/v1 files.
inline constexpr std::size_t kExpandedWidth = 120;

// The expanded/v1 text: json::format(toJson(graph), kExpandedWidth), written
// without building the
// Json (several times faster on large graphs).
std::string writeExpanded(const ExpandedGraph& graph);

} // namespace tapestry::graph
