// Internal to core/graph: the expanded/v1 fields of an application written
// straight into a json::JsonLayout (core/json/layout.hpp), without building
// the Json (20x faster on large graphs).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "core/json/layout.hpp"
#include "core/metakernel/application.hpp"

namespace tapestry::graph::detail {

using json::appendJsonString;
using json::JsonLayout;

// The expanded/v1 fields metakernel::toJson(app) gives (index, bindings, ipf,
// combine, reduction_dims, reduction_splittable, flops, bytes), as members of
// the open object; `only` names one field to emit alone ("" for all). Written
// directly from the application: the same text as the Json, 20x faster.
void expandedFields(JsonLayout& out, const metakernel::Application& app,
                    std::string_view only = {});
// The bindings object alone ({"bindings": {...}} in the open object), without
// the bindings `skip` names.
void expandedBindings(JsonLayout& out, const metakernel::Application& app,
                      const std::function<bool(std::string_view)>& skip);
// The names of those fields, in order, for this application.
std::vector<std::string_view> expandedFieldNames(const metakernel::Application& app);

} // namespace tapestry::graph::detail
