// adapter_config.json as read through the plain reader (src/load/plain_json_value.hpp) or, for text
// outside its subset, nlohmann's parser: the same LoraAdapter and the same finding lines either way;
// and the parameter names that saved adapter keys load into (peft utils/save_and_load.py).
// fuzz/fuzz_adapter.cpp compares the two readers on random inputs; these are the cases worth naming.

#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "load/padded_file.hpp"
#include "load/plain_json_value.hpp"
#include "shardcheck/adapter.hpp"
#include "shardcheck/peft_model.hpp"
#include "test_files.hpp"

using namespace shardcheck;

namespace adapter_config_test {

using json = nlohmann::ordered_json;

// The text followed by the padding the reader needs; keys view into `padded`, which the caller keeps.
std::optional<json> plain(const std::string& text, std::vector<detail::TopLevelKey>* keys = nullptr,
                          std::string* padded = nullptr) {
  std::string local;
  std::string& buffer = padded ? *padded : local;
  buffer = text + std::string(detail::kJsonPadding, '\0');
  return detail::read_plain_json_value(std::string_view(buffer).substr(0, text.size()), keys);
}

// Type for type, member for member, in order (json's == calls 1 and 1u equal, and ignores order
// only for unordered objects).
bool same(const json& a, const json& b) { return a.type() == b.type() && a.dump() == b.dump(); }

int line_of_finding(const std::string& text) {
  DiagnosticSink sink;
  CHECK_FALSE(parse_adapter_config(text, "adapter_config.json", sink));
  REQUIRE(sink.items().size() == 1);
  return sink.items()[0].location.line;
}

TEST_CASE("plain JSON reader: a real peft adapter_config.json reads as nlohmann reads it") {
  for (const char* name : {"llama-alllinear", "llama-dora", "llama-layers", "llama-mts", "gpt2-cattn"}) {
    CAPTURE(name);
    const std::string text = test::read_file(std::filesystem::path(SHARDCHECK_FIXTURES_DIR) / "peft-oracle/adapters" /
                                             name / "adapter_config.json");
    REQUIRE(!text.empty());
    const auto fast = plain(text);
    REQUIRE(fast);  // save_pretrained writes the plain subset
    CHECK(same(*fast, json::parse(text)));
  }
}

TEST_CASE("plain JSON reader: numbers as nlohmann's lexer types them") {
  const auto v = plain(R"({"a": 0, "b": -0, "c": 18446744073709551615, "d": -9223372036854775808, "e": 0.05,
                          "f": 1e3, "g": -2.5E-3, "h": true, "i": false, "j": null, "k": [], "l": {}})");
  REQUIRE(v);
  CHECK((*v)["a"].is_number_unsigned());
  CHECK((*v)["b"].is_number_integer());
  CHECK_FALSE((*v)["b"].is_number_unsigned());  // a minus sign makes it int64, even for 0
  CHECK((*v)["c"].get<std::uint64_t>() == 18446744073709551615ULL);
  CHECK((*v)["d"].get<std::int64_t>() == INT64_MIN);
  CHECK((*v)["e"].get<double>() == 0.05);  // the double nearest 0.05, as strtod gives it
  CHECK((*v)["f"].is_number_float());      // an exponent makes a float of an integral value
  CHECK((*v)["f"].get<double>() == 1000.0);
  CHECK((*v)["g"].get<double>() == -0.0025);
  CHECK(same(*v, json::parse(R"({"a": 0, "b": -0, "c": 18446744073709551615, "d": -9223372036854775808, "e": 0.05,
                                 "f": 1e3, "g": -2.5E-3, "h": true, "i": false, "j": null, "k": [], "l": {}})")));
}

TEST_CASE("plain JSON reader: what it leaves to nlohmann") {
  // nlohmann reads these (an escape, a float for an integer past 64 bits, a BOM, an infinite double)
  // or refuses them (the rest): either way the plain reader says no and nlohmann decides.
  for (const std::string text :
       {R"({"a": "q\u005fproj"})", R"({"a": 18446744073709551616})", "\xEF\xBB\xBF{}", R"({"a": 1e400})",
        R"({"a": -9223372036854775809})", R"({"a": 01})", R"({"a": 1.})", R"({"a": .5})", R"({"a": tru})",
        R"({"a": 1} x)", R"({"a": "x)", R"({"a" 1})", R"([1, 2,])", "{\"a\": \"\x01\"}", "{\"a\": \"\xC3\x28\"}", ""}) {
    CAPTURE(text);
    CHECK_FALSE(plain(text));
  }
  std::string deep;
  for (std::size_t i = 0; i <= detail::kMaxPlainDepth + 1; ++i) deep += '[';
  for (std::size_t i = 0; i <= detail::kMaxPlainDepth + 1; ++i) deep += ']';
  CHECK_FALSE(plain(deep));
}

TEST_CASE("plain JSON reader: a repeated key keeps its first place and takes the last value") {
  const std::string text = R"({"r": 8, "lora_alpha": 16, "r": 4})";
  std::vector<detail::TopLevelKey> keys;
  std::string padded;
  const auto v = plain(text, &keys, &padded);
  REQUIRE(v);
  CHECK(same(*v, json::parse(text)));
  CHECK(v->begin().key() == "r");
  CHECK((*v)["r"] == 4);
  REQUIRE(keys.size() == 3);  // every top-level member, repeats included, with its opening quote
  CHECK(keys[0] == detail::TopLevelKey{"r", 1});
  CHECK(keys[1] == detail::TopLevelKey{"lora_alpha", 9});
  CHECK(keys[2] == detail::TopLevelKey{"r", 27});
}

TEST_CASE("adapter_config.json: a finding names the line of the top-level key, by either reader") {
  const std::string plain_text = "{\n  \"peft_type\": \"LORA\",\n  \"rank_pattern\": {\"r\": 8},\n  \"r\": -4\n}\n";
  CHECK(line_of_finding(plain_text) == 4);  // not line 3, where a pattern happens to be called "r"
  // An escape sends the text to nlohmann; the line is found by a scan that knows depth too.
  const std::string escaped = "{\n  \"peft_type\": \"LO\\u0052A\",\n  \"rank_pattern\": {\"r\": 8},\n  \"r\": -4\n}\n";
  CHECK_FALSE(plain(escaped));
  CHECK(line_of_finding(escaped) == 4);
  // A repeated key: the last, whose value peft reads (json.load keeps the last), by either reader.
  CHECK(line_of_finding("{\"peft_type\": \"LORA\",\n\"r\": 8,\n\"r\": -4}") == 3);
  CHECK(line_of_finding("{\"peft_type\": \"LO\\u0052A\",\n\"r\": 8,\n\"r\": -4}") == 3);
}

TEST_CASE("adapter_config.json: target_modules read by the plain reader") {
  DiagnosticSink sink;
  const auto a = parse_adapter_config(
      R"({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": ["model.layers.0.mlp.up_proj", "q_proj"]})",
      "adapter_config.json", sink);
  REQUIRE(a);
  CHECK(sink.items().empty());
  CHECK(a->r == 16);
  CHECK(a->lora_alpha == 32);
  CHECK(a->lora_dropout == 0.05);
  CHECK(a->target_modules.kind == ModuleSelector::Kind::names);
  CHECK(a->target_modules.names == std::vector<std::string>{"model.layers.0.mlp.up_proj", "q_proj"});
}

TEST_CASE("saved adapter keys: the parameter each loads into") {
  // set_peft_model_state_dict puts the adapter name back in (peft 0.20 utils/save_and_load.py).
  auto param = [](const std::string& key) {
    return parameter_of_saved_key(key, "default", std::set<std::string>{"base_model.model.lm_head"});
  };
  CHECK(param("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight") ==
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight");
  CHECK(param("base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias") ==
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.default.bias");
  CHECK(param("base_model.model.model.embed_tokens.lora_embedding_A") ==
        "base_model.model.model.embed_tokens.lora_embedding_A.default");
  CHECK(param("base_model.model.model.layers.0.mlp.up_proj.lora_magnitude_vector") ==
        "base_model.model.model.layers.0.mlp.up_proj.lora_magnitude_vector.default.weight");
  CHECK(param("base_model.model.lm_head.weight") == "base_model.model.lm_head.modules_to_save.default.weight");
  CHECK(param("base_model.model.model.norm.weight") == "base_model.model.model.norm.weight");
  // As key.rfind(".lora_A.") reads: a whole inner component; lora_A wins over a later lora_B; the
  // first and the last components are no match.
  CHECK(param("m.lora_A.lora_B.weight") == "m.lora_A.default.lora_B.weight");
  CHECK(param("m.lora_B.x.lora_A.weight") == "m.lora_B.x.lora_A.default.weight");
  CHECK(param("m.my_lora_A.weight") == "m.my_lora_A.weight");
  CHECK(param("lora_A.weight") == "lora_A.weight");
  CHECK(param("m.lora_A") == "m.lora_A");
  CHECK(param("a.lora_A.lora_A.w") == "a.lora_A.lora_A.default.w");
}

}  // namespace adapter_config_test
