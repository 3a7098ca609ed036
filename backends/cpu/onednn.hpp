// What the CPU kernels that run on oneDNN share: the one CPU engine, the
// OpenMP team size of the calling thread, memory descriptors of tensor views
// (any strides), and primitives run through oneDNN's C entry point with
// argument arrays built once (the C++ execute() takes a std::unordered_map per
// call). Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/dtype.hpp"

namespace tapestry::backend::cpu::onednn {

// The CPU engine every primitive is created for.
const dnnl::engine& cpuEngine();

// Sets the calling thread's OpenMP team size (oneDNN's CPU runtime here) to
// `threads` (a read of the current size when it is already that). Every
// oneDNN kernel sets its size through this before it runs. oneDNN fixes some
// primitives' work split when they are created, so a kernel calls this both
// before creating its primitives and before running them.
void useThreads(int threads);

// oneDNN's type of a storage dtype, where the kernels run it there (float32
// and bfloat16); nullopt otherwise.
std::optional<dnnl::memory::data_type> dataType(DType dtype);

// A plain (strided) descriptor of a view's box: dims and element strides. A
// dim of extent 1 gets the stride a dense layout would give it, so that a
// dense box compares equal to the format tag's descriptor whatever stride the
// view carries there.
dnnl::memory::desc stridedDesc(std::span<const std::int64_t> dims,
                               std::span<const std::int64_t> strides, dnnl::memory::data_type type);

// Primitive attributes with a user scratchpad (Step keeps it).
dnnl::primitive_attr userScratchpad();

// Whether oneDNN picked its reference (naive loop) implementation.
bool isReference(const dnnl::primitive_desc_base& pd);

// A primitive with its arguments, run on a stream with no allocation on this
// side; the memories (and the scratchpad it allocates once) stay alive here.
class Step {
public:
  Step() = default;
  Step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd);
  bool present() const { return static_cast<bool>(primitive_); }
  // Adds argument `arg` (DNNL_ARG_SRC, ...); the memory's handle may change
  // between runs.
  void arg(int arg, const dnnl::memory& memory);
  void run(const dnnl::stream& stream) const;

private:
  dnnl::primitive primitive_;
  std::vector<dnnl::memory> memories_;
  std::vector<dnnl_exec_arg_t> args_;
};

// A reorder between two descriptors (a layout or dtype change), as a Step on
// the two memories.
Step reorderStep(const dnnl::memory& from, const dnnl::memory& to);

// Copies between a plain NCHW box (any element strides) and oneDNN's blocked
// activation layouts nChw8c / nChw16c (dense, channels padded up to the block,
// the padding left as it is: zero it once) and nhwc (one block of all C
// channels, which the brgemm convolutions pick). Hand-written because oneDNN's
// reorder primitive spends 5-10 us per call on a 64 KiB activation (its
// per-execution setup; bench_conv_cpu), and a convolution on 2 x 2 to 16 x 16
// images takes only 10-80 us.
class ChannelBlocks {
public:
  // The layout of `blocked` when it is nChw8c, nChw16c or nhwc of its own
  // dims (4-d, 2- or 4-byte elements); nullopt otherwise.
  static std::optional<ChannelBlocks> of(const dnnl::memory::desc& blocked);
  // plain (strides in elements) -> blocked; blocked -> plain. One thread:
  // splitting a copy over the OpenMP team cost more than it saved (a 64 KiB
  // activation took 11 us on 2 threads, 5 us on one; bench_conv_cpu).
  void toBlocked(const std::byte* plain, std::span<const std::int64_t> strides,
                 std::byte* blocked) const;
  void fromBlocked(const std::byte* blocked, std::byte* plain,
                   std::span<const std::int64_t> strides) const;

private:
  template <class E, bool toBlocked>
  void copy(E* blocked, E* plain, std::span<const std::int64_t> strides) const;

  std::int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, block_ = 16;
  std::size_t elementSize_ = 4;
};

} // namespace tapestry::backend::cpu::onednn
