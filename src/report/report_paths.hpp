#pragma once
// What the machine-readable reports for code hosts (SARIF for GitHub code scanning, GitLab's Code
// Quality report) share: a finding's file as a path relative to the repository, and a fingerprint
// that follows a finding across commits.
#include <string>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck::report_paths {

// `file` relative to `base` (--uri-base; empty: as given) when it lies under it, without "./".
std::string relative_path(const std::string& file, const std::string& base);

// FNV-1a over the code, the path and the message: stable across runs and platforms, and
// independent of line numbers, so moving a finding does not make it a new one.
std::string fingerprint(const Diagnostic& d, const std::string& path);

}  // namespace shardcheck::report_paths
