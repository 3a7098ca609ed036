// The vector_math.hpp loops for AVX2 with FMA (-mavx2 -mfma).
#define TAPESTRY_VM_LEVEL 2
#include "backends/cpu/vector_math_impl.hpp"
