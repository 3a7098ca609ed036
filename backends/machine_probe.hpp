// The GPU probe of the `local` target (core/cost, which knows no GPU API):
// with the CUDA backend built, the CUDA runtime's devices; without it, none
// ("built without CUDA").
#pragma once

namespace tapestry::backend {

// Installs the probe into core/cost; call before anything reads `local` (the
// CLI does at start; run and bench do too). Idempotent.
void installGpuProbe();

} // namespace tapestry::backend
