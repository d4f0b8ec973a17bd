// The YAML loader: positions, quoting, duplicates, PyYAML's YAML 1.1 types, and hostile input.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "lint_test_support.hpp"
#include "shardcheck/training_args.hpp"

using namespace shardcheck;

namespace {
std::optional<ConfigDoc> parse(const std::string& text, DiagnosticSink& sink) {
  return parse_config_doc(text, "t.yaml", sink);
}
}  // namespace

TEST_CASE("lint yaml: keys and values keep line and column") {
  DiagnosticSink sink;
  auto doc = parse("a: 1\nfsdp_config:\n  fsdp_version: 2  # c\n  b: 'x y'\n", sink);
  REQUIRE(doc);
  const YamlEntry* f = doc->root->find("fsdp_config");
  REQUIRE(f);
  CHECK(f->key_pos.line == 2);
  CHECK(f->key_pos.column == 1);
  const YamlEntry* v = f->value->find("fsdp_version");
  REQUIRE(v);
  CHECK(v->key_pos.line == 3);
  CHECK(v->key_pos.column == 3);
  CHECK(v->value->pos.column == 17);
  CHECK(doc->value_location(*v).end_column == 18);  // `2`, comment excluded
  const YamlEntry* b = f->value->find("b");
  CHECK(b->value->quoted);
  CHECK(b->value->text == "x y");
  CHECK(doc->value_location(*b).end_column == 11);  // 'x y' with its quotes
}

TEST_CASE("lint yaml: columns count code points") {
  DiagnosticSink sink;
  auto doc = parse("# 한국어\nk: 'é'  \nz: 1\n", sink);
  REQUIRE(doc);
  CHECK(doc->root->find("z")->key_pos.line == 3);
  CHECK(doc->pos_at(doc->root->find("k")->value->end).column == 7);
}

TEST_CASE("lint yaml: duplicate keys are kept, the last one wins") {
  DiagnosticSink sink;
  auto doc = parse("a: 1\na: 2\n", sink);
  REQUIRE(doc);
  CHECK(doc->root->entries.size() == 2);
  CHECK(doc->root->find("a")->value->text == "2");
}

TEST_CASE("lint yaml: PyYAML 1.1 resolution") {
  CHECK(resolve_yaml11("no", false).type == YamlType::boolean);
  CHECK(resolve_yaml11("NO", false).type == YamlType::boolean);
  CHECK(resolve_yaml11("Off", false).type == YamlType::boolean);
  CHECK(resolve_yaml11("no", true).type == YamlType::string);
  CHECK(resolve_yaml11("y", false).type == YamlType::string);  // PyYAML does not resolve y/n
  CHECK(resolve_yaml11("1e8", false).type == YamlType::string);
  CHECK(resolve_yaml11("1.0e+8", false).type == YamlType::floating);
  CHECK(resolve_yaml11("1.0e8", false).type == YamlType::string);
  CHECK(resolve_yaml11("100_000", false).integer == 100000);
  CHECK(resolve_yaml11("0x10", false).integer == 16);
  CHECK(resolve_yaml11("010", false).integer == 8);
  CHECK(resolve_yaml11("~", false).type == YamlType::null);
  CHECK(resolve_yaml11("", false).type == YamlType::null);
  CHECK(resolve_yaml11(".inf", false).type == YamlType::floating);
  CHECK(resolve_yaml11("FULL_SHARD", false).type == YamlType::string);
}

// accelerate reads the config in text mode (commands/config/config_args.py v1.14.0:
// `open(yaml_file, encoding="utf-8")` then yaml.safe_load), so universal newlines hand PyYAML "\n" for
// "\r" and "\r\n"; PyYAML 6.0 loads both texts below to {'a': 1, 'fsdp_config': {'fsdp_offload_params':
// True, 'x': 'q'}} and {'a': 1, 'use_cpu': True}, from a text-mode or a binary stream alike.
TEST_CASE("lint yaml: a lone CR ends a line, as in Python's text mode, and positions stay right") {
  DiagnosticSink sink;
  SUBCASE("CR-only file") {
    auto doc = parse("a: 1\rfsdp_config:\r  fsdp_offload_params: true\r  x: 'q'\r", sink);
    REQUIRE(doc);
    CHECK(sink.items().empty());
    const YamlEntry* f = doc->root->find("fsdp_config");
    REQUIRE(f);
    REQUIRE(f->value->is_mapping());
    const YamlEntry* o = f->value->find("fsdp_offload_params");
    REQUIRE(o);
    CHECK(o->value->scalar().type == YamlType::boolean);
    CHECK(o->key_pos.line == 3);
    CHECK(o->key_pos.column == 3);
    CHECK(doc->value_location(*o).column == 24);
    CHECK(doc->value_location(*o).end_column == 28);  // `true`, the CR excluded
    CHECK(doc->line_text(3) == "  fsdp_offload_params: true");
    CHECK(f->value->find("x")->value->text == "q");
  }
  SUBCASE("last line ends in CR without LF") {
    auto doc = parse("a: 1\nuse_cpu: true\r", sink);
    REQUIRE(doc);
    const YamlEntry* u = doc->root->find("use_cpu");
    REQUIRE(u);
    CHECK(u->value->text == "true");
    CHECK(u->value->scalar().type == YamlType::boolean);
    CHECK(doc->line_text(2) == "use_cpu: true");
  }
  SUBCASE("CRLF keeps working, and the lint of a CR-only file is clean") {
    auto doc = parse("a: 1\r\nb: true\r\n", sink);
    REQUIRE(doc);
    CHECK(doc->root->find("b")->value->scalar().type == YamlType::boolean);
    CHECK(doc->root->find("b")->key_pos.line == 2);
    const auto ds = lint_test::lint_text(
        "compute_environment: LOCAL_MACHINE\rdistributed_type: MULTI_GPU\rmixed_precision: bf16\r"
        "num_machines: 1\rnum_processes: 2\ruse_cpu: false\r",
        lint_test::options());
    CHECK(ds.empty());
  }
  SUBCASE("training arguments too: HfArgumentParser and TRL read them in text mode") {
    const auto t = parse_training_args("per_device_train_batch_size: 4\rgradient_checkpointing: true\r", "t.yaml");
    REQUIRE(std::holds_alternative<TrainingArgs>(t));
    CHECK(std::get<TrainingArgs>(t).micro_batch->value == 4);
    CHECK(std::get<TrainingArgs>(t).gradient_checkpointing->value);
  }
}

TEST_CASE("lint yaml: syntax errors carry a position and exit code 10") {
  DiagnosticSink sink;
  CHECK_FALSE(parse("a: [1, 2\nb: 3\n", sink));
  REQUIRE(sink.items().size() == 1);
  CHECK(sink.items()[0].code == "yaml-syntax");
  CHECK(sink.items()[0].location.line >= 1);
  CHECK(sink.items()[0].exit_code == ExitCode::bad_accelerate_config);
}

TEST_CASE("lint yaml: a second document is refused like yaml.safe_load does") {
  DiagnosticSink sink;
  CHECK_FALSE(parse("a: 1\n---\nb: 2\n", sink));
  CHECK(sink.items().at(0).code == "yaml-syntax");
}

TEST_CASE("lint yaml: hostile input is refused quickly") {
  const auto start = std::chrono::steady_clock::now();
  SUBCASE("billion laughs") {
    std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    const char* names = "abcdefghij";
    for (int i = 1; i < 10; ++i) {
      bomb += fmt::format("{}: &{} [", names[i], names[i]);
      for (int j = 0; j < 10; ++j) bomb += fmt::format("{}*{}", j ? ", " : "", names[i - 1]);
      bomb += "]\n";
    }
    DiagnosticSink sink;
    CHECK_FALSE(parse(bomb, sink));
    CHECK(sink.items().at(0).code == "yaml-limits");
  }
  SUBCASE("deep nesting") {
    DiagnosticSink sink;
    CHECK_FALSE(parse(std::string(100000, '[') + std::string(100000, ']'), sink));
    CHECK(sink.items().at(0).code == "yaml-limits");
  }
  SUBCASE("10 MB scalar") {
    DiagnosticSink sink;
    CHECK_FALSE(parse("a: " + std::string(10 << 20, 'x') + "\n", sink));
    CHECK(sink.items().at(0).code == "yaml-limits");
  }
  SUBCASE("recursive alias") {
    DiagnosticSink sink;
    auto doc = parse("a: &a [1, *a]\n", sink);
    CHECK_FALSE(doc);
  }
  SUBCASE("NUL byte") {
    DiagnosticSink sink;
    CHECK_FALSE(parse(std::string("a: 1\n\0b: 2\n", 11), sink));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("lint yaml: default config path follows HF_HOME, then XDG_CACHE_HOME") {
  static std::map<std::string, std::string> env;
  auto fake = [](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {{"HOME", "/home/u"}};
  CHECK(default_accelerate_config_path(fake) == "/home/u/.cache/huggingface/accelerate/default_config.yaml");
  env["XDG_CACHE_HOME"] = "/xdg";
  CHECK(default_accelerate_config_path(fake) == "/xdg/huggingface/accelerate/default_config.yaml");
  env["HF_HOME"] = "~/hf";
  CHECK(default_accelerate_config_path(fake) == "/home/u/hf/accelerate/default_config.yaml");
}
