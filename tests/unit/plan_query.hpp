#pragma once
// Lookups over a ShardPlan that the plan tests share.

#include <doctest/doctest.h>

#include <string>

#include "shardcheck/shard_plan.hpp"

namespace shardcheck::test {

// The unit at `path` ("" = root); fails the test when the plan has none.
inline const ShardUnit& unit(const ShardPlan& p, const std::string& path) {
  for (const auto& u : p.units)
    if (u.path == path) return u;
  FAIL("no unit " << path);
  return p.units.front();
}

}  // namespace shardcheck::test
