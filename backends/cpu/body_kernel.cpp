// A kernel from its template's body (SPEC §4.1): the CPU backend runs any
// kernel whose template has a body and that has no native kernel. The shard's
// input selections are read into blocks, the body is evaluated
// (core/metakernel/shard_body.hpp) and each output block is rounded to its
// tensor's dtype and written over its selection. On the host the blocks are
// float64 (hostBodyOps; matrix products through cblas_dgemm): bodies are the
// reference semantics, so they compute in float64 whatever the dtype, and
// integer blocks are exact up to 2^53.
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backends/cpu/body_kernel.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "core/metakernel/shard_body.hpp"

namespace tapestry::backend::cpu {

namespace {

// Calls f(offset of the point in `view`, row-major position) for every point
// of `region`, which the view covers.
template <class F> void forEachPoint(const TensorView& view, const ZRange& region, F&& f) {
  const std::size_t rank = region.rank();
  const std::int64_t total = region.size();
  if (total == 0) {
    return;
  }
  std::vector<std::int64_t> counter(rank, 0);
  std::int64_t offset = view.offsetOf(region.start().coords());
  for (std::int64_t i = 0; i < total; ++i) {
    f(offset, i);
    for (std::size_t d = rank; d-- > 0;) {
      offset += view.strides[d];
      if (++counter[d] < region.extent(d)) {
        break;
      }
      offset -= view.strides[d] * region.extent(d);
      counter[d] = 0;
    }
  }
}

expr::BlockHandle readBlock(const TensorView& view, const ZRange& region) {
  std::vector<double> data(static_cast<std::size_t>(region.size()));
  dispatchWithBool(view.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = reinterpret_cast<const T*>(view.data);
    forEachPoint(view, region, [&](std::int64_t offset, std::int64_t i) {
      data[static_cast<std::size_t>(i)] = convertValue<double>(base[offset]);
    });
  });
  return expr::hostBlock(std::move(data));
}

void writeBlock(const std::vector<double>& data, const TensorView& view, const ZRange& region) {
  dispatchWithBool(view.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* base = reinterpret_cast<T*>(view.data);
    forEachPoint(view, region, [&](std::int64_t offset, std::int64_t i) {
      base[offset] = convertValue<T>(data[static_cast<std::size_t>(i)]);
    });
  });
}

void roundTo(std::string_view dtype, std::span<double> values) {
  dispatchWithBool(parseDType(dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (double& v : values) {
      v = convertValue<double>(convertValue<T>(v));
    }
  });
}

class HostMemory final : public BodyMemory {
public:
  expr::BlockOps& ops() override { return hostBodyOps(); }
  expr::BlockHandle read(const TensorView& view, const ZRange& region) override {
    return readBlock(view, region);
  }
  void write(const expr::BodyValue& block, const TensorView& view, const ZRange& region) override {
    writeBlock(expr::hostValues(block), view, region);
  }
};

} // namespace

expr::BlockOps& hostBodyOps() {
  static const expr::BodyPrimitives primitives{&denseGemm, &roundTo};
  static const std::unique_ptr<expr::BlockOps> ops = expr::hostBlockOps(primitives);
  return *ops;
}

void runBodyKernelWith(const KernelCall& call, BodyMemory& memory) {
  const graph::Operation& op = call.op;
  const ShardSelections sel = shardSelections(op, call.index);
  metakernel::BlockData inputs(op.inputs.size());
  for (std::size_t p = 0; p < op.inputs.size(); ++p) {
    for (std::size_t t = 0; t < sel.inputs[p].size(); ++t) {
      const ZRange& region = sel.inputs[p][t];
      inputs[p].push_back(region.isEmpty() ? nullptr : memory.read(call.inputs[p][t], region));
    }
  }
  const std::vector<std::vector<expr::BodyValue>> outputs = [&] {
    try {
      return metakernel::evaluateShardBody(op.application, op.kernel, call.index, &inputs,
                                           &memory.ops());
    } catch (Error& e) {
      if (e.exitCode() == ExitCode::InvalidInput) {
        e.prefix(op.name + " (" + op.kernel + "): ");
      }
      throw;
    }
  }();
  for (std::size_t p = 0; p < outputs.size(); ++p) {
    for (std::size_t t = 0; t < outputs[p].size(); ++t) {
      const ZRange& region = sel.outputs[p][t];
      if (!region.isEmpty()) {
        memory.write(outputs[p][t], call.outputs[p][t], region);
      }
    }
  }
}

void runBodyKernel(const KernelCall& call) {
  HostMemory memory;
  runBodyKernelWith(call, memory);
}

void runBodyKernelStaged(Backend& backend, const KernelCall& call) {
  const ShardSelections sel = shardSelections(call.op, call.index);
  std::vector<Buffer> keep;
  auto stage = [&](const std::vector<std::vector<ZRange>>& regions,
                   std::span<const PortViews> views, bool copyIn) {
    std::vector<PortViews> out;
    for (std::size_t p = 0; p < regions.size(); ++p) {
      PortViews port;
      for (std::size_t t = 0; t < regions[p].size(); ++t) {
        const ZRange& region = regions[p][t];
        if (region.isEmpty()) {
          port.push_back(TensorView{});
          continue;
        }
        keep.push_back(Buffer::host(views[p][t].dtype, region));
        if (copyIn) {
          backend.copyRegion(views[p][t], keep.back().view(), region);
        }
        port.push_back(keep.back().view());
      }
      out.push_back(std::move(port));
    }
    return out;
  };
  const std::vector<PortViews> inputs = stage(sel.inputs, call.inputs, true);
  const std::vector<PortViews> outputs = stage(sel.outputs, call.outputs, false);
  backend.synchronize();
  runBodyKernel(KernelCall{call.op, call.index, inputs, outputs, call.device});
  for (std::size_t p = 0; p < outputs.size(); ++p) {
    for (std::size_t t = 0; t < outputs[p].size(); ++t) {
      if (outputs[p][t].present()) {
        backend.copyRegion(outputs[p][t], call.outputs[p][t], sel.outputs[p][t]);
      }
    }
  }
  backend.synchronize();
}

} // namespace tapestry::backend::cpu
