// rope: the rotary position embedding in its rotate-half form
// (metakernels/attention.yaml). One index point is one row of d = 2h:
// result[i] = x[i] * cos[i] - x[i + h] * sin[i] and result[i + h] = x[i + h] *
// cos[i + h] + x[i] * sin[i + h] for i < h. A shard walks its rows through the
// IPFs (cos and sin broadcast over the leading dims) and rotates each in one
// pass; loops of kTeamFrom elements or more run on the team. float32 rows with
// contiguous last dims compute in float in a loop the compiler vectorizes, the
// other dtypes in Num<T>::C.
#include <array>
#include <memory>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"

namespace tapestry::backend::cpu {

namespace {

template <class T> class Rope final : public PreparedKernel {
public:
  using C = typename Num<T>::C;
  explicit Rope(const KernelCall& call) : d_(intBinding(call.op, "d")) {
    const TensorView& x = call.inputs[0][0];
    const TensorView& c = call.inputs[1][0];
    const TensorView& s = call.inputs[2][0];
    const TensorView& y = call.outputs[0][0];
    loop_ = ipfLoop<4>(
        call, {&x, &c, &s, &y},
        {&inputIpf(call, 0), &inputIpf(call, 1), &inputIpf(call, 2), &outputIpf(call, 0)});
    along_ = {x.strides.back(), c.strides.back(), s.strides.back(), y.strides.back()};
    contiguous_ = along_ == std::array<std::int64_t, 4>{1, 1, 1, 1};
  }

  void run(const KernelCall& call) override {
    std::array<std::int64_t, 4> step{};
    for (std::size_t i = 0; i < 4; ++i) {
      step[i] = loop_.stride(i);
    }
    forEachPiece(loop_,
                 {call.inputs[0][0].data, call.inputs[1][0].data, call.inputs[2][0].data,
                  call.outputs[0][0].data},
                 d_, 1, [&](const auto& at, std::int64_t m) {
                   const T* x = reinterpret_cast<const T*>(at[0]);
                   const T* c = reinterpret_cast<const T*>(at[1]);
                   const T* s = reinterpret_cast<const T*>(at[2]);
                   T* y = reinterpret_cast<T*>(at[3]);
                   if constexpr (std::is_same_v<T, float>) {
                     if (contiguous_) {
                       rowsContiguous(x, c, s, y, m, step);
                       return;
                     }
                   }
                   for (std::int64_t r = 0; r < m; ++r) {
                     row(x + r * step[0], c + r * step[1], s + r * step[2], y + r * step[3]);
                   }
                 });
  }

private:
  // m rows at `step` apart, each row's last dim contiguous. The output never
  // overlaps an input (rope is never a fused consumer run in place: those
  // read their input element by element), so the pointers are __restrict and
  // the inner loop vectorizes without overlap checks.
  void rowsContiguous(const float* __restrict x, const float* __restrict c,
                      const float* __restrict s, float* __restrict y, std::int64_t m,
                      const std::array<std::int64_t, 4>& step) const {
    const std::int64_t h = d_ / 2;
    for (std::int64_t r = 0; r < m; ++r) {
      const float* xr = x + r * step[0];
      const float* cr = c + r * step[1];
      const float* sr = s + r * step[2];
      float* yr = y + r * step[3];
      for (std::int64_t i = 0; i < h; ++i) {
        const float a = xr[i];
        const float b = xr[i + h];
        yr[i] = a * cr[i] - b * sr[i];
        yr[i + h] = b * cr[i + h] + a * sr[i + h];
      }
    }
  }

  void row(const T* x, const T* c, const T* s, T* y) const {
    const std::int64_t h = d_ / 2;
    const auto [sx, sc, ss, sy] = along_;
    for (std::int64_t i = 0; i < h; ++i) {
      const C a = Num<T>::load(x[i * sx]);
      const C b = Num<T>::load(x[(i + h) * sx]);
      const C lo = a * Num<T>::load(c[i * sc]) - b * Num<T>::load(s[i * ss]);
      const C hi = b * Num<T>::load(c[(i + h) * sc]) + a * Num<T>::load(s[(i + h) * ss]);
      y[i * sy] = Num<T>::store(lo);
      y[(i + h) * sy] = Num<T>::store(hi);
    }
  }

  std::int64_t d_;
  RunLoop<4> loop_;
  std::array<std::int64_t, 4> along_{}; // X's, cos's, sin's and the result's last-dim strides
  bool contiguous_ = false;
};

} // namespace

void registerRopeKernel(CpuRegistry& registry) {
  registry.add("rope", &runPrepared<&prepareFloat<Rope>>, &prepareFloat<Rope>);
}

} // namespace tapestry::backend::cpu
