// conv2d (NCHW / OIHW cross-correlation, optional bias) as prepared kernels.
// The shard's index range [N, O, OH, OW, C, KH, KW] picks the output block and
// the part of the reduction (C, KH, KW) it sums; input rows and columns outside
// the tensor (padding) read zeros, so the input view only needs the selection
// clipped to the tensor's bounds. A shard adds bias[o] only when its range
// starts at 0 in C, KH and KW, so the partials' sum has it once.
//
// float32 and bfloat16 run on oneDNN: the shard is one convolution over the
// input's selection, whose clipped rows and columns become asymmetric padding
// (padding_l / padding_r), a KH or KW part a sub-kernel with shifted padding,
// and a C part a convolution over those channels (the partial). The primitive,
// the copies in and out of the activation layout it prefers (nhwc or
// nChw16c: ChannelBlocks' transposes, onednn.hpp) and their scratch memory are
// made once in prepare; a constant weight is reordered into the primitive's
// blocked layout at the first run and kept while its data pointer stays.
// Everything else (float64, float16, a shard that sees only padding, a grouped
// shard with a part of the group's channels) runs on the fallback: im2col +
// gemm, or tap by tap for grouped ones, with packed weights and scratch kept in
// the prepared object.
//
// conv2d_act is the same convolution with an epilogue, clip(conv + bias +
// residual, min, max) (conv_epilogue.hpp). Its output has no combine, so its
// shards always hold the whole of C, KH and KW. On oneDNN the epilogue is
// post-ops (a sum of the residual copied into dst first, where dst is the
// output view itself; relu or clip) or else a pass over the output box after
// the convolution; the fallbacks apply it in their store loops.
#include "backends/cpu/conv.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/conv_epilogue.hpp"
#include "backends/cpu/conv_shard.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/onednn.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

template <class T> T* typed(const TensorView& view, std::int64_t offset) {
  return reinterpret_cast<T*>(view.data) + offset;
}

// Whether a view's descriptor is dense channels last (nhwc).
bool isNhwc(const dnnl::memory::desc& view) {
  return view.dims().size() == 4 &&
         view == dnnl::memory::desc(view.dims(), view.data_type(), dnnl::memory::format_tag::nhwc);
}

// ---------------------------------------------------------------- fallback

// The weight block [O, C, KH, KW] from `w` (strides of its view) into a dense
// row-major [O, C*KH*KW] matrix of compute type C.
template <class T, class C>
void packWeights(const T* w, const std::vector<std::int64_t>& st, const Box& b, C* out) {
  for (std::int64_t o = 0; o < b.O; ++o) {
    for (std::int64_t c = 0; c < b.C; ++c) {
      for (std::int64_t kh = 0; kh < b.KH; ++kh) {
        const T* row = w + o * st[0] + c * st[1] + kh * st[2];
        for (std::int64_t kw = 0; kw < b.KW; ++kw) {
          *out++ = static_cast<C>(Num<T>::load(row[kw * st[3]]));
        }
      }
    }
  }
}

// Whether a view's strides make a box of `extents` one dense row-major block
// (dims of extent 1 may have any stride).
bool denseRowMajor(std::initializer_list<std::int64_t> extents,
                   const std::vector<std::int64_t>& strides) {
  std::int64_t dense = 1;
  std::size_t k = extents.size();
  for (auto it = extents.end(); it != extents.begin();) {
    --it;
    --k;
    if (*it != 1 && strides[k] != dense) {
      return false;
    }
    dense *= *it;
  }
  return true;
}

// What both fallbacks share: geometry, the weights (packed into compute type
// C, or read in place), the input's first row and column, the bias.
template <class T> class FallbackConv : public PreparedConv {
protected:
  using C = typename Num<T>::C;

  explicit FallbackConv(const KernelCall& call)
      : g_(convGeometry(call.op)), b_(boxOf(call)), bias_(addsBias(call, b_)),
        epi_(ConvEpilogue::of(call)), lo_(clipBound<C>(epi_.lo())), hi_(clipBound<C>(epi_.hi())) {
    const TensorView& wt = call.inputs[1][0];
    anyInput_ = !inputSelection(call).isEmpty();
    if (anyInput_) {
      const TensorView& in = call.inputs[0][0];
      h0_ = in.region.start()[2];
      w0_ = in.region.start()[3];
    }
    weightOffset_ = offsetIn(wt, {b_.o0, b_.c0, b_.kh0, b_.kw0});
    constant_ = wt.constant;
    inPlace_ = std::is_same_v<T, C> && denseRowMajor({b_.O, b_.C, b_.KH, b_.KW}, wt.strides);
    if (!inPlace_) {
      packed_.resize(static_cast<std::size_t>(b_.O * b_.C * b_.KH * b_.KW));
    }
    if (bias_) {
      biasOffset_ = offsetIn(call.inputs[2][0], {b_.o0});
    }
  }

  // The weights as a dense [O, C*KH*KW] matrix of C: the view itself, or
  // packed (once for a constant weight while its pointer stays).
  const C* weights(const KernelCall& call) {
    const TensorView& wt = call.inputs[1][0];
    const T* w = typed<const T>(wt, weightOffset_);
    if (inPlace_) {
      return reinterpret_cast<const C*>(w);
    }
    if (!constant_ || packedFrom_ != w) {
      packWeights(w, wt.strides, b_, packed_.data());
      packedFrom_ = constant_ ? w : nullptr;
    }
    return packed_.data();
  }

  // bias[o0 + o] in C, or 0 when the shard adds none.
  C biasOf(const KernelCall& call, std::int64_t o) const {
    if (!bias_) {
      return C(0);
    }
    const TensorView& v = call.inputs[2][0];
    return Num<T>::load(typed<const T>(v, biasOffset_)[o * v.strides[0]]);
  }

  // The first input element of row ih of channel c of image n (column w0_).
  const T* inputRow(const TensorView& in, std::int64_t n, std::int64_t c, std::int64_t ih) const {
    const ZPoint& r = in.region.start();
    return typed<const T>(in, (n - r[0]) * in.strides[0] + (c - r[1]) * in.strides[1] +
                                  (ih - r[2]) * in.strides[2]);
  }

  T* outputRow(const TensorView& out, std::int64_t n, std::int64_t o, std::int64_t oh) const {
    const ZPoint& r = out.region.start();
    return typed<T>(out, (n - r[0]) * out.strides[0] + (o - r[1]) * out.strides[1] +
                             (oh - r[2]) * out.strides[2] + (b_.ow0 - r[3]) * out.strides[3]);
  }

  // conv2d_act's store of output row (n, o, oh): v[ow] + bias (+ the
  // residual's row), activated and clipped, in C (conv_epilogue.hpp).
  void storeActRow(const KernelCall& call, std::int64_t n, std::int64_t o, std::int64_t oh,
                   const C* v, C bias) const {
    const TensorView& out = call.outputs[0][0];
    T* dst = outputRow(out, n, o, oh);
    const std::int64_t os = out.strides[3];
    const T* res = nullptr;
    std::int64_t rs = 0;
    if (epi_.residual()) {
      const TensorView& r = ConvEpilogue::residualView(call);
      res = typed<const T>(r, offsetIn(r, {n, o, oh, b_.ow0}));
      rs = r.strides[3];
    }
    for (std::int64_t ow = 0; ow < b_.OW; ++ow) {
      C x = v[ow] + bias;
      if (res != nullptr) {
        x += Num<T>::load(res[ow * rs]);
      }
      dst[ow * os] = Num<T>::store(epi_.finish(x, lo_, hi_));
    }
  }

  ConvGeometry g_;
  Box b_;
  bool bias_;
  ConvEpilogue epi_; // conv2d_act's residual and clip (inactive for conv2d)
  C lo_, hi_;        // its clip bounds in C
  bool anyInput_ = false;
  std::int64_t h0_ = 0, w0_ = 0; // the input view's first row and column
  std::int64_t weightOffset_ = 0, biasOffset_ = 0;
  bool constant_ = false;
  bool inPlace_ = false;
  std::vector<C> packed_;
  const T* packedFrom_ = nullptr;
};

// groups == 1: im2col of the shard's input box and one gemm with its weights,
// a chunk of output rows at a time.
template <class T> class GemmConv final : public FallbackConv<T> {
  using Base = FallbackConv<T>;
  using C = typename Base::C;
  using Base::b_;
  using Base::g_;

public:
  explicit GemmConv(const KernelCall& call) : Base(call) {
    R_ = b_.C * b_.KH * b_.KW;
    // Output rows per chunk: keep the column matrix near 4M elements.
    const std::int64_t perRow = std::max<std::int64_t>(R_ * b_.OW, 1);
    chunk_ = std::clamp<std::int64_t>((std::int64_t{1} << 22) / perRow, 1, b_.OH);
    col_.resize(static_cast<std::size_t>(R_ * chunk_ * b_.OW));
    res_.resize(static_cast<std::size_t>(b_.O * chunk_ * b_.OW));
    // Per tap column kw, the output columns whose tap lies inside the input.
    for (std::int64_t kw = 0; kw < b_.KW; ++kw) {
      taps_.push_back(
          tapsInside(g_.sw * b_.ow0 + g_.dw * (b_.kw0 + kw) - g_.pw, g_.sw, b_.OW, g_.W));
    }
  }

  std::string implementation() const override { return "fallback gemm"; }

  void run(const KernelCall& call) override {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const C* wmat = this->weights(call);
    const std::int64_t s3 = this->anyInput_ ? in.strides[3] : 0;
    for (std::int64_t n = b_.n0; n < b_.n0 + b_.N; ++n) {
      for (std::int64_t ohA = 0; ohA < b_.OH; ohA += chunk_) {
        const std::int64_t rows = std::min(chunk_, b_.OH - ohA);
        const std::int64_t cols = rows * b_.OW;
        for (std::int64_t c = 0; c < b_.C; ++c) {
          for (std::int64_t kh = 0; kh < b_.KH; ++kh) {
            for (std::int64_t kw = 0; kw < b_.KW; ++kw) {
              C* dst = col_.data() + ((c * b_.KH + kh) * b_.KW + kw) * cols;
              const TapSpan q = taps_[static_cast<std::size_t>(kw)];
              // Input column of output column 0's tap, relative to the view's first.
              const std::int64_t col0 = g_.sw * b_.ow0 + g_.dw * (b_.kw0 + kw) - g_.pw - this->w0_;
              for (std::int64_t r = 0; r < rows; ++r) {
                const std::int64_t ih = g_.sh * (b_.oh0 + ohA + r) + g_.dh * (b_.kh0 + kh) - g_.ph;
                C* line = dst + r * b_.OW;
                if (!this->anyInput_ || ih < 0 || ih >= g_.H || q.lo >= q.hi) {
                  std::fill_n(line, b_.OW, C(0));
                  continue;
                }
                const T* src = this->inputRow(in, n, b_.c0 + c, ih) + col0 * s3;
                std::fill(line, line + q.lo, C(0));
                for (std::int64_t ow = q.lo; ow < q.hi; ++ow) {
                  line[ow] = Num<T>::load(src[ow * g_.sw * s3]);
                }
                std::fill(line + q.hi, line + b_.OW, C(0));
              }
            }
          }
        }
        gemmDense(b_.O, cols, R_, wmat, col_.data(), res_.data());
        for (std::int64_t o = 0; o < b_.O; ++o) {
          const C bias = this->biasOf(call, o);
          for (std::int64_t r = 0; r < rows; ++r) {
            const C* from = res_.data() + o * cols + r * b_.OW;
            if (this->epi_.active()) {
              this->storeActRow(call, n, b_.o0 + o, b_.oh0 + ohA + r, from, bias);
              continue;
            }
            T* dst = this->outputRow(out, n, b_.o0 + o, b_.oh0 + ohA + r);
            for (std::int64_t ow = 0; ow < b_.OW; ++ow) {
              dst[ow * out.strides[3]] = Num<T>::store(from[ow] + bias);
            }
          }
        }
      }
    }
  }

private:
  std::int64_t R_ = 0, chunk_ = 1;
  std::vector<C> col_, res_;
  std::vector<TapSpan> taps_;
};

// Grouped (conv2d's groups == O, depthwise style, and conv2d_grouped): for
// depthwise a product per output channel would be a 1 x C/groups*KH*KW gemv,
// so the taps are summed directly, a row of outputs at a time (as the pools
// do): acc[j] += weight[o, c, kh, kw] * input[n, (o div og)*gmul + c, ih,
// iw(j)] for the shard's (c, kh, kw), taps in the padding left out. Grouped
// shards of float32 and bfloat16 run on oneDNN; this is their fallback.
template <class T> class DepthwiseConv final : public FallbackConv<T> {
  using Base = FallbackConv<T>;
  using C = typename Base::C;
  using Base::b_;
  using Base::g_;

public:
  DepthwiseConv(const KernelCall& call, ConvGroups groups) : Base(call), groups_(groups) {
    for (std::int64_t kw = 0; kw < b_.KW; ++kw) {
      taps_.push_back(
          tapsInside(g_.sw * b_.ow0 + g_.dw * (b_.kw0 + kw) - g_.pw, g_.sw, b_.OW, g_.W));
    }
    acc_.resize(static_cast<std::size_t>(b_.OW));
  }

  std::string implementation() const override { return "fallback depthwise"; }

  void run(const KernelCall& call) override {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const C* wmat = this->weights(call);
    const std::int64_t R = b_.C * b_.KH * b_.KW;
    for (std::int64_t n = b_.n0; n < b_.n0 + b_.N; ++n) {
      for (std::int64_t o = 0; o < b_.O; ++o) {
        const C bias = this->biasOf(call, o);
        const C* wo = wmat + o * R;
        for (std::int64_t oh = b_.oh0; oh < b_.oh0 + b_.OH; ++oh) {
          std::fill(acc_.begin(), acc_.end(), bias);
          for (std::int64_t c = 0; c < b_.C && this->anyInput_; ++c) {
            for (std::int64_t kh = 0; kh < b_.KH; ++kh) {
              const std::int64_t ih = g_.sh * oh + g_.dh * (b_.kh0 + kh) - g_.ph;
              if (ih < 0 || ih >= g_.H) {
                continue;
              }
              const T* row = this->inputRow(in, n, groups_.base(b_.o0 + o) + b_.c0 + c, ih);
              for (std::int64_t kw = 0; kw < b_.KW; ++kw) {
                const C wv = wo[(c * b_.KH + kh) * b_.KW + kw];
                const TapSpan q = taps_[static_cast<std::size_t>(kw)];
                const std::int64_t col = g_.sw * b_.ow0 + g_.dw * (b_.kw0 + kw) - g_.pw - this->w0_;
                for (std::int64_t j = q.lo; j < q.hi; ++j) {
                  acc_[static_cast<std::size_t>(j)] +=
                      wv * static_cast<C>(Num<T>::load(row[(col + j * g_.sw) * in.strides[3]]));
                }
              }
            }
          }
          if (this->epi_.active()) {
            this->storeActRow(call, n, b_.o0 + o, oh, acc_.data(), C(0));
            continue;
          }
          T* dst = this->outputRow(out, n, b_.o0 + o, oh);
          for (std::int64_t j = 0; j < b_.OW; ++j) {
            dst[j * out.strides[3]] = Num<T>::store(acc_[static_cast<std::size_t>(j)]);
          }
        }
      }
    }
  }

private:
  ConvGroups groups_;
  std::vector<TapSpan> taps_;
  std::vector<C> acc_;
};

// ---------------------------------------------------------------- oneDNN

// One shard as a oneDNN convolution: descriptors of the views' boxes (fixed),
// and per OpenMP team size the primitive with its reorders.
class OnednnConv final : public PreparedConv {
public:
  // Null where oneDNN does not run the shard (see the top of the file) or
  // offers only its reference implementation.
  static std::unique_ptr<OnednnConv> make(const KernelCall& call, ConvLayout layout);

  std::string implementation() const override { return "onednn " + impl_; }
  void run(const KernelCall& call) override;

private:
  OnednnConv() = default;
  // make's work; dnnl::error where oneDNN refuses a descriptor.
  static std::unique_ptr<OnednnConv> describe(const KernelCall& call, ConvLayout layout);
  // Creates the primitives for an OpenMP team of `threads` (oneDNN fixes some
  // work splits at creation); false where oneDNN refuses the shard.
  bool build(int threads);
  // The primitive for the views with attributes `attr` (activations in the
  // layout the shard asks for first, then the layout_'s); nullopt where
  // oneDNN refuses them all or has only its reference code.
  std::optional<dnnl::convolution_forward::primitive_desc>
  choose(const dnnl::primitive_attr& attr) const;

  ConvLayout layout_ = ConvLayout::Blocked;
  dnnl::memory::data_type type_ = dnnl::memory::data_type::f32;
  dnnl::memory::desc srcView_, weightView_, biasView_, dstView_;
  dnnl::memory::dims strides_, dilates_, padL_, padR_;
  // Element offsets of each box's first element from its view's data.
  std::int64_t srcOffset_ = 0, weightOffset_ = 0, biasOffset_ = 0, dstOffset_ = 0;
  std::int64_t elementSize_ = 4;
  std::vector<std::int64_t> srcStrides_, dstStrides_; // the views' strides
  bool bias_ = false;
  bool constant_ = false;
  // conv2d_act: the epilogue, the output box it covers, and how it runs (the
  // residual copied into dst for the sum post-op; a pass after the conv).
  ConvEpilogue epi_;
  OutputBox box_;
  bool fuseSum_ = false;
  bool pass_ = false;

  int threads_ = 0;
  dnnl::stream stream_;
  dnnl::memory src_, weight_, biasMemory_, dst_; // the views (handles set per run)
  onednn::Step srcReorder_, weightReorder_, conv_, dstReorder_;
  // Where the convolution's layout is nChw8c / nChw16c, the copies in and out
  // of it are ChannelBlocks' loops instead of reorder primitives.
  std::optional<onednn::ChannelBlocks> srcBlocks_, dstBlocks_;
  std::byte* srcBlocked_ = nullptr;
  std::byte* dstBlocked_ = nullptr;
  const std::byte* packedFrom_ = nullptr;
  std::string impl_;
};

std::unique_ptr<OnednnConv> OnednnConv::make(const KernelCall& call, ConvLayout layout) {
  try {
    return describe(call, layout);
  } catch (const dnnl::error&) {
    return nullptr; // a view oneDNN cannot describe: the fallback runs it
  }
}

std::unique_ptr<OnednnConv> OnednnConv::describe(const KernelCall& call, ConvLayout layout) {
  const DType dtype = call.outputs[0][0].dtype;
  const std::optional<dnnl::memory::data_type> type = onednn::dataType(dtype);
  const ZRange sel = inputSelection(call);
  if (!type || sel.isEmpty()) {
    return nullptr;
  }
  const ConvGeometry g = convGeometry(call.op);
  const Box b = boxOf(call);
  const ConvGroups groups = convGroups(call.op);
  const std::int64_t CG = call.op.application.inputs[1].tensors[0].shape[1];
  if (groups.grouped() && (b.c0 != 0 || b.C != CG)) {
    return nullptr; // a part of each group's channels: not one channel range
  }
  std::unique_ptr<OnednnConv> conv(new OnednnConv());
  conv->layout_ = layout;
  conv->type_ = *type;
  conv->elementSize_ = static_cast<std::int64_t>(dtypeSize(dtype));

  const TensorView& in = call.inputs[0][0];
  std::vector<std::int64_t> src = sel.shape().vector();
  std::vector<std::int64_t> srcStrides = in.strides;
  conv->srcOffset_ = in.offsetOf(sel.start().coords());
  // The selection's first row is the first window row's, clipped at 0: what
  // was clipped is padding before it, and what the last window reaches past
  // the selection's end padding after it.
  const std::int64_t padTop = sel.start()[2] - (g.sh * b.oh0 + g.dh * b.kh0 - g.ph);
  const std::int64_t padLeft = sel.start()[3] - (g.sw * b.ow0 + g.dw * b.kw0 - g.pw);
  const std::int64_t padBottom = (b.OH - 1) * g.sh + g.dh * (b.KH - 1) + 1 - src[2] - padTop;
  const std::int64_t padRight = (b.OW - 1) * g.sw + g.dw * (b.KW - 1) + 1 - src[3] - padLeft;
  if (padTop < 0 || padLeft < 0 || padBottom < 0 || padRight < 0) {
    throw InternalError("conv2d shard " + call.index.toString() + ": input selection " +
                        sel.toString() + " does not fit the window");
  }
  // Rows (columns) of the view past the last window's, fewer than a stride,
  // change no output: the box takes them in (oneDNN's output size rounds
  // down), so that a whole channels-last view stays one dense nhwc block (a
  // 1 x 1 stride-2 shortcut on an even size leaves out the last row).
  const std::int64_t steps[2] = {g.sh, g.sw};
  const std::int64_t ends[2] = {padBottom, padRight};
  for (int d = 0; d < 2; ++d) {
    const std::size_t k = static_cast<std::size_t>(d) + 2;
    const std::int64_t extra = in.region.end()[k] - sel.end()[k];
    if (ends[d] == 0 && extra > 0 && extra < steps[d]) {
      src[k] += extra;
    }
  }
  conv->strides_ = {g.sh, g.sw};
  conv->dilates_ = {g.dh - 1, g.dw - 1};
  conv->padL_ = {padTop, padLeft};
  conv->padR_ = {padBottom, padRight};
  // A 1 x 1 window at stride s without padding reads every s-th row and
  // column only: the convolution runs at stride 1 on that subsampled view, so
  // the copy into its layout moves 1/s^2 of the selection (a ResNet shortcut).
  // (oneDNN refuses strides whose dims could overlap by its conservative
  // rule, stride >= inner stride x inner extent; then the view stays whole.)
  conv->srcView_ = onednn::stridedDesc(src, srcStrides, *type);
  // (An input already channels last runs as it is, at its stride: no copy.)
  if (!isNhwc(conv->srcView_) && b.KH == 1 && b.KW == 1 && (g.sh > 1 || g.sw > 1) && padTop == 0 &&
      padLeft == 0 && padBottom == 0 && padRight == 0) {
    const std::vector<std::int64_t> sub = {src[0], src[1], b.OH, b.OW};
    const std::vector<std::int64_t> subStrides = {srcStrides[0], srcStrides[1],
                                                  srcStrides[2] * g.sh, srcStrides[3] * g.sw};
    try {
      conv->srcView_ = onednn::stridedDesc(sub, subStrides, *type);
      srcStrides = subStrides;
      conv->strides_ = {1, 1};
    } catch (const dnnl::error&) {
    }
  }
  conv->srcStrides_ = srcStrides;

  const TensorView& wt = call.inputs[1][0];
  conv->weightOffset_ = offsetIn(wt, {b.o0, b.c0, b.kh0, b.kw0});
  conv->constant_ = wt.constant;
  const std::vector<std::int64_t>& ws = wt.strides;
  if (!groups.grouped()) {
    const std::int64_t dims[4] = {b.O, b.C, b.KH, b.KW};
    conv->weightView_ = onednn::stridedDesc(dims, ws, *type);
  } else { // the shard's groups: [G, O/G, C/G, KH, KW] (O/G = 1 for depthwise)
    const std::int64_t dims[5] = {b.O / groups.og, groups.og, b.C, b.KH, b.KW};
    const std::int64_t strides[5] = {ws[0] * groups.og, ws[0], ws[1], ws[2], ws[3]};
    conv->weightView_ = onednn::stridedDesc(dims, strides, *type);
  }
  conv->bias_ = addsBias(call, b);
  if (conv->bias_) {
    const TensorView& bias = call.inputs[2][0];
    const std::int64_t dims[1] = {b.O};
    conv->biasView_ = onednn::stridedDesc(dims, bias.strides, *type);
    conv->biasOffset_ = offsetIn(bias, {b.o0});
  }
  const TensorView& out = call.outputs[0][0];
  const std::int64_t dstDims[4] = {b.N, b.O, b.OH, b.OW};
  conv->dstView_ = onednn::stridedDesc(dstDims, out.strides, *type);
  conv->dstStrides_ = out.strides;
  conv->dstOffset_ = offsetIn(out, {b.n0, b.o0, b.oh0, b.ow0});
  conv->epi_ = ConvEpilogue::of(call);
  conv->box_ = outputBox(b);
  if (!conv->build(CpuBackend::kernelThreads())) {
    return nullptr;
  }
  return conv;
}

std::optional<dnnl::convolution_forward::primitive_desc>
OnednnConv::choose(const dnnl::primitive_attr& attr) const {
  using tag = dnnl::memory::format_tag;
  const dnnl::engine& engine = onednn::cpuEngine();
  const tag act = layout_ == ConvLayout::Blocked ? tag::any
                  : layout_ == ConvLayout::Plain ? tag::nchw
                                                 : tag::nhwc;
  // The primitive for activations in layout `t`; nullopt where oneDNN refuses
  // it or has only its reference code.
  auto primitive = [&](tag t) -> std::optional<dnnl::convolution_forward::primitive_desc> {
    try {
      const dnnl::memory::desc srcAny(srcView_.dims(), type_, t);
      const dnnl::memory::desc dstAny(dstView_.dims(), type_, t);
      const dnnl::memory::desc weightAny(weightView_.dims(), type_, tag::any);
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, srcAny,
          weightAny, bias_ ? biasView_ : dnnl::memory::desc(), dstAny, strides_, dilates_, padL_,
          padR_);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
      if (onednn::isReference(pd)) {
        return std::nullopt;
      }
      return pd;
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  // A depthwise shard (the 5-D grouped weight) asks for channel blocks first:
  // for `any` oneDNN picks nhwc (brdgmm), whose copies in and out of the
  // executor's NCHW cost more than the blocked layout's. MobileNetV2's 17
  // depthwise convolutions took 367-391 us in nChw16c against 461-478 in nhwc
  // (tapestry bench, interleaved, 2026-11-27).
  // Activations the executor keeps channels last (Backend::channelsLast) run
  // in nhwc as they are, with no copy on either side: MobileNetV2's 52
  // convolutions spent 450 of their 960 us in the copies (tapestry bench,
  // 2026-11-27).
  std::optional<dnnl::convolution_forward::primitive_desc> chosen;
  if (layout_ == ConvLayout::Blocked && (isNhwc(srcView_) || isNhwc(dstView_))) {
    chosen = primitive(tag::nhwc);
  }
  if (!chosen && layout_ == ConvLayout::Blocked && weightView_.dims().size() == 5) {
    chosen = primitive(activeIsa() == CpuIsa::Avx512 ? tag::nChw16c : tag::nChw8c);
  }
  if (!chosen) {
    chosen = primitive(act);
  }
  return chosen;
}

bool OnednnConv::build(int threads) {
  onednn::useThreads(threads);
  const dnnl::engine& engine = onednn::cpuEngine();
  // conv2d_act's epilogue fused as post-ops where it can be: a sum (the
  // residual, copied into dst before the convolution) where dst is the
  // output view itself, then swish or hardswish, then relu or clip; otherwise
  // (dst in another layout, a min above max, or oneDNN refusing them) a pass
  // after the convolution.
  const bool needs = epi_.changes();
  fuseSum_ = false;
  pass_ = needs;
  std::optional<dnnl::convolution_forward::primitive_desc> chosen;
  if (needs && epi_.lo() <= epi_.hi()) {
    chosen = choose(epi_.postOps(epi_.residual(), epi_.eltwise()));
    if (chosen && epi_.residual() && chosen->dst_desc() != dstView_) {
      chosen.reset();
    }
    if (chosen) {
      fuseSum_ = epi_.residual();
      pass_ = false;
    }
  }
  if (!chosen) {
    chosen = choose(onednn::userScratchpad());
  }
  if (!chosen) {
    return false;
  }
  try {
    const dnnl::convolution_forward::primitive_desc& pd = *chosen;
    stream_ = dnnl::stream(engine);
    src_ = dnnl::memory(srcView_, engine, nullptr);
    weight_ = dnnl::memory(weightView_, engine, nullptr);
    dst_ = dnnl::memory(dstView_, engine, nullptr);
    dnnl::memory src = src_, weight = weight_, dst = dst_;
    srcReorder_ = weightReorder_ = dstReorder_ = onednn::Step();
    srcBlocks_ = dstBlocks_ = std::nullopt;
    if (pd.src_desc() != srcView_) {
      src = dnnl::memory(pd.src_desc(), engine);
      srcBlocks_ = onednn::ChannelBlocks::of(pd.src_desc());
      if (srcBlocks_) {
        srcBlocked_ = static_cast<std::byte*>(src.get_data_handle());
        std::memset(srcBlocked_, 0, pd.src_desc().get_size()); // the padding channels
      } else {
        srcReorder_ = onednn::reorderStep(src_, src);
      }
    }
    if (pd.weights_desc() != weightView_) {
      weight = dnnl::memory(pd.weights_desc(), engine);
      weightReorder_ = onednn::reorderStep(weight_, weight);
    }
    if (pd.dst_desc() != dstView_) {
      dst = dnnl::memory(pd.dst_desc(), engine);
      dstBlocks_ = onednn::ChannelBlocks::of(pd.dst_desc());
      if (dstBlocks_) {
        dstBlocked_ = static_cast<std::byte*>(dst.get_data_handle());
      } else {
        dstReorder_ = onednn::reorderStep(dst, dst_);
      }
    }
    conv_ = onednn::Step(dnnl::convolution_forward(pd), pd);
    conv_.arg(DNNL_ARG_SRC, src);
    conv_.arg(DNNL_ARG_WEIGHTS, weight);
    if (bias_) {
      biasMemory_ = dnnl::memory(biasView_, engine, nullptr);
      conv_.arg(DNNL_ARG_BIAS, biasMemory_);
    }
    conv_.arg(DNNL_ARG_DST, dst);
    impl_ = pd.impl_info_str();
    if (pass_) {
      impl_ += " + epilogue pass"; // conv2d_act's epilogue after the primitive
    } else if (needs) {
      std::string ops = fuseSum_ ? "sum" : "";
      if (epi_.act() != ConvEpilogue::Act::None) {
        ops += std::string(ops.empty() ? "" : ", ") +
               (epi_.act() == ConvEpilogue::Act::Silu ? "swish" : "hardswish");
      }
      if (epi_.clips()) {
        ops += std::string(ops.empty() ? "" : ", ") + (epi_.relu() ? "relu" : "clip");
      }
      impl_ += " + post-ops " + ops;
    }
  } catch (const dnnl::error&) {
    return false;
  }
  threads_ = threads;
  packedFrom_ = nullptr;
  return true;
}

void OnednnConv::run(const KernelCall& call) {
  const int threads = CpuBackend::kernelThreads();
  if (threads != threads_ && !build(threads)) {
    throw InternalError("oneDNN refused a conv2d it made for " + std::to_string(threads_) +
                        " threads when asked for " + std::to_string(threads));
  }
  onednn::useThreads(threads);
  auto at = [this](const TensorView& view, std::int64_t offset) {
    return static_cast<void*>(view.data + offset * elementSize_);
  };
  void* src = at(call.inputs[0][0], srcOffset_);
  src_.set_data_handle(src);
  const TensorView& wt = call.inputs[1][0];
  const std::byte* weight = wt.data + weightOffset_ * elementSize_;
  weight_.set_data_handle(at(wt, weightOffset_));
  if (bias_) {
    biasMemory_.set_data_handle(at(call.inputs[2][0], biasOffset_));
  }
  void* dst = at(call.outputs[0][0], dstOffset_);
  dst_.set_data_handle(dst);
  if (srcBlocks_) {
    srcBlocks_->toBlocked(static_cast<const std::byte*>(src), srcStrides_, srcBlocked_);
  } else if (srcReorder_.present()) {
    srcReorder_.run(stream_);
  }
  if (weightReorder_.present() && (!constant_ || packedFrom_ != weight)) {
    weightReorder_.run(stream_);
    packedFrom_ = constant_ ? weight : nullptr;
  }
  if (fuseSum_) {
    epi_.copyResidual(call, box_); // dst is the output view: the sum post-op adds it
  }
  conv_.run(stream_);
  if (dstBlocks_) {
    dstBlocks_->fromBlocked(dstBlocked_, static_cast<std::byte*>(dst), dstStrides_);
  } else if (dstReorder_.present()) {
    dstReorder_.run(stream_);
  }
  if (pass_) {
    epi_.pass(call, box_);
  }
}

std::unique_ptr<PreparedKernel> prepareDefault(const KernelCall& call) {
  return prepareConv2d(call, kConvLayout);
}

void runOnce(const KernelCall& call) {
  prepareConv2d(call, kConvLayout)->run(call);
}

} // namespace

std::unique_ptr<PreparedConv> prepareConv2d(const KernelCall& call, ConvLayout layout) {
  const metakernel::Application& app = call.op.application;
  if (!app.reductionSplittable) { // conv2d_act's, conv2d_grouped_act's: the whole sum per shard
    for (std::size_t d : app.reductionDims) {
      if (call.index.start()[d] != 0 || call.index.end()[d] != app.index.end()[d]) {
        throw InternalError(call.op.kernel + " shard " + call.index.toString() +
                            " splits the reduction dims of " + app.index.toString());
      }
    }
  }
  if (layout == ConvLayout::Panels || (layout == kConvLayout && activeIsa() == CpuIsa::Avx512)) {
    if (std::unique_ptr<PreparedConv> conv = preparePanelConv(call)) {
      return conv;
    }
  }
  const ConvLayout onednnLayout = layout == ConvLayout::Panels ? ConvLayout::Blocked : layout;
  if (std::unique_ptr<OnednnConv> conv = OnednnConv::make(call, onednnLayout)) {
    return conv;
  }
  std::unique_ptr<PreparedConv> out;
  const ConvGroups groups = convGroups(call.op);
  dispatchFloat(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (groups.grouped()) {
      out = std::make_unique<DepthwiseConv<T>>(call, groups);
    } else {
      out = std::make_unique<GemmConv<T>>(call);
    }
  });
  return out;
}

void registerConvKernels(CpuRegistry& registry) {
  registry.add("conv2d", &runOnce, &prepareDefault);
  registry.add("conv2d_act", &runOnce, &prepareDefault);
  registry.add("conv2d_grouped", &runOnce, &prepareDefault);
  registry.add("conv2d_grouped_act", &runOnce, &prepareDefault);
}

} // namespace tapestry::backend::cpu
