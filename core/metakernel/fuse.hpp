// Fused kernels composed from two templates: `fuse(P, C)` and `fuse(P, C.PORT)`
// name the kernel that runs P, then C on P's result (read through C's input
// PORT; default: C's first input), as one operation. The library makes the
// template on first use (MetakernelLibrary::find) from P's and C's:
// - the index space, inputs, lets and where clauses are P's; C's other inputs
//   follow, named C_PORT, with C's variables and params renamed C_NAME;
// - C's variables bound by the fused port are lets of P's output shape and
//   dtype, and a where clause checks that C's index space is that shape;
// - C's other inputs' IPFs are C's with `@` replaced by P's output IPF (an
//   affine map composed with an affine map stays affine), and the output's IPF
//   is P's;
// - the output has no combine: splitting a reduction dim of P would apply C to
//   partial sums, so a plan may not split one (relu(a) + relu(b) != relu(a + b));
// - flops per index point are P's plus C's spread over P's points;
// - the body is P's, its result renamed, then C's (none unless both have one:
//   a backend then runs P's kernel, then C's in place on the result).
// C must read the fused port element by element (an identity IPF, or NumPy
// broadcasting that the where clause turns into one), and P's output must be
// one element per index point. P may itself be a fuse(...) kernel.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/metakernel/metakernel.hpp"

namespace tapestry::metakernel {

struct FuseName {
  std::string producer; // a kernel name, or a nested fuse(...)
  std::string consumer; // a kernel name
  std::string port;     // the consumer's input that reads the producer's result; "" = its first
};

// The parts of a name spelled fuse(P, C) or fuse(P, C.PORT), or nullopt when
// `name` is not of that form. The consumer's text is returned whole in
// `consumer` (with `port` empty): a kernel name may itself contain '.', so
// the library splits off a port only when the whole is not a kernel.
std::optional<FuseName> parseFuseName(std::string_view name);

// The one spelling of a fused kernel's name: "fuse(P, C)" or "fuse(P, C.PORT)".
std::string fuseName(const FuseName& parts);

// The prefix of the consumer's other inputs, params and variables in the
// composed template: its name with '.' as '_', then '_' ("add_", "clip_").
std::string fusePrefix(std::string_view consumer);

// True for a name the loader accepts as a kernel name because it spells
// fuse(...) exactly (a -k file or a plan may define one).
bool isFuseKernelName(std::string_view name);

// The YAML text of the template `name` (fuse(P, C[.PORT])), composed from P and
// C. Throws Error saying why the two do not compose.
std::string fusedTemplateText(const std::string& name, const Metakernel& producer,
                              const Metakernel& consumer, const std::string& port);

} // namespace tapestry::metakernel
