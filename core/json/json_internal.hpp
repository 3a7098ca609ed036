// Internal to core/json: what the parser (parser.cpp) and the document and
// value accessors (json.cpp) share.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/diag/source.hpp"
#include "core/json/json.hpp"

namespace tapestry::json {

namespace detail {

// Where each value starts, as a tree: each entry names its parent and its
// reference token (object key or array index). Memory stays linear in the file
// size however deep the nesting, where a full pointer string per value would be
// quadratic. The hash index over (parent, token) is built on the first lookup,
// which usually means the first error.
class PositionTable {
public:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  void addRoot(std::size_t offset) { entries_.push_back({kNone, offset, 0, 0, false}); }
  void addMember(std::size_t parent, std::string_view key, std::size_t offset) {
    entries_.push_back({parent, offset, keys_.size(), key.size(), false});
    keys_.append(key);
  }
  void addElement(std::size_t parent, std::size_t index, std::size_t offset) {
    entries_.push_back({parent, offset, index, 0, true});
  }
  std::size_t lastEntry() const { return entries_.size() - 1; }

  // Offset of the value at `pointer`, or of its nearest recorded ancestor.
  std::size_t find(std::string_view pointer) const {
    std::call_once(indexed_, [this] { buildIndex(); });
    std::size_t current = 0; // the root
    std::string token;
    // A pointer is "" or a sequence of "/token"; anything else names the root.
    while (!pointer.empty() && pointer.front() == '/') {
      pointer.remove_prefix(1);
      std::size_t slash = pointer.find('/');
      std::string_view escaped = pointer.substr(0, slash);
      pointer = slash == std::string_view::npos ? std::string_view() : pointer.substr(slash);
      token.clear();
      for (std::size_t i = 0; i < escaped.size(); ++i) {
        if (escaped[i] == '~' && i + 1 < escaped.size() &&
            (escaped[i + 1] == '0' || escaped[i + 1] == '1')) {
          token += escaped[++i] == '0' ? '~' : '/';
        } else {
          token += escaped[i];
        }
      }
      std::size_t child = findChild(current, token);
      if (child == kNone) {
        break;
      }
      current = child;
    }
    return entries_[current].offset;
  }

private:
  struct Entry {
    std::size_t parent;
    std::size_t offset;
    std::size_t key;       // start in keys_, or the array index when isIndex
    std::size_t keyLength; // unused when isIndex
    bool isIndex;
  };

  // The entry's reference token; array indices are formatted into `buffer`.
  std::string_view tokenOf(const Entry& entry, char (&buffer)[24]) const {
    if (entry.isIndex) {
      auto result = std::to_chars(buffer, buffer + sizeof buffer, entry.key);
      return std::string_view(buffer, static_cast<std::size_t>(result.ptr - buffer));
    }
    return std::string_view(keys_).substr(entry.key, entry.keyLength);
  }

  static std::size_t hashOf(std::size_t parent, std::string_view token) {
    return std::hash<std::string_view>{}(token) ^ (parent * 0x9E3779B97F4A7C15ULL);
  }

  std::size_t findChild(std::size_t parent, std::string_view token) const {
    char buffer[24];
    for (std::size_t slot = hashOf(parent, token) & mask_;; slot = (slot + 1) & mask_) {
      std::size_t entry = slots_[slot];
      if (entry == kNone) {
        return kNone;
      }
      if (entries_[entry].parent == parent && tokenOf(entries_[entry], buffer) == token) {
        return entry;
      }
    }
  }

  // Open addressing with linear probing, at most half full: one allocation
  // instead of a node per value.
  void buildIndex() const {
    std::size_t capacity = 2;
    while (capacity < 2 * entries_.size()) {
      capacity *= 2;
    }
    slots_.assign(capacity, kNone);
    mask_ = capacity - 1;
    char buffer[24];
    char other[24];
    for (std::size_t entry = 1; entry < entries_.size(); ++entry) {
      const Entry& mine = entries_[entry];
      std::string_view token = tokenOf(mine, buffer);
      std::size_t slot = hashOf(mine.parent, token) & mask_;
      // With duplicate keys allowed a (parent, key) pair repeats: the last one wins.
      while (slots_[slot] != kNone && !(entries_[slots_[slot]].parent == mine.parent &&
                                        tokenOf(entries_[slots_[slot]], other) == token)) {
        slot = (slot + 1) & mask_;
      }
      slots_[slot] = entry;
    }
  }

  std::vector<Entry> entries_; // entries_[0] is the root
  std::string keys_;           // object keys, back to back
  mutable std::once_flag indexed_;
  mutable std::vector<std::size_t> slots_;
  mutable std::size_t mask_ = 0;
};

// The text as a JSON string literal (invalid UTF-8 replaced), for messages.
std::string jsonQuoted(std::string_view text);

// Parses the document's text, recording where each value starts.
Json parseText(const SourceFile& source, const ParseOptions& options, PositionTable& positions);

} // namespace detail

struct Document::Impl {
  explicit Impl(SourceFile file) : source(std::move(file)) {}
  SourceFile source;
  Json root;
  detail::PositionTable positions;
};

} // namespace tapestry::json
