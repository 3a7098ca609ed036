// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the format of
// `run --inputs DIR` / `--outputs DIR`: one array per file, C order.
//
// dtypes: '<f4' float32, '<f8' float64, '<f2' float16, '<i4' int32, '<i8' int64,
// '|b1' bool (one byte, 0 or 1; a nonzero byte reads as 1).
// NumPy has no bfloat16, so a bfloat16 tensor is written as '<u2' holding the
// raw bfloat16 bit patterns (np.load gives uint16; `(a.astype(np.uint32) << 16)
// .view(np.float32)` recovers the values), and a '<u2' file is read as bfloat16.
// Fortran-order arrays, big-endian and other dtypes are errors, as are bad or
// truncated headers and data of the wrong length, each located at the file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace tapestry::backend {

struct NpyArray {
  std::string descr; // as the header gives it: "<f4", "<u2", ...
  Buffer buffer;     // host memory over [0, shape), row-major
};

// Decodes the bytes of a .npy file; `name` locates errors ("x.npy: error: ...").
NpyArray decodeNpy(std::string_view bytes, const std::string& name);
// Reads and decodes a file (Error "cannot open file" when it cannot be read).
NpyArray readNpy(const std::string& path);

// The descr a dtype is written with ("<f4"; bfloat16: "<u2").
const char* npyDescr(DType dtype);
// The header NumPy writes for an array (magic, version, length, the dict padded
// with spaces to a multiple of 64 bytes, '\n'): version 1.0, or 2.0 when the
// dict does not fit in 65535 bytes.
std::string npyHeader(DType dtype, const std::vector<std::int64_t>& shape);
std::string npyHeader(const std::string& descr, const std::vector<std::int64_t>& shape);

// The descr a .npy file of graph dtype `dtype` has: npyDescr's for the dtypes
// the backends execute, and '|b1' bool, '|i1' int8, '|u1' uint8, '<i2' int16,
// '<u4' uint32, '<u8' uint64, which only `import --weights` writes (for NumPy
// and the like; `run --inputs` reads the executable ones). nullopt for the
// rest (uint16, since '<u2' means bfloat16 here; complex; float8).
std::optional<std::string> npyDescrOf(std::string_view dtype);
// Writes a .npy file of C-order little-endian `bytes` atomically.
void writeNpyBytes(const std::string& path, const std::string& descr,
                   const std::vector<std::int64_t>& shape, const std::string& bytes);

// The whole file for a host view (its region's shape, C order).
std::string encodeNpy(const TensorView& view);
// Writes encodeNpy(view) to `path` atomically (temporary file, then rename).
void writeNpy(const std::string& path, const TensorView& view);

// The file name of tensor `name` in an --inputs, --outputs or --weights
// directory (SPEC §5.1): NAME percent-encoded, every byte outside
// `A-Z a-z 0-9 . _ -` as `%XX` (upper-case hex), then ".npy". Names of the
// old rule ([A-Za-z_][A-Za-z0-9_.]*) are unchanged: "x" -> "x.npy",
// "onnx::Conv_1" -> "onnx%3A%3AConv_1.npy".
std::string npyFileName(std::string_view name);

// "(4, 8)", "(5,)", "()": a shape as NumPy prints it.
std::string pythonShape(const std::vector<std::int64_t>& shape);

} // namespace tapestry::backend
