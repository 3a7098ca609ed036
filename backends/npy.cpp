#include "backends/npy.hpp"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry::backend {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kAlign = 64;

[[noreturn]] void fail(const std::string& name, const std::string& message) {
  throw Error(SourceLocation{name, 0, 0, {}}, message);
}

std::uint32_t readLE(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return v;
}

// A parser for the header's Python dict literal, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  struct Header {
    std::string descr;
    bool fortranOrder = false;
    std::vector<std::int64_t> shape;
  };

  Header parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::int64_t>> shape;
    skipSpace();
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = parseString();
      skipSpace();
      expect(':');
      skipSpace();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') {
          bad("'descr' must be a string (structured dtypes are not supported)");
        }
        descr = parseString();
      } else if (key == "fortran_order") {
        fortran = parseBool();
      } else if (key == "shape") {
        shape = parseShape();
      } else {
        bad("unexpected key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        bad("expected ',' or '}' at byte " + std::to_string(pos_) + " of the header");
      }
    }
    skipSpace();
    if (pos_ != text_.size()) {
      bad("unexpected text after the dict");
    }
    if (!descr || !fortran || !shape) {
      bad("expected the keys 'descr', 'fortran_order' and 'shape'");
    }
    return Header{*descr, *fortran, *shape};
  }

private:
  [[noreturn]] void bad(const std::string& why) const { fail(name_, "bad .npy header: " + why); }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  void expect(char c) {
    if (peek() != c) {
      bad(std::string("expected '") + c + "' at byte " + std::to_string(pos_) + " of the header");
    }
    ++pos_;
  }
  std::string parseString() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') {
      bad("expected a quoted key at byte " + std::to_string(pos_) + " of the header");
    }
    ++pos_;
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) {
      bad("unterminated string");
    }
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool parseBool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("'fortran_order' must be True or False");
  }
  std::vector<std::int64_t> parseShape() {
    expect('(');
    std::vector<std::int64_t> dims;
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos_;
        return dims;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        bad("'shape' must be a tuple of non-negative integers");
      }
      std::int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        v = checkedAdd(checkedMul(v, 10), peek() - '0');
        ++pos_;
      }
      if (peek() == 'L') { // Python 2 longs
        ++pos_;
      }
      dims.push_back(v);
      skipSpace();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        bad("'shape' must be a tuple of non-negative integers");
      }
    }
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

std::optional<DType> dtypeOfDescr(std::string_view descr) {
  static const std::map<std::string_view, DType> known = {
      {"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<f2", DType::Float16},
      {"<i4", DType::Int32},   {"<i8", DType::Int64},   {"<u2", DType::BFloat16},
      {"|b1", DType::Bool}};
  auto it = known.find(descr);
  return it == known.end() ? std::nullopt : std::optional<DType>(it->second);
}

} // namespace

std::string npyFileName(std::string_view name) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string file;
  file.reserve(name.size() + 4);
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (plain) {
      file += c;
    } else {
      file += '%';
      file += kHex[u >> 4];
      file += kHex[u & 0xF];
    }
  }
  return file + ".npy";
}

std::string pythonShape(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  out += shape.size() == 1 ? ",)" : ")";
  return out;
}

const char* npyDescr(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "<f4";
  case DType::Float64:
    return "<f8";
  case DType::Float16:
    return "<f2";
  case DType::BFloat16:
    return "<u2";
  case DType::Int32:
    return "<i4";
  case DType::Int64:
    return "<i8";
  case DType::Bool:
    break;
  }
  return "|b1";
}

namespace {

// What a .npy file's prefix (magic, version, header) says: the array's
// descr, dtype and shape, and where its data starts.
struct NpyLayout {
  std::string descr;
  DType dtype = DType::Float32;
  ZRange region;
  std::size_t dataOffset = 0;
  std::int64_t dataBytes = 0;
};

// The bytes a prefix needs before its header can be read: the magic and
// version, then the header length's field.
constexpr std::size_t kLengthAt = kMagicLen + 2;

// Parses the prefix of a file of `fileSize` bytes whose first bytes are
// `bytes` (at least up to the end of its header, or the whole file where it
// is shorter), and checks that the data that follows has the size its shape
// and dtype need.
NpyLayout parseNpyPrefix(std::string_view bytes, std::size_t fileSize, const std::string& name) {
  if (fileSize < kLengthAt || bytes.substr(0, kMagicLen) != std::string_view(kMagic)) {
    fail(name, "not a NumPy .npy file (no \\x93NUMPY magic string)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  }
  const std::size_t lenWidth = major == 1 ? 2 : 4;
  const std::size_t prefix = kLengthAt + lenWidth;
  if (fileSize < prefix) {
    fail(name, "truncated .npy header: the file ends after " + std::to_string(fileSize) + " bytes");
  }
  const std::size_t headerLen = readLE(bytes, kLengthAt, lenWidth);
  if (fileSize < prefix + headerLen || bytes.size() < prefix + headerLen) {
    fail(name, "truncated .npy header: it declares " + std::to_string(headerLen) +
                   " bytes but the file ends after " + std::to_string(fileSize - prefix));
  }
  const HeaderParser::Header header = HeaderParser(bytes.substr(prefix, headerLen), name).parse();
  if (header.fortranOrder) {
    fail(name, "Fortran-order arrays are not supported (save a C-order array, e.g. with "
               "np.ascontiguousarray)");
  }
  std::optional<DType> dtype = dtypeOfDescr(header.descr);
  if (!dtype) {
    fail(name, "unsupported dtype '" + header.descr +
                   "' (supported: '<f4', '<f8', '<f2', '<i4', '<i8', '|b1', and '<u2' for "
                   "bfloat16)");
  }
  NpyLayout out;
  out.descr = header.descr;
  out.dtype = *dtype;
  out.region = ZRange::fromShape(ZPoint(header.shape));
  out.dataOffset = prefix + headerLen;
  out.dataBytes = checkedMul(out.region.size(), static_cast<std::int64_t>(dtypeSize(*dtype)));
  const auto found = static_cast<std::int64_t>(fileSize - out.dataOffset);
  if (found != out.dataBytes) {
    fail(name, std::string(found < out.dataBytes ? "truncated data" : "unexpected trailing data") +
                   ": shape " + pythonShape(header.shape) + " of '" + header.descr + "' needs " +
                   std::to_string(out.dataBytes) + " bytes after the header, the file has " +
                   std::to_string(found));
  }
  return out;
}

// NumPy writes 0 and 1 for bool; any other byte is true, as NumPy reads it.
void normalizeBools(NpyArray& a) {
  if (a.buffer.dtype() == DType::Bool) {
    for (Bool& b : a.buffer.elements<Bool>()) {
      b.bits = b.bits != 0 ? 1 : 0;
    }
  }
}

} // namespace

NpyArray decodeNpy(std::string_view bytes, const std::string& name) {
  const NpyLayout layout = parseNpyPrefix(bytes, bytes.size(), name);
  NpyArray out{layout.descr, Buffer::hostUninitialized(layout.dtype, layout.region)};
  if (layout.dataBytes > 0) {
    std::memcpy(out.buffer.data(), bytes.data() + layout.dataOffset,
                static_cast<std::size_t>(layout.dataBytes));
  }
  normalizeBools(out);
  return out;
}

// Reads the prefix, then the data straight into the array's buffer: a
// ResNet-50's weights went through a string stream, its copy and the buffer
// (four passes over 100 MB, and the page faults of each) before.
NpyArray readNpy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    fail(path, "is a directory, expected a .npy file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail(path, std::string("cannot open file: ") + std::strerror(errno));
  }
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  in.seekg(0, std::ios::beg);
  if (end < 0 || !in) {
    fail(path, "cannot read file");
  }
  const auto fileSize = static_cast<std::size_t>(end);
  // The magic, version and length field, then as much more as the length says.
  std::string head(std::min(fileSize, kLengthAt + 4), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (fileSize >= kLengthAt + 2 && head.compare(0, kMagicLen, kMagic, kMagicLen) == 0) {
    const int major = static_cast<unsigned char>(head[6]);
    const std::size_t lenWidth = major == 1 ? 2 : 4;
    if (major >= 1 && major <= 3 && head.size() >= kLengthAt + lenWidth) {
      const std::size_t want =
          std::min(fileSize, kLengthAt + lenWidth + readLE(head, kLengthAt, lenWidth));
      if (want > head.size()) {
        const std::size_t had = head.size();
        head.resize(want);
        in.read(head.data() + had, static_cast<std::streamsize>(want - had));
      }
    }
  }
  if (in.bad()) {
    fail(path, "cannot read file");
  }
  const NpyLayout layout = parseNpyPrefix(head, fileSize, path);
  NpyArray out{layout.descr, Buffer::hostUninitialized(layout.dtype, layout.region)};
  if (layout.dataBytes > 0) {
    in.seekg(static_cast<std::streamoff>(layout.dataOffset), std::ios::beg);
    in.read(reinterpret_cast<char*>(out.buffer.data()),
            static_cast<std::streamsize>(layout.dataBytes));
    if (!in || in.gcount() != static_cast<std::streamsize>(layout.dataBytes)) {
      fail(path, "cannot read file");
    }
  }
  normalizeBools(out);
  return out;
}

std::string npyHeader(DType dtype, const std::vector<std::int64_t>& shape) {
  return npyHeader(std::string(npyDescr(dtype)), shape);
}

std::optional<std::string> npyDescrOf(std::string_view dtype) {
  if (std::optional<DType> d = findDType(dtype)) {
    return std::string(npyDescr(*d));
  }
  static const std::map<std::string_view, const char*> others = {
      {"bool", "|b1"},  {"int8", "|i1"},   {"uint8", "|u1"},
      {"int16", "<i2"}, {"uint32", "<u4"}, {"uint64", "<u8"}};
  auto it = others.find(dtype);
  return it == others.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void writeNpyBytes(const std::string& path, const std::string& descr,
                   const std::vector<std::int64_t>& shape, const std::string& bytes) {
  std::ostringstream noStdout;
  writeFileAtomically(path, npyHeader(descr, shape) + bytes, noStdout);
}

std::string npyHeader(const std::string& descr, const std::vector<std::int64_t>& shape) {
  // NumPy's format.py: the dict repr, then spaces and '\n' so that the whole
  // header (magic, version, length, dict) is a multiple of 64 bytes.
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + pythonShape(shape) + ", }";
  const std::size_t hlen = dict.size() + 1;
  std::size_t lenWidth = 2;
  int major = 1;
  if (hlen + kAlign > 65535) {
    lenWidth = 4;
    major = 2;
  }
  const std::size_t padlen = kAlign - ((kMagicLen + 2 + lenWidth + hlen) % kAlign);
  const std::size_t total = hlen + padlen;
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < lenWidth; ++i) {
    out += static_cast<char>((total >> (8 * i)) & 0xFF);
  }
  out += dict;
  out.append(padlen, ' ');
  out += '\n';
  return out;
}

std::string encodeNpy(const TensorView& view) {
  const std::vector<std::int64_t> shape = view.region.shape().vector();
  std::string out = npyHeader(view.dtype, shape);
  Buffer dense = Buffer::host(view.dtype, view.region); // row-major over the same region
  copyHostRegion(view, dense.view(), view.region);
  out.append(reinterpret_cast<const char*>(dense.data()),
             static_cast<std::size_t>(dense.byteSize()));
  return out;
}

void writeNpy(const std::string& path, const TensorView& view) {
  if (path == "-") {
    throw InternalError("writeNpy: .npy data goes to files, not to standard output");
  }
  std::ostringstream noStdout; // "-" is refused above
  writeFileAtomically(path, encodeNpy(view), noStdout);
}

} // namespace tapestry::backend
