// The vector_math.hpp loops for SSE2, every x86-64 CPU has it; the default flags.
#define TAPESTRY_VM_LEVEL 1
#include "backends/cpu/vector_math_impl.hpp"
