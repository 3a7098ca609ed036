// ZSpace: integer geometry (SPEC §3) — points, ranges, affine maps and index
// projections over int64 with every overflow checked. One include for all of it.
#pragma once

#include "core/zspace/checked.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zaffine_map.hpp"
#include "core/zspace/zpoint.hpp"
#include "core/zspace/zrange.hpp"
