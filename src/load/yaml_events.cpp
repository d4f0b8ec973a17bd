// Builds a ConfigDoc from yaml-cpp's event stream. The events carry the start mark of every node and
// whether a scalar was quoted ("!" tag) or plain ("?"); duplicate keys arrive as they are written.
// Ends of tokens are not in the events, so they are recovered from the text (token_end below).
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"

namespace shardcheck {
namespace {

struct LimitExceeded {
  std::string message;
  std::size_t offset;
};

// Where a token that starts at `pos` ends. Plain scalars stop at a comment, at ": " (a key) and, in
// flow context, at , ] }. Quoted scalars end at their closing quote; flow collections at the
// matching bracket.
std::size_t token_end(std::string_view text, std::size_t pos, bool in_flow) {
  if (pos >= text.size()) return text.size();
  const char c = text[pos];
  if (c == '\'' || c == '"') {
    for (std::size_t i = pos + 1; i < text.size(); ++i) {
      if (c == '"' && text[i] == '\\') {
        ++i;
        continue;
      }
      if (text[i] == c) {
        if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;
          continue;
        }
        return i + 1;
      }
    }
    return text.size();
  }
  if (c == '[' || c == '{') {
    int depth = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
      const char d = text[i];
      if (d == '\'' || d == '"') {
        i = token_end(text, i, true) - 1;
        continue;
      }
      if (d == '[' || d == '{') ++depth;
      if (d == ']' || d == '}') {
        if (--depth == 0) return i + 1;
      }
    }
    return text.size();
  }
  std::size_t i = pos, last_non_space = pos;
  for (; i < text.size(); ++i) {
    const char d = text[i];
    if (d == '\n' || d == '\r') break;
    if (d == '#' && i > pos && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
    if (d == ':' && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' || text[i + 1] == '\r' ||
                     (in_flow && (text[i + 1] == ',' || text[i + 1] == '}' || text[i + 1] == ']'))))
      break;
    if (in_flow && (d == ',' || d == ']' || d == '}')) break;
    if (d != ' ' && d != '\t') last_non_space = i + 1;
  }
  return std::max(last_non_space, pos + 1);
}

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(std::string_view text, const YamlLimits& limits) : text_(text), limits_(limits) {}

  std::shared_ptr<YamlNode> root;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto n = make(YamlNode::Kind::null, mark);
    // An explicit `~`/`null` sits at the mark; an empty value's mark is already the next token.
    const std::size_t p = static_cast<std::size_t>(std::max(mark.pos, 0));
    n->explicit_null = p < text_.size() && (text_[p] == '~' || text_[p] == 'n' || text_[p] == 'N');
    if (n->explicit_null) n->end = token_end(text_, p, flow_depth_ > 0);
    finish(n, anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end() || !it->second)
      throw LimitExceeded{"alias refers to a node that contains it (recursive alias)", offset(mark)};
    auto copy = deep_copy(*it->second, 0);
    copy->pos = pos(mark);
    finish(copy, YAML::NullAnchor);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (value.size() > limits_.max_scalar_bytes)
      throw LimitExceeded{
          fmt::format("a scalar of {} bytes exceeds the limit of {} bytes", value.size(), limits_.max_scalar_bytes),
          offset(mark)};
    auto n = make(YamlNode::Kind::scalar, mark);
    n->text = value;
    // "!" = non-plain (quoted or block) scalar; an explicit !!str tag also makes a string.
    n->quoted = tag == "!" || tag.find(":str") != std::string::npos;
    n->end = token_end(text_, n->pos.offset, flow_depth_ > 0);
    finish(n, anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    open(YamlNode::Kind::sequence, mark, anchor, style);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    open(YamlNode::Kind::mapping, mark, anchor, style);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    std::shared_ptr<YamlNode> node;
    YAML::anchor_t anchor;
    bool expecting_key = true;
    YamlEntry pending;  // mapping: the key waiting for its value
  };

  std::size_t offset(const YAML::Mark& m) const {
    return std::min(static_cast<std::size_t>(std::max(m.pos, 0)), text_.size());
  }
  TextPos pos(const YAML::Mark& m) const {
    TextPos p;
    p.offset = offset(m);
    p.line = m.line + 1;
    p.column = m.column + 1;
    return p;
  }

  void count_node(std::size_t at) {
    if (++nodes_ > limits_.max_nodes)
      throw LimitExceeded{fmt::format("more than {} YAML nodes (alias expansion?)", limits_.max_nodes), at};
  }

  std::shared_ptr<YamlNode> make(YamlNode::Kind kind, const YAML::Mark& mark) {
    count_node(offset(mark));
    auto n = std::make_shared<YamlNode>();
    n->kind = kind;
    n->pos = pos(mark);
    return n;
  }

  std::shared_ptr<YamlNode> deep_copy(const YamlNode& src, int depth) {
    if (depth + static_cast<int>(stack_.size()) > limits_.max_depth)
      throw LimitExceeded{fmt::format("nesting deeper than {} levels", limits_.max_depth), src.pos.offset};
    count_node(src.pos.offset);
    auto n = std::make_shared<YamlNode>(src);
    for (auto& e : n->entries) e.value = deep_copy(*e.value, depth + 1);
    for (auto& i : n->items) i = deep_copy(*i, depth + 1);
    return n;
  }

  void open(YamlNode::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor, YAML::EmitterStyle::value style) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      throw LimitExceeded{fmt::format("nesting deeper than {} levels", limits_.max_depth), offset(mark)};
    auto n = make(kind, mark);
    n->flow = style == YAML::EmitterStyle::Flow;
    if (n->flow) ++flow_depth_;
    if (anchor != YAML::NullAnchor) anchors_[anchor] = nullptr;  // incomplete: aliasing it is recursion
    stack_.push_back(Open{n, anchor, true, {}});
  }

  void close() {
    Open o = std::move(stack_.back());
    stack_.pop_back();
    auto& n = *o.node;
    if (n.flow) {
      --flow_depth_;
      n.end = token_end(text_, n.pos.offset, true);
    } else if (!n.entries.empty()) {
      n.end = n.entries.back().value->end ? n.entries.back().value->end : n.entries.back().key_end;
    } else if (!n.items.empty()) {
      n.end = n.items.back()->end;
    }
    finish(o.node, o.anchor);
  }

  void finish(const std::shared_ptr<YamlNode>& n, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = n;
    if (stack_.empty()) {
      if (!root) root = n;
      return;
    }
    Open& parent = stack_.back();
    if (parent.node->kind == YamlNode::Kind::sequence) {
      parent.node->items.push_back(n);
      return;
    }
    if (parent.expecting_key) {
      YamlEntry e;
      e.key_pos = n->pos;
      if (n->kind == YamlNode::Kind::scalar) {
        e.key = n->text;
        e.key_end = n->end;
      } else {
        e.key = n->kind == YamlNode::Kind::null ? "" : n->kind == YamlNode::Kind::mapping ? "<mapping>" : "<sequence>";
        e.key_end = n->end ? n->end : n->pos.offset + 1;
      }
      parent.pending = std::move(e);
      parent.expecting_key = false;
      return;
    }
    YamlEntry e = std::move(parent.pending);
    e.value = n;
    if (n->kind == YamlNode::Kind::null && !n->explicit_null) {
      // Nothing after the colon: the event's mark is the next token. Point at the key instead.
      n->pos = e.key_pos;
      n->end = 0;
    }
    parent.node->entries.push_back(std::move(e));
    parent.expecting_key = true;
  }

  std::string_view text_;
  const YamlLimits& limits_;
  std::vector<Open> stack_;
  std::map<YAML::anchor_t, std::shared_ptr<YamlNode>> anchors_;
  std::size_t nodes_ = 0;
  int flow_depth_ = 0;
};

Diagnostic load_error(const ConfigDoc& doc, std::string_view rule, std::size_t offset, std::string message,
                      std::string help) {
  return loader_finding(rule, doc.location(offset, offset), std::move(message), std::move(help));
}

// Whether the byte at `i` ends a line as accelerate sees it: it opens the file in text mode
// (commands/config/config_args.py, v1.14.0: `open(yaml_file, encoding="utf-8")`), whose universal
// newlines turn "\r\n" and a lone "\r" into "\n" before PyYAML reads it; PyYAML's own reader treats
// "\r" as a line break as well (reader.py/scanner.py, PyYAML 6.0.2).
bool ends_line(std::string_view text, std::size_t i) {
  return text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'));
}

void index_lines(ConfigDoc& doc) {
  doc.line_starts.assign(1, 0);
  for (std::size_t i = 0; i < doc.text.size(); ++i)
    if (ends_line(doc.text, i)) doc.line_starts.push_back(i + 1);
}

}  // namespace

// A lone "\r" (a classic-Mac line end, or the last line of a file cut after "\r") is no line break
// to yaml-cpp: "true\r" was the string 'true\r' and a CR-only file one long line. The tree is built
// from this copy but keeps the original text, so --fix edits the file as written.
std::string yaml_universal_newlines(std::string_view text) {
  std::string out(text);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\r' && ends_line(text, i)) out[i] = '\n';
  return out;
}

std::optional<ConfigDoc> parse_config_doc(std::string text, const std::string& path, DiagnosticSink& sink,
                                          const YamlLimits& limits) {
  ConfigDoc doc;
  doc.path = path;
  doc.text = std::move(text);
  index_lines(doc);
  if (doc.text.size() > limits.max_bytes) {
    sink.report(load_error(doc, "yaml-limits", 0,
                           fmt::format("expected an accelerate config of at most {} bytes, found {} bytes",
                                       limits.max_bytes, doc.text.size()),
                           "accelerate config files are a few KiB; is this the right file?"));
    return std::nullopt;
  }
  if (doc.text.find('\0') != std::string::npos) {
    sink.report(load_error(doc, "yaml-syntax", doc.text.find('\0'), "expected YAML text, found a NUL byte",
                           "this looks like a binary file"));
    return std::nullopt;
  }
  TreeBuilder builder(doc.text, limits);
  const std::string parsed = yaml_universal_newlines(doc.text);  // line ends as "\n" only; offsets unchanged
  try {
    std::istringstream in(parsed);
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);
    // PyYAML's safe_load refuses a stream with a second document; so does accelerate.
    TreeBuilder second(doc.text, limits);
    if (parser.HandleNextDocument(second) && second.root) {
      sink.report(
          load_error(doc, "yaml-syntax", second.root->pos.offset,
                     "expected a single YAML document, found a second one (after `---`)",
                     "yaml.safe_load raises 'expected a single document in the stream'; remove the extra document"));
      return std::nullopt;
    }
  } catch (const LimitExceeded& e) {
    sink.report(load_error(doc, "yaml-limits", e.offset, e.message,
                           "the input exceeds what any accelerate config needs; refusing to expand it"));
    return std::nullopt;
  } catch (const YAML::DeepRecursion& e) {
    sink.report(load_error(doc, "yaml-limits",
                           doc.line_starts[std::clamp<int>(e.mark.line, 0, int(doc.line_starts.size()) - 1)],
                           fmt::format("nesting deeper than {} levels", limits.max_depth), ""));
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    std::size_t off = 0;
    if (!e.mark.is_null()) {
      const int line = std::clamp(e.mark.line, 0, static_cast<int>(doc.line_starts.size()) - 1);
      off = std::min(doc.line_starts[line] + static_cast<std::size_t>(std::max(e.mark.column, 0)), doc.text.size());
    }
    // A tab in the indentation is the usual cause, and yaml-cpp's message ("illegal map value", "end
    // of map not found") never says so: point at the first tab on or before the error's line.
    const std::size_t line_end = parsed.find('\n', off);
    const std::size_t upto = line_end == std::string::npos ? doc.text.size() : line_end;
    for (std::size_t i = 0; i < upto; ++i) {
      if (doc.text[i] != '\t') continue;
      const std::size_t bol = parsed.rfind('\n', i == 0 ? 0 : i - 1);
      const std::size_t start = (bol == std::string::npos || i == 0) ? 0 : bol + 1;
      if (doc.text.find_first_not_of(" \t", start) < i) continue;  // a tab inside a value is allowed
      sink.report(load_error(doc, "yaml-syntax", i,
                             fmt::format("invalid YAML: a tab character indents this line (yaml-cpp: {}); YAML "
                                         "indentation must be spaces",
                                         e.msg),
                             "replace the tab with spaces (two per level, as `accelerate config` writes); "
                             "yaml.safe_load rejects tabs as well"));
      return std::nullopt;
    }
    sink.report(load_error(doc, "yaml-syntax", off, fmt::format("invalid YAML: {}", e.msg),
                           "accelerate loads the file with yaml.safe_load, which rejects it as well"));
    return std::nullopt;
  }
  doc.root = builder.root ? builder.root : std::make_shared<YamlNode>();
  return doc;
}

}  // namespace shardcheck
