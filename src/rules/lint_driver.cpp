// Runs the registered rules over a document, and the pieces `--fix`/`--diff` need.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "rules/rule_util.hpp"
#include "shardcheck/lint.hpp"

namespace shardcheck {

void lint_document(const ConfigDoc& doc, const AccelerateSchema& schema, const LintOptions& opts,
                   DiagnosticSink& sink) {
  // A training recipe in place of the config: one clear finding, not one unknown key per line.
  if (auto wrong_kind = rules::training_args_as_config(doc)) {
    sink.report(std::move(*wrong_kind));
    return;
  }
  DiagnosticSink local;
  LintContext ctx(doc, schema, opts, local);
  for (const Rule* rule : all_rules())
    if (rule->check) rule->check(ctx);
  auto items = local.items();
  std::stable_sort(items.begin(), items.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.location.file != b.location.file) return a.location.file < b.location.file;
    if (a.location.line != b.location.line) return a.location.line < b.location.line;
    return a.location.column < b.location.column;
  });
  for (auto& d : items) sink.report(std::move(d));
}

std::string fix_to_fixpoint(std::string text, const std::string& path, const AccelerateSchema& schema,
                            const LintOptions& opts) {
  for (int round = 0; round < 8; ++round) {
    DiagnosticSink sink;
    auto doc = parse_config_doc(text, path, sink);
    if (!doc) break;
    lint_document(*doc, schema, opts, sink);
    std::vector<TextEdit> edits;
    for (const auto& d : sink.items())
      for (const auto& e : d.fix)
        if (e.file == path) edits.push_back(e);
    if (edits.empty()) break;
    std::string next = apply_edits(text, edits);
    if (next == text) break;
    text = std::move(next);
  }
  return text;
}

namespace {

// The line break the file uses: its first one ("\r\n", a lone "\r" or "\n"). PyYAML and accelerate read
// all three (text mode), and an editor keeps what it finds; an edit that brings its own "\n" into a CR
// or CRLF file would leave it with mixed line ends.
std::string_view line_break_of(std::string_view text) {
  const std::size_t i = text.find_first_of("\r\n");
  if (i == std::string_view::npos || text[i] == '\n') return "\n";
  return i + 1 < text.size() && text[i + 1] == '\n' ? std::string_view("\r\n") : std::string_view("\r");
}

std::string with_line_break(std::string_view s, std::string_view eol) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' || s[i] == '\n') {
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += eol;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string apply_edits(std::string_view text, std::vector<TextEdit> edits) {
  const std::string_view eol = line_break_of(text);
  if (eol != "\n")
    for (auto& e : edits) e.text = with_line_break(e.text, eol);
  // Insertions before replacements at the same offset, then file order.
  std::stable_sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) {
    if (a.offset != b.offset) return a.offset < b.offset;
    return a.length < b.length;
  });
  std::string out;
  std::size_t pos = 0;
  for (const auto& e : edits) {
    if (e.offset < pos || e.offset + e.length > text.size()) continue;  // overlaps an applied edit
    out.append(text.substr(pos, e.offset - pos));
    out += e.text;
    pos = e.offset + e.length;
  }
  out.append(text.substr(pos));
  return out;
}

namespace {

std::vector<std::string_view> split_lines(std::string_view t) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < t.size()) {
    std::size_t nl = t.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(t.substr(start));
      break;
    }
    lines.push_back(t.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return lines;
}

}  // namespace

std::string unified_diff(const std::string& path, std::string_view before, std::string_view after) {
  if (before == after) return {};
  const auto a = split_lines(before), b = split_lines(after);
  const std::size_t n = a.size(), m = b.size();
  // ops: ' ' keep, '-' delete, '+' insert, by an LCS table (config files are small; cap the table).
  std::vector<std::pair<char, std::string_view>> ops;
  if (n * m <= 4'000'000) {
    std::vector<std::vector<std::uint32_t>> l(n + 1, std::vector<std::uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        l[i][j] = a[i] == b[j] ? l[i + 1][j + 1] + 1 : std::max(l[i + 1][j], l[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[i] == b[j]) {
        ops.push_back({' ', a[i]});
        ++i;
        ++j;
      } else if (i < n && (j == m || l[i + 1][j] >= l[i][j + 1]))
        ops.push_back({'-', a[i++]});
      else
        ops.push_back({'+', b[j++]});
    }
  } else {
    for (auto x : a) ops.push_back({'-', x});
    for (auto y : b) ops.push_back({'+', y});
  }
  // a/ and b/ before a relative path (git's labels, for `patch -p1`); an absolute path is written as
  // is, as `diff -u` does: "a//abs/path" named no file.
  const bool absolute = !path.empty() && path.front() == '/';
  std::string out =
      absolute ? fmt::format("--- {}\n+++ {}\n", path, path) : fmt::format("--- a/{}\n+++ b/{}\n", path, path);
  const std::size_t ctx = 3;
  std::size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].first == ' ') {
      ++k;
      continue;
    }
    // A hunk: from ctx lines before this change to ctx lines after the last change within 2*ctx.
    std::size_t start = k >= ctx ? k - ctx : 0;
    std::size_t end = k;
    while (end < ops.size()) {
      if (ops[end].first != ' ') {
        ++end;
        continue;
      }
      std::size_t run = end;
      while (run < ops.size() && ops[run].first == ' ') ++run;
      if (run == ops.size() || run - end > 2 * ctx) {
        end = std::min(ops.size(), end + ctx);
        break;
      }
      end = run;
    }
    std::size_t a_line = 1, b_line = 1;
    for (std::size_t x = 0; x < start; ++x) {
      if (ops[x].first != '+') ++a_line;
      if (ops[x].first != '-') ++b_line;
    }
    std::size_t a_count = 0, b_count = 0;
    for (std::size_t x = start; x < end; ++x) {
      if (ops[x].first != '+') ++a_count;
      if (ops[x].first != '-') ++b_count;
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_count ? a_line : a_line - 1, a_count, b_count ? b_line : b_line - 1,
                       b_count);
    for (std::size_t x = start; x < end; ++x) {
      out += ops[x].first;
      out += ops[x].second;
      if (ops[x].second.empty() || ops[x].second.back() != '\n') out += "\n\\ No newline at end of file\n";
    }
    k = end;
  }
  return out;
}

Version version_for_requirement(std::string_view spec, const AccelerateSchema& schema) {
  // pip installs the newest release that satisfies the requirement; only upper bounds and pins matter.
  Version v = schema.newest;
  std::string s(spec);
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    part.erase(0, part.find_first_not_of(" \t"));
    auto take = [&](std::string_view op) -> std::optional<Version> {
      if (part.rfind(op, 0) != 0) return std::nullopt;
      return Version::parse(std::string_view(part).substr(op.size()));
    };
    if (auto x = take("==")) return *x;
    if (auto x = take("<="))
      v = std::min(v, *x);
    else if (auto x = take("<")) {
      // The release before x: the schema knows no release list, so step the minor version down.
      Version y = *x;
      if (y.patch > 0)
        --y.patch;
      else if (y.minor > 0) {
        --y.minor;
        y.patch = 99;
      }
      v = std::min(v, y);
    }
  }
  return v;
}

std::vector<EnvVar> parse_env_file(std::string_view text) {
  std::vector<EnvVar> out;
  int line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    ++line_no;
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line[0] == '#') continue;
    if (line.size() > 6 && line.substr(0, 6) == "export" && (line[6] == ' ' || line[6] == '\t')) {
      line.remove_prefix(6);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    }
    const std::size_t eq = line.find('=');
    // Only NAME=value with a shell identifier as NAME is an assignment (POSIX: letters, digits and
    // '_', not starting with a digit); anything else would not set a variable, so it is skipped.
    const std::string_view name = line.substr(0, eq == std::string_view::npos ? 0 : eq);
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    const auto ident = [&](char c) { return c == '_' || digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); };
    if (name.empty() || digit(name[0]) || !std::all_of(name.begin(), name.end(), ident)) continue;
    EnvVar v;
    v.name = std::string(name);
    std::string_view value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    v.value = std::string(value);
    v.line = line_no;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace shardcheck
