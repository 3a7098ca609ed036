#include "backends/tensor_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "backends/npy.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

namespace {

std::string joinPath(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char c : text) {
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  }
  return h;
}

// The smallest table size V (the gathered axis's length) of the embeddings and
// gathers that read `tensor` as indices.
std::optional<std::int64_t> embeddingBound(const graph::ExpandedGraph& g, std::size_t tensor) {
  std::optional<std::int64_t> bound;
  for (std::size_t opIndex : g.tensors[tensor].consumers) {
    const graph::Operation& op = g.operations[opIndex];
    if (op.kernel != "embedding" && op.kernel != "gather") {
      continue;
    }
    for (const graph::PortTensors& port : op.inputs) {
      if (port.port != "indices" ||
          std::find(port.tensors.begin(), port.tensors.end(), tensor) == port.tensors.end()) {
        continue;
      }
      const expr::Binding* v = op.application.bindings.find("V");
      if (v != nullptr && v->value.isInt()) {
        bound =
            std::min(bound.value_or(std::numeric_limits<std::int64_t>::max()), v->value.asInt());
      }
    }
  }
  return bound;
}

// Whether a batchnorm (or a kernel composed from one, `fuse(batchnorm, ...)`)
// reads `tensor` as its variance: drawn in [0.5, 1.5), since a negative one has
// no square root (every output NaN, and run --check a mismatch of NaN).
bool readAsVariance(const graph::ExpandedGraph& g, std::size_t tensor) {
  for (std::size_t opIndex : g.tensors[tensor].consumers) {
    const graph::Operation& op = g.operations[opIndex];
    if (op.kernel != "batchnorm" && op.kernel.rfind("fuse(batchnorm,", 0) != 0) {
      continue;
    }
    for (const graph::PortTensors& port : op.inputs) {
      if (port.port == "var" &&
          std::find(port.tensors.begin(), port.tensors.end(), tensor) != port.tensors.end()) {
        return true;
      }
    }
  }
  return false;
}

// The largest number of terms a consumer sums per output element from this
// tensor: the product of the extents of its reduction dims (conv2d's C*KH*KW,
// matmul's k), 1 when none reads it in a sum. A reduction by max, min or prod
// is no sum (a product of scaled values would vanish).
double fanIn(const graph::ExpandedGraph& g, std::size_t tensor) {
  double most = 1;
  for (std::size_t opIndex : g.tensors[tensor].consumers) {
    const metakernel::Application& a = g.operations[opIndex].application;
    const bool sum = std::all_of(a.outputs.begin(), a.outputs.end(), [](const auto& out) {
      return !out.combine || *out.combine == metakernel::Combine::Sum;
    });
    if (!sum) {
      continue;
    }
    double terms = 1;
    for (std::size_t d : a.reductionDims) {
      terms *= static_cast<double>(a.index.extent(d));
    }
    most = std::max(most, terms);
  }
  return most;
}

} // namespace

TensorBuffers loadInputs(const graph::ExpandedGraph& g, const std::string& dir) {
  TensorBuffers out;
  for (const graph::Tensor& t : g.tensors) {
    if (!t.isGraphInput()) {
      continue;
    }
    const std::string file = npyFileName(t.name);
    const std::string path = joinPath(dir, file);
    if (!std::filesystem::exists(path)) {
      throw Error(SourceLocation{path, 0, 0, {}},
                  "missing input " + t.name + ": cannot open file: " + std::strerror(ENOENT));
    }
    NpyArray array = readNpy(path);
    const std::vector<std::int64_t> shape = array.buffer.region().shape().vector();
    if (shape != t.type.shape) {
      throw Error(SourceLocation{path, 0, 0, {}}, file + " has shape " + pythonShape(shape) +
                                                      " but the graph declares " + t.name + " as " +
                                                      formatInts(t.type.shape));
    }
    if (dtypeName(array.buffer.dtype()) != t.type.dtype) {
      throw Error(SourceLocation{path, 0, 0, {}},
                  file + " holds " + dtypeName(array.buffer.dtype()) + " ('" + array.descr +
                      "') but the graph declares " + t.name + " as " + t.type.dtype);
    }
    out.emplace(t.name, std::move(array.buffer));
  }
  return out;
}

Buffer drawInput(const graph::ExpandedGraph& g, std::size_t tensor, std::uint64_t seed,
                 Scale scale) {
  const graph::Tensor& t = g.tensors[tensor];
  const DType dtype = parseDType(t.type.dtype);
  Buffer buffer = Buffer::host(dtype, t.type.shape);
  std::uint64_t state = (seed * 0x9E3779B97F4A7C15ull) ^ fnv1a(t.name);
  const std::optional<std::int64_t> bound = embeddingBound(g, tensor);
  // Floats over the square root of the tensor's fan-in: sums of products keep
  // their size through a deep network instead of overflowing.
  const bool variance = readAsVariance(g, tensor);
  const double factor = variance                ? 0.5
                        : scale == Scale::FanIn ? 1.0 / std::sqrt(fanIn(g, tensor))
                                                : 1.0;
  const double offset = variance ? 1.0 : 0.0;
  dispatchWithBool(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T& x : buffer.elements<T>()) {
      const std::uint64_t r = splitmix64(state);
      if constexpr (std::is_same_v<T, Bool>) {
        x = Bool{static_cast<std::uint8_t>(r >> 63)}; // a fair coin: the top bit
      } else if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
        if (bound) {
          x = static_cast<T>(static_cast<std::int64_t>(
              r % static_cast<std::uint64_t>(std::max<std::int64_t>(*bound, 1))));
        } else {
          x = static_cast<T>(static_cast<std::int64_t>(r % 9) - 4);
        }
      } else {
        const double u = offset + (static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0) * factor;
        if constexpr (std::is_same_v<T, Half>) {
          x = floatToHalf(static_cast<float>(u));
        } else if constexpr (std::is_same_v<T, BFloat16>) {
          x = floatToBFloat16(static_cast<float>(u));
        } else {
          x = static_cast<T>(u);
        }
      }
    }
  });
  return buffer;
}

TensorBuffers drawInputs(const graph::ExpandedGraph& g, std::uint64_t seed, Scale scale) {
  TensorBuffers out;
  for (std::size_t i = 0; i < g.tensors.size(); ++i) {
    if (g.tensors[i].isGraphInput()) {
      out.emplace(g.tensors[i].name, drawInput(g, i, seed, scale));
    }
  }
  return out;
}

void writeTensors(const TensorBuffers& tensors, const std::vector<std::string>& names,
                  const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw Error(SourceLocation{dir, 0, 0, {}}, "cannot create directory: " + ec.message());
  }
  for (const std::string& name : names) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      throw InternalError("no buffer for tensor " + name + " to write");
    }
    writeNpy(joinPath(dir, npyFileName(name)), it->second.view());
  }
}

} // namespace tapestry::backend
