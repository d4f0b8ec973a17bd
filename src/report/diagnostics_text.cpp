// Compiler-style diagnostics for a terminal or a log. (The linter adds source snippets on top.)
#include <fmt/format.h>

#include "shardcheck/report.hpp"

namespace shardcheck {

namespace {

// The `line | text` snippet with a caret under the column and `~` under the rest of the span.
std::string snippet(const Diagnostic& d, const std::string& text, const TextStyle& style) {
  if (d.location.line <= 0) return {};
  std::size_t start = 0;
  for (int l = 1; l < d.location.line; ++l) {
    start = text.find('\n', start);
    if (start == std::string::npos) return {};
    ++start;
  }
  std::size_t end = text.find('\n', start);
  std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  // Walk code points: the spacer copies tabs so the caret lines up under tab-indented text.
  std::string spacer;
  int col = 1;
  std::size_t i = 0;
  while (i < line.size() && col < d.location.column) {
    spacer += line[i] == '\t' ? '\t' : ' ';
    ++i;
    while (i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) ++i;
    ++col;
  }
  const int width = d.location.end_column > d.location.column ? d.location.end_column - d.location.column : 1;
  std::string marker = "^" + std::string(static_cast<std::size_t>(width - 1), '~');
  const std::string gutter = fmt::format("{:>5}", d.location.line);
  if (style.color) marker = "\x1b[1;32m" + marker + "\x1b[0m";
  return fmt::format("{} | {}\n      | {}{}\n", gutter, line, spacer, marker);
}

std::string render(const std::vector<Diagnostic>& diagnostics, const SourceLookup* sources, const TextStyle& style) {
  std::string out;
  for (const auto& d : diagnostics) {
    std::string where = d.location.file;
    if (d.location.line > 0)
      where += fmt::format(":{}:{}", d.location.line, d.location.column);
    else if (d.location.byte_offset)
      where += fmt::format(":@{}", *d.location.byte_offset);
    const char* sev = severity_name(d.severity);
    const std::string in_model = d.location.model_path ? module_label(*d.location.model_path) + ": " : "";
    if (style.color) {
      const char* col = d.severity == Severity::error     ? "\x1b[1;31m"
                        : d.severity == Severity::warning ? "\x1b[1;33m"
                                                          : "\x1b[1;36m";
      out += fmt::format("\x1b[1m{}:\x1b[0m {}{}:\x1b[0m {}{} [{}]\n", where, col, sev, in_model, d.message, d.code);
    } else {
      out += fmt::format("{}: {}: {}{} [{}]\n", where, sev, in_model, d.message, d.code);
    }
    if (sources && *sources)
      if (const std::string* text = (*sources)(d.location.file)) out += snippet(d, *text, style);
    if (!d.help.empty()) {
      // Multi-line help (e.g. a re-nested YAML block) is indented under "help:".
      std::string help;
      for (char c : d.help) {
        help += c;
        if (c == '\n') help += "        ";
      }
      out += fmt::format("  help: {}\n", help);
    }
  }
  return out;
}

}  // namespace

std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const TextStyle& style) {
  return render(diagnostics, nullptr, style);
}

std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const SourceLookup& sources,
                                    const TextStyle& style) {
  return render(diagnostics, &sources, style);
}

}  // namespace shardcheck
