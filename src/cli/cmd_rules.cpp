// `shardcheck rules` lists every lint rule; `shardcheck explain RULE` prints one rule's explanation.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "report/json_writer.hpp"
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

int run_rules(const std::string& format) {
  if (format == "json") {
    std::string out;
    JsonWriter w(out);
    w.begin_array();
    for (const Rule* r : all_rules()) {
      w.begin_object();
      w.key("id").value(r->id);
      w.key("severity").value(severity_name(r->severity));
      w.key("summary").value(r->summary);
      w.key("fixable").value(*r->fix != '\0');
      w.end_object();
    }
    w.end_array();
    std::puts(out.c_str());
    return 0;
  }
  for (const Rule* r : all_rules())
    std::printf("%-36s %-8s %s%s\n", r->id, severity_name(r->severity), r->summary, *r->fix ? " [fix]" : "");
  return 0;
}

int run_explain(const std::string& id) {
  const Rule* r = find_rule(id);
  if (!r) {
    std::string known;
    for (const Rule* x : all_rules()) known += fmt::format("  {}\n", x->id);
    std::fprintf(stderr, "shardcheck explain: unknown rule '%s'; the rules are:\n%s", id.c_str(), known.c_str());
    return to_int(ExitCode::usage);
  }
  std::printf("%s (%s)\n%s\n\n%s", r->id, severity_name(r->severity), r->summary, wrap(r->explanation, 100).c_str());
  if (*r->fix) std::printf("\nFix (--fix): %s\n", r->fix);
  return 0;
}

}  // namespace

void register_rules(CLI::App& app, CliContext& ctx) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand("rules", "List every lint rule with its id and default severity");
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([format, &ctx] { ctx.exit_code = run_rules(*format); });
}

void register_explain(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("explain", "Explain a lint rule: what accelerate does, and the fix");
  cmd->add_option("rule", *id, "Rule id, e.g. flattened-fsdp-config")->required();
  cmd->callback([id, &ctx] { ctx.exit_code = run_explain(*id); });
}

}  // namespace shardcheck::cli
