// Internal to the CUDA backend's host side: the helpers that the kernel files
// (cuda_ops.cpp, cuda_ops_products.cpp, cuda_ops_index.cpp) share, and the
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

// Matrix products (cuda_ops_products.cpp): matmul and linear; linear_act.
void productKernel(const backend::KernelCall& call, const KernelContext& c);
void linearActKernel(const backend::KernelCall& call, const KernelContext& c);

// Indexed reads (cuda_ops_index.cpp).
void embeddingKernel(const backend::KernelCall& call, const KernelContext& c);
void gatherKernel(const backend::KernelCall& call, const KernelContext& c);

} // namespace tapestry::cuda::ops
