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

// Bounds on the numbers of a plan, so that no arithmetic on them can overflow 64 bits: a unit of
// 2^42 elements (4.4 trillion) is larger than any model's whole parameter count (DeepSeek-V3:
// 6.7e11), and 2^20 ranks exceed any FSDP job; r * shard (< 2^62) and the per-rank sums stay exact.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 42;
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;

// `v` (at JSON path `path`) as an integer in [lo, hi]: a float (1e20), a string or a value out of
// range is refused with its path, before any arithmetic sees it.
std::int64_t checked_integer(const json& v, const std::string& path, std::int64_t lo, std::int64_t hi) {
  std::int64_t x = 0;
  bool ok = false;
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    ok = u <= static_cast<std::uint64_t>(hi);
    x = ok ? static_cast<std::int64_t>(u) : 0;
  } else if (v.is_number_integer()) {
    x = v.get<std::int64_t>();
    ok = x <= hi;
  }
  if (!ok || x < lo)
    throw std::runtime_error(
        fmt::format("{}: expected an integer from {} to {}, found {}", path, lo, hi, v.dump().substr(0, 40)));
  return x;
}

std::int64_t integer(const json& obj, const std::string& where, const char* key, std::int64_t lo, std::int64_t hi) {
  auto it = obj.find(key);
  if (it == obj.end()) throw std::runtime_error(fmt::format("{}: missing \"{}\"", where, key));
  return checked_integer(*it, fmt::format("{}.{}", where, key), lo, hi);
}

std::int64_t count(const json& obj, const std::string& where, const char* key) {
  return integer(obj, where, key, 0, kMaxElements);
}

// The units at `units` (JSON path `path`), as src/report/plan_json.cpp units_json writes them.
std::vector<ShardUnit> parse_units(const json& units, const std::string& path) {
  if (!units.is_array()) throw std::runtime_error(fmt::format("{}: expected a list of units", path));
  std::vector<ShardUnit> out;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const json& u = units[i];
    const std::string where = fmt::format("{}[{}]", path, i);
    ShardUnit su;
    su.path = field<std::string>(u, where, "path");
    su.numel = count(u, where, "numel");
    su.padded_numel = count(u, where, "padded_numel");
    su.shard_numel = count(u, where, "shard_numel");
    const auto dtype = parse_dtype(field<std::string>(u, where, "dtype"));
    if (!dtype) throw std::runtime_error(fmt::format("{}.dtype: not a safetensors dtype name", where));
    su.dtype = *dtype;
    // Plans written before the collective dtypes were recorded: no mixed precision.
    for (auto [key, slot] :
         {std::pair{"compute_dtype", &su.compute_dtype}, std::pair{"reduce_dtype", &su.reduce_dtype}}) {
      *slot = su.dtype;
      if (!u.contains(key)) continue;
      const auto d = parse_dtype(field<std::string>(u, where, key));
      if (!d) throw std::runtime_error(fmt::format("{}.{}: not a safetensors dtype name", where, key));
      *slot = *d;
    }
    su.requires_grad = u.value("requires_grad", true);
    su.params = field<std::vector<std::string>>(u, where, "params");
    const json& numels = u.contains("param_numels") ? u["param_numels"] : json();
    if (!numels.is_array()) throw std::runtime_error(fmt::format("{}.param_numels: expected a list of counts", where));
    for (std::size_t k = 0; k < numels.size(); ++k)
      su.param_numels.push_back(
          checked_integer(numels[k], fmt::format("{}.param_numels[{}]", where, k), 0, kMaxElements));
    if (u.contains("layout"))
      for (std::size_t k = 0; k < u["layout"].size(); ++k) {
        const json& s = u["layout"][k];
        const std::string w2 = fmt::format("{}.layout[{}]", where, k);
        FlatSlot slot;
        slot.fqn = field<std::string>(s, w2, "param");
        slot.padding = slot.fqn.empty();
        slot.offset = count(s, w2, "offset");
        slot.numel = count(s, w2, "numel");
        su.layout.push_back(slot);
      }
    if (u.contains("param_shards"))
      for (std::size_t k = 0; k < u["param_shards"].size(); ++k) {
        const json& s = u["param_shards"][k];
        const std::string w2 = fmt::format("{}.param_shards[{}]", where, k);
        ParamShard ps;
        ps.fqn = field<std::string>(s, w2, "param");
        ps.rows_per_rank = count(s, w2, "rows_per_rank");
        ps.row_numel = count(s, w2, "row_numel");
        if (ps.rows_per_rank > 0 && ps.row_numel > kMaxElements / ps.rows_per_rank)
          throw std::runtime_error(fmt::format("{}: rows_per_rank x row_numel is above {} elements", w2, kMaxElements));
        su.shards.push_back(ps);
      }
    out.push_back(std::move(su));
  }
  return out;
}

// "tensor_parallel": the layout (every parameter's local shape per TP rank, its split dimension and packed
// blocks) and every TP rank's units (ranks[].unit_set into unit_sets). A plan written before the unit sets
// were recorded has none: `tp_units` stays empty.
void parse_tensor_parallel(const json& tp, ShardPlan& out) {
  const std::string where = "$.tensor_parallel";
  if (!tp.is_object()) throw std::runtime_error(fmt::format("{}: expected an object", where));
  TensorParallelLayout layout;
  layout.tp_size = static_cast<int>(integer(tp, where, "tp_size", 1, kMaxRanks));
  const auto tp_size = static_cast<std::size_t>(layout.tp_size);
  const json& params = tp.contains("params") ? tp.at("params") : json::array();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const json& p = params[i];
    const std::string w = fmt::format("{}.params[{}]", where, i);
    TpPlacement pl;
    pl.fqn = field<std::string>(p, w, "name");
    const json& shapes = p.contains("local_shapes") ? p.at("local_shapes") : json();
    if (!shapes.is_array() || shapes.size() != tp_size)
      throw std::runtime_error(fmt::format("{}.local_shapes: expected one shape per TP rank ({})", w, tp_size));
    for (std::size_t r = 0; r < shapes.size(); ++r) {
      if (!shapes[r].is_array() || shapes[r].size() > 8)
        throw std::runtime_error(fmt::format("{}.local_shapes[{}]: expected a list of sizes", w, r));
      std::vector<std::int64_t> shape;
      for (std::size_t k = 0; k < shapes[r].size(); ++k)
        shape.push_back(
            checked_integer(shapes[r][k], fmt::format("{}.local_shapes[{}][{}]", w, r, k), 0, kMaxElements));
      if (r > 0 && shape.size() != pl.shapes.front().size())
        throw std::runtime_error(fmt::format("{}.local_shapes[{}]: expected {} sizes", w, r, pl.shapes.front().size()));
      pl.shapes.push_back(std::move(shape));
    }
    if (p.contains("dim") && !p.at("dim").is_null()) {
      const auto rank = static_cast<std::int64_t>(pl.shapes.front().size());
      pl.dim = static_cast<int>(checked_integer(p.at("dim"), w + ".dim", 0, rank > 0 ? rank - 1 : 0));
      if (rank == 0) throw std::runtime_error(fmt::format("{}.dim: a scalar has no dimension to split", w));
    }
    if (p.contains("blocks")) pl.blocks = static_cast<int>(checked_integer(p.at("blocks"), w + ".blocks", 1, 64));
    if (pl.dim)
      for (const auto& shape : pl.shapes)
        if (shape[static_cast<std::size_t>(*pl.dim)] % pl.blocks != 0)
          throw std::runtime_error(fmt::format("{}: a local size is not a multiple of its {} blocks", w, pl.blocks));
    layout.split += pl.dim ? 1 : 0;
    layout.params.push_back(std::move(pl));
  }
  out.tensor_parallel = std::move(layout);
  if (!tp.contains("unit_sets")) return;
  const json& sets = tp.at("unit_sets");
  if (!sets.is_array() || sets.empty())
    throw std::runtime_error(fmt::format("{}.unit_sets: expected a list of at least one unit set", where));
  for (std::size_t i = 0; i < sets.size(); ++i)
    out.tp_unit_sets.push_back(parse_units(sets[i].contains("units") ? sets[i].at("units") : json(),
                                           fmt::format("{}.unit_sets[{}].units", where, i)));
  const json& ranks = tp.contains("ranks") ? tp.at("ranks") : json();
  if (!ranks.is_array() || ranks.size() != tp_size)
    throw std::runtime_error(fmt::format("{}.ranks: expected one entry per TP rank ({})", where, tp_size));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::string w = fmt::format("{}.ranks[{}]", where, r);
    if (integer(ranks[r], w, "tp_rank", 0, kMaxRanks) != static_cast<std::int64_t>(r))
      throw std::runtime_error(fmt::format("{}.tp_rank: expected {}", w, r));
    const auto set = integer(ranks[r], w, "unit_set", 0, static_cast<std::int64_t>(out.tp_unit_sets.size()) - 1);
    if (out.tp_unit_sets[static_cast<std::size_t>(set)].size() != out.tp_unit_sets.front().size())
      throw std::runtime_error(fmt::format("{}: TP rank {}'s units differ in number from TP rank 0's", w, r));
    out.tp_unit_set.push_back(static_cast<int>(set));
  }
}

}  // namespace

std::optional<ReadPlan> parse_plan_json(const std::string& text, const std::string& label, std::string& error) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    error =
        fmt::format("{}: not JSON at byte {}: expected the output of `shardcheck plan --format json`", label, e.byte);
    return std::nullopt;
  }
  try {
    if (!doc.is_object()) throw std::runtime_error("the top level is not an object");
    ReadPlan out;
    ShardPlan& p = out.plan;
    p.world_size = static_cast<int>(integer(doc, "$", "world_size", 1, kMaxRanks));
    p.shard_group = doc.contains("shard_group_size")
                        ? static_cast<int>(integer(doc, "$", "shard_group_size", 1, kMaxRanks))
                        : p.world_size;
    p.fsdp_version = static_cast<int>(integer(doc, "$", "fsdp_version", 1, 2));
    out.strategy = field<std::string>(doc, "$", "sharding_strategy");
    out.tensor_parallel = doc.contains("tensor_parallel") && doc.at("tensor_parallel").is_object();
    p.units = parse_units(doc.contains("units") ? doc.at("units") : json(), "$.units");
    if (out.tensor_parallel) parse_tensor_parallel(doc.at("tensor_parallel"), p);
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
