#pragma once
// A small libcurl (multi interface) client for the Hub: GETs with an optional byte range, several
// at once over a bounded number of connections, redirects followed by hand so that the token goes
// only to the endpoint's own scheme://host:port (never to the CDN a file redirects to), retries with
// exponential backoff on 429 and 5xx, and early stop when a server ignores Range and sends the whole
// file. Nothing here knows about safetensors; hub_fetch.cpp decides what to ask for.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load/hub/http_text.hpp"
#include "shardcheck/hub.hpp"

namespace shardcheck::hub {

enum class HttpFailure {
  none,
  unreachable,   // DNS, connect, TLS
  timeout,       // nothing received for HF_HUB_DOWNLOAD_TIMEOUT seconds
  status,        // a final 4xx (or a 5xx/429 after the last retry: see server_error)
  server_error,  // 429/5xx after every retry
  bad_response,  // short body, Content-Range that is not what was asked, body over the cap
  redirects,     // a loop, or more than kMaxRedirects hops
};

struct HttpRequest {
  std::string url;
  // Inclusive byte range to ask for; nullopt: the whole resource.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
  std::uint64_t max_body = 64ull << 20;  // a whole-resource body larger than this is refused
};

struct HttpResult {
  HttpFailure failure = HttpFailure::none;
  std::string detail;                       // what went wrong, for the diagnostic (never the token)
  long status = 0;                          // of the last reply
  std::string url;                          // the URL asked for (never carries the token)
  std::string final_url;                    // after redirects
  std::string body;                         // the bytes of the range asked for (or the whole body)
  std::optional<std::uint64_t> total_size;  // the resource's full length (Content-Range or -Length)
  bool range_ignored = false;               // the server answered a range request with 200
  std::string repo_commit;                  // X-Repo-Commit, from whichever hop sent it
  std::string error_code;                   // X-Error-Code (e.g. GatedRepo, RepoNotFound, EntryNotFound)
  std::string error_message;                // X-Error-Message
  std::uint64_t wire_body_bytes = 0;        // body bytes that arrived, over every hop and attempt
  std::uint64_t wire_header_bytes = 0;      // response header bytes, likewise
  int attempts = 0;
};

struct CurlApi;

class HttpClient {
 public:
  explicit HttpClient(const HubEnvironment& env);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  using Done = std::function<void(HttpResult&&)>;
  // Queues a request; `done` runs on this thread inside run() and may add() more.
  void add(HttpRequest request, Done done);
  // Runs until every queued request (and those added meanwhile) is done. `tick` is called about
  // every 100 ms (for a progress line).
  void run(const std::function<void()>& tick = {});
  // One request, run to completion.
  HttpResult get(HttpRequest request);

  std::uint64_t wire_bytes() const { return wire_bytes_; }

  static constexpr int kMaxRedirects = 10;
  static constexpr int kMaxAttempts = 6;  // huggingface_hub http_backoff: max_retries=5

  struct Transfer;

 private:
  void start(std::unique_ptr<Transfer> t);
  void finish(Transfer* t, int curl_code);

  const HubEnvironment& env_;
  std::string load_error_;  // why libcurl could not be loaded, when api_ is null
  const CurlApi* api_;      // libcurl's functions, loaded on first use (curl_api.hpp)
  void* multi_ = nullptr;
  std::deque<std::unique_ptr<Transfer>> queued_;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::unique_ptr<Transfer>>> delayed_;
  std::vector<std::unique_ptr<Transfer>> active_;
  std::uint64_t wire_bytes_ = 0;
};

}  // namespace shardcheck::hub
