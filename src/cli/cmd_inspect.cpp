// `shardcheck inspect MODEL`: the module tree transformers would build, with parameter counts.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/adapter_flags.hpp"
#include "cli/choices.hpp"
#include "cli/commands.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/module_tree_file.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/report.hpp"
#include "shardcheck/stack_versions.hpp"
#include "util/stage_timer.hpp"
#include "platform/huge_pages.hpp"
#include "platform/mapped_reads.hpp"

namespace shardcheck::cli {
namespace {

struct InspectArgs {
  std::string model;
  std::string module_tree;  // --module-tree FILE instead of `model`
  std::string format = "text";
  std::string transformers_version;
  std::string attn_implementation;  // "": transformers' default for the model
  std::string architecture;
  bool config_only = false;
  bool dequantize = false;
  AdapterFlags adapter;
};

int run_inspect(const InspectArgs& a, const CliContext& ctx) {
  platform::use_huge_page_heap();  // a short-lived process about to build large tables
  platform::allow_mapped_reads();  // and to read large files, which it may map (SIGBUS handled)
  DiagnosticSink sink;
  ResolveOptions opts;
  // The same default release as plan and check (rules/versions.yaml), so both show one layout.
  if (const auto rules = VersionRules::load(ctx.rules_dir, sink)) opts.transformers = rules->transformers_default;
  if (!a.transformers_version.empty()) {
    auto v = Version::parse(a.transformers_version);
    if (!v) {
      std::fprintf(stderr, "shardcheck: expected a version like 4.44.2 for --transformers-version, found '%s'\n",
                   a.transformers_version.c_str());
      return to_int(ExitCode::usage);
    }
    opts.transformers = *v;
  }
  opts.attn_implementation = a.attn_implementation;
  opts.architecture = a.architecture;
  opts.dequantize = a.dequantize;

  std::string flag_error;
  if (a.model.empty() == a.module_tree.empty())
    flag_error = a.model.empty() ? "expected a model (a directory, its config.json or a Hub id) or --module-tree FILE"
                                 : "expected a model or --module-tree FILE, found both";
  std::optional<LoraAdapter> adapter = adapter_from_flags(a.adapter, flag_error);
  if (flag_error.empty()) opts.bnb_4bit = bnb_from_flags(a.adapter, flag_error);
  if (flag_error.empty() && !a.module_tree.empty() && (opts.bnb_4bit || a.config_only || a.dequantize))
    flag_error = "expected --module-tree alone to give the model as it was built, found a load flag too";
  if (!flag_error.empty()) {
    std::fprintf(stderr, "shardcheck: %s\n", flag_error.c_str());
    return to_int(ExitCode::usage);
  }
  std::string model = a.model, adapter_path = a.adapter.adapter;
  if (!adapter && !model.empty()) split_adapter_model(model, adapter_path, sink);
  if (sink.has_errors() || (!adapter_path.empty() && !(adapter = load_adapter_config(adapter_path, sink)))) {
    std::fputs(render_diagnostics_text(sink.items(), TextStyle{false}).c_str(), stderr);
    return to_int(sink.first_error_exit_code());
  }
  a.adapter.apply_to(adapter);
  std::optional<ModuleTree> tree = a.module_tree.empty()
                                       ? load_module_tree(model, a.config_only, ctx.rules_dir, opts, sink).tree
                                       : load_module_tree_file(a.module_tree, opts, sink);
  // The PeftModel get_peft_model builds, with what trains; nothing is shown where peft would raise.
  if (tree && adapter && !attach_lora_adapter(*tree, *adapter, ctx.rules_dir, sink)) tree.reset();
  util::StageTimer timer("inspect: render");
  const TextStyle style{ctx.color};
  if (a.format == "json" && tree) {
    std::fputs(render_tree_json(*tree, sink.items()).c_str(), stdout);
  } else {
    if (tree) std::fputs(render_tree_text(*tree, style).c_str(), stdout);
    std::fputs(render_diagnostics_text(sink.items(), TextStyle{false}).c_str(), stderr);
  }
  return to_int(sink.first_error_exit_code());
}

}  // namespace

void register_inspect(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print the module tree, parameter counts and dtypes of a model");
  cmd->add_option(
      "model", args->model,
      "Model directory (config.json, safetensors headers), its config.json, or a Hub id org/name[@revision]");
  cmd->add_option("--module-tree", args->module_tree,
                  "The model from a dump of the live object (python3 -m shardcheck dump; docs/module-tree.md)");
  cmd->add_option("--format", args->format, "Output format")->check(one_of({"text", "json"}));
  cmd->add_option("--transformers-version", args->transformers_version,
                  "Module layout of this transformers release (default 5.12.1, rules/versions.yaml)");
  cmd->add_option("--attn-implementation", args->attn_implementation,
                  "Attention implementation for 4.x class names (eager, sdpa, flash_attention_2; default: "
                  "transformers', sdpa where the model supports it)")
      ->check(one_of({"eager", "sdpa", "flash_attention_2"}));
  cmd->add_option("--architecture", args->architecture, "Head class to build instead of config.json's");
  add_adapter_flags(cmd, args->adapter);
  cmd->add_flag("--config-only", args->config_only, "Ignore safetensors files; shapes from config.json only");
  cmd->add_flag(
      "--dequantize", args->dequantize,
      "Load a quantised checkpoint dequantised (quantization_config.dequantize=True, e.g. FineGrainedFP8Config)");
  cmd->callback([args, &ctx] { ctx.exit_code = run_inspect(*args, ctx); });
}

}  // namespace shardcheck::cli
