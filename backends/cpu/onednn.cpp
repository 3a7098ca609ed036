#include "backends/cpu/onednn.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include <omp.h>

#include "backends/cpu/vector_math.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu::onednn {

const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void useThreads(int threads) {
  // Read back each time (a cheap read of the thread's OpenMP state), not
  // remembered: a cache of what this function last set went stale when other
  // code set another size, and a conv after a product then ran on one thread.
  if (omp_get_max_threads() != threads) {
    omp_set_num_threads(threads);
  }
}

std::optional<dnnl::memory::data_type> dataType(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return dnnl::memory::data_type::f32;
  case DType::BFloat16:
    return dnnl::memory::data_type::bf16;
  default:
    return std::nullopt;
  }
}

dnnl::memory::desc stridedDesc(std::span<const std::int64_t> dims,
                               std::span<const std::int64_t> strides,
                               dnnl::memory::data_type type) {
  dnnl::memory::dims d(dims.begin(), dims.end());
  dnnl::memory::dims s(strides.begin(), strides.end());
  std::int64_t dense = 1;
  for (std::size_t k = d.size(); k-- > 0;) {
    if (d[k] == 1) {
      s[k] = dense;
    }
    dense *= d[k];
  }
  return dnnl::memory::desc(d, type, s);
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool isReference(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

Step::Step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd)
    : primitive_(std::move(primitive)) {
  const dnnl::memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) {
    arg(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch, cpuEngine()));
  }
}

void Step::arg(int arg, const dnnl::memory& memory) {
  memories_.push_back(memory);
  args_.push_back(dnnl_exec_arg_t{arg, memory.get()});
}

void Step::run(const dnnl::stream& stream) const {
  const dnnl_status_t status = dnnl_primitive_execute(primitive_.get(), stream.get(),
                                                      static_cast<int>(args_.size()), args_.data());
  if (status != dnnl_success) {
    throw InternalError("oneDNN primitive failed with status " + std::to_string(status));
  }
}

Step reorderStep(const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl::reorder::primitive_desc pd(cpuEngine(), from.get_desc(), cpuEngine(), to.get_desc(),
                                         userScratchpad());
  Step step(dnnl::reorder(pd), pd);
  step.arg(DNNL_ARG_FROM, from);
  step.arg(DNNL_ARG_TO, to);
  return step;
}

std::optional<ChannelBlocks> ChannelBlocks::of(const dnnl::memory::desc& blocked) {
  const dnnl::memory::dims dims = blocked.dims();
  const dnnl::memory::data_type type = blocked.data_type();
  const std::size_t size = dnnl::memory::data_type_size(type);
  if (dims.size() != 4 || (size != 2 && size != 4)) {
    return std::nullopt;
  }
  // nhwc is the blocked layout with one block of all C channels.
  for (const auto& [tag, block] : {std::pair{dnnl::memory::format_tag::nChw16c, std::int64_t{16}},
                                   std::pair{dnnl::memory::format_tag::nChw8c, std::int64_t{8}},
                                   std::pair{dnnl::memory::format_tag::nhwc, dims[1]}}) {
    if (blocked == dnnl::memory::desc(dims, type, tag)) {
      ChannelBlocks out;
      out.n_ = dims[0];
      out.c_ = dims[1];
      out.h_ = dims[2];
      out.w_ = dims[3];
      out.block_ = block;
      out.elementSize_ = size;
      return out;
    }
  }
  return std::nullopt;
}

namespace {

// Element (n, c, h, w) of the blocked layout with B channels per block, C
// channels padded up to a multiple of B: ((n*CB + c/B)*H*W + h*W + w)*B + c%B.
// A copy walks runs of positions (the whole plane when the plain box's rows
// follow each other, else a row at a time), here channels [c0, c1) and run
// positions [j0, j1), in tiles of 8 positions x 8 channels transposed in
// vector registers (VectorKernels::transpose4), the rest element by element. Into the
// blocked layout positions go outer, 16 at a time (a whole cache line of each
// plain row: the rows are often 2^k elements apart, in one cache set); out of
// it channels go outer, so that the plain rows are written as 8 streams.
template <class E, bool toBlocked>
void copyBlocks(const std::int64_t (&dims)[5], E* blocked, E* plain,
                std::span<const std::int64_t> st, std::int64_t c0, std::int64_t c1, std::int64_t j0,
                std::int64_t j1) {
  const auto [N, C, H, W, B] = dims;
  const std::int64_t blocks = (C + B - 1) / B;
  const std::int64_t plane = H * W * B;
  const std::int64_t runs = st[3] == 1 && (H == 1 || st[2] == W) ? 1 : H;
  auto at = [&](std::int64_t n, std::int64_t r, std::int64_t c, std::int64_t j) {
    return std::pair{plain + n * st[0] + c * st[1] + r * st[2] + j * st[3],
                     blocked + (n * blocks + c / B) * plane + (r * W + j) * B + c % B};
  };
  auto scalar = [&](std::int64_t n, std::int64_t r, std::int64_t ja, std::int64_t jb,
                    std::int64_t ca, std::int64_t cb) {
    for (std::int64_t c = ca; c < cb; ++c) {
      auto [p, b] = at(n, r, c, 0);
      for (std::int64_t j = ja; j < jb; ++j) {
        if constexpr (toBlocked) {
          b[j * B] = p[j * st[3]];
        } else {
          p[j * st[3]] = b[j * B];
        }
      }
    }
  };
  bool vector = false;
  const auto transpose = vectorKernels().transpose4;
  if constexpr (std::is_same_v<E, std::uint32_t>) {
    vector = B % 8 == 0 && st[3] == 1;
  }
  const std::int64_t jStep = j1 - j0 >= 16 ? 16 : 8;
  const std::int64_t jEnd = vector ? j0 + (j1 - j0) / jStep * jStep : j0;
  const std::int64_t cEnd = vector ? c0 + (c1 - c0) / 8 * 8 : c0;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t r = 0; r < runs; ++r) {
      if constexpr (std::is_same_v<E, std::uint32_t>) {
        // 8 positions x 8 channels: to[j * ts + i] = from[i * fs + j].
        auto tile = [&](std::int64_t c, std::int64_t k) {
          auto [p, b] = at(n, r, c, k);
          if constexpr (toBlocked) {
            transpose(p, st[1], b, B, 8, 8);
          } else {
            transpose(b, B, p, st[1], 8, 8);
          }
        };
        if constexpr (toBlocked) {
          for (std::int64_t j = j0; j < jEnd; j += jStep) {
            for (std::int64_t c = c0; c < cEnd; c += 8) {
              for (std::int64_t k = j; k < j + jStep; k += 8) {
                tile(c, k);
              }
            }
          }
        } else {
          for (std::int64_t c = c0; c < cEnd; c += 8) {
            for (std::int64_t k = j0; k < jEnd; k += 8) {
              tile(c, k);
            }
          }
        }
      }
      scalar(n, r, j0, jEnd, cEnd, c1);
      scalar(n, r, jEnd, j1, c0, c1);
    }
  }
}

} // namespace

template <class E, bool toBlocked>
void ChannelBlocks::copy(E* blocked, E* plain, std::span<const std::int64_t> strides) const {
  const std::int64_t dims[5] = {n_, c_, h_, w_, block_};
  const std::int64_t runLength = strides[3] == 1 && (h_ == 1 || strides[2] == w_) ? h_ * w_ : w_;
  copyBlocks<E, toBlocked>(dims, blocked, plain, strides, 0, c_, 0, runLength);
}

void ChannelBlocks::toBlocked(const std::byte* plain, std::span<const std::int64_t> strides,
                              std::byte* blocked) const {
  // The plain side is only read here (copyBlocks writes the other side).
  auto* from = const_cast<std::byte*>(plain);
  if (elementSize_ == 4) {
    copy<std::uint32_t, true>(reinterpret_cast<std::uint32_t*>(blocked),
                              reinterpret_cast<std::uint32_t*>(from), strides);
  } else {
    copy<std::uint16_t, true>(reinterpret_cast<std::uint16_t*>(blocked),
                              reinterpret_cast<std::uint16_t*>(from), strides);
  }
}

void ChannelBlocks::fromBlocked(const std::byte* blocked, std::byte* plain,
                                std::span<const std::int64_t> strides) const {
  auto* from = const_cast<std::byte*>(blocked);
  if (elementSize_ == 4) {
    copy<std::uint32_t, false>(reinterpret_cast<std::uint32_t*>(from),
                               reinterpret_cast<std::uint32_t*>(plain), strides);
  } else {
    copy<std::uint16_t, false>(reinterpret_cast<std::uint16_t*>(from),
                               reinterpret_cast<std::uint16_t*>(plain), strides);
  }
}

} // namespace tapestry::backend::cpu::onednn
