// Loads libcurl at run time; see curl_api.hpp for why it is not linked.
#include "load/hub/curl_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace shardcheck::hub {
namespace {

// The soname of libcurl 7.16+ and 8.x (Debian's libcurl4 package), the ABI <curl/curl.h> describes.
constexpr const char* kLibcurl = "libcurl.so.4";

struct Loaded {
  CurlApi api{};
  bool ok = false;
  std::string error;
};

// Fills `slot` with the address of `name`; false (and the reason in `error`) when it is missing.
template <class F>
bool resolve(void* lib, const char* name, F& slot, std::string& error) {
  dlerror();
  void* sym = dlsym(lib, name);
  if (sym == nullptr) {
    const char* why = dlerror();
    error = fmt::format("{} has no {}: {}", kLibcurl, name, why ? why : "null symbol");
    return false;
  }
  slot = reinterpret_cast<F>(sym);
  return true;
}

Loaded load() {
  Loaded out;
  // Never closed: curl's handles and its global state live until the process exits.
  void* lib = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    out.error = fmt::format("cannot load {} (install the libcurl4 package): {}", kLibcurl, why ? why : "unknown error");
    return out;
  }
  CurlApi& a = out.api;
  std::string& e = out.error;
  out.ok =
      resolve(lib, "curl_global_init", a.global_init, e) && resolve(lib, "curl_easy_init", a.easy_init, e) &&
      resolve(lib, "curl_easy_setopt", a.easy_setopt, e) && resolve(lib, "curl_easy_getinfo", a.easy_getinfo, e) &&
      resolve(lib, "curl_easy_cleanup", a.easy_cleanup, e) && resolve(lib, "curl_easy_strerror", a.easy_strerror, e) &&
      resolve(lib, "curl_multi_init", a.multi_init, e) && resolve(lib, "curl_multi_setopt", a.multi_setopt, e) &&
      resolve(lib, "curl_multi_add_handle", a.multi_add_handle, e) &&
      resolve(lib, "curl_multi_remove_handle", a.multi_remove_handle, e) &&
      resolve(lib, "curl_multi_perform", a.multi_perform, e) && resolve(lib, "curl_multi_poll", a.multi_poll, e) &&
      resolve(lib, "curl_multi_info_read", a.multi_info_read, e) &&
      resolve(lib, "curl_multi_cleanup", a.multi_cleanup, e) && resolve(lib, "curl_slist_append", a.slist_append, e) &&
      resolve(lib, "curl_slist_free_all", a.slist_free_all, e) && resolve(lib, "curl_url", a.url, e) &&
      resolve(lib, "curl_url_set", a.url_set, e) && resolve(lib, "curl_url_get", a.url_get, e) &&
      resolve(lib, "curl_url_cleanup", a.url_cleanup, e) && resolve(lib, "curl_free", a.free, e);
  if (out.ok && a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    out.ok = false;
    out.error = fmt::format("{}: curl_global_init failed", kLibcurl);
  }
  return out;
}

}  // namespace

const CurlApi* curl_api(std::string* why) {
  static const Loaded loaded = load();  // C++11 magic statics: loaded once, thread-safe
  if (!loaded.ok) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace shardcheck::hub
