// A kernel's body on one shard of an application (SPEC §4.1): the blocks its
// IPFs select go in, the output blocks come out, checked against what the
// output IPFs select. Types only (expansion and `kernels check` check every
// application's body on its whole index, and on halves of it) or numbers (the
// backends' kernel for a template with a body and no native kernel).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/expr/body.hpp"
#include "core/metakernel/application.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::metakernel {

// Per port, per tensor of the port: the block over the tensor's selection, in
// the memory of the BlockOps that evaluates (null for a list element the shard
// does not select).
using BlockData = std::vector<std::vector<expr::BlockHandle>>;

// Evaluates app.body (which must be present) on the shard `index` (non-empty).
// With `inputs` and `ops`, on numbers; without, on types. Returns per
// output port, per tensor, the block the shard writes (its partial for a
// combine output; an unselected list element gets an empty block). Errors are
// Error (exit 1) "in body \"...\": MESSAGE at column C" with a note at that
// column of the template: an ExprError of the evaluation, an output that no
// statement assigns, or an output block whose shape or dtype is not its
// selection's ("result is [4, 8] float32 but its IPF selects [4, 16] float32").
std::vector<std::vector<expr::BodyValue>>
evaluateShardBody(const Application& app, const std::string& kernel, const ZRange& index,
                  const BlockData* inputs = nullptr, expr::BlockOps* ops = nullptr);

// The shards a body is checked on: the whole index, then each half of every
// index dim of extent 2 or more (a shard as a plan may cut it).
std::vector<ZRange> checkedShards(const ZRange& index);

// Types only, on every checkedShards() of the index: what `kernels check` and
// expansion run. Same errors, naming the shard when it is not the whole index.
void checkShardBodies(const Application& app, const std::string& kernel);

} // namespace tapestry::metakernel
