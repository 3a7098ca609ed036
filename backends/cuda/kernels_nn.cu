// The CUDA backend's kernels for conv2d and conv2d_act, the pooling and
// normalization kernels of metakernels/pool.yaml and batchnorm (see
// kernels.hpp); each mirrors its CPU counterpart (backends/cpu/conv.cpp,
// pool.cpp, normalization.cpp).
#include "backends/cuda/kernels.hpp"

#include "backends/cuda/device_util.cuh"

namespace tapestry::cuda {

namespace {

// An output element of a convolution or a pool: (n, channel, row, column).
struct Pixel {
  i64 n, c, h, w;
};

// The elements of the box [begin, end) over its first four index dims.
__device__ i64 pixelCount(const i64* begin, const i64* end) {
  return (end[0] - begin[0]) * (end[1] - begin[1]) * (end[2] - begin[2]) * (end[3] - begin[3]);
}

// The e-th of them, row-major (the column fastest).
__device__ Pixel pixelOf(i64 e, const i64* begin, const i64* end) {
  const i64 Cs = end[1] - begin[1], Hs = end[2] - begin[2], Ws = end[3] - begin[3];
  Pixel at;
  at.w = begin[3] + e % Ws;
  e /= Ws;
  at.h = begin[2] + e % Hs;
  e /= Hs;
  at.c = begin[1] + e % Cs;
  at.n = begin[0] + e / Cs;
  return at;
}

template <class T>
__global__ void conv2dKernel(ConvView input, ConvView weight, ConvView output, ConvParams p) {
  using C = typename Num<T>::C;
  const T* in = static_cast<const T*>(input.data);
  const T* wt = static_cast<const T*>(weight.data);
  T* out = static_cast<T*>(const_cast<void*>(output.data));
  TAPESTRY_GRID_LOOP(e, pixelCount(p.begin, p.end)) {
    const Pixel at = pixelOf(e, p.begin, p.end);
    const i64 n = at.n, o = at.c, oh = at.h, ow = at.w;
    C acc = 0;
    if (p.bias != nullptr) {
      acc = Num<T>::load(static_cast<const T*>(p.bias)[(o - p.biasStart) * p.biasStride]);
    }
    if (p.anyInput) {
      for (i64 c = p.begin[4]; c < p.end[4]; ++c) {
        for (i64 kh = p.begin[5]; kh < p.end[5]; ++kh) {
          const i64 ih = p.sh * oh + p.dh * kh - p.ph;
          if (ih < 0 || ih >= p.H) {
            continue;
          }
          for (i64 kw = p.begin[6]; kw < p.end[6]; ++kw) {
            const i64 iw = p.sw * ow + p.dw * kw - p.pw;
            if (iw < 0 || iw >= p.W) {
              continue;
            }
            acc += Num<T>::load(in[convOffset(input, n, o / p.og * p.gmul + c, ih, iw)]) *
                   Num<T>::load(wt[convOffset(weight, o, c, kh, kw)]);
          }
        }
      }
    }
    if (p.residual.data != nullptr) {
      acc += Num<T>::load(
          static_cast<const T*>(p.residual.data)[convOffset(p.residual, n, o, oh, ow)]);
    }
    acc = epilogueActivation(p.act, acc);
    if (p.lo > -INFINITY || p.hi < INFINITY) {
      const double v = static_cast<double>(acc);
      const double t = v < p.lo ? p.lo : v;
      acc = static_cast<C>(p.hi < t ? p.hi : t);
    }
    out[convOffset(output, n, o, oh, ow)] = Num<T>::store(acc);
  }
}

template <class T> __global__ void im2colKernel(ConvView input, i64 n, ConvParams p, T* col) {
  const T* in = static_cast<const T*>(input.data);
  const i64 KHs = p.end[5] - p.begin[5], KWs = p.end[6] - p.begin[6];
  const i64 OWs = p.end[3] - p.begin[3];
  const i64 cols = (p.end[2] - p.begin[2]) * OWs;
  const i64 count = (p.end[4] - p.begin[4]) * KHs * KWs * cols;
  TAPESTRY_GRID_LOOP(e, count) {
    const i64 q = e % cols;
    i64 k = e / cols;
    const i64 ow = p.begin[3] + q % OWs, oh = p.begin[2] + q / OWs;
    const i64 kw = p.begin[6] + k % KWs;
    k /= KWs;
    const i64 kh = p.begin[5] + k % KHs, c = p.begin[4] + k / KHs;
    const i64 ih = p.sh * oh + p.dh * kh - p.ph, iw = p.sw * ow + p.dw * kw - p.pw;
    col[e] = ih < 0 || ih >= p.H || iw < 0 || iw >= p.W ? Num<T>::store(typename Num<T>::C(0))
                                                        : in[convOffset(input, n, c, ih, iw)];
  }
}

template <class T> __global__ void pool2dKernel(ConvView input, ConvView output, PoolParams p) {
  using C = typename Num<T>::C;
  const T* in = static_cast<const T*>(input.data);
  T* out = static_cast<T*>(const_cast<void*>(output.data));
  TAPESTRY_GRID_LOOP(e, pixelCount(p.begin, p.end)) {
    const Pixel at = pixelOf(e, p.begin, p.end);
    const i64 n = at.n, c = at.c, oh = at.h, ow = at.w;
    C acc = p.max ? -C(INFINITY) : C(0);
    i64 count = 0;
    for (i64 kh = 0; kh < p.KH; ++kh) {
      const i64 ih = p.sh * oh + p.dh * kh - p.ph;
      if (ih < 0 || ih >= p.H) {
        continue;
      }
      for (i64 kw = 0; kw < p.KW; ++kw) {
        const i64 iw = p.sw * ow + p.dw * kw - p.pw;
        if (iw < 0 || iw >= p.W) {
          continue;
        }
        const C v = Num<T>::load(in[convOffset(input, n, c, ih, iw)]);
        if (p.max) {
          acc = (v > acc || isnan(v)) ? v : acc; // NaN propagates
        } else {
          acc += v;
        }
        ++count;
      }
    }
    if (!p.max) {
      acc /= C(p.divisor > 0 ? p.divisor : count);
    }
    out[convOffset(output, n, c, oh, ow)] = Num<T>::store(acc);
  }
}

template <class T> struct BatchnormVectors {
  const T* at[4];
  i64 stride[4];
};

template <class T>
__global__ void batchnormKernel(const T* x, T* y, DeviceWalk w, BatchnormVectors<T> v, double eps) {
  using C = typename Num<T>::C;
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[3];
    walkOffsets<3>(w, i, off);
    const i64 c = off[2];
    const double var = static_cast<double>(Num<T>::load(v.at[3][c * v.stride[3]]));
    const C mul = static_cast<C>(static_cast<double>(Num<T>::load(v.at[0][c * v.stride[0]])) /
                                 sqrt(var + eps));
    const C bias = Num<T>::load(v.at[1][c * v.stride[1]]);
    const C mean = Num<T>::load(v.at[2][c * v.stride[2]]);
    y[off[1]] = Num<T>::store((Num<T>::load(x[off[0]]) - mean) * mul + bias);
  }
}

} // namespace

cudaError_t launchPool2d(ElementType type, const ConvView& input, const ConvView& output,
                         const PoolParams& params, cudaStream_t stream) {
  const i64 count = outputCount(params.begin, params.end);
  if (count <= 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    pool2dKernel<T><<<blocksFor(count), kThreads, 0, stream>>>(input, output, params);
    return cudaGetLastError();
  });
}

cudaError_t launchBatchnorm(ElementType type, const void* x, void* y, const DeviceWalk& w,
                            const void* const (&vectors)[4], const std::int64_t (&strides)[4],
                            double eps, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    BatchnormVectors<T> v{};
    for (int k = 0; k < 4; ++k) {
      v.at[k] = static_cast<const T*>(vectors[k]);
      v.stride[k] = strides[k];
    }
    batchnormKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                    static_cast<T*>(y), w, v, eps);
    return cudaGetLastError();
  });
}

cudaError_t launchConv2d(ElementType type, const ConvView& input, const ConvView& weight,
                         const ConvView& output, const ConvParams& params, cudaStream_t stream) {
  const i64 count = outputCount(params.begin, params.end);
  if (count <= 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    conv2dKernel<T><<<blocksFor(count), kThreads, 0, stream>>>(input, weight, output, params);
    return cudaGetLastError();
  });
}

cudaError_t launchIm2col(ElementType type, const ConvView& input, std::int64_t n,
                         const ConvParams& params, void* col, cudaStream_t stream) {
  i64 count = 1;
  for (int d = 2; d < 7; ++d) {
    count *= params.end[d] - params.begin[d];
  }
  if (count <= 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    im2colKernel<T>
        <<<blocksFor(count), kThreads, 0, stream>>>(input, n, params, static_cast<T*>(col));
    return cudaGetLastError();
  });
}

} // namespace tapestry::cuda
