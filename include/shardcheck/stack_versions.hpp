#pragma once
// Stage "resolve": which torch, transformers and accelerate releases the job will run, each with
// where it came from (a flag, the job's Python environment, or shardcheck's default release set),
// and whether they can run together. The facts are data: rules/versions.yaml.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/version.hpp"
#include "shardcheck/settings.hpp"

namespace shardcheck {

struct VersionRules {
  struct Range {
    Version oldest, newest;
  };
  Version torch_default, transformers_default, accelerate_default;
  Range torch, transformers, accelerate;
  std::vector<std::pair<Version, Version>> transformers_torch_floor;    // (from transformers, oldest torch)
  std::vector<std::pair<Version, Version>> transformers_for_old_torch;  // (torch below, transformers to assume)
  Version native_fsdp_absent_through;  // the newest transformers known to lack the native FSDP2 plan

  // rules_dir/versions.yaml; malformed data is reported with ExitCode::bad_rules.
  static std::optional<VersionRules> load(const std::filesystem::path& rules_dir, DiagnosticSink& sink);
  // The oldest torch `transformers` runs with, if the data knows one.
  std::optional<Version> torch_floor(const Version& transformers) const;
};

// What the caller knows before resolving: versions given on the command line, and the job's Python
// environment (--python-env, or the active virtualenv / conda prefix).
struct VersionRequest {
  std::optional<Setting<Version>> torch, transformers, accelerate;
  std::optional<Setting<Version>> peft, bitsandbytes, trl;  // PEFT runs: flags only (else the environment)
  std::string python_env;                                   // "" when none is known
  std::string python_env_source;                            // "--python-env", "env VIRTUAL_ENV", "env CONDA_PREFIX"
};

struct StackVersions {
  Setting<Version> torch, transformers, accelerate;
  // Known only from a flag or the job's Python environment (no default: not every job has them).
  std::optional<Setting<Version>> peft, bitsandbytes, trl;
};

// Each version from its flag, else the Python environment, else the default release set; a torch
// that the default transformers cannot run with picks the transformers of that torch's time.
StackVersions resolve_stack_versions(const VersionRequest& req, const VersionRules& rules);

// Whether the release set can run together and with the model is a release check: src/check/stack_releases.cpp.

}  // namespace shardcheck
