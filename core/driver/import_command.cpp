#include "core/driver/import_command.hpp"

#include <filesystem>
#include <ostream>

#include "backends/npy.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/source.hpp"
#include "core/driver/output_summary.hpp"
#include "core/graph/writer.hpp"
#include "core/json/layout.hpp"
#include "core/onnx/importer.hpp"

namespace tapestry::driver {

namespace {

// "batch=8" -> {"batch", 8}; UsageError for anything else.
std::pair<std::string, std::int64_t> parseDim(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
  std::int64_t n = 0;
  std::size_t used = 0;
  bool ok = !name.empty() && !value.empty() && value[0] != '-' && value[0] != '+';
  if (ok) {
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != value.size() || n < 1) {
    throw UsageError("--dim " + text +
                     ": expected NAME=N with N a positive integer (--dim batch=8)");
  }
  return {name, n};
}

// Writes DIR/NAME.npy (NAME percent-encoded) for every constant the graph
// reads; checks them all before writing any.
std::size_t writeWeights(const std::vector<onnx_import::TensorData>& constants,
                         const std::string& dir, const std::string& model) {
  std::vector<std::string> descrs;
  for (const onnx_import::TensorData& c : constants) {
    const std::optional<std::string> descr = backend::npyDescrOf(c.dtype);
    if (!descr) {
      throw Error(SourceLocation{model, 0, 0, {}}, "--weights: constant " + c.name + " is " +
                                                       c.dtype +
                                                       ", which tapestry does not write as .npy");
    }
    if (!c.present) {
      throw Error(SourceLocation{model, 0, 0, {}},
                  "--weights: constant " + c.name +
                      " is stored outside the model (external data), which tapestry does not read");
    }
    descrs.push_back(*descr);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw Error(SourceLocation{dir, 0, 0, {}}, "cannot create directory: " + ec.message());
  }
  for (std::size_t i = 0; i < constants.size(); ++i) {
    const onnx_import::TensorData& c = constants[i];
    backend::writeNpyBytes((std::filesystem::path(dir) / backend::npyFileName(c.name)).string(),
                           descrs[i], c.shape, c.bytes);
  }
  return constants.size();
}

std::string summaryText(const onnx_import::ImportResult& r, const std::string& output) {
  return "imported " + r.graph["name"].get<std::string>() + ": " + std::to_string(r.nodes) +
         " ONNX nodes (" + std::to_string(r.folded) + " folded) -> " +
         std::to_string(r.graph["operations"].size()) + " operations, " +
         std::to_string(r.graph["tensors"].size()) + " inputs (" +
         std::to_string(r.constants.size()) + " constant) -> " + outputName(output) + "\n";
}

} // namespace

int importCommand(const ImportConfig& config, std::ostream& out, std::ostream& err) {
  onnx_import::ImportOptions options;
  for (const std::string& d : config.dims) {
    const auto [name, value] = parseDim(d);
    if (!options.dims.emplace(name, value).second) {
      throw UsageError("--dim " + name + " is given twice");
    }
  }
  if (!config.valuesDir.empty()) {
    if (!std::filesystem::is_directory(config.valuesDir)) {
      throw Error(SourceLocation{config.valuesDir, 0, 0, {}},
                  "--values: not a directory of NAME.npy files");
    }
    const std::string dir = config.valuesDir;
    options.inputValue = [dir](const std::string& name) -> std::optional<onnx_import::TensorData> {
      const std::string path = (std::filesystem::path(dir) / backend::npyFileName(name)).string();
      if (!std::filesystem::exists(path)) {
        return std::nullopt;
      }
      const backend::NpyArray a = backend::readNpy(path);
      const backend::Buffer& b = a.buffer;
      onnx_import::TensorData t;
      t.name = name;
      t.dtype = backend::dtypeName(b.dtype());
      t.shape = b.region().shape().vector();
      t.bytes.assign(reinterpret_cast<const char*>(b.data()),
                     static_cast<std::size_t>(b.byteSize()));
      return t;
    };
  }
  if (!onnx_import::available()) {
    onnx_import::importModel({}, config.modelPath, options); // throws, saying why
  }
  checkWritable(config.outputPath);
  const SourceFile model = SourceFile::read(config.modelPath, "an ONNX model file");
  const onnx_import::ImportResult result =
      onnx_import::importModel(model.text(), model.name(), options);
  if (!config.weightsDir.empty()) {
    writeWeights(result.constants, config.weightsDir, model.name());
  }
  writeFileAtomically(config.outputPath, json::format(result.graph, graph::kExpandedWidth), out);

  Json summary = Json::object();
  summary["status"] = "ok";
  summary["graph"] = result.graph["name"];
  summary["nodes"] = result.nodes;
  summary["folded"] = result.folded;
  summary["operations"] = result.graph["operations"].size();
  summary["inputs"] = result.graph["tensors"].size();
  // The model's initializers and folded values: weights a backend packs
  // once. A model exported without its weights has none, and its
  // convolutions and products copy them on every call.
  summary["constants"] = result.constants.size();
  summary["weights"] = config.weightsDir.empty() ? Json(nullptr) : Json(result.constants.size());
  summary["output"] = config.outputPath;
  reportOutput(config, summary, summaryText(result, config.outputPath), out, err);
  return 0;
}

} // namespace tapestry::driver
