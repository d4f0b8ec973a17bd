// `shardcheck check --config accelerate.yaml --model DIR`: the one pre-flight step a CI job runs —
// lint the config and environment, resolve what accelerate will wrap, plan the shards, check the
// fit — with the linter's output formats and exit codes (0 clean, 1 findings, 2 usage, I/O and
// input-format codes as in the table).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <set>

#include "cli/finding_formats.hpp"
#include "cli/choices.hpp"
#include "cli/plan_flags.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/report.hpp"
#include "platform/huge_pages.hpp"
#include "platform/mapped_reads.hpp"
#include "platform/exit_without_free.hpp"

namespace shardcheck::cli {
namespace {

struct CheckFlags : PlanFlags {
  bool strict = false;
  std::string uri_base = ".";
  std::string model_flag;  // --model; the positional goes to PlanFlags::model
  bool no_tree = false;    // accepted as plan accepts it; check prints the unit table, not the tree
};

// SARIF rule metadata for every code that occurs: lint rules carry their own documentation, load
// and plan codes theirs in the finding-code catalogue.
std::vector<SarifRule> sarif_rules_for(const std::vector<Diagnostic>& items) {
  std::vector<SarifRule> out;
  std::set<std::string> seen;
  for (const auto& d : items) {
    if (!seen.insert(d.code).second) continue;
    if (auto s = catalogued_sarif_rule(d.code)) {
      out.push_back(std::move(*s));
      continue;
    }
    SarifRule s;  // not catalogued (a test keeps this from happening): its first message
    s.id = s.name = d.code;
    s.level = d.severity;
    s.short_description = d.message.substr(0, 120);
    s.full_description = d.message;
    out.push_back(std::move(s));
  }
  return out;
}

int exit_code(const PreflightResult& r, bool strict) {
  const ExitCode first = r.sink.first_error_exit_code();
  if (first != ExitCode::ok) return to_int(first);
  if (strict && r.sink.count(Severity::warning) > 0) return to_int(ExitCode::findings);
  return 0;
}

int run_check(CheckFlags f, const CliContext& ctx) {
  // The model as a positional or as --model (both: they must agree).
  if (!f.model_flag.empty() && !f.model.empty() && f.model_flag != f.model) {
    std::fprintf(stderr, "shardcheck check: two models given: '%s' and --model '%s'\n", f.model.c_str(),
                 f.model_flag.c_str());
    return to_int(ExitCode::usage);
  }
  if (f.model.empty()) f.model = f.model_flag;
  if (f.model.empty() && f.module_tree.empty()) {
    std::fprintf(stderr,
                 "shardcheck check: expected a model: a directory, its config.json or a Hub id, as "
                 "`check MODEL` or `check --model MODEL`, or a dump of it as `--module-tree FILE`\n");
    return to_int(ExitCode::usage);
  }
  platform::use_huge_page_heap();  // a short-lived process about to build large tables
  platform::allow_mapped_reads();  // and to read large files, which it may map (SIGBUS handled)
  std::string error;
  auto req = make_request(f, ctx, error);
  if (!req) {
    std::fprintf(stderr, "shardcheck check: %s\n", error.c_str());
    return to_int(ExitCode::usage);
  }
  req->lint = true;
  // Findings and the text plan read folded plans alike (tests/unit/test_folded_plan.cpp); the JSON
  // plan lists every unit.
  req->fold_repeats = f.format != "json";
  PreflightResult r = run_preflight(*req);
  const auto& items = r.sink.items();
  if (f.format == "json") {
    if (r.plan)
      std::fputs(render_plan_json(*r.plan, r.settings, r.memory, r.comm, items,
                                  r.tree && r.tree->peft ? &*r.tree->peft : nullptr)
                     .c_str(),
                 stdout);
    else
      std::fputs(render_diagnostics_json(items).c_str(), stdout);
  } else if (const auto report = render_for_code_host(
                 f.format, items, [&] { return sarif_rules_for(items); }, f.uri_base)) {
    std::fputs(report->c_str(), stdout);
  } else {
    SourceLookup lookup = [&r](const std::string& file) -> const std::string* {
      return r.config_doc && r.config_doc->path == file ? &r.config_doc->text : nullptr;
    };
    std::fputs(render_diagnostics_text(items, lookup, TextStyle{ctx.color}).c_str(), stdout);
    if (!r.planned_config_note.empty()) std::printf("\nnote: %s\n", r.planned_config_note.c_str());
    if (r.plan) {
      std::fputs("\n", stdout);
      std::fputs(render_plan_text(*r.plan, r.settings, r.memory, r.comm, TextStyle{ctx.color},
                                  r.tree && r.tree->peft ? &*r.tree->peft : nullptr)
                     .c_str(),
                 stdout);
    }
    std::printf("\n%zu error(s), %zu warning(s)\n", r.sink.count(Severity::error), r.sink.count(Severity::warning));
  }
  const int code = exit_code(r, f.strict);
  platform::keep_until_exit(std::move(r));  // the exit frees it (platform/exit_without_free.hpp)
  return code;
}

}  // namespace

void register_check(CLI::App& app, CliContext& ctx) {
  auto f = std::make_shared<CheckFlags>();
  CLI::App* cmd = app.add_subcommand("check", "Pre-flight for CI: lint + resolve + plan + fit, one exit code");
  cmd->add_option("model", f->model, "Model directory, its config.json, or a Hub id org/name[@revision]");
  cmd->add_option("--model", f->model_flag,
                  "The same as the positional MODEL (one of the two, or --module-tree, is required)");
  cmd->add_flag("--no-tree", f->no_tree,
                "Accepted for symmetry with plan: check prints the unit table, never the tree");
  cmd->add_option("--format", f->format, "Output format")->check(one_of(kFindingFormats));
  cmd->add_flag("--strict", f->strict, "Warnings fail the check too");
  cmd->add_option("--uri-base", f->uri_base, "SARIF and GitLab: make file paths relative to this directory");
  add_plan_flags(cmd, *f);
  cmd->callback([f, &ctx] { ctx.exit_code = run_check(*f, ctx); });
}

}  // namespace shardcheck::cli
