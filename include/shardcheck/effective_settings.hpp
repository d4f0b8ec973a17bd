#pragma once
// Stage "resolve": the FSDP settings a job will really run with, and the layer classes accelerate
// will wrap, with accelerate's own failures reproduced before launch.

#include <vector>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/settings.hpp"

namespace shardcheck {

// Overlays what `accelerate launch` makes of `doc` (and of the FSDP_* variables it leaves to the
// shell) onto `s`. Command-line flags are applied after this, so they win (accelerate >= 1.5).
void apply_accelerate_config(const ConfigDoc& doc, const AccelerateSchema& schema, const std::vector<EnvVar>& env,
                             FsdpSettings& s);

// Resolves the transformer layer classes as the target accelerate version does: the explicit list,
// else the model's _no_split_modules (joined into a string and iterated per character on 0.34.0).
// Reports accelerate's ValueError for a class the model does not have, with the classes it does.
void resolve_wrap_classes(const ModuleTree& tree, FsdpSettings& s, DiagnosticSink& sink);

}  // namespace shardcheck
