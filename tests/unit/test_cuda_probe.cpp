// The CUDA probe never crashes: without a GPU it says why; with one it lists it.
#include <catch2/catch.hpp>

#include "backends/cuda/cuda_probe.hpp"

TEST_CASE("CUDA probe answers consistently", "[cuda]") {
  tapestry::cuda::Probe p = tapestry::cuda::probe();
  if (p.available) {
    CHECK_FALSE(p.devices.empty());
    CHECK(p.reason.empty());
    for (const auto& d : p.devices) {
      CHECK(d.computeMajor >= 8); // we build for sm_80 and sm_90
      CHECK(d.memoryBytes > 0);
    }
  } else {
    CHECK_FALSE(p.reason.empty());
    if (p.devices.empty()) {
      CHECK(p.reason.rfind("no CUDA GPU found", 0) == 0);
    }
  }
  // A second probe agrees with the first (no sticky error state).
  CHECK(tapestry::cuda::probe().available == p.available);
}
