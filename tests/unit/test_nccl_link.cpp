// The NCCL link's host side (backends/cuda/nccl_link.hpp): libnccl, which the
// binary opens at run time, loads from where CMake found it and has every
// function the link binds. Needs no GPU (nothing is initialized).
#include <catch2/catch.hpp>

#include <string>

#include "backends/cuda/nccl_link.hpp"

TEST_CASE("libnccl loads and has every function the NCCL link calls", "[nccl]") {
  CHECK(tapestry::backend::ncclUnavailable() == std::string());
}
