// What the JSON-reading fuzz targets share: the input as a parsed document and
// the standard library (parsed once per process).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/diag/source.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

namespace tapestry::fuzz {

inline json::Document parseJson(const std::uint8_t* data, std::size_t size) {
  return json::Document::parse(SourceFile("fuzz.json", text(data, size)));
}

inline const metakernel::MetakernelLibrary& standardLibrary() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

} // namespace tapestry::fuzz
