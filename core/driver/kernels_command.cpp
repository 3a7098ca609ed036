#include "core/driver/kernels_command.hpp"

#include <ostream>
#include <sstream>

#include "core/metakernel/application.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::driver {

using namespace tapestry::metakernel;

namespace {

// "sum(input; axis: int = -1, keepdims: bool = false) -> result"; a list
// port is "tensors[]", an optional one "bias?".
std::string signature(const Metakernel& k) {
  std::string out = k.name + "(";
  for (std::size_t i = 0; i < k.inputs.size(); ++i) {
    out += (i ? ", " : "") + k.inputs[i].name + (k.inputs[i].list ? "[]" : "") +
           (k.inputs[i].optional ? "?" : "");
  }
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const ParamSpec& p = k.params[i];
    out += (i ? ", " : k.inputs.empty() ? "" : "; ") + p.name + ": " + paramTypeName(p.type);
    if (p.defaultValue) {
      out += " = " + p.defaultValue->dump();
    }
  }
  out += ") -> ";
  for (std::size_t i = 0; i < k.outputs.size(); ++i) {
    out += (i ? ", " : "") + k.outputs[i].name + (k.outputs[i].list ? "[]" : "");
  }
  return out;
}

Json listJson(const Metakernel& k) {
  Json j = Json::object();
  j["name"] = k.name;
  j["file"] = k.location.file;
  j["line"] = k.location.line;
  j["inputs"] = json::arrayOf(k.inputs, [](const InputSpec& in) {
    Json p = Json::object();
    p["name"] = in.name;
    p["list"] = in.list;
    p["optional"] = in.optional;
    p["shape"] = in.shape.text();
    return p;
  });
  j["outputs"] = json::arrayOf(k.outputs, [](const OutputSpec& o) {
    Json p = Json::object();
    p["name"] = o.name;
    p["list"] = o.list;
    p["combine"] = o.combine ? Json(combineName(*o.combine)) : Json(nullptr);
    return p;
  });
  j["params"] = json::arrayOf(k.params, [](const ParamSpec& p) {
    Json q = Json::object();
    q["name"] = p.name;
    q["type"] = paramTypeName(p.type);
    if (p.defaultValue) {
      q["default"] = *p.defaultValue;
    }
    return q;
  });
  j["doc"] = k.doc;
  return j;
}

int list(const MetakernelLibrary& lib, const KernelsConfig& config, std::ostream& out) {
  if (config.json) {
    Json doc = Json::object();
    doc["kernels"] = json::arrayOf(lib.kernels(), [](const Metakernel* k) { return listJson(*k); });
    out << doc.dump(2) << "\n";
    return 0;
  }
  for (const Metakernel* k : lib.kernels()) {
    out << signature(*k) << "\n";
    std::istringstream doc(k->doc);
    for (std::string line; std::getline(doc, line);) {
      out << "    " << line << "\n";
    }
  }
  return 0;
}

int show(const MetakernelLibrary& lib, const KernelsConfig& config, std::ostream& out) {
  const Metakernel& k = lib.get(config.name);
  if (config.json) {
    Json doc = Json::object();
    doc["name"] = k.name;
    doc["file"] = k.location.file;
    doc["line"] = k.location.line;
    doc["source"] = k.sourceText;
    doc["template"] = toJson(k);
    out << doc.dump(2) << "\n";
    return 0;
  }
  out << k.sourceText;
  return 0;
}

// nullopt when the example passes, else what went wrong.
std::optional<Error> runExample(const Metakernel& k, const ExampleSpec& ex) {
  Operation op;
  for (const auto& [port, tensors] : ex.inputs) {
    op.inputs[port] = tensors;
  }
  op.params = ex.params;
  std::optional<Application> app;
  try {
    app = apply(k, op);
  } catch (const Error& e) {
    if (ex.expectError && e.message().find(*ex.expectError) != std::string::npos) {
      return std::nullopt;
    }
    if (ex.expectError) {
      Error out("expected an error containing \"" + *ex.expectError + "\", got: " + e.message());
      for (const Diagnostic& n : e.diagnostic().notes) {
        out.addNote(n);
      }
      return out;
    }
    return e;
  }
  if (ex.expectError) {
    return Error("expected an error containing \"" + *ex.expectError + "\", but it applied");
  }
  if (ex.expectIndex && app->index.shape().vector() != *ex.expectIndex) {
    return Error("index is " + app->index.shape().toString() + ", expected " +
                 formatInts(*ex.expectIndex));
  }
  for (const auto& [port, tensors] : ex.expectOutputs) {
    const PortResult* p = app->output(port);
    if (p == nullptr) {
      return Error("expect: the kernel has no output " + port);
    }
    if (p->tensors.size() != tensors.size()) {
      return Error("output " + port + " has " + std::to_string(p->tensors.size()) +
                   " tensors, expected " + std::to_string(tensors.size()));
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (p->tensors[i] != tensors[i]) {
        std::string who = p->list ? port + "[" + std::to_string(i) + "]" : port;
        return Error("output " + who + " is " + toString(p->tensors[i]) + ", expected " +
                     toString(tensors[i]));
      }
    }
  }
  if (ex.expectFlops && app->flops != *ex.expectFlops) {
    return Error("flops is " + std::to_string(app->flops) + ", expected " +
                 std::to_string(*ex.expectFlops));
  }
  return std::nullopt;
}

int check(const MetakernelLibrary& lib, const KernelsConfig& config, std::ostream& out,
          std::ostream& err) {
  std::size_t examples = 0;
  Json failures = Json::array();
  for (const Metakernel* k : lib.kernels()) {
    for (std::size_t i = 0; i < k->examples.size(); ++i) {
      const ExampleSpec& ex = k->examples[i];
      ++examples;
      std::optional<Error> problem = runExample(*k, ex);
      if (!problem) {
        continue;
      }
      Diagnostic d = problem->diagnostic();
      d.location = ex.location;
      d.snippet.reset();
      if (ex.location.line > 0) {
        d.snippet = Snippet{ex.lineText, ex.location.column};
      }
      d.message = "kernel " + k->name + ", example " + std::to_string(i + 1) + ": " + d.message;
      err << d.format();
      Json f = Json::object();
      f["kernel"] = k->name;
      f["example"] = i + 1;
      f["file"] = ex.location.file;
      f["line"] = ex.location.line;
      f["message"] = d.message;
      failures.push_back(f);
    }
  }
  std::size_t kernels = lib.size();
  if (config.json) {
    Json doc = Json::object();
    doc["status"] = failures.empty() ? "ok" : "failed";
    doc["kernels"] = kernels;
    doc["examples"] = examples;
    doc["failures"] = failures;
    out << doc.dump(2) << "\n";
  } else if (!config.quiet) {
    out << "checked " << kernels << (kernels == 1 ? " kernel, " : " kernels, ") << examples
        << (examples == 1 ? " example: " : " examples: ")
        << (failures.empty() ? std::string("all passed")
                             : std::to_string(failures.size()) + " failed")
        << "\n";
  }
  return failures.empty() ? 0 : static_cast<int>(ExitCode::CheckFailed);
}

} // namespace

int runKernelsCommand(const KernelsConfig& config, std::ostream& out, std::ostream& err) {
  LibraryOptions options;
  options.overrideKernels = config.overrideKernels;
  MetakernelLibrary lib = MetakernelLibrary::load(config.kernelPaths, options);
  switch (config.action) {
  case KernelsConfig::Action::List:
    return list(lib, config, out);
  case KernelsConfig::Action::Show:
    return show(lib, config, out);
  case KernelsConfig::Action::Check:
    return check(lib, config, out, err);
  }
  return 0;
}

} // namespace tapestry::driver
