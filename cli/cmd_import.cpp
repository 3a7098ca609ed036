// tapestry import MODEL.onnx [-o GRAPH.json] [--weights DIR] [--values DIR] [--dim NAME=N]... (SPEC
// §5.1)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/import_command.hpp"

namespace tapestry::cli {

void registerImport(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::ImportConfig>();
  sub->add_option("MODEL", config->modelPath, "ONNX model file (.onnx), or - for stdin")
      ->required();
  sub->add_option("-o,--output", config->outputPath, "Output file (graph/v1 JSON), - for stdout");
  sub->add_option("--weights", config->weightsDir,
                  "Write the data of the constant inputs as DIR/NAME.npy (what run --inputs reads)")
      ->option_text("DIR");
  sub->add_option("--values", config->valuesDir,
                  "Values of graph inputs that import needs as constants (a Slice's starts, a "
                  "ReduceSum's axes): DIR/NAME.npy; only those inputs become constants")
      ->option_text("DIR");
  sub->add_option("--dim", config->dims, "Bind a symbolic dim: NAME=N (repeatable)")
      ->option_text("NAME=N");
  runDriverOnSelect(*sub, action, config, driver::importCommand);
}

} // namespace tapestry::cli
