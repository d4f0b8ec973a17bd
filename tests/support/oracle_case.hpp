#pragma once
// What the torch 2.x oracles recorded (fixtures/oracle2 from scripts/torch2_oracle.py,
// fixtures/peft-oracle from scripts/peft_oracle.py) against what shardcheck plans: the case's
// settings, torch's message in a finding, and unit/group/memory comparisons to the element.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "shardcheck/preflight.hpp"

namespace shardcheck::test {

using nlohmann::json;

inline Version parse_version(const std::string& text) {
  // "2.14.1+debian" -> 2.14.1
  const auto v = Version::parse(text.substr(0, text.find('+')));
  REQUIRE_MESSAGE(v.has_value(), "bad version " << text);
  return *v;
}

// The case's settings as accelerate received them (scripts/torch2_oracle.py make_plugin).
inline FsdpSettings settings_for(const json& c) {
  FsdpSettings s;
  s.torch_version.value = parse_version(c.at("versions").at("torch").get<std::string>());
  s.accelerate_version.value = parse_version(c.at("versions").at("accelerate").get<std::string>());
  s.world_size.value = c.at("world_size").get<int>();
  s.fsdp_version.value = c.at("fsdp_version").get<int>();
  const json& pol = c.at("policy");
  const std::string kind = pol.at("kind").get<std::string>();
  s.policy.value = kind == "transformer" ? WrapPolicyKind::transformer
                   : kind == "size"      ? WrapPolicyKind::size
                                         : WrapPolicyKind::none;
  if (pol.contains("classes") && pol.at("classes").is_array())
    s.wrap_classes.value = pol.at("classes").get<std::vector<std::string>>();
  if (pol.contains("min_num_params")) s.min_num_params.value = pol.at("min_num_params").get<std::int64_t>();
  s.sharding_strategy.value = parse_strategy(c.value("sharding_strategy", "FULL_SHARD")).value();
  s.use_orig_params.value = c.value("use_orig_params", false);
  s.mixed_precision.value = parse_mixed_precision(c.value("mixed_precision", "no")).value();
  s.ignored_modules.value = c.value("ignored_modules", "");
  // The fuzzer's frozen regex (scripts/oracle/fuzz_oracle.py): requires_grad_(False) on every
  // Parameter one of whose names it re.search-es.
  s.frozen.value = c.value("frozen", "");
  if (c.contains("reshard_after_forward")) s.reshard_after_forward.value = c.at("reshard_after_forward").get<bool>();
  s.dp_replicate.value = c.value("dp_replicate", 1);
  s.num_machines.value = c.value("num_machines", 1);
  // "caller": who calls fully_shard (accelerate, torchtitan), or who prepares a PEFT model
  // (trainer: transformers' Trainer, accelerate: a plain accelerate loop).
  if (c.contains("caller")) {
    const std::string caller = c.at("caller").get<std::string>();
    if (caller == "trainer")
      s.trainer = {true, "oracle"};
    else if (c.contains("adapter"))
      s.trainer = {false, "oracle"};
    else
      s.fsdp2_caller.value = parse_caller(caller).value();
  }
  return s;
}

inline std::string errors_of(const DiagnosticSink& sink) {
  std::ostringstream o;
  for (const auto& d : sink.items())
    if (d.severity == Severity::error) o << "  [" << d.code << "] " << d.message << "\n";
  return o.str();
}

// What torch printed, up to the point where it starts printing a module or a tensor: the part a
// prediction must repeat word for word.
inline std::string message_key(const std::string& torch_message) {
  std::string key = torch_message.substr(0, torch_message.find('\n'));
  // The oracle records a KeyError as repr(e), KeyError("..."): the words are inside.
  if (key.starts_with("KeyError(\"") || key.starts_with("KeyError('")) key = key.substr(10);
  if (const auto paren = key.find(": ModuleList("); paren != std::string::npos) key = key.substr(0, paren);
  if (const auto meshes = key.find("overlapping meshes: "); meshes != std::string::npos)
    key = key.substr(0, meshes + 18);
  // Which missing class accelerate names depends on set order; the class is checked separately.
  if (key.starts_with("Could not find the transformer layer class "))
    key = "Could not find the transformer layer class ";
  // A Python set's order follows the hashes of torch.dtype objects, not anything in the job.
  if (const auto set = key.find(" but got {"); set != std::string::npos) key = key.substr(0, set + 9);
  // A runtime shape error names the shapes of this input: the words before the numbers must match.
  if (key.starts_with("size mismatch, got input")) key = "size mismatch, got input";
  if (key.starts_with("The size of tensor a (")) key = "The size of tensor a (";
  if (key.starts_with("inconsistent tensor size, expected tensor ["))
    key = "inconsistent tensor size, expected tensor [";
  return key.substr(0, 120);
}

inline void check_fsdp1_units(const json& c, const ShardPlan& plan) {
  const json& units = c.at("units");
  REQUIRE(plan.units.size() == units.size());
  for (std::size_t i = 0; i < units.size(); ++i) {
    const json& ju = units[i];
    const ShardUnit& u = plan.units[i];
    CAPTURE(u.path);
    CHECK(u.path == ju.at("path").get<std::string>());
    CHECK(u.cls == ju.at("class").get<std::string>());
    CHECK(strategy_name(plan.strategy) == ju.at("strategy").get<std::string>());
    CHECK(u.params == ju.at("params").get<std::vector<std::string>>());
    CHECK(u.param_numels == ju.at("param_numels").get<std::vector<std::int64_t>>());
    CHECK(u.numel == ju.at("numel").get<std::int64_t>());
    CHECK(u.padded_numel == ju.at("padded_numel").get<std::int64_t>());
    CHECK(u.shard_numel == ju.at("shard_numel").get<std::int64_t>());
    // Per global rank; hybrid strategies shard within consecutive groups of shard_group ranks.
    const auto want_pad = ju.at("rank_pad").get<std::vector<std::int64_t>>();
    std::vector<std::int64_t> pad_by_global;
    for (std::size_t g = 0; g < want_pad.size(); ++g)
      pad_by_global.push_back(u.rank_pad.at(g % static_cast<std::size_t>(plan.shard_group)));
    CHECK(pad_by_global == want_pad);
    if (ju.at("params").empty()) continue;
    std::vector<std::pair<std::string, std::int64_t>> layout;
    for (const auto& slot : u.layout) layout.emplace_back(slot.padding ? "" : slot.fqn, slot.numel);
    std::vector<std::pair<std::string, std::int64_t>> want;
    for (const auto& slot : ju.at("layout")) want.emplace_back(slot[0].get<std::string>(), slot[1].get<std::int64_t>());
    CHECK(layout == want);
  }
}

inline void check_fsdp2_groups(const json& c, const ShardPlan& plan) {
  // Groups keyed by the modules passed to fully_shard (torch keeps them in call order).
  std::map<std::set<std::string>, const ShardUnit*> ours;
  for (const auto& u : plan.units) ours[std::set<std::string>(u.modules.begin(), u.modules.end())] = &u;
  const json& groups = c.at("groups");
  CHECK(plan.units.size() == groups.size());
  const int shard_world = plan.shard_group;
  for (const json& g : groups) {
    const auto mods = g.at("modules").get<std::vector<std::string>>();
    CAPTURE(mods.front());
    auto it = ours.find(std::set<std::string>(mods.begin(), mods.end()));
    REQUIRE_MESSAGE(it != ours.end(), "no fully_shard group of these modules");
    const ShardUnit& u = *it->second;
    CHECK(u.params == g.at("params").get<std::vector<std::string>>());
    if (g.contains("reshard_after_forward")) {
      REQUIRE(u.reshard_after_forward.has_value());
      CHECK(*u.reshard_after_forward == g.at("reshard_after_forward").get<bool>());
    }
    const json& shapes = g.at("shapes");
    REQUIRE(u.shards.size() == shapes.size());
    const json& rank_shapes = g.at("rank_sharded_shapes");
    for (std::size_t i = 0; i < u.shards.size(); ++i) {
      const ParamShard& ps = u.shards[i];
      CAPTURE(ps.fqn);
      CHECK(ps.shape == shapes[i].get<std::vector<std::int64_t>>());
      CHECK(ps.rows_per_rank == g.at("padded_rows")[i].get<std::int64_t>());
      for (std::size_t r = 0; r < rank_shapes.size(); ++r) {
        const auto want = rank_shapes[r][i].get<std::vector<std::int64_t>>();
        const int sr = static_cast<int>(r) % shard_world;  // mesh (replicate, shard): rank = rep * S + shard
        const std::int64_t rows = std::clamp<std::int64_t>(
            ps.shape.front() - static_cast<std::int64_t>(sr) * ps.rows_per_rank, 0, ps.rows_per_rank);
        CHECK(want.front() == rows);
      }
    }
  }
}

inline void check_memory(const json& c, const PreflightResult& r) {
  const json& mem = c.at("memory");
  const int shard_world = r.plan->shard_group;
  for (std::size_t g = 0; g < mem.size(); ++g) {
    CAPTURE(g);
    const std::size_t sr = g % static_cast<std::size_t>(shard_world);
    REQUIRE(sr < r.memory.ranks.size());
    const RankMemory& m = r.memory.ranks[sr];
    const auto params = mem[g].at("params").get<std::uint64_t>();
    const auto grads = mem[g].at("grads").get<std::uint64_t>();
    const auto optimizer = mem[g].at("optimizer").get<std::uint64_t>();
    if (m.ignored == 0) {
      CHECK(m.params == params);
      CHECK(m.grads == grads);
      CHECK(m.optimizer == optimizer);
    } else {
      // Ignored modules' parameters, gradients and optimizer states are one figure in the plan.
      CHECK(m.params + m.grads + m.optimizer + m.ignored == params + grads + optimizer);
    }
  }
}

// One case: torch's error as an error finding carrying its message, or the same units/groups and
// memory to the element.
inline void compare_case(const json& c, const PreflightResult& r, int& errors, int& with_memory) {
  if (c.contains("error")) {
    ++errors;
    const std::string key = message_key(c.at("error").at("message").get<std::string>());
    const std::string full = c.at("error").at("message").get<std::string>();
    // The name torch put in the message must be in ours too (a class, a parameter, a module).
    std::string named;
    if (full.starts_with("Could not find the transformer layer class "))
      named = full.substr(43, full.find(' ', 43) - 43);
    bool found = false;
    for (const auto& d : r.sink.items())
      found = found || (d.severity == Severity::error && d.message.find(key) != std::string::npos &&
                        d.message.find(named) != std::string::npos);
    CHECK_MESSAGE(found, "torch raised at " << c.at("error").at("stage").get<std::string>() << ": "
                                            << c.at("error").at("type").get<std::string>() << ": " << key
                                            << "\nour errors:\n"
                                            << errors_of(r.sink));
    return;
  }
  // A case that never stepped (gloo has no bf16/fp16 collectives) cannot confirm or refute an error
  // torch raises only at the first forward or backward.
  const bool stepped = c.value("step", true);
  bool unconfirmed_errors = false;
  for (const auto& d : r.sink.items())
    unconfirmed_errors =
        unconfirmed_errors || (d.severity == Severity::error &&
                               (stepped || (d.code != "PLAN020" && d.code != "PLAN034" && d.code != "PLAN037")));
  CHECK_MESSAGE(!unconfirmed_errors, "torch ran this case; our errors:\n" << errors_of(r.sink));
  REQUIRE(r.plan.has_value());
  if (c.at("fsdp_version").get<int>() == 1)
    check_fsdp1_units(c, *r.plan);
  else
    check_fsdp2_groups(c, *r.plan);
  if (c.contains("memory")) {
    ++with_memory;
    check_memory(c, r);
  }
}

}  // namespace shardcheck::test
