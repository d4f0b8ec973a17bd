// The rule registry: one line per rule. A rule is a file in src/rules/ defining a `Rule`.
#include <algorithm>

#include "shardcheck/lint.hpp"

namespace shardcheck {
namespace rules {
extern const Rule kYamlSyntax;
extern const Rule kYamlLimits;
extern const Rule kConfigNotAMapping;
extern const Rule kDuplicateKey;
extern const Rule kFlattenedFsdpConfig;
extern const Rule kUnknownTopLevelKey;
extern const Rule kUnknownNestedKey;
extern const Rule kKeyNotInVersion;
extern const Rule kRenamedKey;
extern const Rule kIgnoredByLaunch;
extern const Rule kYaml11ImplicitType;
extern const Rule kWrongType;
extern const Rule kInvalidEnumValue;
extern const Rule kNoncanonicalEnumSpelling;
extern const Rule kMissingDistributedType;
extern const Rule kNumProcessesUnset;
extern const Rule kFsdpConfigUnused;
extern const Rule kClsListWithoutTransformerWrap;
extern const Rule kWhitespaceInClsList;
extern const Rule kMinNumParamsWithoutSizeWrap;
extern const Rule kSizeWrapMinNumParams;
extern const Rule kTransformerWrapWithoutCls0340;
extern const Rule kSyncModuleStatesDisabled;
extern const Rule kHybridShardNoWrap;
extern const Rule kHybridShardSingleMachine;
extern const Rule kFsdpSingleProcess;
extern const Rule kProcessesNotDivisible;
extern const Rule kGpuIdsCount;
extern const Rule kMachineRankOutOfRange;
extern const Rule kMultiNodeNoMainIp;
extern const Rule kFsdp2Fsdp1OnlyKey;
extern const Rule kReshardAfterForwardValue;
extern const Rule kFsdp1ReshardStrategyIgnored;
extern const Rule kFsdp2LocalStateDict;
extern const Rule kFsdpTorchVersion;
extern const Rule kParallelismSizeProduct;
extern const Rule kParallelismRequiresFsdp2;
extern const Rule kEnvLeaksIntoJob;
extern const Rule kEnvOverriddenByLaunch;
extern const Rule kEnvUnknownVariable;
extern const Rule kValueOutOfRange;
extern const Rule kParallelismCpSpExclusive;
extern const Rule kParallelismTpWithPureDp;
}  // namespace rules

const std::vector<const Rule*>& all_rules() {
  static const std::vector<const Rule*> kRules = {
      &rules::kYamlSyntax,
      &rules::kYamlLimits,
      &rules::kConfigNotAMapping,
      &rules::kDuplicateKey,
      &rules::kFlattenedFsdpConfig,
      &rules::kUnknownTopLevelKey,
      &rules::kUnknownNestedKey,
      &rules::kKeyNotInVersion,
      &rules::kRenamedKey,
      &rules::kIgnoredByLaunch,
      &rules::kYaml11ImplicitType,
      &rules::kWrongType,
      &rules::kInvalidEnumValue,
      &rules::kNoncanonicalEnumSpelling,
      &rules::kMissingDistributedType,
      &rules::kNumProcessesUnset,
      &rules::kFsdpConfigUnused,
      &rules::kClsListWithoutTransformerWrap,
      &rules::kWhitespaceInClsList,
      &rules::kMinNumParamsWithoutSizeWrap,
      &rules::kSizeWrapMinNumParams,
      &rules::kTransformerWrapWithoutCls0340,
      &rules::kSyncModuleStatesDisabled,
      &rules::kHybridShardNoWrap,
      &rules::kHybridShardSingleMachine,
      &rules::kFsdpSingleProcess,
      &rules::kProcessesNotDivisible,
      &rules::kGpuIdsCount,
      &rules::kMachineRankOutOfRange,
      &rules::kMultiNodeNoMainIp,
      &rules::kFsdp2Fsdp1OnlyKey,
      &rules::kReshardAfterForwardValue,
      &rules::kFsdp1ReshardStrategyIgnored,
      &rules::kFsdp2LocalStateDict,
      &rules::kFsdpTorchVersion,
      &rules::kParallelismSizeProduct,
      &rules::kParallelismRequiresFsdp2,
      &rules::kEnvLeaksIntoJob,
      &rules::kEnvOverriddenByLaunch,
      &rules::kEnvUnknownVariable,
      &rules::kValueOutOfRange,
      &rules::kParallelismCpSpExclusive,
      &rules::kParallelismTpWithPureDp,
  };
  return kRules;
}

Diagnostic loader_finding(std::string_view rule_id, SourceLocation where, std::string message, std::string help) {
  const Rule* rule = find_rule(rule_id);
  Diagnostic d;
  d.code = std::string(rule_id);
  d.severity = rule ? rule->severity : Severity::error;
  d.location = std::move(where);
  d.message = std::move(message);
  d.help = std::move(help);
  d.exit_code = ExitCode::bad_accelerate_config;
  return d;
}

const Rule* find_rule(std::string_view id) {
  for (const Rule* r : all_rules())
    if (id == r->id) return r;
  return nullptr;
}

}  // namespace shardcheck
