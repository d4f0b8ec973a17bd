// libFuzzer harness: the small parsers of user input that the other harnesses do not reach — an
// --env-file (KEY=VALUE lines), version strings and pip requirements (--accelerate-version,
// --torch-version, a dist-info Version line), and smoke's --plan reader (the JSON `plan` wrote,
// possibly edited or foreign). Invariants: no crash, no hang, and
//   - every parsed variable has a non-empty name without '=' or whitespace, and a line number
//     within the text;
//   - a parsed version prints back to a string that parses to the same version;
//   - a requirement resolves to a release the schema knows;
//   - a plan the reader accepts is either refused unit by unit with a reason by smoke's layout, or
//     laid out so that every rank's segments cover its shard exactly and place every element.
// Seed corpus: fuzz/corpus/small_inputs.
#include <cstdint>
#include <string>
#include <string_view>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/lint.hpp"
#include "smoke/layout.hpp"
#include "smoke/plan_reader.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::optional<AccelerateSchema> schema = [] {
    DiagnosticSink sink;
    return AccelerateSchema::load(SHARDCHECK_DEFAULT_RULES_DIR, sink);
  }();
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  int lines = 1;
  for (char c : text) lines += c == '\n';
  switch (data[0] % 3) {
    case 0:
      for (const EnvVar& v : parse_env_file(text)) {
        if (v.name.empty() || v.name.find_first_of("= \t\r\n") != std::string::npos) __builtin_trap();
        if (v.line < 1 || v.line > lines) __builtin_trap();
      }
      break;
    case 1:
      if (auto v = Version::parse(text)) {
        const auto again = Version::parse(v->str());
        if (!again || *again != *v) __builtin_trap();
      }
      if (schema) {
        const Version resolved = version_for_requirement(text, *schema);
        if (!Version::parse(resolved.str())) __builtin_trap();
      }
      break;
    default: {
      std::string error;
      auto read = smoke::parse_plan_json(std::string(text), "fuzz.json", error);
      if (!read) {
        if (error.empty()) __builtin_trap();  // a refusal always says why
        break;
      }
      // The runner lays out units over a shard group that divides the job's ranks; groups above
      // 64 only make the same arithmetic longer.
      const ShardPlan& p = read->plan;
      if (p.shard_group > 64) break;
      for (std::size_t i = 0; i < p.units.size() && i < 64; ++i) {
        std::string why;
        const smoke::UnitLayout l =
            smoke::unit_layout(p.units[i], static_cast<int>(i), p.fsdp_version, p.shard_group, why);
        if (!why.empty()) continue;  // an inconsistent unit, refused with a reason
        // An accepted layout covers every rank's shard exactly, in order, and places every element.
        if (l.ranks.size() != static_cast<std::size_t>(p.shard_group)) __builtin_trap();
        for (std::size_t r = 0; r < l.ranks.size(); ++r) {
          std::int64_t at = static_cast<std::int64_t>(r) * l.shard_numel;
          for (const smoke::Segment& seg : l.ranks[r]) {
            if (seg.offset != at || seg.numel <= 0) __builtin_trap();
            at += seg.numel;
          }
          if (at != static_cast<std::int64_t>(r + 1) * l.shard_numel) __builtin_trap();
        }
        if (l.real_elements() != l.numel) __builtin_trap();
      }
    }
  }
  return 0;
}
