// The registry reader on its own YAML tree (src/resolve/registry_yaml.*): `extends` merging as
// rules/models/README.md describes it, yaml-cpp's spellings of booleans and null, and REG001
// positions that name the file and line where the mistake is written, also through `extends`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "shardcheck/registry.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

namespace {

// A rules/ directory in a fresh temporary folder, removed at scope exit.
struct RulesDir {
  fs::path dir;
  explicit RulesDir(const char* name) : dir(fs::temp_directory_path() / name) {
    fs::remove_all(dir);
    fs::create_directories(dir / "models");
  }
  ~RulesDir() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir / "models" / file) << text; }
};

const char* kBase =
    "model_type: base\n"                      // 1
    "abstract: true\n"                        // 2
    "vars: {P: Base}\n"                       // 3
    "architectures: [\"{P}ForCausalLM\"]\n"   // 4
    "config:\n"                               // 5
    "  defaults: {act: silu, bias: false}\n"  // 6
    "  derived:\n"                            // 7
    "    a: hidden_size\n"                    // 8
    "    b: a * 2\n"                          // 9
    "classes:\n"                              // 10
    "  \"{P}ForCausalLM\":\n"                 // 11
    "    children: {model: \"{P}Model\"}\n"   // 12
    "  \"{P}Model\":\n"                       // 13
    "    params: {weight: [a]}\n";            // 14

std::vector<std::string> names(const std::vector<NamedExpr>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.name);
  return out;
}

}  // namespace

TEST_CASE("registry yaml: extends merges config and classes key by key, {P} from the child") {
  RulesDir rules("shardcheck-reg-yaml-merge");
  rules.write("base.yaml", kBase);
  rules.write("kid.yaml",
              "model_type: kid\n"
              "extends: base\n"
              "vars: {P: Kid}\n"
              "config:\n"
              "  defaults: {bias: true}\n"
              "  derived:\n"
              "    a: hidden_size + 1\n"  // overrides in place: `a` stays before `b`
              "    c: b\n"                // new: after `b`
              "classes:\n"
              "  \"{P}Model\":\n"
              "    params: {other: [b]}\n");
  DiagnosticSink sink;
  auto reg = Registry::load(rules.dir, sink);
  REQUIRE(reg);
  CHECK_FALSE(reg->find("base"));  // abstract: a template only
  const ArchSpec* kid = reg->find("kid");
  REQUIRE(kid);  // the parent's `abstract` is not inherited
  CHECK(kid->architectures == std::vector<std::string>{"KidForCausalLM"});
  CHECK(names(kid->derived) == std::vector<std::string>{"a", "b", "c"});
  CHECK(names(kid->defaults) == std::vector<std::string>{"act", "bias"});
  REQUIRE(kid->classes.count("KidModel"));
  REQUIRE(kid->classes.count("KidForCausalLM"));
  // A class entry is replaced whole: the child's KidModel has only its own parameter.
  const ClassSpec& model = kid->classes.at("KidModel");
  REQUIRE(model.params.size() == 1);
  CHECK(model.params[0].name == "other");
  REQUIRE(kid->classes.at("KidForCausalLM").children.size() == 1);
  CHECK(kid->classes.at("KidForCausalLM").children[0].cls == "KidModel");
}

TEST_CASE("registry yaml: booleans as yaml-cpp spells them; anything else is REG001 at its line") {
  RulesDir rules("shardcheck-reg-yaml-bool");
  std::string base = kBase;
  base.replace(base.find("abstract: true"), 14, "abstract: Yes");
  rules.write("base.yaml", base);
  rules.write("kid.yaml", "model_type: kid\nextends: base\n");
  DiagnosticSink ok;
  auto reg = Registry::load(rules.dir, ok);
  REQUIRE(reg);
  CHECK_FALSE(reg->find("base"));
  CHECK(reg->find("kid"));

  base.replace(base.find("abstract: Yes"), 13, "abstract: maybe");
  rules.write("base.yaml", base);
  DiagnosticSink bad;
  CHECK_FALSE(Registry::load(rules.dir, bad));
  REQUIRE(bad.items().size() == 1);
  const Diagnostic& d = bad.items().front();
  CHECK(d.code == "REG001");
  CHECK(d.exit_code == ExitCode::bad_rules);
  CHECK(d.message == "expected true or false for abstract, found 'maybe'");
  CHECK(d.location.file == (rules.dir / "models" / "base.yaml").string());
  CHECK(d.location.line == 2);
  CHECK(d.location.column == 11);
}

TEST_CASE("registry yaml: a mistake inherited through extends is reported once, where it is written") {
  RulesDir rules("shardcheck-reg-yaml-pos");
  std::string base = kBase;
  base.replace(base.find("    params: {weight: [a]}"), 25, "    params: {weight: [a]}\n    colour: blue");
  rules.write("base.yaml", base);
  rules.write("kid.yaml", "model_type: kid\nextends: base\n");
  rules.write("kid2.yaml", "model_type: kid2\nextends: base\n");
  DiagnosticSink sink;
  CHECK_FALSE(Registry::load(rules.dir, sink));
  REQUIRE(sink.items().size() == 1);  // found for kid and kid2, at the same place in base.yaml
  const Diagnostic& d = sink.items().front();
  CHECK(d.message == "unknown key 'colour' in class 'BaseModel'");  // kid inherits vars: {P: Base}
  CHECK(d.location.file == (rules.dir / "models" / "base.yaml").string());
  CHECK(d.location.line == 15);
  CHECK(d.location.column == 5);
}

TEST_CASE("registry yaml: malformed structure names what was expected and where") {
  RulesDir rules("shardcheck-reg-yaml-shape");
  rules.write("kid.yaml",
              "model_type: kid\n"
              "vars: {P: [x]}\n"
              "architectures: [Kid]\n");
  DiagnosticSink sink;
  CHECK_FALSE(Registry::load(rules.dir, sink));
  REQUIRE(sink.items().size() == 1);
  CHECK(sink.items().front().message == "expected a string for vars.P");
  CHECK(sink.items().front().location.line == 2);
  CHECK(sink.items().front().location.column == 11);

  rules.write("kid.yaml",
              "model_type: kid\n"
              "architectures: [Kid]\n"
              "checkpoint:\n"
              "  renames:\n"
              "    - {from: a}\n");
  DiagnosticSink rename;
  CHECK_FALSE(Registry::load(rules.dir, rename));
  REQUIRE(rename.items().size() == 1);
  CHECK(rename.items().front().message == "expected a string for rename to, found nothing");
  CHECK(rename.items().front().location.line == 5);
  CHECK(rename.items().front().location.column == 7);

  rules.write("kid.yaml", "- model_type: kid\n");
  DiagnosticSink list;
  CHECK_FALSE(Registry::load(rules.dir, list));
  REQUIRE(list.items().size() == 1);
  CHECK(list.items().front().message == "expected a map of top-level keys");
  CHECK(list.items().front().location.line == 1);
}
