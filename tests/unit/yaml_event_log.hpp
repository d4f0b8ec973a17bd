#pragma once
// A YAML::EventHandler that writes each event as one line (kind, mark, tag, style, value), for
// comparing the YAML fast path with yaml-cpp (tests/unit/test_plain_yaml.cpp; the fuzzer has its own).

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace shardcheck::test {

class YamlEventLog : public YAML::EventHandler {
 public:
  std::vector<std::string> lines;

  void OnDocumentStart(const YAML::Mark& m) override { add("doc", m); }
  void OnDocumentEnd() override { lines.push_back("enddoc"); }
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { add("null", m, "", a); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override { add("alias", m, "", a); }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, const std::string& v) override {
    add("scalar", m, tag + " [" + v + "]", a);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a,
                       YAML::EmitterStyle::value s) override {
    add("seq", m, tag + " style " + std::to_string(s), a);
  }
  void OnSequenceEnd() override { lines.push_back("endseq"); }
  void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, YAML::EmitterStyle::value s) override {
    add("map", m, tag + " style " + std::to_string(s), a);
  }
  void OnMapEnd() override { lines.push_back("endmap"); }

 private:
  void add(const char* kind, const YAML::Mark& m, const std::string& rest = "", YAML::anchor_t a = 0) {
    lines.push_back(std::string(kind) + " @" + std::to_string(m.pos) + " " + std::to_string(m.line) + ":" +
                    std::to_string(m.column) + " " + rest + " a" + std::to_string(a));
  }
};

// yaml-cpp's events for the first document, or nullopt when it throws.
inline std::optional<std::vector<std::string>> yaml_cpp_events(const std::string& text) {
  std::istringstream in(text);
  YamlEventLog log;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(log);
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
  return log.lines;
}

}  // namespace shardcheck::test
