// ConfigDoc positions, file reading, and accelerate's default-config and installed-version lookup.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "shardcheck/config_doc.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/lint.hpp"
#include "util/bounded_read.hpp"

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
  if (text.empty()) {
    loc.line = 1;
    loc.column = 1;
    return loc;
  }
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
  auto io_error = [&](std::string message) {
    sink.report(finding("IO003", in_file(path), std::move(message)));
    return std::nullopt;
  };
  std::error_code ec;
  if (!fs::exists(path, ec)) return io_error("cannot read the config: no such file");
  if (fs::is_directory(path, ec)) return io_error("expected a config file, found a directory");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > limits.max_bytes) {
    sink.report(loader_finding(
        "yaml-limits", in_file(path, 1, 1),
        fmt::format("expected an accelerate config of at most {} bytes, found {} bytes", limits.max_bytes, size),
        "accelerate config files are a few KiB; is this the right file?"));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read the config: permission denied or unreadable");
  // Size the buffer from the file (a pipe or /proc file reports 0: fall back to reading in chunks),
  // never more than the limit + 1 byte, so that an oversized stream is still caught.
  std::string text;
  std::size_t want = ec ? 0 : static_cast<std::size_t>(size);
  want = std::min(want, limits.max_bytes) + 1;
  text.reserve(want);
  util::read_bounded(in, limits.max_bytes, text);  // parse_config_doc reports a text over the limit
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

namespace {

// The "Version:" line of a core-metadata file (METADATA or PKG-INFO), from its header block.
std::optional<std::string> metadata_version(const fs::path& file) {
  std::ifstream meta(file);
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
  return std::nullopt;
}

std::optional<std::string> version_in(const fs::path& dir, const std::string& package) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // pip normalises '-' in names to '_' (accelerate-1.10.1.dist-info); Debian installs egg-info.
    if (name.rfind(package + "-", 0) != 0) continue;
    if (name.ends_with(".dist-info")) {
      if (auto v = metadata_version(entry.path() / "METADATA")) return v;
    } else if (name.ends_with(".egg-info")) {
      if (auto v = metadata_version(entry.is_directory(ec) ? entry.path() / "PKG-INFO" : entry.path())) return v;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> installed_package_version(const std::string& env_dir, const std::string& package,
                                                     std::string* why) {
  std::error_code ec;
  if (!fs::is_directory(env_dir, ec)) {
    if (why) *why = fmt::format("{} is not a directory", env_dir);
    return std::nullopt;
  }
  std::vector<fs::path> dirs{env_dir};
  for (const char* lib : {"lib", "lib64"})
    for (const auto& entry : fs::directory_iterator(fs::path(env_dir) / lib, ec))
      if (entry.path().filename().string().starts_with("python3")) {
        dirs.push_back(entry.path() / "site-packages");
        dirs.push_back(entry.path() / "dist-packages");
      }
  for (const auto& d : dirs)
    if (auto v = version_in(d, package)) return v;
  if (why)
    *why = fmt::format("no {}-*.dist-info or {}-*.egg-info with a Version line under {}", package, package, env_dir);
  return std::nullopt;
}

}  // namespace shardcheck
