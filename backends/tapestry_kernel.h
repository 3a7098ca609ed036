/* The C ABI of external kernels (docs/language.md#external-kernels).
 *
 * A metakernel template may bind its kernel to a function in a shared library:
 *
 *     extern: {library: libmykernels.so, symbol: my_rmsnorm}
 *
 * (a relative library path is relative to the YAML file's directory). The CPU
 * backend loads the library once (dlopen), looks the symbol up (dlsym), and
 * calls it once per shard, from the worker thread of the shard's device;
 * shards of different devices may run at once, so the function must be
 * thread-safe. A native kernel of the same name wins over an extern one, and
 * an extern one over the template's body; when the template has a body too,
 * the tests compare the two.
 *
 * The function gets one shard, as the body does: per port and per tensor of
 * the port, the *block* the shard's IPF selects (its part of an output, or its
 * partial for an output with a combine). It must write every element of each
 * output block and nothing else, and must not keep any pointer after it
 * returns. It returns 0 on success; on failure it writes a message (at most
 * error_size bytes, NUL included) to `error` and returns non-zero, which stops
 * the run with exit code 1 and that message.
 *
 * This header is plain C99; include it from C or C++.
 */
#ifndef TAPESTRY_KERNEL_H
#define TAPESTRY_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI; tapestry_call.abi_version holds it. */
#define TAPESTRY_KERNEL_ABI_VERSION 1

/* Element types (tapestry_block.dtype). float16 and bfloat16 are stored as
 * their 16-bit patterns (IEEE binary16; the top half of a float32); bool is
 * one byte holding 0 or 1. */
enum tapestry_dtype {
  TAPESTRY_FLOAT32 = 0,
  TAPESTRY_FLOAT64 = 1,
  TAPESTRY_FLOAT16 = 2,
  TAPESTRY_BFLOAT16 = 3,
  TAPESTRY_INT32 = 4,
  TAPESTRY_INT64 = 5,
  TAPESTRY_BOOL = 6
};

/* One block: the elements of the tensor at tensor coordinates
 * start[d] <= p[d] < start[d] + shape[d]. The element at p sits at
 * data + sum_d (p[d] - start[d]) * strides[d] elements (not bytes). A list
 * port's element that the shard does not reach has data == NULL and a zero
 * in shape. */
typedef struct tapestry_block {
  void* data;             /* the element at `start` */
  int32_t dtype;          /* enum tapestry_dtype */
  int32_t rank;           /* dims */
  const int64_t* shape;   /* rank extents */
  const int64_t* strides; /* rank strides, in elements */
  const int64_t* start;   /* rank coordinates of the block's first element */
} tapestry_block;

/* Value kinds of tapestry_value.kind. */
enum tapestry_value_kind {
  TAPESTRY_VALUE_INT = 0,    /* int_value (a bool is 0 or 1) */
  TAPESTRY_VALUE_FLOAT = 1,  /* float_value (a float param, such as eps) */
  TAPESTRY_VALUE_INTS = 2,   /* ints[0 .. count-1] */
  TAPESTRY_VALUE_STRING = 3  /* string (a dtype name, such as "float32") */
};

/* A binding or param of the operation ($name in the template): params,
 * pattern variables, `let` values and $index. Lists of lists are left out. */
typedef struct tapestry_value {
  const char* name; /* without '$' */
  int32_t kind;     /* enum tapestry_value_kind */
  int64_t int_value;
  double float_value;
  const int64_t* ints;
  int64_t count;
  const char* string;
} tapestry_value;

typedef struct tapestry_call {
  int32_t abi_version; /* TAPESTRY_KERNEL_ABI_VERSION */
  const char* kernel;    /* the template's name */
  const char* operation; /* the graph operation's name */
  /* The shard's index range: index_start[d] <= i[d] < index_end[d]. */
  int32_t index_rank;
  const int64_t* index_start;
  const int64_t* index_end;
  /* Every tensor of every input port in template order (a list port gives
   * one block per tensor), then the same for outputs. */
  int32_t input_count;
  const tapestry_block* inputs;
  int32_t output_count;
  const tapestry_block* outputs;
  int32_t value_count;
  const tapestry_value* values;
  /* Where a failing kernel writes its message. */
  char* error;
  int64_t error_size;
} tapestry_call;

/* The signature every extern kernel has. */
typedef int (*tapestry_kernel_fn)(const tapestry_call* call);

#ifdef __cplusplus
}
#endif

#endif /* TAPESTRY_KERNEL_H */
