// Host replays of the CUDA backend's plans for the unit tests
// (test_cuda_plan.cpp, test_cuda_conv.cpp): cuBLASLt's column-major product
// replayed on the host (test_cuda_body.cpp's too), a kernel's emulation compared shard by shard
// with the CPU backend, and the shards that halve each index dim. Not a public header.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cuda_plan.hpp"

namespace tapestry::testing::cuda_replay {

// cuBLASLt's D = op(A)·op(B) in column-major terms, replayed on the host:
// a(o) and b(o) are A's and B's elements at offset o, d(o) D's (a reference).
template <class A, class B, class D>
void replayLtAt(const cuda::LtGemm& g, const A& a, const B& b, const D& d) {
  const auto m = static_cast<std::int64_t>(g.c.rows);
  const auto n = static_cast<std::int64_t>(g.c.cols);
  const auto k = static_cast<std::int64_t>(g.a.transpose ? g.a.rows : g.a.cols);
  REQUIRE(static_cast<std::int64_t>(g.b.transpose ? g.b.cols : g.b.rows) == k);
  REQUIRE(static_cast<std::int64_t>(g.a.transpose ? g.a.cols : g.a.rows) == m);
  REQUIRE(static_cast<std::int64_t>(g.b.transpose ? g.b.rows : g.b.cols) == n);
  // cuBLASLt requires ld >= rows for column-major layouts.
  REQUIRE(g.a.ld >= static_cast<std::int64_t>(g.a.rows));
  REQUIRE(g.b.ld >= static_cast<std::int64_t>(g.b.rows));
  REQUIRE(g.c.ld >= static_cast<std::int64_t>(g.c.rows));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        sum += a(g.a.transpose ? p + i * g.a.ld : i + p * g.a.ld) *
               b(g.b.transpose ? j + p * g.b.ld : p + j * g.b.ld);
      }
      d(i + j * g.c.ld) = sum;
    }
  }
}

// The same over dense vectors.
inline void replayLt(const cuda::LtGemm& g, const std::vector<double>& a,
                     const std::vector<double>& b, std::vector<double>& d) {
  replayLtAt(
      g, [&](std::int64_t o) { return a[static_cast<std::size_t>(o)]; },
      [&](std::int64_t o) { return b[static_cast<std::size_t>(o)]; },
      [&](std::int64_t o) -> double& { return d[static_cast<std::size_t>(o)]; });
}

// Every shard of `op` in `shards`, through `emulate` (a CUDA kernel's plan
// replayed on the host) and through the CPU backend, on the same random
// integer-valued float64 inputs, into NaN-filled outputs: the same numbers in
// the shard's selection. Returns how many shards ran.
inline std::size_t compareWithCpu(const graph::Operation& op, const std::vector<ZRange>& shards,
                                  std::mt19937& rng,
                                  const std::function<void(const backend::KernelCall&)>& emulate) {
  backend::CpuBackend cpu(1);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<backend::Buffer> inputs;
  std::vector<backend::PortViews> ins;
  inputs.reserve(op.application.inputs.size());
  for (const auto& port : op.application.inputs) {
    if (port.tensors.empty()) { // an optional input not given
      ins.emplace_back();
      continue;
    }
    inputs.push_back(backend::Buffer::host(backend::DType::Float64, port.tensors[0].shape));
    for (double& v : inputs.back().elements<double>()) {
      v = dist(rng);
    }
    ins.push_back({inputs.back().view()});
  }
  const std::vector<std::int64_t>& shape = op.application.outputs[0].tensors[0].shape;
  for (const ZRange& shard : shards) {
    INFO("shard " << shard.toString());
    const backend::Buffer emulated = backend::Buffer::host(backend::DType::Float64, shape);
    const backend::Buffer expected = backend::Buffer::host(backend::DType::Float64, shape);
    std::fill(emulated.elements<double>().begin(), emulated.elements<double>().end(), std::nan(""));
    std::fill(expected.elements<double>().begin(), expected.elements<double>().end(), std::nan(""));
    std::vector<backend::PortViews> outE = {{emulated.view()}};
    std::vector<backend::PortViews> outC = {{expected.view()}};
    emulate(backend::KernelCall{op, shard, ins, outE, 0});
    cpu.runKernel(op, shard, ins, outC, 0);
    const ZRange sel = backend::selection(op.application.outputs[0].ipfs[0], shard, shape);
    std::size_t checked = 0;
    sel.forEachPoint([&](const ZPoint& p) {
      const double* e = emulated.view().at<double>(p.coords());
      const double* c = expected.view().at<double>(p.coords());
      CHECK(*e == Approx(*c).margin(1e-9));
      ++checked;
    });
    CHECK(checked == static_cast<std::size_t>(sel.size()));
  }
  return shards.size();
}

// The whole index space and both halves of each dim of extent 2 or more.
inline std::vector<ZRange> wholeAndHalves(const ZRange& index) {
  std::vector<ZRange> shards = {index};
  for (std::size_t d = 0; d < index.rank(); ++d) {
    if (index.extent(d) > 1) {
      for (const ZRange& half : index.split(d, 2)) {
        shards.push_back(half);
      }
    }
  }
  return shards;
}

} // namespace tapestry::testing::cuda_replay
