// The measured profile: kernel families and interpolation in measured tables.
#include "core/cost/profile.hpp"

#include <algorithm>
#include <cmath>

#include "core/metakernel/fuse.hpp"

namespace tapestry::cost {

const char* workMeasureName(WorkMeasure measure) {
  return measure == WorkMeasure::Flops ? "flops" : "bytes";
}

const std::vector<KernelFamily>& kernelFamilies() {
  static const std::vector<KernelFamily> families = {
      {"matmul", WorkMeasure::Flops,
       "matrix products (matmul, linear; attention's are most of its work)"},
      {"conv", WorkMeasure::Flops,
       "convolutions (conv2d, conv2d_act, conv2d_grouped, conv2d_grouped_act)"},
      {"conv_weights", WorkMeasure::Bytes,
       "convolutions that read many weights for few outputs (3x3, 256 to 768 channels, on a "
       "2x2 image): the conv family's floor by bytes"},
      {"elementwise", WorkMeasure::Bytes,
       "elementwise arithmetic, relu and casts; reduction combines"},
      {"activation", WorkMeasure::Bytes, "transcendental activations (tanh, gelu, exp, sigmoid)"},
      {"reduction", WorkMeasure::Bytes,
       "reductions along a dim (sum, mean, max) and pooling (maxpool2d, avgpool2d, "
       "global_avgpool)"},
      {"normalization", WorkMeasure::Bytes, "softmax, layernorm, rmsnorm and batchnorm"},
      {"copy", WorkMeasure::Bytes, "contiguous copies (concat, split, reshape, embedding, gather)"},
      {"transpose", WorkMeasure::Bytes, "strided copies (transpose)"},
  };
  return families;
}

const KernelFamily* findKernelFamily(std::string_view name) {
  const std::vector<KernelFamily>& all = kernelFamilies();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const KernelFamily& f) { return f.name == name; });
  return it == all.end() ? nullptr : &*it;
}

namespace {

struct FamilyEntry {
  std::string_view kernel;
  std::string_view family;
};

// The standard library (metakernels/*.yaml), by what bounds its speed.
constexpr FamilyEntry kFamilyTable[] = {
    {"matmul", "matmul"},
    {"linear", "matmul"},
    {"linear_act", "matmul"},
    {"conv2d", "conv"},
    {"conv2d_act", "conv"},
    {"conv2d_grouped", "conv"},
    {"conv2d_grouped_act", "conv"},
    {"add", "elementwise"},
    {"sub", "elementwise"},
    {"mul", "elementwise"},
    {"div", "elementwise"},
    {"relu", "elementwise"},
    {"neg", "elementwise"},
    {"cast", "elementwise"},
    {"sqrt", "elementwise"},
    {"reciprocal", "elementwise"},
    {"abs", "elementwise"},
    {"clip", "elementwise"},
    {"add_scalar", "elementwise"},
    {"mul_scalar", "elementwise"},
    {"rsub_scalar", "elementwise"},
    {"rdiv_scalar", "elementwise"},
    {"div_scalar", "elementwise"},
    {"where", "elementwise"},
    {"gelu", "activation"},
    {"gelu_tanh", "activation"},
    {"tanh", "activation"},
    {"exp", "activation"},
    {"sigmoid", "activation"},
    {"silu", "activation"},
    {"erf", "activation"},
    {"log", "activation"},
    {"pow", "activation"},
    {"pow_scalar", "activation"},
    // issue 34: comparisons, logic and cheap arithmetic move bytes; the
    // transcendental functions and the exp activations compute
    {"maximum", "elementwise"},
    {"minimum", "elementwise"},
    {"mod", "elementwise"},
    {"fmod", "elementwise"},
    {"equal", "elementwise"},
    {"less", "elementwise"},
    {"less_equal", "elementwise"},
    {"greater", "elementwise"},
    {"greater_equal", "elementwise"},
    {"logical_and", "elementwise"},
    {"logical_or", "elementwise"},
    {"logical_xor", "elementwise"},
    {"logical_not", "elementwise"},
    {"isnan", "elementwise"},
    {"isinf", "elementwise"},
    {"sign", "elementwise"},
    {"floor", "elementwise"},
    {"ceil", "elementwise"},
    {"round", "elementwise"},
    {"softsign", "elementwise"},
    {"leaky_relu", "elementwise"},
    {"thresholded_relu", "elementwise"},
    {"hard_sigmoid", "elementwise"},
    {"hard_swish", "elementwise"},
    {"prelu", "elementwise"},
    {"sin", "activation"},
    {"cos", "activation"},
    {"tan", "activation"},
    {"asin", "activation"},
    {"acos", "activation"},
    {"atan", "activation"},
    {"sinh", "activation"},
    {"cosh", "activation"},
    {"asinh", "activation"},
    {"acosh", "activation"},
    {"atanh", "activation"},
    {"softplus", "activation"},
    {"elu", "activation"},
    {"selu", "activation"},
    {"celu", "activation"},
    {"sum", "reduction"},
    {"mean", "reduction"},
    {"max", "reduction"},
    {"min", "reduction"},
    {"prod", "reduction"},
    {"argmax", "reduction"},
    {"argmin", "reduction"},
    // pooling reads each input element about once, like a reduction
    {"maxpool2d", "reduction"},
    {"avgpool2d", "reduction"},
    {"global_avgpool", "reduction"},
    // attention: its two products per query row are most of its work
    {"attention", "matmul"},
    {"attention_masked", "matmul"},
    {"attention_heads", "matmul"},
    {"attention_heads_masked", "matmul"},
    {"attention_heads_qkv", "matmul"},
    {"attention_heads_qkv_masked", "matmul"},
    {"attention_heads_seq_first", "matmul"},
    {"attention_heads_qkv_seq_first", "matmul"},
    // rope: one pass of products and sums over its rows, like an elementwise op
    {"rope", "elementwise"},
    {"softmax", "normalization"},
    {"layernorm", "normalization"},
    {"rmsnorm", "normalization"},
    {"batchnorm", "normalization"},
    {"concat", "copy"},
    {"split", "copy"},
    {"reshape", "copy"},
    {"embedding", "copy"},
    {"slice", "copy"},
    {"gather", "copy"},
    {"transpose", "transpose"},
};

} // namespace

const KernelFamily* familyOfKernel(std::string_view kernel) {
  if (kernel.substr(0, 5) == "fuse(") { // fuse(P, C): P's work, C an epilogue pass
    const std::optional<metakernel::FuseName> parts = metakernel::parseFuseName(kernel);
    return parts ? familyOfKernel(parts->producer) : nullptr;
  }
  for (const FamilyEntry& e : kFamilyTable) {
    if (e.kernel == kernel) {
      return findKernelFamily(e.family);
    }
  }
  return nullptr;
}

std::vector<std::string_view> kernelsOfFamily(std::string_view family) {
  std::vector<std::string_view> out;
  for (const FamilyEntry& e : kFamilyTable) {
    if (e.family == family) {
      out.push_back(e.kernel);
    }
  }
  return out;
}

double interpolateTime(const std::vector<ProfilePoint>& points, double size) {
  if (points.empty()) {
    return 0;
  }
  if (size <= points.front().size) {
    return points.front().seconds;
  }
  const ProfilePoint& last = points.back();
  if (size >= last.size) {
    return last.seconds * (size / last.size);
  }
  // The first point whose size is above `size`; its predecessor is at or below.
  auto hi = std::upper_bound(points.begin(), points.end(), size,
                             [](double s, const ProfilePoint& p) { return s < p.size; });
  auto lo = hi - 1;
  const double f = std::log(size / lo->size) / std::log(hi->size / lo->size);
  return lo->seconds * std::pow(hi->seconds / lo->seconds, f);
}

double ProfileTable::time(double size, double busy) const {
  return interpolateTime(alone, all, size, busy);
}

double ProfileTable::streamTime(double size, double busy) const {
  if (alone.empty() || size <= 0 || size >= alone.front().size) {
    return time(size, busy);
  }
  const double smallest = alone.front().size;
  return time(smallest, busy) * (size / smallest);
}

double interpolateTime(const std::vector<ProfilePoint>& alone, const std::vector<ProfilePoint>& all,
                       double size, double busy) {
  const double one = interpolateTime(alone, size);
  if (all.empty() || busy <= 0) {
    return one;
  }
  const double every = interpolateTime(all, size);
  if (busy >= 1) {
    return every;
  }
  return one * std::pow(every / one, busy);
}

double Profile::spreadAt(double singleTime) const {
  if (spreadByTime.empty() || !(singleTime > 0)) {
    return spread;
  }
  if (singleTime <= spreadByTime.front().time) {
    return spreadByTime.front().spread;
  }
  if (singleTime >= spreadByTime.back().time) {
    return spreadByTime.back().spread;
  }
  auto hi = std::upper_bound(spreadByTime.begin(), spreadByTime.end(), singleTime,
                             [](double t, const SpreadPoint& p) { return t < p.time; });
  auto lo = hi - 1;
  const double f = std::log(singleTime / lo->time) / std::log(hi->time / lo->time);
  return lo->spread + f * (hi->spread - lo->spread);
}

double Profile::spreadFor(const std::map<std::string, double, std::less<>>& timeByFamily,
                          double singleTime) const {
  const double fallback = spreadAt(singleTime);
  double total = 0;
  double weighted = 0;
  for (const auto& [family, seconds] : timeByFamily) {
    if (!(seconds > 0)) {
      continue;
    }
    const auto own = spreadByFamily.find(family);
    total += seconds;
    weighted += seconds * (own != spreadByFamily.end() ? own->second : fallback);
  }
  return total > 0 ? weighted / total : fallback;
}

const ProfileTable* Profile::table(std::string_view family) const {
  auto it = kernels.find(family);
  return it == kernels.end() ? nullptr : &it->second;
}

const ProfileTable* Profile::tableFor(std::string_view kernel) const {
  if (const ProfileTable* own = table(kernel)) {
    return own;
  }
  const KernelFamily* f = familyOfKernel(kernel);
  return f != nullptr ? table(f->name) : nullptr;
}

// A kernel's own table has its family's measure (target_io checks it), so
// the family says whether there is a floor: one lookup on the simulator's
// path, where tableFor has just made its own.
const ProfileTable* Profile::floorFor(std::string_view kernel) const {
  const KernelFamily* f = familyOfKernel(kernel);
  if (f == nullptr || f->measure == WorkMeasure::Bytes) {
    return nullptr;
  }
  if (f->name == "conv") {
    if (const ProfileTable* weights = table("conv_weights")) {
      return weights;
    }
  }
  return table("elementwise");
}

std::vector<ProfileEntry> profileEntries(const Profile& p) {
  std::vector<ProfileEntry> out;
  for (const KernelFamily& f : kernelFamilies()) {
    if (const ProfileTable* t = p.table(f.name)) {
      out.push_back({f.name, std::string(f.doc), t});
    }
    for (std::string_view k : kernelsOfFamily(f.name)) {
      const ProfileTable* own = k != f.name ? p.table(k) : nullptr;
      if (own != nullptr) {
        out.push_back({k, std::string(k) + " alone (" + std::string(f.name) + " family)", own});
      }
    }
  }
  return out;
}

} // namespace tapestry::cost
