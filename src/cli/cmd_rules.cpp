// `shardcheck rules` lists every lint rule and finding code; `shardcheck explain ID` prints one's
// explanation.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/choices.hpp"
#include "report/json_writer.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/lint.hpp"

namespace shardcheck::cli {
namespace {

// Wraps a paragraph at `width` columns.
std::string wrap(std::string_view text, std::size_t width) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
    start = end + 1;
  }
  if (!line.empty()) out += line + "\n";
  return out;
}

// Finding codes as "ST001-ST022, IX001-IX016, ...": each prefix once (in table order), its codes
// sorted by number and consecutive numbers joined into a range. The table is not sorted (IO004 and
// IO005 sit before IO003), so "first-last in table order" said IO001-IO003 and hid two codes.
std::string code_ranges() {
  std::vector<std::string> prefixes;
  std::map<std::string, std::vector<std::pair<int, std::string>>> by_prefix;
  for (const auto& c : finding_codes()) {
    const std::string_view id = c.id;
    const std::size_t digits = id.find_first_of("0123456789");
    const std::string prefix(id.substr(0, digits));
    if (!by_prefix.count(prefix)) prefixes.push_back(prefix);
    by_prefix[prefix].emplace_back(std::atoi(std::string(id.substr(digits)).c_str()), std::string(id));
  }
  std::string out;
  for (const auto& prefix : prefixes) {
    auto& codes = by_prefix[prefix];
    std::sort(codes.begin(), codes.end());
    for (std::size_t i = 0; i < codes.size();) {
      std::size_t j = i;
      while (j + 1 < codes.size() && codes[j + 1].first == codes[j].first + 1) ++j;
      out += fmt::format("{}{}{}", out.empty() ? "" : ", ", codes[i].second,
                         j > i ? "-" + codes[j].second : std::string());
      i = j + 1;
    }
  }
  return out;
}

int run_rules(const std::string& format) {
  if (format == "json") {
    std::string out;
    JsonWriter w(out);
    w.begin_array();
    for (const Rule* r : all_rules()) {
      w.begin_object();
      w.key("id").value(r->id);
      w.key("kind").value("lint");
      w.key("severity").value(severity_name(r->severity));
      w.key("summary").value(r->summary);
      w.key("explanation").value(r->explanation);
      w.key("fixable").value(*r->fix != '\0');
      w.key("fix").value(r->fix);
      w.end_object();
    }
    for (const FindingCode& c : finding_codes()) {
      w.begin_object();
      w.key("id").value(c.id);
      w.key("kind").value("finding");
      w.key("severity").value(severity_name(c.severity));
      w.key("summary").value(c.summary);
      w.key("explanation").value(c.explanation);
      w.key("exit_code").value(to_int(c.exit_code));
      w.end_object();
    }
    w.end_array();
    std::puts(out.c_str());
    return 0;
  }
  std::puts("Lint rules (lint and check; --fix where marked):");
  for (const Rule* r : all_rules())
    std::printf("  %-36s %-8s %s%s\n", r->id, severity_name(r->severity), r->summary, *r->fix ? " [fix]" : "");
  std::puts("\nFinding codes (inspect, plan and check; the exit code when it is an error):");
  for (const FindingCode& c : finding_codes())
    std::printf("  %-8s %-8s %3d  %s\n", c.id, severity_name(c.severity), to_int(c.exit_code), c.summary);
  return 0;
}

int run_explain(const std::string& id) {
  if (const Rule* r = find_rule(id)) {
    std::printf("%s (%s)\n%s\n\n%s", r->id, severity_name(r->severity), r->summary, wrap(r->explanation, 100).c_str());
    if (*r->fix) std::printf("\nFix (--fix): %s\n", r->fix);
    return 0;
  }
  std::string upper(id);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (const FindingCode* c = find_finding_code(upper)) {
    std::printf("%s (%s, exit code %d)\n%s\n\n%s", c->id, severity_name(c->severity), to_int(c->exit_code), c->summary,
                wrap(c->explanation, 100).c_str());
    return 0;
  }
  std::string known;
  for (const Rule* x : all_rules()) known += fmt::format("  {}\n", x->id);
  std::fprintf(stderr,
               "shardcheck explain: unknown rule or code '%s'; the lint rules are:\n%sand the finding codes %s\n",
               id.c_str(), known.c_str(), code_ranges().c_str());
  return to_int(ExitCode::usage);
}

}  // namespace

void register_rules(CLI::App& app, CliContext& ctx) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand("rules", "List every lint rule and finding code with its severity");
  cmd->add_option("--format", *format, "Output format")->check(one_of({"text", "json"}));
  cmd->callback([format, &ctx] { ctx.exit_code = run_rules(*format); });
}

void register_explain(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Explain a lint rule or a finding code (ST003, PLAN012, ...): what is checked and why");
  cmd->add_option("rule", *id, "Rule id or code, e.g. flattened-fsdp-config or ST020")->required();
  cmd->callback([id, &ctx] { ctx.exit_code = run_explain(*id); });
}

}  // namespace shardcheck::cli
