// `shardcheck lint [FILE...]`: check accelerate config files (and the caller's FSDP_*/ACCELERATE_*
// environment) against what the targeted accelerate release does with them; --fix / --diff rewrite.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/choices.hpp"
#include "cli/finding_formats.hpp"
#include "shardcheck/environment.hpp"
#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/report.hpp"
#include "platform/prefault.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck::cli {
namespace {

struct LintArgs {
  std::vector<std::string> files;
  std::string accelerate_version;
  std::string torch_version;
  std::string python_env;
  bool audit_env = true;
  std::string env_file;
  std::string format = "text";
  std::string uri_base = ".";
  bool strict = false;
  bool fix = false;
  bool diff = false;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "shardcheck lint: %s\n", message.c_str());
  return to_int(ExitCode::usage);
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<SarifRule> sarif_rules() {
  std::vector<SarifRule> out;
  for (const Rule* r : all_rules()) out.push_back(*catalogued_sarif_rule(r->id));
  return out;
}

int run_lint(LintArgs a, const CliContext& ctx) {
  if (a.fix && a.diff) return usage_error("--fix and --diff are exclusive: --diff shows what --fix would write");
  platform::prefault_heap(std::size_t{256} << 10);  // a short run: ~250 KB of heap for one file
  util::StageTimer timer("lint: load schema");
  DiagnosticSink schema_sink;
  auto schema = AccelerateSchema::load(ctx.rules_dir, schema_sink);
  timer.lap("lint: options and environment");
  if (!schema) {
    std::fputs(render_diagnostics_text(schema_sink.items(), TextStyle{false}).c_str(), stderr);
    return to_int(schema_sink.first_error_exit_code());
  }

  LintOptions opts;
  opts.accelerate = schema->newest;
  if (!a.python_env.empty()) {
    std::string why;
    auto v = installed_package_version(a.python_env, "accelerate", &why);
    if (!v) return usage_error(fmt::format("--python-env: no installed accelerate found ({})", why));
    auto parsed = Version::parse(*v);
    if (!parsed) return usage_error(fmt::format("--python-env: cannot read accelerate version '{}'", *v));
    opts.accelerate = *parsed;
    if (auto t = installed_package_version(a.python_env, "torch")) opts.torch = Version::parse(*t);
    std::fprintf(stderr, "shardcheck: accelerate %s%s from %s\n", parsed->str().c_str(),
                 opts.torch ? fmt::format(", torch {}", opts.torch->str()).c_str() : "", a.python_env.c_str());
  }
  if (!a.accelerate_version.empty()) {
    auto v = Version::parse(a.accelerate_version);
    if (!v)
      return usage_error(
          fmt::format("expected a version like 1.6.0 for --accelerate-version, found '{}'", a.accelerate_version));
    opts.accelerate = *v;
  }
  if (!a.torch_version.empty()) {
    auto v = Version::parse(a.torch_version);
    if (!v)
      return usage_error(fmt::format("expected a version like 2.6.0 for --torch-version, found '{}'", a.torch_version));
    opts.torch = *v;
  }
  if (opts.accelerate < schema->oldest || opts.accelerate > schema->newest)
    std::fprintf(stderr, "shardcheck: note: the rules know accelerate %s to %s; checking %s anyway\n",
                 schema->oldest.str().c_str(), schema->newest.str().c_str(), opts.accelerate.str().c_str());

  std::map<std::string, std::string> sources;  // file -> text, for snippets
  opts.audit_env = a.audit_env;
  if (a.audit_env) {
    if (!a.env_file.empty()) {
      auto text = read_text(a.env_file);
      if (!text) return usage_error(fmt::format("cannot read --env-file {}", a.env_file));
      opts.env = parse_env_file(*text);
      opts.env_source = a.env_file;
      sources[a.env_file] = *text;
    } else {
      opts.env = fsdp_environment_of_process();
    }
  }

  if (a.files.empty()) {
    const std::string def = default_accelerate_config_path();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(def, ec))
      return usage_error(
          fmt::format("no config file given, and accelerate's default config {} does not exist "
                      "($HF_HOME/accelerate/default_config.yaml, else "
                      "${{XDG_CACHE_HOME:-~/.cache}}/huggingface/accelerate/default_config.yaml)",
                      def));
    std::fprintf(stderr, "shardcheck: no file given; checking accelerate's default config %s\n", def.c_str());
    a.files.push_back(def);
  }

  timer.lap("lint: read and check files");
  DiagnosticSink all;
  std::set<std::pair<std::string, std::string>> environment_findings;  // (rule, message) already reported
  std::size_t fixed_files = 0;
  for (const auto& path : a.files) {
    DiagnosticSink sink;
    auto doc = load_config_doc(path, sink);
    if (doc) {
      if (a.fix || a.diff) {
        const std::string after = fix_to_fixpoint(doc->text, path, *schema, opts);
        if (after != doc->text) {
          if (a.diff) {
            std::fputs(unified_diff(path, doc->text, after).c_str(), stdout);
          } else {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out << after;
            if (!out) {
              std::fprintf(stderr, "shardcheck lint: cannot write %s\n", path.c_str());
              return to_int(ExitCode::usage);
            }
            ++fixed_files;
          }
          DiagnosticSink reparsed;
          doc = parse_config_doc(after, path, reparsed);
          sink.append(reparsed);
        }
      }
      if (doc) {
        lint_document(*doc, *schema, opts, sink);
        sources[path] = doc->text;
      }
    }
    for (const auto& d : sink.items()) {
      const Rule* rule = find_rule(d.code);
      if (rule && rule->environment_only && !environment_findings.emplace(d.code, d.message).second) continue;
      all.report(d);
    }
  }
  if (a.fix) std::fprintf(stderr, "shardcheck: fixed %zu file%s\n", fixed_files, fixed_files == 1 ? "" : "s");

  timer.lap("lint: render");
  const auto& items = all.items();
  if (a.format == "json") {
    std::fputs(render_diagnostics_json(items).c_str(), stdout);
  } else if (const auto report = render_for_code_host(a.format, items, sarif_rules, a.uri_base)) {
    std::fputs(report->c_str(), stdout);
  } else if (!a.diff) {
    SourceLookup lookup = [&sources](const std::string& f) -> const std::string* {
      auto it = sources.find(f);
      return it == sources.end() ? nullptr : &it->second;
    };
    std::fputs(render_diagnostics_text(items, lookup, TextStyle{ctx.color}).c_str(), stdout);
    const auto errors = all.count(Severity::error), warnings = all.count(Severity::warning),
               notes = all.count(Severity::note);
    if (!items.empty())
      std::fprintf(stderr, "%zu error%s, %zu warning%s, %zu note%s in %zu file%s\n", errors, errors == 1 ? "" : "s",
                   warnings, warnings == 1 ? "" : "s", notes, notes == 1 ? "" : "s", a.files.size(),
                   a.files.size() == 1 ? "" : "s");
  }

  bool unparsable = false, io = false, errors = false, warnings = false;
  for (const auto& d : items) {
    if (d.exit_code == ExitCode::bad_accelerate_config)
      unparsable = true;
    else if (d.exit_code == ExitCode::io)
      io = true;
    else if (d.severity == Severity::error)
      errors = true;
    else if (d.severity == Severity::warning)
      warnings = true;
  }
  if (unparsable) return to_int(ExitCode::bad_accelerate_config);
  if (io) return to_int(ExitCode::io);  // the same code as check and plan for a file that cannot be read
  if (errors || (a.strict && warnings)) return to_int(ExitCode::findings);
  return 0;
}

}  // namespace

void register_lint(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<LintArgs>();
  CLI::App* cmd = app.add_subcommand("lint", "Check accelerate config files (and the FSDP environment) before launch");
  cmd->add_option("files", args->files,
                  "Config files (default: accelerate's default config, $HF_HOME/accelerate/default_config.yaml)");
  cmd->add_option("--accelerate-version", args->accelerate_version,
                  "Check against this accelerate release (default: the newest the rules know)");
  cmd->add_option("--torch-version", args->torch_version, "The torch release the job runs (enables torch checks)");
  cmd->add_option("--python-env", args->python_env,
                  "A site-packages directory: read the installed accelerate (and torch) versions from it");
  cmd->add_flag("--env,!--no-env", args->audit_env,
                "Audit FSDP_*/ACCELERATE_* variables of the calling shell (default on)");
  cmd->add_option("--env-file", args->env_file, "Audit the KEY=VALUE lines of this file instead of the shell");
  cmd->add_option("--format", args->format, "Output format")->check(one_of(kFindingFormats));
  cmd->add_option("--uri-base", args->uri_base,
                  "SARIF and GitLab: make file paths relative to this directory (default: .)");
  cmd->add_flag("--strict", args->strict, "Exit 1 on warnings too");
  cmd->add_flag("--fix", args->fix, "Rewrite the files, applying every automatic fix");
  cmd->add_flag("--diff", args->diff, "Print the changes --fix would make, as a unified diff");
  cmd->callback([args, &ctx] { ctx.exit_code = run_lint(*args, ctx); });
}

}  // namespace shardcheck::cli
