// Fuzz target: the metakernel YAML loader (core/metakernel), then every loaded
// kernel applied to the inputs of its own examples, as `kernels check` does.
#include "core/diag/source.hpp"
#include "core/metakernel/application.hpp"
#include "core/metakernel/metakernel.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::guarded([&] {
    const SourceFile file("fuzz.yaml", fuzz::text(data, size));
    for (const metakernel::Metakernel& kernel : metakernel::loadMetakernels(file)) {
      (void)metakernel::toJson(kernel);
      for (const metakernel::ExampleSpec& example : kernel.examples) {
        metakernel::Operation op;
        for (const auto& [port, tensors] : example.inputs) {
          op.inputs[port] = tensors;
        }
        op.params = example.params;
        fuzz::rejectingInput([&] { (void)metakernel::apply(kernel, op); });
      }
    }
  });
}
