// Fuzz target: the plan/v1 loader (core/plan), which re-validates the embedded
// graph, the target and every shard selection.
#include "core/cost/plan_file.hpp"
#include "core/diag/source.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::MetakernelLibrary& library = fuzz::standardLibrary();
  return fuzz::guarded([&] {
    const json::Document document = fuzz::parseJson(data, size);
    (void)plan::decodePlan(json::Value(document), library);
  });
}
