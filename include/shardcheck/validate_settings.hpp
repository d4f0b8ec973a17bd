#pragma once
// Stage "resolve": the one check of the merged settings (accelerate config, environment, flags)
// before any number reaches the simulator. Each value is checked against what accelerate launch,
// accelerate and torch do with it, and normalised to what the job will really run with (e.g.
// `num_processes: 0` starts one process per machine). A flag's bad value is a usage error (exit 2),
// a file's or the environment's a finding that points at its source.

#include <string>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/settings.hpp"

namespace shardcheck {

// Returns false when nothing can be simulated (a setting no job can run with); `s` is then left as
// it was. `fallback_file`: where findings without a file position point (the accelerate config, or
// the model's config.json).
bool validate_settings(FsdpSettings& s, const std::string& fallback_file, DiagnosticSink& sink);

}  // namespace shardcheck
