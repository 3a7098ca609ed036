// A shared library opened at run time (dlopen) and its functions bound to
// typed pointers: how the CUDA backend reaches cuBLASLt and NCCL without a
// load-time dependency, so the binary starts on machines without them.
#pragma once

#include <cstring>
#include <initializer_list>
#include <string>

#include <dlfcn.h>

namespace tapestry::cuda {

class DynamicLibrary {
public:
  // Opens the first of `names` that loads: each from `dir` first (when not
  // null), then by the loader's search path. error() says why none did.
  DynamicLibrary(std::initializer_list<std::string> names, const char* dir) {
    for (const std::string& name : names) {
      if (handle_ == nullptr && dir != nullptr) {
        handle_ = dlopen((std::string(dir) + "/" + name).c_str(), RTLD_NOW);
      }
      if (handle_ == nullptr) {
        handle_ = dlopen(name.c_str(), RTLD_NOW);
      }
    }
    name_ = *names.begin();
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = "cannot load " + name_ + (why != nullptr ? std::string(": ") + why : "");
    }
  }

  // Points `fn` at `symbol`; a missing one is the error (the first one counts).
  template <class Fn> void bind(Fn& fn, const char* symbol) {
    if (handle_ == nullptr) {
      return;
    }
    void* address = dlsym(handle_, symbol);
    if (address == nullptr) {
      if (error_.empty()) {
        error_ = name_ + " has no " + symbol;
      }
      return;
    }
    static_assert(sizeof(fn) == sizeof(address));
    std::memcpy(&fn, &address, sizeof fn); // object to function pointer, without a cast
  }

  // Why the library or one of its functions is missing; "" when all is bound.
  const std::string& error() const { return error_; }

private:
  void* handle_ = nullptr; // never closed: bound pointers live as long as the process
  std::string name_;
  std::string error_;
};

} // namespace tapestry::cuda
