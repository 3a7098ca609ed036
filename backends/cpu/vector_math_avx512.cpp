// The vector_math.hpp loops for AVX-512 F (-mavx512f -mavx2 -mfma).
#define TAPESTRY_VM_LEVEL 3
#include "backends/cpu/vector_math_impl.hpp"
