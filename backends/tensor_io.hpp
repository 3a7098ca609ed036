// Graph inputs and outputs on the host for `run`: read from a directory of
// NAME.npy files (--inputs DIR), drawn deterministically from a seed (--seed),
// and written back as NAME.npy (--outputs DIR).
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "core/graph/graph.hpp"

namespace tapestry::backend {

// Every graph input of `g` from DIR/NAME.npy (NAME percent-encoded: npyFileName), checked against
// the graph:
//   "DIR/x.npy: error: x.npy has shape (4, 8) but the graph declares x as [4, 9]"
//   "DIR/x.npy: error: x.npy holds float64 ('<f8') but the graph declares x as float32"
// A missing file is "DIR/x.npy: error: missing input x: cannot open file: ...".
// Files for tensors that are not graph inputs are ignored.
TensorBuffers loadInputs(const graph::ExpandedGraph& g, const std::string& dir);

// One graph input drawn from `seed`: the stream depends only on the seed and
// the tensor's name (splitmix64), so adding tensors never changes others.
// Floats are uniform in [-1, 1) over sqrt(fan-in), where the fan-in is the
// most terms any consumer sums per output element from the tensor (the
// product of its reduction dims: conv2d's C*KH*KW, matmul's k; 1 for none),
// so that a deep network's sums neither overflow nor vanish (Scale::Unit:
// [-1, 1) whatever the consumers). Integers are uniform in [-4, 4], except
// tensors read as embedding indices, which are uniform in [0, V) for the
// smallest V of the tables they index; bools are a fair coin per element. A
// batchnorm's variance is uniform in [0.5, 1.5) (a negative one has no square
// root).
enum class Scale { FanIn, Unit };
Buffer drawInput(const graph::ExpandedGraph& g, std::size_t tensor, std::uint64_t seed,
                 Scale scale = Scale::FanIn);
TensorBuffers drawInputs(const graph::ExpandedGraph& g, std::uint64_t seed,
                         Scale scale = Scale::FanIn);

// Writes DIR/NAME.npy for every tensor of `tensors` named in `names`
// (creating DIR), each atomically; host buffers only.
void writeTensors(const TensorBuffers& tensors, const std::vector<std::string>& names,
                  const std::string& dir);

} // namespace tapestry::backend
