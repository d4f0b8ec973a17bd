#pragma once
// Errors of identical repeated units, reported once. A model's blocks are copies of one class, so a
// wrap that fails for one fails for all of them the same way: DeepSeek-V3's 61 decoder layers would
// print 61 copies of one ValueError. A diagnostic that differs from an earlier one only in the unit
// it names (the unit's path as location and as prefix of parameter names) joins that one, which
// then says how many units it stands for.

#include <string>
#include <vector>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck {

class UnitDiagnostics {
 public:
  // `unit_path`: the unit's module path ("" for the root); `d` is about that unit.
  void add(const std::string& unit_path, Diagnostic d);
  // Every unit's diagnostics from `sink` (a scratch sink the unit was built with).
  void add_all(const std::string& unit_path, DiagnosticSink& sink);
  // The merged diagnostics, in first-seen order.
  void flush(DiagnosticSink& sink);
  // In a folded plan: what another instance of a unit reports, from the first instance's `d`, whose
  // unit path `from` becomes `to` wherever it names that unit or something in it.
  static Diagnostic for_instance(Diagnostic d, const std::string& from, const std::string& to);

 private:
  struct Group {
    std::string key;
    Diagnostic first;
    std::vector<std::string> units;
  };
  std::vector<Group> groups_;
};

}  // namespace shardcheck
