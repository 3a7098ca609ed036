// UTF-8 validation shared by every reader of text: the JSON parser, the YAML
// reader (yaml-cpp passes invalid bytes through) and the expression parser
// (ANTLR's input stream throws on them).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tapestry {

// Length of the well-formed UTF-8 sequence whose lead byte (>= 0x80) is at
// text[at], or 0 when it is ill-formed (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF).
std::size_t utf8SequenceLength(std::string_view text, std::size_t at);

// The byte offset of the first ill-formed UTF-8 sequence, if any.
std::optional<std::size_t> findInvalidUtf8(std::string_view text);

} // namespace tapestry
