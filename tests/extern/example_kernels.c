/* An example library of external kernels (backends/tapestry_kernel.h), built
 * by the tests and loaded through `extern:` in a template:
 * - example_rmsnorm: the RMS norm of testdata/metakernels/my_rmsnorm.yaml, for
 *   float32 and float64 blocks of any rank and layout;
 * - example_fail: always fails, with a message (the error path). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/tapestry_kernel.h"

static const tapestry_value* find_value(const tapestry_call* call, const char* name) {
  for (int32_t i = 0; i < call->value_count; ++i) {
    if (strcmp(call->values[i].name, name) == 0) {
      return &call->values[i];
    }
  }
  return NULL;
}

static double load(const tapestry_block* b, int64_t offset) {
  return b->dtype == TAPESTRY_FLOAT32 ? (double)((const float*)b->data)[offset]
                                      : ((const double*)b->data)[offset];
}

static void store(const tapestry_block* b, int64_t offset, double v) {
  if (b->dtype == TAPESTRY_FLOAT32) {
    ((float*)b->data)[offset] = (float)v;
  } else {
    ((double*)b->data)[offset] = v;
  }
}

/* Rows are the last dim; every other dim is walked with a counter. */
int example_rmsnorm(const tapestry_call* call) {
  if (call->abi_version != TAPESTRY_KERNEL_ABI_VERSION || call->input_count != 2 ||
      call->output_count != 1) {
    snprintf(call->error, (size_t)call->error_size, "example_rmsnorm: unexpected call shape");
    return 1;
  }
  const tapestry_block* x = &call->inputs[0];
  const tapestry_block* gamma = &call->inputs[1];
  const tapestry_block* y = &call->outputs[0];
  if (x->dtype != TAPESTRY_FLOAT32 && x->dtype != TAPESTRY_FLOAT64) {
    snprintf(call->error, (size_t)call->error_size, "example_rmsnorm: float32 or float64 only");
    return 2;
  }
  const tapestry_value* eps = find_value(call, "eps");
  const double e = eps != NULL && eps->kind == TAPESTRY_VALUE_FLOAT ? eps->float_value : 1e-6;
  const int32_t rank = x->rank;
  const int64_t d = x->shape[rank - 1];
  int64_t rows = 1;
  for (int32_t k = 0; k + 1 < rank; ++k) {
    rows *= x->shape[k];
  }
  int64_t counter[16] = {0};
  if (rank > 16) {
    snprintf(call->error, (size_t)call->error_size, "example_rmsnorm: rank %d > 16", rank);
    return 3;
  }
  for (int64_t r = 0; r < rows; ++r) {
    int64_t xo = 0;
    int64_t yo = 0;
    for (int32_t k = 0; k + 1 < rank; ++k) {
      xo += counter[k] * x->strides[k];
      yo += counter[k] * y->strides[k];
    }
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double v = load(x, xo + j * x->strides[rank - 1]);
      ss += v * v;
    }
    const double scale = 1.0 / sqrt(ss / (double)d + e);
    for (int64_t j = 0; j < d; ++j) {
      const double v = load(x, xo + j * x->strides[rank - 1]);
      store(y, yo + j * y->strides[rank - 1], v * scale * load(gamma, j * gamma->strides[0]));
    }
    for (int32_t k = rank - 2; k >= 0; --k) {
      if (++counter[k] < x->shape[k]) {
        break;
      }
      counter[k] = 0;
    }
  }
  return 0;
}

int example_fail(const tapestry_call* call) {
  snprintf(call->error, (size_t)call->error_size, "example_fail: refused %s on purpose",
           call->operation);
  return 7;
}
