// Atomic output files: content goes to a temporary file beside the target and is
// renamed over it only when complete, so an error never leaves a partial file.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace tapestry {

// Writes `content` to `path` atomically ("-" writes to `stdoutStream`).
// Throws Error (exit 1) naming the path when it cannot be written.
void writeFileAtomically(const std::string& path, const std::string& content,
                         std::ostream& stdoutStream);

// Calls `produce` with a stream for the temporary file; renames on success. When
// `produce` throws, the temporary file is removed and the exception propagates.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& produce,
                         std::ostream& stdoutStream);

// Fails early, before long work, when `path` could not be written later: it is
// a directory, its directory does not exist or is not writable. The same Error
// (exit 1) writeFileAtomically would give. "" and "-" pass.
void checkWritable(const std::string& path);

} // namespace tapestry
