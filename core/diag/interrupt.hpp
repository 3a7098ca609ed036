// SIGINT/SIGTERM handling (SPEC §2 exit codes, issue 9): no partial output
// files, ever, and a graceful stop where a command can use one.
//
// - Every temporary file of the atomic writer is registered here while it
//   exists; a signal that terminates the process unlinks it first, so an
//   interrupted write leaves neither a partial target nor a stray temporary.
// - A command that can stop gracefully (optimize) holds a Deferral: the first
//   SIGINT/SIGTERM only sets requested(); the command finishes what it has and
//   exits 130. A second signal terminates at once (after the cleanup above).
//
// install() is called by the CLI's main(); library code and tests that never
// call it see no handlers and requested() stays false.
#pragma once

#include <atomic>

namespace tapestry::interrupt {

// Installs the handlers for SIGINT and SIGTERM (idempotent).
void install();

// Set by the first signal while a Deferral is alive (never reset in a process).
const std::atomic<bool>& requested();

// While alive, the first SIGINT/SIGTERM sets requested() instead of terminating.
class Deferral {
public:
  Deferral();
  ~Deferral();
  Deferral(const Deferral&) = delete;
  Deferral& operator=(const Deferral&) = delete;
};

// The atomic writer's temporaries. registerTemporary returns a slot (or -1
// when all slots are taken: the file is then simply not cleaned up on a signal).
int registerTemporary(const char* path);
void unregisterTemporary(int slot);

} // namespace tapestry::interrupt
