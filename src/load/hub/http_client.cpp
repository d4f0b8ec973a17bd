// libcurl multi-interface transfers for the Hub client; see http_client.hpp for what it promises.
//
// Retry policy follows huggingface_hub utils/_http.py http_backoff: up to 5 retries on 429 and
// 5xx, waiting 1, 2, 4, 8, 8 s (base_wait_time=1, max_wait_time=8), or what Retry-After says (capped
// at 60 s). Timeouts are not retried: a server that stalls once usually stalls again, and the
// user's HF_HUB_DOWNLOAD_TIMEOUT is the answer they asked for.

#include "load/hub/http_client.hpp"

#include <curl/curl.h>

#include "load/hub/curl_api.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace shardcheck::hub {
namespace {

constexpr std::uint64_t kKeptErrorBody = 4096;  // of a 4xx/5xx body, for nothing but byte counts

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// scheme://host:port of a URL, lower-cased, default port filled in; empty when it does not parse.
std::string origin_of(const CurlApi& curl, const std::string& url) {
  CURLU* u = curl.url();
  std::string out;
  if (curl.url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl.url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl.url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
      out = lower_ascii(fmt::format("{}://{}:{}", scheme, host, port));
    curl.free(scheme);
    curl.free(host);
    curl.free(port);
  }
  curl.url_cleanup(u);
  return out;
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}
bool is_retryable(long status) { return status == 429 || (status >= 500 && status <= 599); }

}  // namespace

struct HttpClient::Transfer {
  HttpRequest req;
  Done done;
  HttpResult result;
  std::string current_url;
  std::vector<std::string> visited;
  bool send_token = false;

  // Per attempt (one hop of one try).
  const CurlApi* curl = nullptr;  // set with `easy`
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::optional<std::uint64_t> content_length;
  std::optional<ContentRange> content_range;
  std::optional<std::uint64_t> retry_after;
  std::optional<std::uint64_t> unsatisfied_complete;
  bool body_started = false;
  long status = 0;
  std::uint64_t delivered = 0;   // body bytes this attempt, kept or not
  std::uint64_t skip = 0;        // bytes to drop before keeping (range ignored)
  std::uint64_t keep_limit = 0;  // bytes to keep at most
  bool stopped = false;          // aborted on purpose: we have what we need
  std::string abort_reason;      // aborted because the reply is wrong

  void reset_attempt() {
    if (easy) curl->easy_cleanup(easy);
    if (headers) curl->slist_free_all(headers);
    easy = nullptr;
    headers = nullptr;
    error_buffer[0] = '\0';
    content_length.reset();
    content_range.reset();
    retry_after.reset();
    unsatisfied_complete.reset();
    body_started = false;
    status = 0;
    delivered = 0;
    skip = 0;
    keep_limit = 0;
    stopped = false;
    abort_reason.clear();
    result.body.clear();
    result.range_ignored = false;
  }
  ~Transfer() {
    if (easy) curl->easy_cleanup(easy);
    if (headers) curl->slist_free_all(headers);
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::size_t bytes = size * n;
    t->result.wire_header_bytes += bytes;
    const std::string_view line(data, bytes);
    if (line.starts_with("HTTP/")) {  // a new response (e.g. after 100 Continue): forget the last
      t->content_length.reset();
      t->content_range.reset();
      t->retry_after.reset();
      return bytes;
    }
    auto field = split_header_line(line);
    if (!field) return bytes;
    const auto [name, value] = *field;
    if (header_name_is(name, "Content-Length"))
      t->content_length = parse_decimal_u64(value);
    else if (header_name_is(name, "Content-Range")) {
      t->content_range = parse_content_range(value);
      // "bytes */N" of a 416 reply: the range starts at or past the end of an N-byte file.
      if (value.starts_with("bytes */")) t->unsatisfied_complete = parse_decimal_u64(value.substr(8));
    } else if (header_name_is(name, "Retry-After"))
      t->retry_after = parse_retry_after_seconds(value);
    else if (header_name_is(name, "X-Repo-Commit") && t->result.repo_commit.empty())
      t->result.repo_commit = std::string(value.substr(0, 128));
    else if (header_name_is(name, "X-Error-Code"))
      t->result.error_code = std::string(value.substr(0, 128));
    else if (header_name_is(name, "X-Error-Message"))
      t->result.error_message = std::string(value.substr(0, 512));
    return bytes;
  }

  // Decides, once the headers are in, what of the body to keep.
  bool begin_body() {
    body_started = true;
    curl->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 206) {
      if (!req.range) {
        abort_reason = "206 Partial Content to a request for the whole file";
        return false;
      }
      if (!content_range) {
        abort_reason = "206 Partial Content without a valid Content-Range header";
        return false;
      }
      if (content_range->first != req.range->first || content_range->last > req.range->second) {
        abort_reason = fmt::format("asked for bytes {}-{}, the reply holds bytes {}-{}", req.range->first,
                                   req.range->second, content_range->first, content_range->last);
        return false;
      }
      keep_limit = content_range->last - content_range->first + 1;
    } else if (status >= 200 && status < 300) {
      if (req.range) {
        // The whole file to a range request: drop what comes before the range and stop after it.
        result.range_ignored = true;
        skip = req.range->first;
        keep_limit = req.range->second - req.range->first + 1;
      } else {
        if (content_length && *content_length > req.max_body) {
          abort_reason =
              fmt::format("the file is {} bytes; more than the {} bytes allowed for it", *content_length, req.max_body);
          return false;
        }
        keep_limit = req.max_body + 1;  // one more, to notice a body over the cap
      }
    } else {
      keep_limit = 0;  // error and redirect bodies are counted, not kept
      skip = kKeptErrorBody;
    }
    return true;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::size_t bytes = size * n;
    if (!t->body_started && !t->begin_body()) return 0;
    t->result.wire_body_bytes += bytes;
    std::uint64_t offset = t->delivered;
    t->delivered += bytes;
    std::string_view chunk(data, bytes);
    if (offset < t->skip) {
      const std::uint64_t drop = std::min<std::uint64_t>(t->skip - offset, chunk.size());
      chunk.remove_prefix(drop);
    }
    const std::uint64_t room = t->keep_limit - std::min<std::uint64_t>(t->keep_limit, t->result.body.size());
    t->result.body.append(chunk.substr(0, std::min<std::uint64_t>(room, chunk.size())));
    if (t->status >= 200 && t->status < 300 && t->result.body.size() >= t->keep_limit) {
      if (!t->req.range && t->result.body.size() > t->req.max_body) {
        t->abort_reason = fmt::format("the body exceeds the {} bytes allowed for this file", t->req.max_body);
        return 0;
      }
      if (t->req.range && t->result.range_ignored) {
        t->stopped = true;  // everything asked for is here; the rest of the file is not wanted
        return 0;
      }
    }
    return bytes;
  }
};

HttpClient::HttpClient(const HubEnvironment& env) : env_(env), api_(curl_api(&load_error_)) {
  if (!api_) return;  // run() fails every request with load_error_
  multi_ = api_->multi_init();
  api_->multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(env.max_connections));
}

HttpClient::~HttpClient() {
  if (!api_) return;
  for (auto& t : active_) api_->multi_remove_handle(multi_, t->easy);
  active_.clear();
  api_->multi_cleanup(multi_);
}

void HttpClient::add(HttpRequest request, Done done) {
  auto t = std::make_unique<Transfer>();
  t->req = std::move(request);
  t->done = std::move(done);
  t->current_url = t->req.url;
  t->result.url = t->req.url;
  queued_.push_back(std::move(t));
}

void HttpClient::start(std::unique_ptr<Transfer> t) {
  t->reset_attempt();
  ++t->result.attempts;
  t->visited.push_back(t->current_url);
  CURL* e = api_->easy_init();
  t->curl = api_;
  t->easy = e;
  api_->easy_setopt(e, CURLOPT_URL, t->current_url.c_str());
  api_->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  api_->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // by hand: the token must not follow
  api_->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  api_->easy_setopt(e, CURLOPT_CONNECTTIMEOUT, env_.timeout_seconds);
  api_->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api_->easy_setopt(e, CURLOPT_LOW_SPEED_TIME, env_.timeout_seconds);
  api_->easy_setopt(e, CURLOPT_USERAGENT, "shardcheck/" SHARDCHECK_VERSION);
  api_->easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_buffer);
  api_->easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  api_->easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  api_->easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  api_->easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  api_->easy_setopt(e, CURLOPT_PRIVATE, t.get());
  std::string range;
  if (t->req.range) {
    range = fmt::format("{}-{}", t->req.range->first, t->req.range->second);
    api_->easy_setopt(e, CURLOPT_RANGE, range.c_str());  // copied by libcurl
  }
  // The token goes to the endpoint's own origin only: the Hub redirects file downloads to a CDN
  // on another host, which must never see it (huggingface_hub drops it the same way).
  t->send_token = env_.token && origin_of(*api_, t->current_url) == origin_of(*api_, env_.endpoint);
  if (t->send_token) {
    const std::string auth = "Authorization: Bearer " + *env_.token;
    t->headers = api_->slist_append(t->headers, auth.c_str());
    api_->easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  }
  api_->multi_add_handle(multi_, e);
  active_.push_back(std::move(t));
}

void HttpClient::finish(Transfer* raw, int curl_code) {
  auto it = std::find_if(active_.begin(), active_.end(), [raw](const auto& p) { return p.get() == raw; });
  std::unique_ptr<Transfer> t = std::move(*it);
  active_.erase(it);
  api_->multi_remove_handle(multi_, t->easy);
  HttpResult& r = t->result;
  long status = 0;
  api_->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  r.status = status;
  r.final_url = t->current_url;
  const auto code = static_cast<CURLcode>(curl_code);
  auto fail = [&](HttpFailure f, std::string detail) {
    r.failure = f;
    r.detail = std::move(detail);
    r.body.clear();
    wire_bytes_ += r.wire_body_bytes + r.wire_header_bytes;
    t->done(std::move(r));
  };

  if (!t->abort_reason.empty()) return fail(HttpFailure::bad_response, t->abort_reason);
  if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && t->stopped)) {
    const std::string why = t->error_buffer[0] ? t->error_buffer : api_->easy_strerror(code);
    switch (code) {
      case CURLE_OPERATION_TIMEDOUT:
        return fail(HttpFailure::timeout,
                    fmt::format("no data for {} s (HF_HUB_DOWNLOAD_TIMEOUT): {}", env_.timeout_seconds, why));
      case CURLE_PARTIAL_FILE:
        return fail(HttpFailure::bad_response,
                    t->content_length
                        ? fmt::format("the body ended after {} of the {} bytes announced by Content-Length",
                                      t->delivered, *t->content_length)
                        : fmt::format("the body ended early, after {} bytes: {}", t->delivered, why));
      case CURLE_GOT_NOTHING:
      case CURLE_RECV_ERROR:
      case CURLE_WEIRD_SERVER_REPLY:
        return fail(HttpFailure::bad_response, fmt::format("broken reply after {} body bytes: {}", t->delivered, why));
      default:
        return fail(HttpFailure::unreachable, why);
    }
  }
  if (is_redirect(status)) {
    char* next = nullptr;
    api_->easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &next);
    if (next == nullptr || *next == '\0')
      return fail(HttpFailure::bad_response, fmt::format("{} without a Location header", status));
    const std::string target = next;
    if (std::find(t->visited.begin(), t->visited.end(), target) != t->visited.end())
      return fail(HttpFailure::redirects, fmt::format("redirect loop: {} leads back to {}", t->current_url, target));
    if (static_cast<int>(t->visited.size()) > kMaxRedirects)
      return fail(HttpFailure::redirects, fmt::format("more than {} redirects (last to {})", kMaxRedirects, target));
    t->current_url = target;
    --t->result.attempts;  // a hop is not a retry
    queued_.push_front(std::move(t));
    return;
  }
  if (is_retryable(status)) {
    if (t->result.attempts >= kMaxAttempts)
      return fail(HttpFailure::server_error, fmt::format("HTTP {} on each of {} attempts", status, t->result.attempts));
    const std::uint64_t backoff = std::min<std::uint64_t>(8, 1ull << (t->result.attempts - 1));
    const std::uint64_t wait = t->retry_after ? std::min<std::uint64_t>(*t->retry_after, 60) : backoff;
    t->current_url = t->req.url;  // start over at the Hub: CDN links are signed and expire
    t->visited.clear();
    delayed_.emplace_back(std::chrono::steady_clock::now() + std::chrono::seconds(wait), std::move(t));
    return;
  }
  if (status == 416 && t->req.range && t->unsatisfied_complete && *t->unsatisfied_complete <= t->req.range->first) {
    // Nothing of the file lies in the range (an empty file, asked for its first bytes): the
    // caller learns the length and judges the file, as it would on disk.
    r.total_size = t->unsatisfied_complete;
    r.body.clear();
    wire_bytes_ += r.wire_body_bytes + r.wire_header_bytes;
    t->done(std::move(r));
    return;
  }
  if (status < 200 || status >= 300) return fail(HttpFailure::status, fmt::format("HTTP {}", status));

  if (status == 206) {
    if (!t->content_range) return fail(HttpFailure::bad_response, "206 Partial Content without a valid Content-Range");
    const ContentRange& cr = *t->content_range;
    if (r.body.size() != cr.last - cr.first + 1)
      return fail(HttpFailure::bad_response, fmt::format("Content-Range announced bytes {}-{} but {} bytes arrived",
                                                         cr.first, cr.last, r.body.size()));
    r.total_size = cr.complete;
  } else {
    r.total_size = t->content_length;
    if (!t->body_started) r.total_size = t->content_length.value_or(0);  // an empty body
    if (!t->req.range && t->content_length && *t->content_length != r.body.size())
      return fail(HttpFailure::bad_response,
                  fmt::format("Content-Length is {} but {} bytes arrived", *t->content_length, r.body.size()));
  }
  wire_bytes_ += r.wire_body_bytes + r.wire_header_bytes;
  t->done(std::move(r));
}

void HttpClient::run(const std::function<void()>& tick) {
  if (!api_) {
    // Without libcurl no request can be made: each fails as an unreachable host would, saying why.
    while (!queued_.empty()) {
      std::unique_ptr<Transfer> t = std::move(queued_.front());
      queued_.pop_front();
      t->result.failure = HttpFailure::unreachable;
      t->result.detail = load_error_;
      t->done(std::move(t->result));  // may add() more
    }
    return;
  }
  if (tick) tick();  // at once, then every 100 ms
  auto last_tick = std::chrono::steady_clock::now();
  while (!queued_.empty() || !delayed_.empty() || !active_.empty()) {
    const auto now = std::chrono::steady_clock::now();
    for (auto it = delayed_.begin(); it != delayed_.end();) {
      if (it->first <= now) {
        queued_.push_back(std::move(it->second));
        it = delayed_.erase(it);
      } else {
        ++it;
      }
    }
    while (!queued_.empty() && active_.size() < env_.max_connections) {
      auto t = std::move(queued_.front());
      queued_.pop_front();
      start(std::move(t));
    }
    int running = 0;
    api_->multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = api_->multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      api_->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      finish(t, msg->data.result);  // may add() more
    }
    if (active_.empty() && queued_.empty() && !delayed_.empty()) {
      auto next = delayed_.front().first;
      for (auto& d : delayed_) next = std::min(next, d.first);
      std::this_thread::sleep_until(std::min(next, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    } else if (!active_.empty()) {
      api_->multi_poll(multi_, nullptr, 0, 100, nullptr);
    }
    if (tick && std::chrono::steady_clock::now() - last_tick > std::chrono::milliseconds(100)) {
      tick();
      last_tick = std::chrono::steady_clock::now();
    }
  }
}

HttpResult HttpClient::get(HttpRequest request) {
  HttpResult out;
  add(std::move(request), [&out](HttpResult&& r) { out = std::move(r); });
  run();
  return out;
}

}  // namespace shardcheck::hub
