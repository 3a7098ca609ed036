// The metakernel library: the standard library embedded at build time (every
// metakernels/*.yaml) plus the user's -k files and directories.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diag/source.hpp"
#include "core/metakernel/metakernel.hpp"

namespace tapestry::metakernel {

// One embedded standard-library file ("metakernels/matmul.yaml" and its text).
struct EmbeddedFile {
  std::string_view path;
  std::string_view text;
};
// Generated at build time (cmake/Embed.cmake), sorted by path.
std::span<const EmbeddedFile> embeddedStandardLibrary();

// Diagnostics name standard-library files "<stdlib>/matmul.yaml": built in, not
// a path the user has (`tapestry kernels show matmul` prints the template).
inline constexpr std::string_view kStandardLibraryPrefix = "<stdlib>/";
inline bool isStandardLibraryFile(std::string_view file) {
  return file.substr(0, kStandardLibraryPrefix.size()) == kStandardLibraryPrefix;
}

struct LibraryOptions {
  bool standardLibrary = true;  // start from the embedded files
  bool overrideKernels = false; // later definitions replace earlier ones
};

class MetakernelLibrary {
public:
  MetakernelLibrary() = default;
  // A copy has the same templates and its own (empty) cache of fused ones.
  MetakernelLibrary(const MetakernelLibrary& other) : kernels_(other.kernels_) {}
  MetakernelLibrary& operator=(const MetakernelLibrary& other);
  MetakernelLibrary(MetakernelLibrary&&) = default;
  MetakernelLibrary& operator=(MetakernelLibrary&&) = default;

  // The embedded standard library, then each path in order (a directory adds its
  // *.yaml and *.yml files, sorted by name). Throws the first located Error.
  static MetakernelLibrary load(const std::vector<std::string>& paths,
                                const LibraryOptions& options = {});
  // The embedded standard library alone (parsed once per process, then copied).
  static MetakernelLibrary standard();

  // Adds every template of a file. A name already defined is an error naming both
  // locations, unless `allowOverride`.
  // `directory` resolves relative extern library paths (default: the file's).
  void addFile(const SourceFile& file, bool allowOverride = false,
               const std::string& directory = "");
  // A YAML file, or a directory of them.
  void addPath(const std::string& path, bool allowOverride = false);

  // A template by name. A name spelled fuse(P, C) or fuse(P, C.PORT) that no
  // file defines is composed from P's and C's templates on first use
  // (core/metakernel/fuse.hpp) and kept; it throws Error when they do not
  // compose, or when the name is spelled otherwise than fuseName() spells it.
  const Metakernel* find(std::string_view name) const;
  // The same, with the reason fuse(P, C) does not compose put in `why` (and
  // nullptr returned) rather than thrown: for callers that locate it.
  const Metakernel* find(std::string_view name, std::string& why) const;
  // Throws Error "unknown kernel \"x\" (known: a, b, ...)" when absent.
  const Metakernel& get(std::string_view name) const;
  // All kernels the files define, sorted by name (not the fused ones made by find).
  std::vector<const Metakernel*> kernels() const;
  std::size_t size() const { return kernels_.size(); }

private:
  using KernelMap = std::map<std::string, std::shared_ptr<const Metakernel>, std::less<>>;
  std::shared_ptr<const Metakernel> shared(std::string_view name) const;
  std::shared_ptr<const Metakernel> fused(std::string_view name) const;
  // The parts of a template named fuse(...) that a file defines (a plan embeds
  // the composed text), where this library has both.
  std::shared_ptr<const FusedSpec> fusedSpecOf(std::string_view name) const;

  KernelMap kernels_;
  // fuse(...) templates made by find; searches call find from several threads.
  struct FusedCache {
    std::mutex mutex;
    KernelMap kernels;
  };
  std::unique_ptr<FusedCache> fused_ = std::make_unique<FusedCache>();
};

} // namespace tapestry::metakernel
