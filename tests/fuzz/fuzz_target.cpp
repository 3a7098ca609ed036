// Fuzz target: the target YAML loader (core/cost): units, devices, links, then
// the loaded target's JSON form read back.
#include "core/cost/target.hpp"
#include "core/diag/source.hpp"
#include "core/json/json.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::guarded([&] {
    const cost::Target target =
        cost::loadTargetYaml(SourceFile("fuzz.yaml", fuzz::text(data, size)));
    (void)cost::toString(target);
    const std::string written = cost::toJson(target).dump();
    try {
      const json::Document again = json::Document::parse(SourceFile("again.json", written));
      (void)cost::targetFromJson(json::Value(again));
    } catch (const Error& e) {
      fuzz::finding("the target's JSON form does not load back", e.what());
    }
  });
}
