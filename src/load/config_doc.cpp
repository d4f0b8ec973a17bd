// ConfigDoc positions, file reading, and accelerate's default-config and installed-version lookup.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "shardcheck/config_doc.hpp"

namespace shardcheck {
namespace fs = std::filesystem;

std::string_view ConfigDoc::line_text(int line) const {
  if (line < 1 || line > static_cast<int>(line_starts.size())) return {};
  const std::size_t start = line_starts[line - 1];
  std::size_t end = line < static_cast<int>(line_starts.size()) ? line_starts[line] - 1 : text.size();
  if (end > start && text[end - 1] == '\r') --end;
  return std::string_view(text).substr(start, end - start);
}

TextPos ConfigDoc::pos_at(std::size_t offset) const {
  offset = std::min(offset, text.size());
  TextPos p;
  p.offset = offset;
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  const std::size_t idx = static_cast<std::size_t>(it - line_starts.begin()) - 1;
  p.line = static_cast<int>(idx) + 1;
  int col = 1;
  for (std::size_t i = line_starts[idx]; i < offset; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++col;  // count code points, not bytes
  p.column = col;
  return p;
}

SourceLocation ConfigDoc::location(std::size_t start, std::size_t end) const {
  SourceLocation loc;
  loc.file = path;
  if (text.empty()) { loc.line = 1; loc.column = 1; return loc; }
  const TextPos s = pos_at(start);
  loc.line = s.line;
  loc.column = s.column;
  if (end > start) {
    const std::size_t line_end = s.line < static_cast<int>(line_starts.size()) ? line_starts[s.line] - 1 : text.size();
    loc.end_column = pos_at(std::min(end, line_end)).column;
  }
  return loc;
}

SourceLocation ConfigDoc::value_location(const YamlEntry& e) const {
  if (!e.value || e.value->end == 0) return key_location(e);
  return location(e.value->pos.offset, e.value->end);
}

std::optional<ConfigDoc> load_config_doc(const std::string& path, DiagnosticSink& sink, const YamlLimits& limits) {
  auto io_error = [&](std::string message, ExitCode code = ExitCode::io) {
    Diagnostic d;
    d.code = "IO003";
    d.severity = Severity::error;
    d.location.file = path;
    d.message = std::move(message);
    d.exit_code = code;
    sink.report(std::move(d));
    return std::nullopt;
  };
  std::error_code ec;
  if (!fs::exists(path, ec)) return io_error("cannot read the config: no such file");
  if (fs::is_directory(path, ec)) return io_error("expected a config file, found a directory");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > limits.max_bytes) {
    Diagnostic d;
    d.code = "yaml-limits";
    d.severity = Severity::error;
    d.location.file = path;
    d.location.line = 1;
    d.location.column = 1;
    d.message = fmt::format("expected an accelerate config of at most {} bytes, found {} bytes", limits.max_bytes, size);
    d.help = "accelerate config files are a few KiB; is this the right file?";
    d.exit_code = ExitCode::bad_accelerate_config;
    sink.report(std::move(d));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read the config: permission denied or unreadable");
  // Size the buffer from the file (a pipe or /proc file reports 0: fall back to reading in chunks),
  // never more than the limit + 1 byte, so that an oversized stream is still caught.
  std::string text;
  std::size_t want = ec ? 0 : static_cast<std::size_t>(size);
  want = std::min(want, limits.max_bytes) + 1;
  char chunk[16384];
  text.reserve(want);
  while (text.size() <= limits.max_bytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  return parse_config_doc(std::move(text), path, sink, limits);
}

std::string default_accelerate_config_path(const char* (*getenv_fn)(const char*)) {
  auto get = [&](const char* name) -> std::string {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  auto expand_user = [&](std::string p) {
    if (!p.empty() && p[0] == '~') {
      const std::string home = get("HOME");
      if (!home.empty()) p = home + p.substr(1);
    }
    return p;
  };
  std::string hf_home = get("HF_HOME");
  if (hf_home.empty()) {
    std::string cache = get("XDG_CACHE_HOME");
    if (cache.empty()) cache = "~/.cache";
    hf_home = cache + "/huggingface";
  }
  return expand_user(hf_home) + "/accelerate/default_config.yaml";
}

std::optional<std::string> installed_package_version(const std::string& site_packages, const std::string& package,
                                                     std::string* why) {
  std::error_code ec;
  if (!fs::is_directory(site_packages, ec)) {
    if (why) *why = fmt::format("{} is not a directory", site_packages);
    return std::nullopt;
  }
  // Wheel metadata directories: accelerate-1.10.1.dist-info (pip normalises '-' in names to '_').
  for (const auto& entry : fs::directory_iterator(site_packages, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(package + "-", 0) != 0 || name.size() < 10 || name.substr(name.size() - 10) != ".dist-info") continue;
    std::ifstream meta(entry.path() / "METADATA");
    std::string line;
    while (std::getline(meta, line)) {
      if (line.rfind("Version:", 0) == 0) {
        std::string v = line.substr(8);
        v.erase(0, v.find_first_not_of(" \t"));
        while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
        return v;
      }
      if (line.empty()) break;  // end of the header block
    }
  }
  if (why) *why = fmt::format("no {}-*.dist-info with a Version line under {}", package, site_packages);
  return std::nullopt;
}

}  // namespace shardcheck
