// core/onnx without the ONNX library (libonnx-dev): `tapestry import` says how
// to get it, as optimize under mpirun does without MPI.
#include "core/diag/error.hpp"
#include "core/onnx/importer.hpp"

namespace tapestry::onnx_import {

bool available() {
  return false;
}

std::vector<std::string> supportedOperators() {
  return {};
}

ImportResult importModel(const std::string&, const std::string&, const ImportOptions&) {
  throw UsageError("this tapestry was built without the ONNX library, so it cannot import "
                   "models; rebuild with ONNX (libonnx-dev libprotobuf-dev protobuf-compiler, "
                   "see scripts/install-deps.sh)");
}

} // namespace tapestry::onnx_import
