#pragma once
// The output formats `lint` and `check` share: text and json are each command's own (check's json
// is the plan); the reports for code hosts are rendered here, once, for both.
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck::cli {

// --format's choices, in the order --help lists them.
inline const std::vector<std::string> kFindingFormats = {"text", "json", "sarif", "github", "gitlab"};

// `format` is sarif (GitHub code scanning), github (workflow annotations) or gitlab (Code Quality):
// the report; otherwise nullopt. `sarif_rules` is asked only for SARIF.
std::optional<std::string> render_for_code_host(const std::string& format, const std::vector<Diagnostic>& items,
                                                const std::function<std::vector<SarifRule>()>& sarif_rules,
                                                const std::string& uri_base);

}  // namespace shardcheck::cli
