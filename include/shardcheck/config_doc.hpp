#pragma once
// Stage "load" for accelerate config files: a YAML document kept with the position of every key and
// value. Built from yaml-cpp's event stream (not YAML::Node) because the node API resolves duplicate
// keys silently and forgets whether a scalar was quoted, and both matter to a linter: PyYAML
// (what accelerate uses, `yaml.safe_load`) keeps the *last* duplicate and turns a plain `no` into
// False but a quoted 'no' into the string "no".

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck {

// A position in the source text. `line`/`column` are 1-based; column counts UTF-8 code points.
struct TextPos {
  int line = 0;
  int column = 0;
  std::size_t offset = 0;  // byte offset into ConfigDoc::text
};

// What PyYAML's YAML 1.1 resolver makes of a scalar (yaml.safe_load, PyYAML 6).
enum class YamlType { null, boolean, integer, floating, string };
const char* yaml_type_name(YamlType t);  // Python spelling: NoneType, bool, int, float, str

struct YamlScalar {
  YamlType type = YamlType::string;
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0;
};
// Resolves a scalar the way PyYAML's SafeLoader does. Quoted scalars are always strings.
YamlScalar resolve_yaml11(std::string_view text, bool quoted);

struct YamlNode;
struct YamlEntry {
  std::string key;  // key text (keys that are not scalars are rendered as "<mapping>" etc.)
  TextPos key_pos;
  std::size_t key_end = 0;  // byte offset just past the key token
  std::shared_ptr<YamlNode> value;
};

struct YamlNode {
  enum class Kind { null, scalar, sequence, mapping };
  Kind kind = Kind::null;
  TextPos pos;                                   // where the value starts (for an empty value: where the key is)
  std::size_t end = 0;                           // byte offset just past the value's last character (0 = unknown)
  bool explicit_null = false;                    // `~`, `null`, `{}`... written out (vs nothing after the colon)
  std::string text;                              // scalar text after YAML unescaping
  bool quoted = false;                           // scalar written with ' or " (or a block scalar)
  bool flow = false;                             // `{...}` / `[...]` collection
  std::vector<YamlEntry> entries;                // mapping, in file order, duplicates kept
  std::vector<std::shared_ptr<YamlNode>> items;  // sequence

  bool is_mapping() const { return kind == Kind::mapping; }
  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_null() const { return kind == Kind::null; }
  YamlScalar scalar() const;  // resolve_yaml11(text, quoted); null kind resolves to null
  // The entry PyYAML keeps for `key` (the last one), or nullptr.
  const YamlEntry* find(std::string_view key) const;
};

// Limits that keep hostile input bounded in time and memory. Real configs are < 4 KiB, < 4 deep.
struct YamlLimits {
  std::size_t max_bytes = 1 << 20;  // 1 MiB
  int max_depth = 64;
  std::size_t max_nodes = 100000;  // counting every node an alias expands to
  std::size_t max_scalar_bytes = std::size_t{64} * 1024;
};

struct ConfigDoc {
  std::string path;                      // as given (diagnostics)
  std::string text;                      // the whole file
  std::shared_ptr<YamlNode> root;        // null kind for an empty file
  std::vector<std::size_t> line_starts;  // byte offset of each line (index 0 = line 1)

  std::string_view line_text(int line) const;  // without the newline; empty if out of range
  TextPos pos_at(std::size_t offset) const;
  // A location spanning [start, end) on start's line (end clipped to that line).
  SourceLocation location(std::size_t start, std::size_t end) const;
  SourceLocation key_location(const YamlEntry& e) const { return location(e.key_pos.offset, e.key_end); }
  SourceLocation value_location(const YamlEntry& e) const;
};

// `text` with every lone "\r" turned into "\n", as Python's text mode (universal newlines) hands it to
// PyYAML; "\r\n" is kept. Same length, so offsets, lines and columns stay those of `text`. yaml-cpp
// does not take a lone "\r" as a line break, so every YAML text goes through this before yaml-cpp.
std::string yaml_universal_newlines(std::string_view text);

// Parses `text` (labelled `path` in diagnostics). Syntax errors and exceeded limits are reported to
// `sink` with rule "yaml-syntax" / "yaml-limits" and ExitCode::bad_accelerate_config; then nullopt.
std::optional<ConfigDoc> parse_config_doc(std::string text, const std::string& path, DiagnosticSink& sink,
                                          const YamlLimits& limits = {});
// Reads the file first (ExitCode::io if it cannot be read; the size limit is checked before reading).
std::optional<ConfigDoc> load_config_doc(const std::string& path, DiagnosticSink& sink, const YamlLimits& limits = {});

// ---- Finding the file and the version, the way accelerate does -------------------------------

// accelerate's default config path (commands/config/config_args.py, same in v0.34.0 and v1.14.0):
// $HF_HOME/accelerate/default_config.yaml, else ${XDG_CACHE_HOME:-~/.cache}/huggingface/accelerate/...
// `getenv` is injectable for tests.
std::string default_accelerate_config_path(const char* (*getenv_fn)(const char*) = nullptr);

// The version of a package installed in a Python environment: `env_dir` is a site-packages (or
// Debian dist-packages) directory, or a prefix (a virtualenv, a conda environment, /usr) whose
// lib/python3*/site-packages or lib/python3/dist-packages is searched. Read from the wheel's
// <name>-*.dist-info/METADATA or a distutils <name>-*.egg-info/PKG-INFO (Debian's packages) "Version:"
// line; nullopt with a reason in `why`.
std::optional<std::string> installed_package_version(const std::string& site_packages, const std::string& package,
                                                     std::string* why = nullptr);

}  // namespace shardcheck
