// The release set a job runs (shardcheck/stack_versions.hpp), from rules/versions.yaml.
#include "shardcheck/stack_versions.hpp"

#include <fmt/format.h>

#include "resolve/registry_yaml.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/finding_codes.hpp"

namespace shardcheck {
namespace {

using registry_yaml::Node;

struct BadRules {
  const Node* at;
  std::string message;
};

Version version_of(const Node* n, const char* what) {
  if (!n || !n->is_scalar()) throw BadRules{n, fmt::format("expected a version string for {}", what)};
  auto v = Version::parse(n->text);
  if (!v) throw BadRules{n, fmt::format("expected a version for {}, found '{}'", what, n->text)};
  return *v;
}

std::vector<std::pair<Version, Version>> pairs(const Node* seq, const char* a, const char* b, const char* what) {
  std::vector<std::pair<Version, Version>> out;
  if (!seq || !seq->is_sequence()) throw BadRules{seq, fmt::format("expected a list for {}", what)};
  for (const Node* row : seq->items) out.emplace_back(version_of(row->get(a), a), version_of(row->get(b), b));
  return out;
}

}  // namespace

std::optional<VersionRules> VersionRules::load(const std::filesystem::path& rules_dir, DiagnosticSink& sink) {
  static thread_local std::string path;
  path = (rules_dir / "versions.yaml").string();
  registry_yaml::Arena arena;
  try {
    const Node* root = registry_yaml::parse_file(&path, arena);
    if (!root || !root->is_map()) throw BadRules{root, "expected a mapping"};
    VersionRules r;
    const Node* d = root->get("defaults");
    if (!d) throw BadRules{root, "expected `defaults`"};
    r.torch_default = version_of(d->get("torch"), "defaults.torch");
    r.transformers_default = version_of(d->get("transformers"), "defaults.transformers");
    r.accelerate_default = version_of(d->get("accelerate"), "defaults.accelerate");
    const Node* k = root->get("known");
    if (!k) throw BadRules{root, "expected `known`"};
    for (auto [name, range] : {std::pair{"torch", &r.torch}, std::pair{"transformers", &r.transformers},
                               std::pair{"accelerate", &r.accelerate}}) {
      const Node* n = k->get(name);
      if (!n) throw BadRules{k, fmt::format("expected known.{}", name)};
      range->oldest = version_of(n->get("oldest"), "oldest");
      range->newest = version_of(n->get("newest"), "newest");
    }
    r.transformers_torch_floor =
        pairs(root->get("transformers_torch_floor"), "from", "torch", "transformers_torch_floor");
    r.transformers_for_old_torch =
        pairs(root->get("transformers_for_old_torch"), "torch_below", "transformers", "transformers_for_old_torch");
    r.native_fsdp_absent_through =
        version_of(root->get("transformers_native_fsdp_absent_through"), "transformers_native_fsdp_absent_through");
    return r;
  } catch (const registry_yaml::SyntaxError& e) {
    sink.report(registry_yaml::rules_error(path, e.message, e.line, e.column));
  } catch (const BadRules& e) {
    sink.report(registry_yaml::rules_error(path, e.message, e.at ? e.at->line : -1, e.at ? e.at->column : -1));
  }
  return std::nullopt;
}

std::optional<Version> VersionRules::torch_floor(const Version& transformers) const {
  std::optional<Version> floor;
  for (const auto& [from, torch] : transformers_torch_floor)
    if (transformers >= from) floor = torch;
  return floor;
}

StackVersions resolve_stack_versions(const VersionRequest& req, const VersionRules& rules) {
  StackVersions v;
  v.torch = {rules.torch_default, "default"};
  v.transformers = {rules.transformers_default, "default"};
  v.accelerate = {rules.accelerate_default, "default"};
  auto pick = [&](Setting<Version>& out, const std::optional<Setting<Version>>& flag, const char* package) {
    if (flag) {
      out = *flag;
      return;
    }
    if (req.python_env.empty()) return;
    if (auto text = installed_package_version(req.python_env, package))
      if (auto parsed = Version::parse(*text))
        out = {*parsed, fmt::format("{} {} ({} {})", req.python_env_source, req.python_env, package, *text)};
  };
  pick(v.torch, req.torch, "torch");
  pick(v.transformers, req.transformers, "transformers");
  pick(v.accelerate, req.accelerate, "accelerate");
  for (auto [out, flag, package] :
       {std::tuple{&v.peft, &req.peft, "peft"}, std::tuple{&v.bitsandbytes, &req.bitsandbytes, "bitsandbytes"},
        std::tuple{&v.trl, &req.trl, "trl"}}) {
    Setting<Version> found{Version{}, ""};
    pick(found, *flag, package);
    if (!found.source.empty()) *out = found;
  }
  // Only torch is known and the default transformers cannot run on it: assume the transformers of
  // that torch's time rather than a pairing that cannot exist.
  if (v.transformers.source == "default" && v.torch.source != "default")
    if (auto floor = rules.torch_floor(v.transformers.value); floor && v.torch.value < *floor)
      for (const auto& [below, transformers] : rules.transformers_for_old_torch)
        if (v.torch.value < below) {
          v.transformers = {transformers, fmt::format("default for torch {}", v.torch.value.str())};
          break;
        }
  return v;
}

}  // namespace shardcheck
