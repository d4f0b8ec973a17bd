#include "cli/finding_formats.hpp"

namespace shardcheck::cli {

std::optional<std::string> render_for_code_host(const std::string& format, const std::vector<Diagnostic>& items,
                                                const std::function<std::vector<SarifRule>()>& sarif_rules,
                                                const std::string& uri_base) {
  if (format == "sarif") return render_diagnostics_sarif(items, sarif_rules(), SHARDCHECK_VERSION, uri_base);
  if (format == "github") return render_diagnostics_github(items);
  if (format == "gitlab") return render_diagnostics_gitlab(items, uri_base);
  return std::nullopt;
}

}  // namespace shardcheck::cli
