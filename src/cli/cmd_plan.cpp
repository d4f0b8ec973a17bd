// `shardcheck plan MODEL [--config accelerate.yaml] [flags]`: what FSDP will do with this model —
// units, per-rank shards, memory per rank and communication per step.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/plan_flags.hpp"
#include "cli/choices.hpp"
#include "shardcheck/report.hpp"
#include "platform/huge_pages.hpp"
#include "platform/mapped_reads.hpp"
#include "util/stage_timer.hpp"
#include "platform/exit_without_free.hpp"

namespace shardcheck::cli {
namespace {

int run_plan(const PlanFlags& f, const CliContext& ctx) {
  platform::use_huge_page_heap();  // a short-lived process about to build large tables
  platform::allow_mapped_reads();  // and to read large files, which it may map (SIGBUS handled)
  std::string error;
  auto req = make_request(f, ctx, error);
  if (!req) {
    std::fprintf(stderr, "shardcheck plan: %s\n", error.c_str());
    return to_int(ExitCode::usage);
  }
  req->fold_repeats = f.format == "text";  // the text renderers read folded plans; JSON and HTML list every unit
  PreflightResult r = run_preflight(*req);
  util::StageTimer timer("plan: render");
  if (r.plan && r.tree && f.format == "html") {
    std::fputs(render_plan_html(*r.tree, *r.plan, r.settings, r.memory, r.comm, r.sink.items()).c_str(), stdout);
    std::fputs(render_diagnostics_text(r.sink.items()).c_str(), stderr);
  } else if (r.plan && f.format == "json") {
    std::fputs(render_plan_json(*r.plan, r.settings, r.memory, r.comm, r.sink.items(),
                                r.tree && r.tree->peft ? &*r.tree->peft : nullptr)
                   .c_str(),
               stdout);
  } else {
    if (!r.planned_config_note.empty()) std::printf("note: %s\n\n", r.planned_config_note.c_str());
    if (r.plan && r.tree && !f.no_tree)
      std::printf("%s\n", render_plan_tree_text(*r.tree, *r.plan, TextStyle{ctx.color}).c_str());
    if (r.plan)
      std::fputs(render_plan_text(*r.plan, r.settings, r.memory, r.comm, TextStyle{ctx.color},
                                  r.tree && r.tree->peft ? &*r.tree->peft : nullptr)
                     .c_str(),
                 stdout);
    std::fputs(render_diagnostics_text(r.sink.items()).c_str(), stderr);
  }
  const int code = to_int(r.sink.first_error_exit_code());
  platform::keep_until_exit(std::move(r));  // the exit frees it (platform/exit_without_free.hpp)
  return code;
}

}  // namespace

void register_plan(CLI::App& app, CliContext& ctx) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand("plan", "Simulate FSDP auto-wrap and sharding: units, per-rank shards, memory");
  cmd->add_option("model", f->model,
                  "Model directory, its config.json, or a Hub id org/name[@revision] (or --module-tree FILE)");
  cmd->add_option("--format", f->format, "Output format (html: one self-contained page to open in a browser)")
      ->check(one_of({"text", "json", "html"}));
  cmd->add_flag("--no-tree", f->no_tree, "Text: only the unit table, not the module tree with unit marks");
  add_plan_flags(cmd, *f);
  cmd->callback([f, &ctx] { ctx.exit_code = run_plan(*f, ctx); });
}

}  // namespace shardcheck::cli
