#include "smoke/plan_reader.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shardcheck::smoke {
namespace {

using nlohmann::json;

// Reads member `key` of `obj` as T; on a missing member or a wrong type throws with the JSON path.
template <class T>
T field(const json& obj, const std::string& where, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) throw std::runtime_error(fmt::format("{}: missing \"{}\"", where, key));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(fmt::format("{}.{}: expected {}, found {}", where, key,
                                         std::is_same_v<T, std::string> ? "a string" : "a number or list",
                                         it->dump().substr(0, 40)));
  }
}

}  // namespace

std::optional<ReadPlan> parse_plan_json(const std::string& text, const std::string& label, std::string& error) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    error = fmt::format("{}: not JSON at byte {}: expected the output of `shardcheck plan --format json`", label,
                        e.byte);
    return std::nullopt;
  }
  try {
    if (!doc.is_object()) throw std::runtime_error("the top level is not an object");
    ReadPlan out;
    ShardPlan& p = out.plan;
    p.world_size = field<int>(doc, "$", "world_size");
    p.shard_group = doc.contains("shard_group_size") ? field<int>(doc, "$", "shard_group_size") : p.world_size;
    p.fsdp_version = field<int>(doc, "$", "fsdp_version");
    out.strategy = field<std::string>(doc, "$", "sharding_strategy");
    if (p.world_size < 1 || (p.fsdp_version != 1 && p.fsdp_version != 2))
      throw std::runtime_error(fmt::format("$: expected world_size >= 1 and fsdp_version 1 or 2, found {} and {}",
                                           p.world_size, p.fsdp_version));
    const auto& units = doc.at("units");
    for (std::size_t i = 0; i < units.size(); ++i) {
      const json& u = units[i];
      const std::string where = fmt::format("$.units[{}]", i);
      ShardUnit su;
      su.path = field<std::string>(u, where, "path");
      su.numel = field<std::int64_t>(u, where, "numel");
      su.padded_numel = field<std::int64_t>(u, where, "padded_numel");
      su.shard_numel = field<std::int64_t>(u, where, "shard_numel");
      const auto dtype = parse_dtype(field<std::string>(u, where, "dtype"));
      if (!dtype) throw std::runtime_error(fmt::format("{}.dtype: not a safetensors dtype name", where));
      su.dtype = *dtype;
      // Plans written before the collective dtypes were recorded: no mixed precision.
      for (auto [key, slot] : {std::pair{"compute_dtype", &su.compute_dtype}, std::pair{"reduce_dtype", &su.reduce_dtype}}) {
        *slot = su.dtype;
        if (!u.contains(key)) continue;
        const auto d = parse_dtype(field<std::string>(u, where, key));
        if (!d) throw std::runtime_error(fmt::format("{}.{}: not a safetensors dtype name", where, key));
        *slot = *d;
      }
      su.requires_grad = u.value("requires_grad", true);
      su.params = field<std::vector<std::string>>(u, where, "params");
      su.param_numels = field<std::vector<std::int64_t>>(u, where, "param_numels");
      if (u.contains("layout"))
        for (std::size_t k = 0; k < u["layout"].size(); ++k) {
          const json& s = u["layout"][k];
          const std::string w2 = fmt::format("{}.layout[{}]", where, k);
          FlatSlot slot;
          slot.fqn = field<std::string>(s, w2, "param");
          slot.padding = slot.fqn.empty();
          slot.offset = field<std::int64_t>(s, w2, "offset");
          slot.numel = field<std::int64_t>(s, w2, "numel");
          su.layout.push_back(slot);
        }
      if (u.contains("param_shards"))
        for (std::size_t k = 0; k < u["param_shards"].size(); ++k) {
          const json& s = u["param_shards"][k];
          const std::string w2 = fmt::format("{}.param_shards[{}]", where, k);
          ParamShard ps;
          ps.fqn = field<std::string>(s, w2, "param");
          ps.rows_per_rank = field<std::int64_t>(s, w2, "rows_per_rank");
          ps.row_numel = field<std::int64_t>(s, w2, "row_numel");
          su.shards.push_back(ps);
        }
      p.units.push_back(std::move(su));
    }
    return out;
  } catch (const std::exception& e) {
    error = fmt::format("{}: {}", label, e.what());
    return std::nullopt;
  }
}

std::optional<ReadPlan> read_plan_json(const std::string& path, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = fmt::format("cannot read --plan {}", path);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_plan_json(ss.str(), path, error);
}

}  // namespace shardcheck::smoke
