#include "load/plain_yaml.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/mark.h>

// How yaml-cpp 0.7 marks what it reports (src/singledocparser.cpp HandleNode, HandleBlockMap,
// HandleBlockSequence; src/scanner.cpp), which this reproduces:
// - a scalar, and a flow collection, at its first character (the quote of a quoted scalar);
// - a block mapping at its first key, a block sequence at its first `-`;
// - a missing value (`key:` or `-` with nothing after) as a null at the next token: the next key or
//   `-`, wherever it is, or at the end of the input {pos: length, line: newlines, column: see
//   end_column};
// - the document at its first token.
// Plain scalars spelled ~, null, Null or NULL are reported as nulls (yaml-cpp's IsNullString).

namespace shardcheck::detail {
namespace {

struct Event {
  enum class Kind : unsigned char { null, scalar, seq_start, seq_end, map_start, map_end };
  Kind kind;
  bool quoted = false;  // scalar: tag "!" instead of "?"
  bool flow = false;    // collection style
  YAML::Mark mark;
  std::string_view value;
};

// Deeper nesting is left to yaml-cpp and the callers' limits.
constexpr int kMaxDepth = 64;
// yaml-cpp refuses longer simple keys (scanner.cpp: "simple key" over 1024 characters).
constexpr std::size_t kMaxKeyLength = 1000;

bool is_null_word(std::string_view s) { return s == "~" || s == "null" || s == "Null" || s == "NULL"; }

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

class Reader {
 public:
  explicit Reader(std::string_view text) : t_(text) {}

  bool read(std::vector<Event>& out) {
    if (!screen()) return false;
    const std::size_t first = next_content(0);
    if (first == t_.size()) return true;  // no document: yaml-cpp reports nothing
    doc_mark_ = mark(first);
    std::size_t after = 0;
    if (!block_node(first, after, 0) || after != t_.size()) return false;
    out = std::move(events_);
    return true;
  }

  YAML::Mark doc_mark() const { return doc_mark_; }

 private:
  // Whole-text refusals: characters and line starts the subset never holds outside comments.
  bool screen() {
    line_starts_.push_back(0);
    bool in_comment = false;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const auto c = static_cast<unsigned char>(t_[i]);
      if (c == '\n') {
        line_starts_.push_back(i + 1);
        in_comment = false;
        continue;
      }
      // Tabs, CR, and control characters (which yaml-cpp's stream drops from scalars).
      if (c < 0x20 || c == 0x7f) return false;
      // '#' starts a comment at a line start or after a space; inside quotes it does not, but then a
      // non-ASCII byte after it only makes this refuse too much, never accept wrongly.
      if (c == '#' && (i == 0 || t_[i - 1] == ' ' || t_[i - 1] == '\n')) in_comment = true;
      if (c >= 0x80 && !in_comment) return false;
      if (i == line_starts_.back() && (c == '%' || t_.substr(i).starts_with("---") || t_.substr(i).starts_with("...")))
        return false;
    }
    return true;
  }

  YAML::Mark mark(std::size_t pos) const {
    YAML::Mark m;
    m.pos = static_cast<int>(pos);
    if (pos >= t_.size()) {
      m.line = static_cast<int>(line_starts_.size()) - 1;
      m.column = 0;
      return m;
    }
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    m.line = static_cast<int>(it - line_starts_.begin());
    m.column = static_cast<int>(pos - *it);
    return m;
  }
  std::size_t column(std::size_t pos) const { return static_cast<std::size_t>(mark(pos).column); }

  // The column of a null that ends the input inside a block collection at `col`: yaml-cpp marks it
  // with the token that closes that collection. When the input's last line (spaces or a comment)
  // reaches past `col`, that token comes at the end of the stream, after the column was reset to 0;
  // otherwise it comes where the last line ends (scanner.cpp PopIndentToHere, which closes a
  // sequence at its own column too, and EndStream).
  std::size_t end_column(std::size_t col, bool sequence) const {
    const std::size_t last = t_.size() - line_starts_.back();
    return col > last || (col == last && sequence) ? last : 0;
  }

  char at(std::size_t i) const { return i < t_.size() ? t_[i] : '\n'; }
  bool blank_or_end(std::size_t i) const { return i >= t_.size() || t_[i] == ' ' || t_[i] == '\n'; }

  // The next character that is neither a space, a line break nor inside a comment; t_.size() at
  // the end.
  std::size_t next_content(std::size_t i) const {
    while (i < t_.size()) {
      const char c = t_[i];
      if (c == ' ' || c == '\n') {
        ++i;
      } else if (c == '#') {
        while (i < t_.size() && t_[i] != '\n') ++i;
      } else {
        return i;
      }
    }
    return t_.size();
  }

  // After a value on its line: spaces, then a comment (after at least one space) or the line's end.
  // Returns where the next content is, or nullopt when something else follows on the line.
  std::optional<std::size_t> end_of_line(std::size_t i) const {
    while (i < t_.size() && t_[i] == ' ') ++i;
    if (i < t_.size() && t_[i] == '#' && t_[i - 1] != ' ') return std::nullopt;
    if (i < t_.size() && t_[i] != '\n' && t_[i] != '#') return std::nullopt;
    return next_content(i);
  }

  void emit(Event::Kind kind, std::size_t pos, bool flag = false, std::string_view value = {}) {
    Event e;
    e.kind = kind;
    e.mark = mark(pos);
    if (kind == Event::Kind::scalar) e.quoted = flag;
    if (kind == Event::Kind::seq_start || kind == Event::Kind::map_start) e.flow = flag;
    e.value = value;
    events_.push_back(e);
  }
  void emit_plain(std::size_t pos, std::string_view value) {
    if (is_null_word(value))
      emit(Event::Kind::null, pos);
    else
      emit(Event::Kind::scalar, pos, false, value);
  }
  void emit_end(Event::Kind kind) {
    Event e;
    e.kind = kind;
    events_.push_back(e);
  }

  // A character that may begin a plain scalar here (conservatively: YAML allows more).
  bool plain_start(std::size_t i) const {
    const char c = at(i);
    if (is_alnum(c) || c == '_' || c == '.' || c == '/' || c == '$' || c == '(' || c == '+' || c == '<' || c == '=' ||
        c == '~' || c == '^')
      return true;
    return c == '-' && (is_alnum(at(i + 1)) || at(i + 1) == '.');
  }

  // A block-context plain scalar on one line from `i`: up to a comment, a line break, or the end.
  // `key`: it must end at ": " (or ':' at the line's end), which is then left at `end`; otherwise
  // ": " inside is a refusal (yaml-cpp: "illegal map value").
  bool block_plain(std::size_t i, bool key, std::string_view& value, std::size_t& end) const {
    if (!plain_start(i)) return false;
    std::size_t j = i;
    for (; j < t_.size() && t_[j] != '\n'; ++j) {
      if (t_[j] == '#' && t_[j - 1] == ' ') break;
      if (t_[j] == ':' && blank_or_end(j + 1)) {
        if (!key) return false;
        break;
      }
    }
    if (key && (j >= t_.size() || t_[j] != ':')) return false;
    std::size_t last = j;
    while (last > i && t_[last - 1] == ' ') --last;
    value = t_.substr(i, last - i);
    end = j;
    return !key || value.size() <= kMaxKeyLength;
  }

  // A quoted scalar on one line without escapes; `end` is just past the closing quote.
  bool quoted(std::size_t i, std::string_view& value, std::size_t& end) const {
    const char q = t_[i];
    std::size_t j = i + 1;
    for (; j < t_.size(); ++j) {
      const char c = t_[j];
      // In single quotes a backslash is itself; in double quotes it starts an escape.
      if (c == '\n' || (c == '\\' && q == '"') || static_cast<unsigned char>(c) >= 0x80) return false;
      if (c == q) break;
    }
    if (j >= t_.size()) return false;
    if (q == '\'' && at(j + 1) == '\'') return false;  // '' escape
    value = t_.substr(i + 1, j - i - 1);
    end = j + 1;
    return true;
  }

  // A key at `i` (plain or quoted, then ':' and a space or the line's end); `after` is past the ':'.
  bool key(std::size_t i, std::size_t& after, bool emit_it) {
    std::string_view value;
    std::size_t end = 0;
    const bool is_quoted = t_[i] == '\'' || t_[i] == '"';
    if (is_quoted) {
      if (!quoted(i, value, end) || end - i > kMaxKeyLength || at(end) != ':' || !blank_or_end(end + 1)) return false;
    } else if (!block_plain(i, true, value, end)) {
      return false;
    }
    if (emit_it) {
      if (is_quoted)
        emit(Event::Kind::scalar, i, true, value);
      else
        emit_plain(i, value);
    }
    after = end + 1;
    return true;
  }
  bool is_key(std::size_t i) {
    std::size_t after;
    return key(i, after, false);
  }
  bool is_entry(std::size_t i) const { return t_[i] == '-' && blank_or_end(i + 1); }

  // --- Flow collections -------------------------------------------------------------------------
  // They may span lines when every continuation line is indented past `min_col`, the column of the
  // block collection that holds them (YAML requires it; yaml-cpp is not asked to judge otherwise).

  // Skips spaces, line breaks and comments inside a flow collection; npos when a continuation line
  // is not indented enough.
  std::size_t flow_space(std::size_t i, std::size_t min_col) const {
    bool new_line = false;
    while (i < t_.size()) {
      const char c = t_[i];
      if (c == ' ') {
        ++i;
      } else if (c == '\n') {
        new_line = true;
        ++i;
      } else if (c == '#' && (t_[i - 1] == ' ' || t_[i - 1] == '\n')) {
        while (i < t_.size() && t_[i] != '\n') ++i;
      } else {
        break;
      }
    }
    if (new_line && i < t_.size() && column(i) <= min_col) return std::string_view::npos;
    return i;
  }

  bool flow_node(std::size_t i, std::size_t& end, std::size_t min_col, int depth) {
    if (depth > kMaxDepth) return false;
    const char c = at(i);
    if (c == '[') return flow_seq(i, end, min_col, depth + 1);
    if (c == '{') return flow_map(i, end, min_col, depth + 1);
    std::string_view value;
    if (c == '\'' || c == '"') {
      if (!quoted(i, value, end)) return false;
      emit(Event::Kind::scalar, i, true, value);
      return true;
    }
    if (!flow_plain(i, value, end)) return false;
    emit_plain(i, value);
    return true;
  }

  // A flow-context plain scalar on one line: up to , [ ] { } ':', a comment or the line's end (a
  // scalar continued on the next line is then refused by the caller, which finds no separator).
  bool flow_plain(std::size_t i, std::string_view& value, std::size_t& end) const {
    if (!plain_start(i)) return false;
    std::size_t j = i;
    for (; j < t_.size(); ++j) {
      const char c = t_[j];
      if (c == '#') {
        if (t_[j - 1] != ' ') return false;
        break;
      }
      // A quote inside, or '?', which yaml-cpp takes for a key indicator anywhere in a flow.
      if (c == '\'' || c == '"' || c == '?') return false;
      if (c == '\n' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == ':') break;
    }
    std::size_t last = j;
    while (last > i && t_[last - 1] == ' ') --last;
    value = t_.substr(i, last - i);
    end = last;
    return true;
  }

  std::size_t skip_spaces(std::size_t i) const {
    while (i < t_.size() && t_[i] == ' ') ++i;
    return i;
  }

  bool flow_seq(std::size_t i, std::size_t& end, std::size_t min_col, int depth) {
    emit(Event::Kind::seq_start, i, true);
    std::size_t j = flow_space(i + 1, min_col);
    if (at(j) != ']') {
      for (;;) {
        if (j == std::string_view::npos || !flow_node(j, j, min_col, depth)) return false;
        j = flow_space(j, min_col);
        if (at(j) == ']') break;
        if (at(j) != ',') return false;
        j = flow_space(j + 1, min_col);
        if (at(j) == ']') return false;  // a trailing comma
      }
    }
    emit_end(Event::Kind::seq_end);
    end = j + 1;
    return true;
  }

  bool flow_map(std::size_t i, std::size_t& end, std::size_t min_col, int depth) {
    emit(Event::Kind::map_start, i, true);
    std::size_t j = flow_space(i + 1, min_col);
    if (at(j) != '}') {
      for (;;) {
        if (j == std::string_view::npos) return false;
        const char c = at(j);
        if (c == '[' || c == '{') return false;  // a collection as a key
        if (!flow_node(j, j, min_col, depth)) return false;
        if (at(j) != ':' || at(j + 1) != ' ') return false;
        j = flow_space(j + 1, min_col);
        if (j == std::string_view::npos || !flow_node(j, j, min_col, depth)) return false;
        j = flow_space(j, min_col);
        if (at(j) == '}') break;
        if (at(j) != ',') return false;
        j = flow_space(j + 1, min_col);
        if (at(j) == '}') return false;
      }
    }
    emit_end(Event::Kind::map_end);
    end = j + 1;
    return true;
  }

  // --- Block collections --------------------------------------------------------------------------

  // A value on the line of its key or `-` at `i`; `next` receives the next content after the line.
  bool inline_value(std::size_t i, std::size_t col, std::size_t& next, int depth) {
    std::size_t end = 0;
    const char c = t_[i];
    if (c == '[' || c == '{') {
      if (!flow_node(i, end, col, depth)) return false;
    } else if (c == '\'' || c == '"') {
      std::string_view value;
      if (!quoted(i, value, end)) return false;
      emit(Event::Kind::scalar, i, true, value);
    } else {
      std::string_view value;
      if (!block_plain(i, false, value, end)) return false;
      emit_plain(i, value);
    }
    const auto after = end_of_line(end);
    if (!after) return false;
    next = *after;
    return true;
  }

  // What follows a key's ':' or an entry's '-' (`i`, on the same line) in a collection at `col`.
  bool value_after(std::size_t i, std::size_t col, bool in_sequence, std::size_t& next, int depth) {
    i = skip_spaces(i);
    if (i < t_.size() && t_[i] != '\n' && t_[i] != '#') {
      // Something on the same line. In a sequence it may open a compact mapping or sequence.
      if (in_sequence && (is_entry(i) || is_key(i))) return block_node(i, next, depth + 1);
      return inline_value(i, col, next, depth);
    }
    const std::size_t n = next_content(i);
    if (n < t_.size() && column(n) > col) return block_node(n, next, depth + 1);
    if (!in_sequence && n < t_.size() && column(n) == col && is_entry(n)) return false;  // indentless sequence
    emit(Event::Kind::null, n);
    if (n >= t_.size()) events_.back().mark.column = static_cast<int>(end_column(col, in_sequence));
    next = n;
    return true;
  }

  bool block_node(std::size_t i, std::size_t& next, int depth) {
    if (depth > kMaxDepth) return false;
    if (is_entry(i)) return block_sequence(i, next, depth);
    if (is_key(i)) return block_mapping(i, next, depth);
    return false;  // a scalar or flow collection on a line of its own
  }

  bool block_mapping(std::size_t i, std::size_t& next, int depth) {
    const std::size_t col = column(i);
    emit(Event::Kind::map_start, i, false);
    for (;;) {
      std::size_t after = 0;
      if (!key(i, after, true)) return false;
      std::size_t n = 0;
      if (!value_after(after, col, false, n, depth)) return false;
      if (n >= t_.size() || column(n) < col) {
        next = n;
        break;
      }
      if (column(n) > col || !is_key(n)) return false;
      i = n;
    }
    emit_end(Event::Kind::map_end);
    return true;
  }

  bool block_sequence(std::size_t i, std::size_t& next, int depth) {
    const std::size_t col = column(i);
    emit(Event::Kind::seq_start, i, false);
    for (;;) {
      std::size_t n = 0;
      if (!value_after(i + 1, col, true, n, depth)) return false;
      if (n >= t_.size() || column(n) < col) {
        next = n;
        break;
      }
      if (column(n) > col || !is_entry(n)) return false;
      i = n;
    }
    emit_end(Event::Kind::seq_end);
    return true;
  }

  std::string_view t_;
  std::vector<std::size_t> line_starts_;
  std::vector<Event> events_;
  YAML::Mark doc_mark_;
};

}  // namespace

bool plain_yaml_events(std::string_view text, YAML::EventHandler& handler) {
  Reader reader(text);
  std::vector<Event> events;
  if (!reader.read(events)) return false;
  if (events.empty()) return true;
  handler.OnDocumentStart(reader.doc_mark());
  std::string value;
  for (const Event& e : events) {
    switch (e.kind) {
      case Event::Kind::null:
        handler.OnNull(e.mark, YAML::NullAnchor);
        break;
      case Event::Kind::scalar:
        value.assign(e.value);
        handler.OnScalar(e.mark, e.quoted ? "!" : "?", YAML::NullAnchor, value);
        break;
      case Event::Kind::seq_start:
        handler.OnSequenceStart(e.mark, "?", YAML::NullAnchor,
                                e.flow ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block);
        break;
      case Event::Kind::seq_end:
        handler.OnSequenceEnd();
        break;
      case Event::Kind::map_start:
        handler.OnMapStart(e.mark, "?", YAML::NullAnchor,
                           e.flow ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block);
        break;
      case Event::Kind::map_end:
        handler.OnMapEnd();
        break;
    }
  }
  handler.OnDocumentEnd();
  return true;
}

}  // namespace shardcheck::detail
