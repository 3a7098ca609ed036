#include "core/metakernel/library.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace tapestry::metakernel {

namespace {

Diagnostic noteAt(const Metakernel& k, const std::string& message) {
  Diagnostic note;
  note.severity = Severity::Note;
  note.location = k.location;
  note.message = message;
  return note;
}

} // namespace

void MetakernelLibrary::addFile(const SourceFile& file, bool allowOverride,
                                const std::string& directory) {
  std::vector<Metakernel> loaded = loadMetakernels(file, directory);
  for (Metakernel& k : loaded) {
    auto it = kernels_.find(k.name);
    if (it != kernels_.end() && !allowOverride) {
      const SourceLocation& old = it->second->location;
      Error e(Diagnostic{Severity::Error,
                         k.location,
                         "kernel \"" + k.name + "\" is already defined at " + old.toString() +
                             " (use --override-kernels to replace it)",
                         file.snippetAt(k.location.line, k.location.column),
                         {}},
              ExitCode::InvalidInput);
      const bool builtIn = isStandardLibraryFile(it->second->location.file);
      e.addNote(noteAt(
          *it->second,
          "the first definition of \"" + k.name + "\" is here" +
              (builtIn ? " (built in; 'tapestry kernels show " + k.name + "' prints it)" : "")));
      throw e;
    }
    std::string name = k.name;
    kernels_[name] = std::make_shared<const Metakernel>(std::move(k));
  }
}

void MetakernelLibrary::addPath(const std::string& path, bool allowOverride) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path != "-" && fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      std::string ext = e.path().extension().string();
      if ((ext == ".yaml" || ext == ".yml") && !e.is_directory()) {
        files.push_back(e.path());
      }
    }
    if (ec) {
      throw Error(SourceLocation{path, 0, 0, {}}, "cannot read directory: " + ec.message());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      addFile(SourceFile::read(f.string()), allowOverride);
    }
    return;
  }
  addFile(SourceFile::read(path, "a metakernel YAML file"), allowOverride);
}

MetakernelLibrary MetakernelLibrary::standard() {
  static const MetakernelLibrary library = [] {
    MetakernelLibrary lib;
    for (const EmbeddedFile& f : embeddedStandardLibrary()) {
      const std::string_view base = f.path.substr(f.path.rfind('/') + 1);
      lib.addFile(
          SourceFile(std::string(kStandardLibraryPrefix) + std::string(base), std::string(f.text)),
          false);
    }
    return lib;
  }();
  return library;
}

MetakernelLibrary MetakernelLibrary::load(const std::vector<std::string>& paths,
                                          const LibraryOptions& options) {
  MetakernelLibrary lib = options.standardLibrary ? standard() : MetakernelLibrary();
  for (const std::string& p : paths) {
    lib.addPath(p, options.overrideKernels);
  }
  return lib;
}

const Metakernel* MetakernelLibrary::find(std::string_view name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : it->second.get();
}

const Metakernel& MetakernelLibrary::get(std::string_view name) const {
  if (const Metakernel* k = find(name)) {
    return *k;
  }
  std::string known;
  for (const auto& [n, k] : kernels_) {
    known += (known.empty() ? "" : ", ") + n;
  }
  throw Error("unknown kernel \"" + std::string(name) + "\"" +
              (known.empty() ? " (no kernels are loaded)" : " (known: " + known + ")"));
}

std::vector<const Metakernel*> MetakernelLibrary::kernels() const {
  std::vector<const Metakernel*> out;
  out.reserve(kernels_.size());
  for (const auto& [n, k] : kernels_) {
    out.push_back(k.get());
  }
  return out;
}

} // namespace tapestry::metakernel
