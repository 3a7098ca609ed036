// The JSON parser behind Document::parse: iterative, with located errors and
// a position for every value.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "core/diag/utf8.hpp"
#include "core/json/json_internal.hpp"

namespace tapestry::json::detail {

namespace {

// The storage behind an ordered_json object: appending to it directly skips
// ordered_map::emplace's linear duplicate search (the parser checks duplicates itself).
using ObjectStorage = Json::object_t::Container;

constexpr std::size_t kLinearKeySearch = 8; // objects larger than this get a hash index

std::string hexByte(unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  out += kDigits[byte >> 4];
  out += kDigits[byte & 0xf];
  return out;
}

void appendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

bool isDigit(int c) {
  return c >= '0' && c <= '9';
}
bool isWordChar(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c) || c == '_';
}

// One open object or array. Frames are reused across containers at the same
// depth, so their buffers keep their capacity.
struct Frame {
  bool isObject = false;
  Json* target = nullptr; // where the finished container goes
  std::size_t entry = 0;  // the container's entry in the position table
  std::size_t count = 0;  // array elements so far
  // Object members are collected here and moved into the ordered_map on close:
  // pair<const string, Json> is copied, not moved, when a vector of it grows.
  std::vector<std::pair<std::string, Json>> members;
  std::vector<std::size_t> keyOffsets;                   // of each member's key
  std::unordered_map<std::string, std::size_t> keyIndex; // only past kLinearKeySearch
};

// An iterative recursive-descent parser: open containers live on an explicit
// stack, so hostile nesting costs a clean error, not the C++ stack.
class Parser {
public:
  Parser(const SourceFile& source, const ParseOptions& options, PositionTable& positions)
      : source_(source), text_(source.text()), options_(options), positions_(positions) {}

  Json run() {
    // A UTF-8 byte order mark is skipped (editors on Windows write one); offsets
    // and columns still count its bytes.
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") {
      pos_ = 3;
    }
    skipWhitespace();
    if (pos_ == text_.size()) {
      fail(0, "empty file: expected a JSON value");
    }
    Json root;
    Json* slot = &root;
    positions_.addRoot(pos_);
    for (;;) {
      // A value starts here; its position is already recorded.
      int c = peek();
      if (c == '{' || c == '[') {
        openContainer(c == '{', slot);
        skipWhitespace();
        Frame& frame = frames_[depth_ - 1];
        if (peek() != (frame.isObject ? '}' : ']')) {
          slot = frame.isObject ? beginMember(frame) : beginElement(frame);
          continue;
        }
        ++pos_;
        closeContainer();
      } else {
        parseScalar(*slot);
      }
      // The value is complete: close containers until one takes another element.
      for (;;) {
        skipWhitespace();
        if (depth_ == 0) {
          if (pos_ != text_.size()) {
            unexpected(pos_, "unexpected content after the JSON value");
          }
          return root;
        }
        Frame& frame = frames_[depth_ - 1];
        char close = frame.isObject ? '}' : ']';
        int next = peek();
        if (next == ',') {
          std::size_t comma = pos_++;
          skipWhitespace();
          if (peek() == close) {
            fail(comma, std::string("trailing comma before '") + close + "' is not allowed");
          }
          slot = frame.isObject ? beginMember(frame) : beginElement(frame);
          break;
        }
        if (next == close) {
          ++pos_;
          closeContainer();
          continue;
        }
        unexpected(pos_, frame.isObject ? "expected ',' or '}' after object member"
                                        : "expected ',' or ']' after array element");
      }
    }
  }

private:
  int peek() const { return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1; }

  void skipWhitespace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        break;
      }
      ++pos_;
    }
  }

  [[noreturn]] void fail(std::size_t at, const std::string& message) const {
    if (at >= text_.size()) {
      // End of input: point just after the last token rather than at an empty last line.
      at = text_.find_last_not_of(" \t\r\n");
      at = at == std::string_view::npos ? 0 : at + 1;
    }
    Diagnostic diagnostic;
    diagnostic.location = source_.locationOf(at);
    diagnostic.message = message;
    diagnostic.snippet = source_.snippetAt(diagnostic.location.line, diagnostic.location.column);
    throw Error(std::move(diagnostic), ExitCode::InvalidInput);
  }

  [[noreturn]] void failInvalidUtf8(std::size_t at) const {
    fail(at, "invalid UTF-8 byte " + hexByte(static_cast<unsigned char>(text_[at])));
  }

  // Fails at an unexpected byte, naming comments and invalid UTF-8 before `expected`.
  [[noreturn]] void unexpected(std::size_t at, const std::string& expected) const {
    if (at < text_.size()) {
      char c = text_[at];
      if (c == '/' && at + 1 < text_.size() && (text_[at + 1] == '/' || text_[at + 1] == '*')) {
        fail(at, "comments are not allowed in JSON");
      }
      if (static_cast<unsigned char>(c) >= 0x80 && utf8SequenceLength(text_, at) == 0) {
        failInvalidUtf8(at);
      }
    }
    fail(at, expected);
  }

  // What stands at `at`, for "got ..." in messages.
  std::string describeAt(std::size_t at) const {
    if (at >= text_.size()) {
      return "end of input";
    }
    auto c = static_cast<unsigned char>(text_[at]);
    if (c >= 0x80) {
      std::size_t length = utf8SequenceLength(text_, at);
      return "'" + std::string(text_.substr(at, length)) + "'";
    }
    if (c < 0x20 || c == 0x7f) {
      return "byte " + hexByte(c);
    }
    return std::string("'") + static_cast<char>(c) + "'";
  }

  [[noreturn]] void unexpectedValue(std::size_t at) const {
    int c = at < text_.size() ? static_cast<unsigned char>(text_[at]) : -1;
    if (c == '\'') {
      fail(at, "strings must use double quotes, not single quotes");
    }
    if (isWordChar(c)) {
      std::size_t end = at;
      while (end < text_.size() && isWordChar(static_cast<unsigned char>(text_[end]))) {
        ++end;
      }
      std::string word(text_.substr(at, end - at));
      if (word == "NaN" || word == "Infinity") {
        fail(at, word + " is not allowed in JSON");
      }
      std::string lower;
      for (char ch : word) {
        lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      }
      if (word.size() > 20) {
        word = word.substr(0, 20) + "...";
      }
      std::string message = "expected a JSON value, got '" + word + "'";
      if (lower == "true" || lower == "false" || lower == "null") {
        message += " (JSON literals are lowercase: " + lower + ")";
      }
      fail(at, message);
    }
    std::string message = "expected a JSON value, got " + describeAt(at);
    if (c == '+' || c == '.') {
      message += " (numbers must start with a digit or '-')";
    }
    unexpected(at, message);
  }

  void openContainer(bool isObject, Json* slot) {
    if (depth_ >= static_cast<std::size_t>(std::max(options_.maxDepth, 0))) {
      fail(pos_, "nesting deeper than " + std::to_string(options_.maxDepth) + " levels");
    }
    if (frames_.size() == depth_) {
      frames_.emplace_back();
    }
    Frame& frame = frames_[depth_++];
    frame.isObject = isObject;
    frame.target = slot;
    frame.entry = positions_.lastEntry();
    frame.count = 0;
    frame.members.clear();
    frame.keyOffsets.clear();
    frame.keyIndex.clear();
    if (!isObject) {
      *slot = Json::array();
    }
    ++pos_;
  }

  void closeContainer() {
    Frame& frame = frames_[--depth_];
    if (frame.isObject) {
      Json object(Json::value_t::object);
      auto& storage = static_cast<ObjectStorage&>(object.get_ref<Json::object_t&>());
      storage.reserve(frame.members.size());
      for (auto& [key, value] : frame.members) {
        storage.emplace_back(std::move(key), std::move(value));
      }
      frame.members.clear();
      *frame.target = std::move(object);
    }
  }

  Json* beginElement(Frame& frame) {
    positions_.addElement(frame.entry, frame.count++, pos_);
    auto& array = frame.target->get_ref<Json::array_t&>();
    array.emplace_back();
    return &array.back();
  }

  std::optional<std::size_t> findKey(const Frame& frame, const std::string& key) const {
    if (frame.members.size() <= kLinearKeySearch) {
      for (std::size_t i = 0; i < frame.members.size(); ++i) {
        if (frame.members[i].first == key) {
          return i;
        }
      }
      return std::nullopt;
    }
    auto it = frame.keyIndex.find(key);
    return it == frame.keyIndex.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  }

  // Reads `"key" :` and returns the slot for the member's value.
  Json* beginMember(Frame& frame) {
    int c = peek();
    if (c != '"') {
      if (c == '\'') {
        fail(pos_, "strings must use double quotes, not single quotes");
      }
      unexpected(pos_, "expected a string key");
    }
    std::size_t keyOffset = pos_;
    std::string key;
    parseString(key);

    std::optional<std::size_t> previous = findKey(frame, key);
    if (previous && options_.rejectDuplicateKeys) {
      SourceLocation first = source_.locationOf(frame.keyOffsets[*previous]);
      fail(keyOffset, "duplicate key " + jsonQuoted(key) + " (first defined at line " +
                          std::to_string(first.line) + ", column " + std::to_string(first.column) +
                          ")");
    }
    skipWhitespace();
    if (peek() != ':') {
      unexpected(pos_, "expected ':' after object key");
    }
    ++pos_;
    skipWhitespace();
    positions_.addMember(frame.entry, key, pos_);
    if (previous) {
      // Duplicates allowed: the last value wins, in the first one's place.
      Json& value = frame.members[*previous].second;
      value = Json();
      return &value;
    }
    std::size_t index = frame.members.size();
    if (index == kLinearKeySearch) {
      for (std::size_t i = 0; i < index; ++i) {
        frame.keyIndex.emplace(frame.members[i].first, i);
      }
    }
    if (index >= kLinearKeySearch) {
      frame.keyIndex.emplace(key, index);
    }
    frame.keyOffsets.push_back(keyOffset);
    frame.members.emplace_back(std::move(key), Json());
    return &frame.members.back().second;
  }

  void parseScalar(Json& out) {
    int c = peek();
    if (c == '"') {
      out = Json(Json::value_t::string);
      parseString(out.get_ref<std::string&>());
    } else if (c == '-' || isDigit(c)) {
      parseNumber(out);
    } else if (matchLiteral("true")) {
      out = true;
    } else if (matchLiteral("false")) {
      out = false;
    } else if (matchLiteral("null")) {
      out = nullptr;
    } else {
      unexpectedValue(pos_);
    }
  }

  bool matchLiteral(std::string_view literal) {
    if (text_.compare(pos_, literal.size(), literal) != 0) {
      return false;
    }
    std::size_t end = pos_ + literal.size();
    if (end < text_.size() && isWordChar(static_cast<unsigned char>(text_[end]))) {
      return false;
    }
    pos_ = end;
    return true;
  }

  // Reads a string starting at the opening quote, appending its decoded text to `out`.
  void parseString(std::string& out) {
    std::size_t open = pos_++;
    for (;;) {
      // Copy plain ASCII in runs.
      std::size_t run = pos_;
      while (pos_ < text_.size()) {
        auto c = static_cast<unsigned char>(text_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) {
          break;
        }
        ++pos_;
      }
      out.append(text_.data() + run, pos_ - run);
      if (pos_ >= text_.size()) {
        fail(open, "unterminated string");
      }
      auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\') {
        parseEscape(out, open);
      } else if (c == '\n' || c == '\r') {
        fail(pos_, "unterminated string: line break before the closing quote");
      } else if (c < 0x20) {
        fail(pos_, "unescaped control character " + hexByte(c) + " in string");
      } else {
        std::size_t length = utf8SequenceLength(text_, pos_);
        if (length == 0) {
          failInvalidUtf8(pos_);
        }
        out.append(text_.data() + pos_, length);
        pos_ += length;
      }
    }
  }

  // Four hex digits at `at`, or -1.
  long readHex4(std::size_t at) const {
    if (at + 4 > text_.size()) {
      return -1;
    }
    long value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      int digit = hexValue(text_[at + i]);
      if (digit < 0) {
        return -1;
      }
      value = value * 16 + digit;
    }
    return value;
  }

  void parseEscape(std::string& out, std::size_t open) {
    std::size_t backslash = pos_++;
    if (pos_ >= text_.size()) {
      fail(open, "unterminated string");
    }
    char c = text_[pos_++];
    switch (c) {
    case '"':
      out += '"';
      return;
    case '\\':
      out += '\\';
      return;
    case '/':
      out += '/';
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u':
      break;
    default: {
      auto byte = static_cast<unsigned char>(c);
      std::string shown = byte >= 0x20 && byte < 0x7f ? std::string("'\\") + c + "'"
                                                      : "'\\' followed by byte " + hexByte(byte);
      fail(backslash, "invalid escape " + shown + " in string");
    }
    }
    long cp = readHex4(pos_);
    if (cp < 0) {
      fail(backslash, "invalid \\u escape: expected four hex digits");
    }
    std::string written(text_.substr(backslash, 6));
    pos_ += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      fail(backslash, "unpaired low surrogate " + written + " in string");
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      long low = -1;
      if (text_.compare(pos_, 2, "\\u") == 0) {
        low = readHex4(pos_ + 2);
      }
      if (low < 0xDC00 || low > 0xDFFF) {
        fail(backslash, "unpaired high surrogate " + written +
                            " in string (expected a low surrogate \\uDC00-\\uDFFF after it)");
      }
      pos_ += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    appendUtf8(out, static_cast<std::uint32_t>(cp));
  }

  void parseNumber(Json& out) {
    std::size_t start = pos_;
    if (peek() == '-') {
      ++pos_;
      if (text_.compare(pos_, 8, "Infinity") == 0) {
        fail(start, "-Infinity is not allowed in JSON");
      }
      if (!isDigit(peek())) {
        fail(pos_, "expected a digit after '-'");
      }
    }
    std::size_t integerStart = pos_;
    if (peek() == '0') {
      ++pos_;
      if (isDigit(peek())) {
        fail(integerStart, "leading zeros are not allowed in numbers");
      }
    } else {
      while (isDigit(peek())) {
        ++pos_;
      }
    }
    std::size_t integerEnd = pos_;
    bool integral = true;
    if (peek() == '.') {
      ++pos_;
      if (!isDigit(peek())) {
        fail(pos_, "expected a digit after the decimal point");
      }
      while (isDigit(peek())) {
        ++pos_;
      }
      integral = false;
    }
    std::size_t mantissaEnd = pos_;
    long long exponent = 0;
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      bool negative = false;
      if (peek() == '+' || peek() == '-') {
        negative = peek() == '-';
        ++pos_;
      }
      if (!isDigit(peek())) {
        fail(pos_, "expected a digit in the exponent");
      }
      while (isDigit(peek())) {
        exponent = std::min(exponent * 10 + (text_[pos_] - '0'), 1'000'000'000LL);
        ++pos_;
      }
      exponent = negative ? -exponent : exponent;
      integral = false;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      std::int64_t value = 0;
      auto result = std::from_chars(first, last, value);
      if (result.ec == std::errc()) {
        out = value;
        return;
      }
      // Too big for int64: kept as a double, so asInt64() reports the range.
    }
    double value = 0;
    auto result = std::from_chars(first, last, value);
    if (result.ec == std::errc::result_out_of_range) {
      if (decimalMagnitude(integerStart, integerEnd, mantissaEnd, exponent) > 0) {
        std::string literal(text_.substr(start, pos_ - start));
        fail(start, "number out of range: " + briefText(std::move(literal)));
      }
      value = text_[start] == '-' ? -0.0 : 0.0; // underflow rounds to zero
    } else if (result.ec != std::errc() || result.ptr != last) {
      throw InternalError("number syntax accepted by the JSON scanner was rejected by from_chars");
    }
    out = value;
  }

  // Decimal exponent of the first significant digit (only its sign matters:
  // it tells overflow from underflow).
  long long decimalMagnitude(std::size_t integerStart, std::size_t integerEnd,
                             std::size_t mantissaEnd, long long exponent) const {
    for (std::size_t i = integerStart; i < integerEnd; ++i) {
      if (text_[i] != '0') {
        return static_cast<long long>(integerEnd - i) - 1 + exponent;
      }
    }
    for (std::size_t i = integerEnd + 1; i < mantissaEnd; ++i) {
      if (text_[i] != '0') {
        return -static_cast<long long>(i - integerEnd) + exponent;
      }
    }
    return 0;
  }

  const SourceFile& source_;
  std::string_view text_;
  const ParseOptions& options_;
  PositionTable& positions_;
  std::size_t pos_ = 0;
  std::vector<Frame> frames_;
  std::size_t depth_ = 0;
};

} // namespace

Json parseText(const SourceFile& source, const ParseOptions& options, PositionTable& positions) {
  return Parser(source, options, positions).run();
}

} // namespace tapestry::json::detail
