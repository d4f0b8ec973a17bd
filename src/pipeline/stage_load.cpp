// The pipeline's first stages (pipeline/stages.hpp): the release set, the training arguments, the
// accelerate config and the settings they give.
#include <fmt/format.h>

#include <regex>

#include "pipeline/stages.hpp"
#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/effective_settings.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/text.hpp"
#include "shardcheck/trl_model_config.hpp"
#include "shardcheck/validate_settings.hpp"

namespace shardcheck::pipeline {
namespace {

// The accelerate config with shardcheck's fixes applied, when the linter found fixable errors (the
// seed's lost indentation); nullopt when it found none or the fixed text does not parse.
std::optional<ConfigDoc> fixed_config(const ConfigDoc& doc, const AccelerateSchema& schema, const LintOptions& lo,
                                      const DiagnosticSink& lint_sink) {
  bool fixable_errors = false;
  for (const auto& d : lint_sink.items())
    fixable_errors = fixable_errors || (d.severity == Severity::error && !d.fix.empty());
  if (!fixable_errors) return std::nullopt;
  DiagnosticSink ignore;
  std::string text = fix_to_fixpoint(doc.text, doc.path, schema, lo);
  // Sources then read "<file> (fixed):LINE": line numbers of the fixed text, not the original.
  return parse_config_doc(std::move(text), doc.path + std::string(kFixedConfigSuffix), ignore);
}

// Regexes from the file, the environment or a flag: a bad one is Python's re.error at launch.
bool regexes_compile(const PreflightRequest& req, PreflightResult& r) {
  for (const Setting<std::string>* rx : {&r.settings.frozen, &r.settings.ignored_modules}) {
    if (rx->value.empty()) continue;
    try {
      std::regex check(rx->value);
    } catch (const std::regex_error& e) {
      r.sink.report(setting_finding("PLAN016", rx->source, req.accelerate_config.value_or(req.model),
                                    fmt::format("expected a regular expression, found '{}' ({})", rx->value, e.what()),
                                    ""));
      return false;
    }
  }
  return true;
}

// Whether `accelerate launch` runs this config with FSDP at all. `_validate_launch_command`
// (commands/launch.py, v1.14.0) sets use_fsdp = distributed_type == DistributedType.FSDP (and the
// other paradigms likewise) unless a --use_fsdp/--multi_gpu/... flag was given; ACCELERATE_USE_FSDP in
// the job's environment also makes the Accelerator build an FSDP plugin. A MULTI_GPU, DEEPSPEED, NO,
// ... config therefore never shards with FSDP: planning its (absent or unused) fsdp_config would show
// FSDP units, memory and advice for a job that replicates the model (DDP) or hands it to DeepSpeed.
// A missing or non-string distributed_type is the linter's finding; the plan then goes on as before.
bool runs_fsdp(const ConfigDoc& doc, const AccelerateSchema& schema, const LintOptions& lo,
               const std::vector<EnvVar>& env, PreflightResult& r) {
  DiagnosticSink quiet;
  LintContext ctx(doc, schema, lo, quiet);
  const YamlEntry* e = ctx.top("distributed_type");
  const std::string dt = ctx.distributed_type();
  if (!e || dt.empty() || dt == "FSDP") return true;
  for (const auto& v : env)
    if (v.name == "ACCELERATE_USE_FSDP" && (ascii_lower(v.value) == "true" || v.value == "1")) return true;
  const bool ddp = dt.rfind("MULTI_", 0) == 0;
  r.sink.report(finding(
      "SET009", doc.value_location(*e),
      fmt::format("distributed_type is {}: accelerate launch does not use FSDP for this config ({}), so there is no "
                  "FSDP plan to check",
                  dt,
                  ddp                 ? "DDP: every rank holds the whole model, its gradients and optimizer states"
                  : dt == "NO"        ? "one process, nothing distributed"
                  : dt == "DEEPSPEED" ? "DeepSpeed shards it by its own zero_stage"
                                      : "another paradigm shards or places it"),
      "set `distributed_type: FSDP` (with an fsdp_config) to run and check it with FSDP"));
  return false;
}

}  // namespace

std::optional<ReleaseSet> load_release_set(const PreflightRequest& req, PreflightResult& r) {
  auto version_rules = VersionRules::load(req.rules_dir, r.sink);
  if (!version_rules) return std::nullopt;
  const StackVersions versions = resolve_stack_versions(req.versions, *version_rules);
  r.settings.torch_version = versions.torch;
  r.settings.accelerate_version = versions.accelerate;
  r.settings.transformers_version = versions.transformers;
  ResolveOptions resolve = req.resolve;
  resolve.transformers = versions.transformers.value;
  return ReleaseSet{std::move(*version_rules), versions, std::move(resolve)};
}

// TRL's ModelConfig in the training-arguments file: under every flag and --adapter.
bool read_training_args(const PreflightRequest& req, ReleaseSet& release, PreflightResult& r) {
  std::optional<LoraAdapter>& adapter = r.adapter;  // the result keeps it (the CLI frees nothing at exit)
  adapter = req.adapter;
  if (!req.training_args) return true;
  const std::size_t errors_before_trl = r.sink.count(Severity::error);
  ResolveOptions& resolve = release.resolve;
  TrlRun trl = resolve_trl_run(*req.training_args, release.versions.trl, resolve.load_dtype, r.sink);
  if (r.sink.count(Severity::error) > errors_before_trl) return false;
  if (trl.load_dtype) resolve.load_dtype = trl.load_dtype->value;
  if (!resolve.bnb_4bit) resolve.bnb_4bit = trl.bnb_4bit;
  if (resolve.bnb_4bit && req.bnb_4bit_overrides) req.bnb_4bit_overrides(*resolve.bnb_4bit);
  if (!adapter && req.adapter_path.empty()) adapter = std::move(trl.adapter);
  return true;
}

// Accelerate config: lint it (check), and read the settings accelerate launch would export. When
// the file has fixable errors (the seed's lost indentation), the plan is computed from the fixed
// text, so the user sees both what is wrong and the shard tree the corrected file gives.
bool lint_accelerate_config(const PreflightRequest& req, PreflightResult& r) {
  if (!req.accelerate_config) return true;
  r.config_doc = load_config_doc(*req.accelerate_config, r.sink);
  auto schema = AccelerateSchema::load(req.rules_dir, r.sink);
  if (!r.config_doc || !schema) return false;  // unreadable or unparsable: planning on defaults would mislead
  LintOptions lo;
  lo.accelerate = r.settings.accelerate_version.value;
  lo.torch = r.settings.torch_version.value;
  lo.audit_env = !req.env.empty();
  lo.env = req.env;
  DiagnosticSink lint_sink;
  lint_document(*r.config_doc, *schema, lo, lint_sink);
  const ConfigDoc* effective = &*r.config_doc;
  const std::optional<ConfigDoc> fixed = fixed_config(*r.config_doc, *schema, lo, lint_sink);
  if (fixed) {
    effective = &*fixed;
    r.planned_config_note = fmt::format(
        "{} has errors; the plan below uses it with shardcheck's fixes applied "
        "(`shardcheck lint --fix`)",
        r.config_doc->path);
  }
  if (req.lint) r.sink.append(lint_sink);
  // A training recipe given as --config: the finding says where it goes; a plan of accelerate's
  // defaults beside it would only mislead.
  for (const auto& d : lint_sink.items())
    if (d.code == "training-args-as-config") {
      if (!req.lint) r.sink.report(d);
      return false;
    }
  if (!runs_fsdp(*effective, *schema, lo, req.env, r)) return false;
  apply_accelerate_config(*effective, *schema, req.env, r.settings);
  return true;
}

bool settle_settings(const PreflightRequest& req, PreflightResult& r) {
  if (req.overrides) req.overrides(r.settings);
  // One check of the merged settings; nothing unchecked reaches the simulator.
  if (!validate_settings(r.settings, req.accelerate_config.value_or(req.model), r.sink)) return false;
  return regexes_compile(req, r);
}

}  // namespace shardcheck::pipeline
