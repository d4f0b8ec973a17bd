#pragma once
// libcurl's entry points, loaded with dlopen the first time a Hub model id needs the network.
//
// Why not link it: libcurl brings ~30 shared libraries (TLS, HTTP/2, SSH, LDAP, Kerberos, IDN...)
// that the dynamic loader maps, relocates and initialises in every shardcheck process, networked or
// not. Measured on the 2-core CI machine: `shardcheck --version` went from 181 to 620 page faults
// and from 6.6 to 24 ms of CPU when libcurl was linked, which alone broke the per-process budget of
// `lint` (< 5 ms). Only `org/name` model ids use HTTP, so only they pay for it now.

#include <curl/curl.h>

#include <string>

namespace shardcheck::hub {

// One pointer per libcurl function the Hub client calls, typed from <curl/curl.h> itself so a
// mismatch cannot compile. Named after the function without its `curl_` prefix.
struct CurlApi {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_setopt) multi_setopt;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_url) url;
  decltype(&::curl_url_set) url_set;
  decltype(&::curl_url_get) url_get;
  decltype(&::curl_url_cleanup) url_cleanup;
  decltype(&::curl_free) free;
};

// Loads libcurl once (thread-safe) and returns its functions, curl_global_init already called; or
// nullptr when the library or one of its functions is missing, with the reason in `why`.
const CurlApi* curl_api(std::string* why = nullptr);

}  // namespace shardcheck::hub
