// External kernels (backends/tapestry_kernel.h): a template's
// `extern: {library, symbol}` binds a C function from a shared library, which
// the CPU backend loads once and calls once per shard with the shard's blocks.
#include <dlfcn.h>

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/tapestry_kernel.h"

namespace tapestry::backend::cpu {

namespace {

std::int32_t abiDType(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return TAPESTRY_FLOAT32;
  case DType::Float64:
    return TAPESTRY_FLOAT64;
  case DType::Float16:
    return TAPESTRY_FLOAT16;
  case DType::BFloat16:
    return TAPESTRY_BFLOAT16;
  case DType::Int32:
    return TAPESTRY_INT32;
  case DType::Int64:
    return TAPESTRY_INT64;
  case DType::Bool:
    break;
  }
  return TAPESTRY_BOOL;
}

// The located error of a template's extern field: "FILE:LINE:COL: error: ...".
[[noreturn]] void failAt(const metakernel::ExternSpec& spec, const std::string& message) {
  throw Error(Diagnostic{Severity::Error,
                         spec.location,
                         message,
                         Snippet{spec.lineText, spec.location.column},
                         {}},
              ExitCode::InvalidInput);
}

// Loaded libraries and resolved symbols, for the process's lifetime (a
// library stays loaded: its functions may be called by any later run).
tapestry_kernel_fn resolve(const metakernel::ExternSpec& spec) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, tapestry_kernel_fn> symbols;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(spec.path, spec.symbol);
  if (auto it = symbols.find(key); it != symbols.end()) {
    return it->second;
  }
  void* handle = dlopen(spec.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    failAt(spec, "cannot load extern library " + spec.path + ": " +
                     (why != nullptr ? why : "unknown error"));
  }
  dlerror();
  void* symbol = dlsym(handle, spec.symbol.c_str());
  if (symbol == nullptr) {
    failAt(spec, "extern library " + spec.path + " has no symbol " + spec.symbol +
                     " (a C function: declare it extern \"C\" in C++)");
  }
  auto fn = reinterpret_cast<tapestry_kernel_fn>(symbol);
  symbols.emplace(key, fn);
  return fn;
}

// What one call holds: the arrays every pointer of tapestry_call points into.
struct CallStorage {
  std::vector<std::vector<std::int64_t>> dims; // shapes, strides, starts
  std::vector<tapestry_block> inputs;
  std::vector<tapestry_block> outputs;
  std::vector<std::string> names;
  std::vector<std::string> strings;
  std::vector<std::vector<std::int64_t>> lists;
  std::vector<tapestry_value> values;

  const std::int64_t* keep(std::vector<std::int64_t> v) {
    dims.push_back(std::move(v));
    return dims.back().data();
  }

  tapestry_block block(const TensorView& view, const ZRange& region) {
    tapestry_block b{};
    b.rank = static_cast<std::int32_t>(region.rank());
    std::vector<std::int64_t> shape(region.rank(), 0);
    std::vector<std::int64_t> start(region.rank(), 0);
    if (!region.isEmpty()) {
      b.data = view.data + view.offsetOf(region.start().coords()) *
                               static_cast<std::int64_t>(dtypeSize(view.dtype));
      b.dtype = abiDType(view.dtype);
      for (std::size_t d = 0; d < region.rank(); ++d) {
        shape[d] = region.extent(d);
        start[d] = region.start()[d];
      }
      b.strides = keep(view.strides);
    } else {
      b.strides = keep(std::vector<std::int64_t>(region.rank(), 0));
    }
    b.shape = keep(std::move(shape));
    b.start = keep(std::move(start));
    return b;
  }
};

} // namespace

void runExternKernel(const KernelCall& call) {
  const graph::Operation& op = call.op;
  const metakernel::ExternSpec& spec = *op.application.externKernel;
  const tapestry_kernel_fn fn = resolve(spec);
  const ShardSelections sel = shardSelections(op, call.index);
  CallStorage s;
  // Reserve so that pointers into the vectors stay valid while they fill.
  std::size_t blocks = 0;
  for (const auto& port : sel.inputs) {
    blocks += port.size();
  }
  for (const auto& port : sel.outputs) {
    blocks += port.size();
  }
  s.dims.reserve(3 * blocks + 2);
  for (std::size_t p = 0; p < sel.inputs.size(); ++p) {
    for (std::size_t t = 0; t < sel.inputs[p].size(); ++t) {
      s.inputs.push_back(s.block(call.inputs[p][t], sel.inputs[p][t]));
    }
  }
  for (std::size_t p = 0; p < sel.outputs.size(); ++p) {
    for (std::size_t t = 0; t < sel.outputs[p].size(); ++t) {
      s.outputs.push_back(s.block(call.outputs[p][t], sel.outputs[p][t]));
    }
  }
  const metakernel::Application& app = op.application;
  const std::size_t valueCount = app.bindings.all().size() + app.params.size();
  s.names.reserve(valueCount);
  s.strings.reserve(valueCount);
  s.lists.reserve(valueCount);
  auto add = [&](const std::string& name) -> tapestry_value& {
    s.names.push_back(name);
    tapestry_value v{};
    v.name = s.names.back().c_str();
    s.values.push_back(v);
    return s.values.back();
  };
  s.values.reserve(valueCount);
  for (const auto& [name, value] : app.params.items()) {
    if (value.is_number_float()) {
      tapestry_value& v = add(name);
      v.kind = TAPESTRY_VALUE_FLOAT;
      v.float_value = value.get<double>();
    }
  }
  for (const auto& [name, binding] : app.bindings.all()) {
    const expr::Value& value = binding.value;
    if (value.isInt() || value.isBool()) {
      tapestry_value& v = add(name);
      v.kind = TAPESTRY_VALUE_INT;
      v.int_value = value.isInt() ? value.asInt() : (value.asBool() ? 1 : 0);
    } else if (value.isDType()) {
      s.strings.push_back(value.asDType().name);
      tapestry_value& v = add(name);
      v.kind = TAPESTRY_VALUE_STRING;
      v.string = s.strings.back().c_str();
    } else if (value.isList() && std::all_of(value.asList().begin(), value.asList().end(),
                                             [](const expr::Value& e) { return e.isInt(); })) {
      s.lists.push_back(value.toInts(name));
      tapestry_value& v = add(name);
      v.kind = TAPESTRY_VALUE_INTS;
      v.ints = s.lists.back().data();
      v.count = static_cast<std::int64_t>(s.lists.back().size());
    }
  }
  const std::vector<std::int64_t> start(call.index.start().begin(), call.index.start().end());
  const std::vector<std::int64_t> end(call.index.end().begin(), call.index.end().end());
  std::array<char, 512> error{};
  tapestry_call c{};
  c.abi_version = TAPESTRY_KERNEL_ABI_VERSION;
  c.kernel = op.kernel.c_str();
  c.operation = op.name.c_str();
  c.index_rank = static_cast<std::int32_t>(call.index.rank());
  c.index_start = start.data();
  c.index_end = end.data();
  c.input_count = static_cast<std::int32_t>(s.inputs.size());
  c.inputs = s.inputs.data();
  c.output_count = static_cast<std::int32_t>(s.outputs.size());
  c.outputs = s.outputs.data();
  c.value_count = static_cast<std::int32_t>(s.values.size());
  c.values = s.values.data();
  c.error = error.data();
  c.error_size = static_cast<std::int64_t>(error.size());
  const int status = fn(&c);
  if (status != 0) {
    error.back() = '\0';
    const std::string message = error[0] != '\0' ? error.data() : "no message";
    throw Error(op.name + " (" + op.kernel + "): extern kernel " + spec.symbol + " failed (" +
                std::to_string(status) + "): " + message);
  }
}

} // namespace tapestry::backend::cpu
