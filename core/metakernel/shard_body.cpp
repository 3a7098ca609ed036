#include "core/metakernel/shard_body.hpp"

#include <map>
#include <string_view>

#include "core/diag/error.hpp"
#include "core/zspace/index_projection.hpp"

namespace tapestry::metakernel {

namespace {

std::vector<std::int64_t> extents(const ZRange& r) {
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < r.rank(); ++d) {
    out.push_back(r.extent(d));
  }
  return out;
}

// "in body \"...\": MESSAGE at column C", with a note at that column.
[[noreturn]] void fail(const BodySpec& spec, const std::string& kernel, int column,
                       const std::string& message) {
  Error e("in body \"" + spec.field.text + "\": " + message + " at column " +
          std::to_string(column));
  e.addNote(templateNote(spec.field, column, kernel));
  throw e;
}

std::string indexText(const ZRange& index) {
  return index.toString();
}

} // namespace

std::vector<std::vector<expr::BodyValue>>
evaluateShardBody(const Application& app, const std::string& kernel, const ZRange& index,
                  const BlockData* inputs, expr::BlockOps* ops) {
  if (!app.body) {
    throw InternalError("kernel " + kernel + " has no body to evaluate");
  }
  const BodySpec& spec = *app.body;
  expr::BodyEnvironment env;
  env.bindings = &app.bindings;
  env.numeric = inputs != nullptr;
  env.ops = ops;
  for (const auto& [name, value] : app.params.items()) {
    if (value.is_number_float()) {
      env.numbers[name] = value.get<double>();
    }
  }
  for (std::size_t p = 0; p < app.inputs.size(); ++p) {
    const PortResult& port = app.inputs[p];
    if (!port.list && port.tensors.empty()) {
      if (port.absent) { // left out: the template's default, a scalar
        expr::BodyValue number;
        number.number = *port.absent;
        env.inputs.emplace(port.name, std::move(number));
      }
      continue; // an optional input left out: the body has no block of that name
    }
    expr::BodyValue list;
    list.kind = expr::BodyValue::Kind::Blocks;
    for (std::size_t t = 0; t < port.tensors.size(); ++t) {
      const ZRange sel = shardSelection(port.ipfs[t], index, port.tensors[t].shape);
      if (sel.isEmpty() && port.list) {
        continue; // a list element this shard does not reach
      }
      expr::BodyValue block =
          expr::BodyValue::block(expr::BlockType{extents(sel), port.tensors[t].dtype});
      if (inputs != nullptr) {
        block.data = (*inputs)[p][t];
        if (!block.data || block.data->elementCount() != sel.size()) {
          throw InternalError("body of " + kernel + ": input " + port.name +
                              " data does not match its selection " + sel.toString());
        }
      }
      list.blocks.push_back(std::move(block));
    }
    if (port.list) {
      env.inputs.emplace(port.name, std::move(list));
    } else {
      env.inputs.emplace(port.name, std::move(list.blocks.at(0)));
    }
  }

  std::map<std::string, expr::BodyValue, std::less<>> values;
  try {
    values = expr::evaluateBody(spec.body, env);
  } catch (const expr::ExprError& e) {
    fail(spec, kernel, e.column(), e.message());
  }

  // Where each name was assigned, for errors about outputs.
  std::map<std::string, int, std::less<>> assignedAt;
  for (const expr::BodyStatement& st : spec.body.statements()) {
    for (std::size_t i = 0; i < st.targets.size(); ++i) {
      assignedAt.emplace(st.targets[i], st.targetColumns[i]);
    }
  }
  std::vector<std::vector<expr::BodyValue>> out;
  for (const PortResult& port : app.outputs) {
    auto it = values.find(port.name);
    if (it == values.end()) {
      fail(spec, kernel, 1, "no statement assigns output " + port.name);
    }
    const int column = assignedAt.at(port.name);
    const expr::BodyValue& value = it->second;
    std::vector<expr::BodyValue> blocks;
    if (port.list) {
      if (value.kind != expr::BodyValue::Kind::Blocks) {
        fail(spec, kernel, column,
             "output " + port.name + " is a list port, so it needs a list of blocks, got a " +
                 value.kindName());
      }
      blocks = value.blocks;
    } else {
      if (value.kind != expr::BodyValue::Kind::Block) {
        fail(spec, kernel, column,
             "output " + port.name + " needs a block, got a " + value.kindName());
      }
      blocks.push_back(value);
    }
    // Selected tensors, in order: a list output's unselected elements get none.
    std::vector<expr::BodyValue> placed;
    std::size_t next = 0;
    for (std::size_t t = 0; t < port.tensors.size(); ++t) {
      const ZRange sel = shardSelection(port.ipfs[t], index, port.tensors[t].shape);
      if (sel.isEmpty() && port.list) {
        placed.push_back(
            expr::BodyValue::block(expr::BlockType{extents(sel), port.tensors[t].dtype}));
        continue;
      }
      const expr::BlockType want{extents(sel), port.tensors[t].dtype};
      if (next >= blocks.size()) {
        fail(spec, kernel, column,
             "output " + port.name + " has " + std::to_string(blocks.size()) +
                 " blocks but the shard selects more of its tensors");
      }
      const expr::BodyValue& got = blocks[next++];
      if (got.type != want) {
        std::string where = index == app.index ? "" : " (shard " + indexText(index) + ")";
        fail(spec, kernel, column,
             "output " + port.name + " is " + toString(got.type) + " but its IPF selects " +
                 toString(want) + where);
      }
      placed.push_back(got);
    }
    if (next != blocks.size()) {
      fail(spec, kernel, column,
           "output " + port.name + " has " + std::to_string(blocks.size()) +
               " blocks but the shard selects " + std::to_string(next));
    }
    out.push_back(std::move(placed));
  }
  return out;
}

std::vector<ZRange> checkedShards(const ZRange& index) {
  std::vector<ZRange> out{index};
  for (std::size_t d = 0; d < index.rank(); ++d) {
    const std::int64_t extent = index.extent(d);
    if (extent < 2) {
      continue;
    }
    const std::int64_t mid = index.start()[d] + extent / 2;
    for (int half = 0; half < 2; ++half) {
      std::vector<std::int64_t> lo(index.start().begin(), index.start().end());
      std::vector<std::int64_t> hi(index.end().begin(), index.end().end());
      (half == 0 ? hi : lo)[d] = mid;
      out.emplace_back(ZPoint(lo), ZPoint(hi));
    }
  }
  return out;
}

void checkShardBodies(const Application& app, const std::string& kernel) {
  if (!app.body || app.index.isEmpty()) {
    return;
  }
  for (const ZRange& shard : checkedShards(app.index)) {
    (void)evaluateShardBody(app, kernel, shard);
  }
}

} // namespace tapestry::metakernel
