// Diagnostics of the Hub model source. One code per failure kind; never renumber, only append.
//   code    severity  exit  failure
//   HUB001  error     30    not a local path, not in a cache, and HF_HUB_OFFLINE forbids the network
//   HUB002  error     31    cannot connect (DNS, refused, TLS)
//   HUB003  error     32    the server stopped sending for HF_HUB_DOWNLOAD_TIMEOUT seconds
//   HUB004  error     33    HTTP 401: gated, private or unknown repository and no accepted token
//   HUB005  error     34    HTTP 403: the token has no access to the repository
//   HUB006  error     35    HTTP 404: repository, revision or file does not exist
//   HUB007  error     36    HTTP 429/5xx on every attempt, or another unexpected status
//   HUB008  error     37    a reply that breaks HTTP or the Hub's protocol
//   HUB009  error     38    a redirect loop or too many redirects
//   HUB010  error     39    the header cache cannot be written
//   HUB011  warning   39    a Hugging Face cache snapshot lacks shards its index names (partial download)
//   HUB012  warning   -     the repository has no safetensors checkpoint: config.json only
//
// The Hub's own error kinds come in the X-Error-Code header (huggingface_hub utils/_http.py
// hf_raise_for_status reads it: RepoNotFound, GatedRepo, EntryNotFound, RevisionNotFound); a 401
// without it also means "repository not found" to huggingface_hub, since the Hub will not say
// whether a private repository exists.

#include <fmt/format.h>

#include "load/hub/hub_detail.hpp"
#include "shardcheck/finding_codes.hpp"

namespace shardcheck::hub {

Diagnostic hub_diagnostic(std::string_view code, std::string file, std::string message, std::string help) {
  return finding(code, in_file(std::move(file)), std::move(message), std::move(help));
}

namespace {

std::string token_phrase(const HubEnvironment& env) {
  return env.token ? fmt::format("the token from {}", env.token_source) : std::string("no token");
}

std::string hub_says(const HttpResult& r) {
  if (r.error_code.empty() && r.error_message.empty()) return {};
  if (r.error_message.empty()) return fmt::format(" (X-Error-Code: {})", r.error_code);
  return fmt::format(" ({}{}{})", r.error_code, r.error_code.empty() ? "" : ": ", r.error_message);
}

}  // namespace

Diagnostic http_failure(const HttpResult& r, std::string_view file, const ModelRef& ref, const HubEnvironment& env) {
  const std::string& url = r.url;
  const std::string repo_page = env.endpoint + "/" + ref.repo_id;
  switch (r.failure) {
    case HttpFailure::unreachable:
      return hub_diagnostic("HUB002", url, fmt::format("cannot reach {} to read {}: {}", r.final_url, file, r.detail),
                            "check the network and HF_ENDPOINT; set HF_HUB_OFFLINE=1 to use only cached models");
    case HttpFailure::timeout:
      return hub_diagnostic("HUB003", url,
                            fmt::format("{} timed out while reading {}: {}", r.final_url, file, r.detail),
                            "raise HF_HUB_DOWNLOAD_TIMEOUT (seconds) for a slow link");
    case HttpFailure::server_error:
      return hub_diagnostic("HUB007", url,
                            fmt::format("{} failed for {}: {}{}", r.final_url, file, r.detail, hub_says(r)),
                            "the Hub is overloaded or down; retry later");
    case HttpFailure::bad_response:
      return hub_diagnostic("HUB008", url,
                            fmt::format("malformed reply from {} for {}: {}", r.final_url, file, r.detail),
                            "a proxy or mirror (HF_ENDPOINT) may be mangling replies");
    case HttpFailure::redirects:
      return hub_diagnostic("HUB009", url, fmt::format("cannot read {}: {}", file, r.detail),
                            "the server or a proxy is misconfigured");
    case HttpFailure::none:
    case HttpFailure::status:
      break;
  }
  if (r.status == 401) {
    if (r.error_code == "GatedRepo")
      return hub_diagnostic(
          "HUB004", url,
          fmt::format("{} answered 401: '{}' is a gated repository; expected a token with access, "
                      "found {}{}",
                      url, ref.repo_id, token_phrase(env), hub_says(r)),
          fmt::format("accept the conditions at {} and set HF_TOKEN (or `hf auth login`)", repo_page));
    return hub_diagnostic("HUB004", url,
                          fmt::format("{} answered 401: '{}' is private, gated or does not exist, and {} was {}{}", url,
                                      ref.repo_id, token_phrase(env), env.token ? "refused" : "sent", hub_says(r)),
                          env.token ? "check that the token is valid and can read this repository"
                                    : "check the model id; for a private or gated model set HF_TOKEN");
  }
  if (r.status == 403)
    return hub_diagnostic(
        "HUB005", url,
        fmt::format("{} answered 403: {} has no access to '{}'{}", url, token_phrase(env), ref.repo_id, hub_says(r)),
        fmt::format("for a gated model accept its conditions at {}; a fine-grained token needs read "
                    "access to this repository",
                    repo_page));
  if (r.status == 404) {
    std::string what;
    if (r.error_code == "EntryNotFound")
      what = fmt::format("'{}' has no file {} at revision '{}'", ref.repo_id, file, ref.revision);
    else if (r.error_code == "RevisionNotFound")
      what = fmt::format("'{}' has no revision '{}'", ref.repo_id, ref.revision);
    else
      what = fmt::format(
          "expected {} of '{}' at revision '{}', found nothing (no such repository, revision or file; "
          "nor a local directory of that name)",
          file, ref.repo_id, ref.revision);
    return hub_diagnostic("HUB006", url, fmt::format("{} answered 404: {}{}", url, what, hub_says(r)),
                          "check the model id and revision (a local directory must exist to be used as one)");
  }
  return hub_diagnostic(
      "HUB007", url, fmt::format("{} answered HTTP {} for {}; expected 200 or 206{}", url, r.status, file, hub_says(r)),
      "");
}

}  // namespace shardcheck::hub
