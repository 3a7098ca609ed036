#include "core/diag/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "core/diag/error.hpp"
#include "core/diag/interrupt.hpp"

namespace tapestry {

namespace {

std::string temporaryNameFor(const std::filesystem::path& target) {
  std::random_device rd;
  std::ostringstream name;
  name << "." << target.filename().string() << ".tmp." << ::getpid() << "." << std::hex << rd();
  return (target.parent_path() / name.str()).string();
}

// Keeps a temporary registered with the signal handler while it exists.
class TemporaryRegistration {
public:
  explicit TemporaryRegistration(const std::string& path)
      : slot_(interrupt::registerTemporary(path.c_str())) {}
  ~TemporaryRegistration() { interrupt::unregisterTemporary(slot_); }
  TemporaryRegistration(const TemporaryRegistration&) = delete;
  TemporaryRegistration& operator=(const TemporaryRegistration&) = delete;

private:
  int slot_;
};

[[noreturn]] void failWrite(const std::string& path, const std::string& why) {
  throw Error(SourceLocation{path, 0, 0, {}}, "cannot write output file: " + why);
}

} // namespace

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& produce,
                         std::ostream& stdoutStream) {
  if (path == "-") {
    // Produce fully before writing, so an error leaves no partial document on stdout.
    std::ostringstream buffer;
    produce(buffer);
    stdoutStream << buffer.str();
    stdoutStream.flush();
    return;
  }
  std::filesystem::path target(path);
  std::error_code ec;
  if (std::filesystem::is_directory(target, ec)) {
    failWrite(path, "is a directory");
  }
  std::string tmp = temporaryNameFor(target);
  TemporaryRegistration registration(tmp);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      failWrite(path, std::strerror(errno));
    }
    try {
      produce(out);
      out.flush();
      if (!out) {
        throw Error(SourceLocation{path, 0, 0, {}}, "cannot write output file: write failed");
      }
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    failWrite(path, std::strerror(err));
  }
}

void writeFileAtomically(const std::string& path, const std::string& content,
                         std::ostream& stdoutStream) {
  writeFileAtomically(
      path, [&](std::ostream& out) { out << content; }, stdoutStream);
}

void checkWritable(const std::string& path) {
  if (path.empty() || path == "-") {
    return;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec)) {
    failWrite(path, "is a directory");
  }
  fs::path dir = target.parent_path();
  if (dir.empty()) {
    dir = ".";
  }
  if (!fs::is_directory(dir, ec)) {
    failWrite(path, std::strerror(ENOENT));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    failWrite(path, std::strerror(errno));
  }
}

} // namespace tapestry
