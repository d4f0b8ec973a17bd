#include "simulate/unit_diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace shardcheck {
namespace {

// The diagnostic with its unit's name taken out: equal keys mean "the same problem in another copy".
std::string unit_free_key(const std::string& unit_path, const Diagnostic& d) {
  std::string text = d.code + '\n' + d.message + '\n' + d.help;
  if (unit_path.empty()) return text;
  const std::string prefix = unit_path + '.';
  for (std::size_t pos = 0; (pos = text.find(prefix, pos)) != std::string::npos;)
    text.replace(pos, prefix.size(), "<unit>.");
  return text;
}

}  // namespace

void UnitDiagnostics::add(const std::string& unit_path, Diagnostic d) {
  std::string key = unit_free_key(unit_path, d);
  auto same = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.key == key; });
  if (same != groups_.end()) {
    same->units.push_back(unit_path);
    return;
  }
  groups_.push_back(Group{std::move(key), std::move(d), {unit_path}});
}

Diagnostic UnitDiagnostics::for_instance(Diagnostic d, const std::string& from, const std::string& to) {
  // "model.layers.3" names layer 3 where no digit follows (not "model.layers.30").
  auto rename = [&](std::string& text) {
    for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos;) {
      const std::size_t end = pos + from.size();
      if (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
        pos = end;
        continue;
      }
      text.replace(pos, from.size(), to);
      pos += to.size();
    }
  };
  if (from.empty()) return d;
  rename(d.message);
  rename(d.help);
  if (d.location.model_path) rename(*d.location.model_path);
  return d;
}

void UnitDiagnostics::add_all(const std::string& unit_path, DiagnosticSink& sink) {
  for (Diagnostic& d : sink.items()) add(unit_path, std::move(d));
  sink.items().clear();
}

void UnitDiagnostics::flush(DiagnosticSink& sink) {
  for (Group& g : groups_) {
    if (g.units.size() > 1) {
      const std::size_t more = g.units.size() - 1;
      std::string names;
      for (std::size_t i = 1; i < g.units.size() && i <= 3; ++i)
        names += fmt::format("{}{}", i == 1 ? "" : ", ", module_label(g.units[i]));
      if (more > 3) names += fmt::format(", ... {}", module_label(g.units.back()));
      g.first.message += fmt::format(" (the same in {} more unit{}: {})", more, more == 1 ? "" : "s", names);
    }
    sink.report(std::move(g.first));
  }
  groups_.clear();
}

}  // namespace shardcheck
