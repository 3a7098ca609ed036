// Internal to the CUDA backend's host side: the helpers that the kernel files
// (cuda_ops.cpp and the cuda_ops_*.cpp files) share, and the
// kernels defined outside cuda_ops.cpp, which registers every kernel by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda::ops {

[[noreturn]] void unsupportedDType(const backend::KernelCall& call, backend::DType dtype);
bool isInt(backend::DType dtype);
// The output's dtype of a kernel that takes floating-point types only (an
// integer one is unsupportedDType).
backend::DType floatOutput(const backend::KernelCall& call);
// The address of tensor point p in a view (p need not be in the region when
// nothing is read there, e.g. a column of an empty reduction).
std::byte* pointAt(const backend::TensorView& view, std::span<const std::int64_t> point);
// The walk of `index` through the views of `walks`, as the device kernels take it.
DeviceWalk walkOf(const ZRange& index, std::initializer_list<const ViewWalk*> walks);
// "kernel K (operation O)", for errors.
std::string what(const backend::KernelCall& call);

// What a product adds after A·B: the bias (element j at bias + j·bs, added
// to column j; with biasRows element i, added to row i), then either GELU's
// tanh approximation or a residual R [M, N] (row, column strides rsR, csR),
// never both.
struct GemmExtras {
  const std::byte* bias = nullptr;
  std::int64_t bs = 0;
  bool biasRows = false;
  bool geluTanh = false;
  const std::byte* residual = nullptr;
  std::int64_t rsR = 0, csR = 0;
};

// C = A·B + extras, with A [M, K], B [K, N], C [M, N] given by device
// pointers and (row, column) strides (cuda_ops_products.cpp).
void gemm(const KernelContext& c, backend::DType dtype, std::int64_t M, std::int64_t N,
          std::int64_t K, const std::byte* A, std::int64_t rsA, std::int64_t csA,
          const std::byte* B, std::int64_t rsB, std::int64_t csB, std::byte* C, std::int64_t rsC,
          std::int64_t csC, const GemmExtras& extras);

// Matrix products (cuda_ops_products.cpp): matmul and linear; linear_act.
void productKernel(const backend::KernelCall& call, const KernelContext& c);
void linearActKernel(const backend::KernelCall& call, const KernelContext& c);

// Convolutions (cuda_ops_conv.cpp): conv2d and conv2d_act.
void conv2dKernel(const backend::KernelCall& call, const KernelContext& c);

// Indexed reads (cuda_ops_index.cpp).
void embeddingKernel(const backend::KernelCall& call, const KernelContext& c);
void gatherKernel(const backend::KernelCall& call, const KernelContext& c);

} // namespace tapestry::cuda::ops
