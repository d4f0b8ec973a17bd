// yaml-syntax: the file is not YAML that PyYAML's safe_load accepts. Reported by the loader
// (src/load/yaml_events.cpp); listed here so that `shardcheck rules` and SARIF know it.
#include "shardcheck/lint.hpp"

namespace shardcheck::rules {

extern const Rule kYamlSyntax;
const Rule kYamlSyntax{
    .id = "yaml-syntax",
    .severity = Severity::error,
    .summary = "The file is not valid YAML",
    .explanation =
        "accelerate reads the config with `yaml.safe_load` (commands/config/config_args.py::load_config_from_file, "
        "v0.34.0 and v1.14.0; JSON if the name ends in .json). A file PyYAML cannot parse, or a stream with more than "
        "one document, stops `accelerate launch` before anything starts. shardcheck reports the first syntax error "
        "with its line and column and exits with code 10.",
    .fix = "",
    .check = nullptr,
};

}  // namespace shardcheck::rules
