#include "backends/cpu/onednn.hpp"

#include <cstring>
#include <string>

#include <omp.h>

#include "core/diag/error.hpp"

namespace tapestry::backend::cpu::onednn {

const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void useThreads(int threads) {
  thread_local int current = 0;
  if (threads != current) {
    omp_set_num_threads(threads);
    current = threads;
  }
}

std::optional<dnnl::memory::data_type> dataType(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return dnnl::memory::data_type::f32;
  case DType::BFloat16:
    return dnnl::memory::data_type::bf16;
  default:
    return std::nullopt;
  }
}

dnnl::memory::desc stridedDesc(std::span<const std::int64_t> dims,
                               std::span<const std::int64_t> strides,
                               dnnl::memory::data_type type) {
  dnnl::memory::dims d(dims.begin(), dims.end());
  dnnl::memory::dims s(strides.begin(), strides.end());
  std::int64_t dense = 1;
  for (std::size_t k = d.size(); k-- > 0;) {
    if (d[k] == 1) {
      s[k] = dense;
    }
    dense *= d[k];
  }
  return dnnl::memory::desc(d, type, s);
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool isReference(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

Step::Step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd)
    : primitive_(std::move(primitive)) {
  const dnnl::memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) {
    arg(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch, cpuEngine()));
  }
}

void Step::arg(int arg, const dnnl::memory& memory) {
  memories_.push_back(memory);
  args_.push_back(dnnl_exec_arg_t{arg, memory.get()});
}

void Step::run(const dnnl::stream& stream) const {
  const dnnl_status_t status = dnnl_primitive_execute(primitive_.get(), stream.get(),
                                                      static_cast<int>(args_.size()), args_.data());
  if (status != dnnl_success) {
    throw InternalError("oneDNN primitive failed with status " + std::to_string(status));
  }
}

Step reorderStep(const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl::reorder::primitive_desc pd(cpuEngine(), from.get_desc(), cpuEngine(), to.get_desc(),
                                         userScratchpad());
  Step step(dnnl::reorder(pd), pd);
  step.arg(DNNL_ARG_FROM, from);
  step.arg(DNNL_ARG_TO, to);
  return step;
}

} // namespace tapestry::backend::cpu::onednn
