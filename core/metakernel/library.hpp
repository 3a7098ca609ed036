// The metakernel library: the standard library embedded at build time (every
// metakernels/*.yaml) plus the user's -k files and directories.
#pragma once

#include <map>
#include <memory>
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

  const Metakernel* find(std::string_view name) const;
  // Throws Error "unknown kernel \"x\" (known: a, b, ...)" when absent.
  const Metakernel& get(std::string_view name) const;
  // All kernels, sorted by name.
  std::vector<const Metakernel*> kernels() const;
  std::size_t size() const { return kernels_.size(); }

private:
  std::map<std::string, std::shared_ptr<const Metakernel>, std::less<>> kernels_;
};

} // namespace tapestry::metakernel
