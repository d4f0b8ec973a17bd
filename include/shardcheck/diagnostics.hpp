#pragma once
// Diagnostics: the one currency every stage reports problems in. Loaders, resolvers and rules push
// Diagnostic values into a DiagnosticSink instead of throwing, so one run reports every problem.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/exit_codes.hpp"

namespace shardcheck {

enum class Severity { note, warning, error };
const char* severity_name(Severity s);

// A place in an input. Text files use 1-based line/column; binary files use a byte offset.
struct SourceLocation {
  std::string file;
  int line = 0;  // 0 = unknown / not a text position
  int column = 0;
  int end_column = 0;                        // exclusive; 0 = a single caret
  std::optional<std::uint64_t> byte_offset;  // binary inputs (safetensors)
  // The module or parameter of the model a finding is about (dotted path, "" for the root), when it
  // is about the model's structure rather than a position in a text file. `file` then names the
  // model's config.json, so that every renderer (SARIF, GitHub annotations) has a real file to point
  // at; the path travels as SARIF's logicalLocation.
  std::optional<std::string> model_path;
};

// A place in a text file (line and column 0: the file as a whole).
inline SourceLocation in_file(std::string file, int line = 0, int column = 0) {
  SourceLocation loc;
  loc.file = std::move(file);
  loc.line = line;
  loc.column = column;
  return loc;
}

// How a module path is shown to people: the root's path is empty, so it reads "<root>".
inline std::string module_label(const std::string& path) { return path.empty() ? "<root>" : path; }

// `check` plans a broken accelerate config with shardcheck's fixes applied; settings read from that
// text have the source "FILE (fixed):LINE", whose line numbers are those of the fixed text.
inline constexpr std::string_view kFixedConfigSuffix = " (fixed)";

// Where a setting came from, as a location: "FILE:LINE" (the accelerate config) becomes that file
// and line; "FILE (fixed):LINE" becomes FILE without a line (the line is in the fixed text); any
// other source ("env NAME", "--flag", "default") is not a place in a file, so the location is
// `fallback_file`. `*note` (when given) receives " (from SOURCE)" whenever the location has no line.
SourceLocation setting_location(const std::string& source, const std::string& fallback_file, std::string* note);

// A replacement of [offset, offset+length) in `file` by `text` (clang-tidy style).
struct TextEdit {
  std::string file;
  std::size_t offset = 0;
  std::size_t length = 0;
  std::string text;
};

struct Diagnostic {
  std::string code;  // stable id, e.g. "ST005" or "FSDP001"
  Severity severity = Severity::error;
  SourceLocation location;
  std::string message;                      // one line: what is wrong, with expected vs found
  std::string help;                         // what to do about it (may be empty)
  std::vector<TextEdit> fix;                // machine-applicable fix (may be empty)
  ExitCode exit_code = ExitCode::findings;  // the process exit code this problem maps to
};

// A diagnostic from its parts. Stages do not call this: they report a catalogued code with finding()
// (finding_codes.hpp), a lint rule through LintContext; those look severity and exit code up.
Diagnostic make_diagnostic(std::string_view code, Severity severity, ExitCode exit_code, SourceLocation where,
                           std::string message, std::string help);

class DiagnosticSink {
 public:
  void report(Diagnostic d);
  const std::vector<Diagnostic>& items() const { return items_; }
  std::vector<Diagnostic>& items() { return items_; }
  bool has_errors() const;
  std::size_t count(Severity s) const;
  // Exit code of the first error-severity diagnostic (ok when there is none).
  ExitCode first_error_exit_code() const;
  void append(const DiagnosticSink& other);

 private:
  std::vector<Diagnostic> items_;
};

// setting_finding and model_setting_finding, which read the code catalogue, are in finding_codes.hpp.

}  // namespace shardcheck
