#include "core/metakernel/library.hpp"

#include "core/metakernel/fuse.hpp"

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
    if (isFuseKernelName(name)) { // a composed template, as a plan embeds it
      k.fused = fusedSpecOf(name);
    }
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

MetakernelLibrary& MetakernelLibrary::operator=(const MetakernelLibrary& other) {
  if (this != &other) {
    kernels_ = other.kernels_;
    fused_ = std::make_unique<FusedCache>();
  }
  return *this;
}

const Metakernel* MetakernelLibrary::find(std::string_view name) const {
  return shared(name).get();
}

const Metakernel* MetakernelLibrary::find(std::string_view name, std::string& why) const {
  try {
    return find(name);
  } catch (const Error& e) {
    if (e.exitCode() != ExitCode::InvalidInput) {
      throw;
    }
    why = e.message();
    return nullptr;
  }
}

std::shared_ptr<const Metakernel> MetakernelLibrary::shared(std::string_view name) const {
  auto it = kernels_.find(name);
  if (it != kernels_.end()) {
    return it->second;
  }
  return name.substr(0, 5) == "fuse(" ? fused(name) : nullptr;
}

namespace {

// The consumer's text is a kernel name, or NAME.PORT (kernel names may hold '.').
template <class Has> void splitPort(FuseName& parts, Has has) {
  if (!has(parts.consumer)) {
    const std::size_t dot = parts.consumer.rfind('.');
    if (dot != std::string::npos) {
      parts.port = parts.consumer.substr(dot + 1);
      parts.consumer.resize(dot);
    }
  }
}

// What a fused template is made of: the two templates, C's port (its first
// input unless the name says) and the prefix of C's names.
std::shared_ptr<const FusedSpec> specOf(const FuseName& parts,
                                        std::shared_ptr<const Metakernel> producer,
                                        std::shared_ptr<const Metakernel> consumer) {
  auto spec = std::make_shared<FusedSpec>();
  spec->port = parts.port.empty() ? consumer->inputs.front().name : parts.port;
  spec->prefix = fusePrefix(parts.consumer);
  spec->producer = std::move(producer);
  spec->consumer = std::move(consumer);
  return spec;
}

} // namespace

std::shared_ptr<const FusedSpec> MetakernelLibrary::fusedSpecOf(std::string_view name) const {
  std::optional<FuseName> parts = parseFuseName(name);
  if (!parts) {
    return nullptr;
  }
  splitPort(*parts, [&](const std::string& n) { return kernels_.count(n) != 0; });
  std::shared_ptr<const Metakernel> producer = shared(parts->producer);
  std::shared_ptr<const Metakernel> consumer = shared(parts->consumer);
  if (!producer || !consumer || consumer->inputs.empty()) {
    return nullptr;
  }
  return specOf(*parts, std::move(producer), std::move(consumer));
}

std::shared_ptr<const Metakernel> MetakernelLibrary::fused(std::string_view name) const {
  {
    std::lock_guard<std::mutex> lock(fused_->mutex);
    auto it = fused_->kernels.find(name);
    if (it != fused_->kernels.end()) {
      return it->second;
    }
  }
  std::optional<FuseName> parts = parseFuseName(name);
  if (!parts) {
    throw Error("kernel \"" + std::string(name) +
                "\": not a fused kernel: fuse(PRODUCER, CONSUMER) or fuse(PRODUCER, "
                "CONSUMER.PORT), where CONSUMER is one kernel's name (nest on the producer's "
                "side: fuse(fuse(A, B), C))");
  }
  splitPort(*parts, [&](const std::string& n) { return kernels_.count(n) != 0; });
  const std::string spelled = fuseName(*parts);
  if (spelled != name || !isFuseKernelName(spelled)) {
    throw Error("kernel \"" + std::string(name) + "\": a fused kernel is spelled \"" + spelled +
                "\" (fuse(PRODUCER, CONSUMER) or fuse(PRODUCER, CONSUMER.PORT))");
  }
  std::shared_ptr<const Metakernel> producer = shared(parts->producer);
  std::shared_ptr<const Metakernel> consumer = shared(parts->consumer);
  if (!producer || !consumer) {
    throw Error("kernel \"" + spelled + "\": unknown kernel \"" +
                (!producer ? parts->producer : parts->consumer) + "\"");
  }
  const std::string text = fusedTemplateText(spelled, *producer, *consumer, parts->port);
  std::vector<Metakernel> loaded = loadMetakernels(SourceFile(spelled, text), ".");
  if (loaded.size() != 1) {
    throw InternalError("fuse: the composed text of " + spelled + " holds " +
                        std::to_string(loaded.size()) + " templates");
  }
  loaded.front().fused = specOf(*parts, producer, consumer);
  std::lock_guard<std::mutex> lock(fused_->mutex);
  auto [it, added] = fused_->kernels.try_emplace(
      spelled, std::make_shared<const Metakernel>(std::move(loaded.front())));
  return it->second;
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
