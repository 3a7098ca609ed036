// Fuzz target: the graph JSON loader (core/json, core/graph): parse, decode and
// expand against the standard library, then write the expanded form and expand
// that again (an expanded/v1 input is re-checked field by field).
#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::MetakernelLibrary& library = fuzz::standardLibrary();
  return fuzz::guarded([&] {
    const json::Document document = fuzz::parseJson(data, size);
    const graph::Graph graph = graph::decodeGraph(json::Value(document));
    const graph::ExpandedGraph expanded = graph::expand(graph, library);
    const std::string written = graph::writeExpanded(expanded);
    // What tapestry wrote must load back to itself: any error here is a finding.
    try {
      const json::Document again = json::Document::parse(SourceFile("again.json", written));
      const graph::ExpandedGraph twice =
          graph::expand(graph::decodeGraph(json::Value(again)), library);
      if (graph::writeExpanded(twice) != written) {
        fuzz::finding("expansion is not idempotent", written);
      }
    } catch (const Error& e) {
      fuzz::finding("the written expanded graph does not load back", e.what());
    }
  });
}
