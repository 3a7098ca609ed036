// Shared by the body tests (test_body_ops.cpp, test_cuda_body.cpp): every
// standard kernel that has a body, applied to each of its examples, on the
// whole index and on both halves of every index dim of extent 2 or more (the
// shards a plan may cut, reduction dims included), with seeded input blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metakernel/application.hpp"
#include "core/metakernel/library.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/metakernel/shard_body.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::testing {

struct BodyCase {
  std::string kernel;
  std::size_t example = 0;
  metakernel::Application app;
  ZRange shard;
  std::string name() const {
    return kernel + " example " + std::to_string(example) + " shard " + shard.toString();
  }
};

inline const metakernel::MetakernelLibrary& standardLibrary() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

inline std::vector<BodyCase> standardBodyCases() {
  std::vector<BodyCase> out;
  for (const metakernel::Metakernel* k : standardLibrary().kernels()) {
    if (!k->body) {
      continue;
    }
    for (std::size_t e = 0; e < k->examples.size(); ++e) {
      const metakernel::ExampleSpec& ex = k->examples[e];
      if (ex.expectError) {
        continue;
      }
      metakernel::Operation op;
      op.name = k->name;
      for (const auto& [port, tensors] : ex.inputs) {
        op.inputs[port] = tensors;
      }
      op.params = ex.params;
      metakernel::Application app = metakernel::apply(*k, op);
      if (app.index.isEmpty()) {
        continue;
      }
      for (const ZRange& shard : metakernel::checkedShards(app.index)) {
        out.push_back({k->name, e, app, shard});
      }
    }
  }
  return out;
}

// splitmix64: the same numbers on every platform (std distributions are not).
inline std::uint64_t nextRandom(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// `count` values a block of `dtype` can hold: floats in [-2, 2) rounded by
// `round`, integers in [-9, 9], bools 0 or 1.
inline std::vector<double> randomBlock(std::string_view dtype, std::int64_t count,
                                       std::uint64_t& state,
                                       const std::function<void(std::vector<double>&)>& round) {
  std::vector<double> v(static_cast<std::size_t>(count));
  for (double& x : v) {
    const std::uint64_t r = nextRandom(state);
    if (dtype == "bool") {
      x = static_cast<double>(r & 1u);
    } else if (dtype == "int32" || dtype == "int64") {
      x = static_cast<double>(static_cast<std::int64_t>(r % 19u) - 9);
    } else {
      x = static_cast<double>(r >> 11) * 0x1.0p-53 * 4.0 - 2.0;
    }
  }
  round(v);
  return v;
}

// The selections of the shard's input blocks, per port, per tensor (empty for
// a list element the shard does not reach).
inline std::vector<std::vector<ZRange>> inputSelections(const BodyCase& c) {
  std::vector<std::vector<ZRange>> out;
  for (const metakernel::PortResult& port : c.app.inputs) {
    std::vector<ZRange> sels;
    for (std::size_t t = 0; t < port.tensors.size(); ++t) {
      sels.push_back(shardSelection(port.ipfs[t], c.shard, port.tensors[t].shape));
    }
    out.push_back(std::move(sels));
  }
  return out;
}

} // namespace tapestry::testing
