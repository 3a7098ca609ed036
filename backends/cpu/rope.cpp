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
                   for (std::int64_t r = 0; r < m; ++r) {
                     const T* x = reinterpret_cast<const T*>(at[0]) + r * step[0];
                     const T* c = reinterpret_cast<const T*>(at[1]) + r * step[1];
                     const T* s = reinterpret_cast<const T*>(at[2]) + r * step[2];
                     T* y = reinterpret_cast<T*>(at[3]) + r * step[3];
                     if constexpr (std::is_same_v<T, float>) {
                       if (contiguous_) {
                         rowContiguous(x, c, s, y);
                         continue;
                       }
                     }
                     row(x, c, s, y);
                   }
                 });
  }

private:
  // Reads both halves of a pair before writing either: a row may be
  // rotated in place.
  void rowContiguous(const float* x, const float* c, const float* s, float* y) const {
    const std::int64_t h = d_ / 2;
    const float* __restrict x1 = x;
    const float* __restrict x2 = x + h;
    for (std::int64_t i = 0; i < h; ++i) {
      const float a = x1[i];
      const float b = x2[i];
      y[i] = a * c[i] - b * s[i];
      y[i + h] = b * c[i + h] + a * s[i + h];
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
