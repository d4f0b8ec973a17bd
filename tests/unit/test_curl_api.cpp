// Tests for hub::curl_api (src/load/hub/curl_api.cpp): libcurl loaded at run time instead of linked.
// setup.sh installs libcurl4, so loading must succeed here; the transfers themselves are tested
// against nginx in tests/hub/.

#include <doctest/doctest.h>

#include <string>

#include "load/hub/curl_api.hpp"

using shardcheck::hub::curl_api;
using shardcheck::hub::CurlApi;

TEST_CASE("curl api: libcurl.so.4 loads once and its functions work") {
  std::string why;
  const CurlApi* api = curl_api(&why);
  REQUIRE_MESSAGE(api != nullptr, why);
  CHECK(why.empty());
  CHECK(curl_api() == api);  // loaded once, the same table afterwards

  // A round trip through three of the loaded functions: the URL parser the client uses for origins.
  CURLU* u = api->url();
  REQUIRE(u != nullptr);
  REQUIRE(api->url_set(u, CURLUPART_URL, "https://huggingface.co/api/models/org/name", 0) == CURLUE_OK);
  char* host = nullptr;
  REQUIRE(api->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK);
  CHECK(std::string(host) == "huggingface.co");
  char* port = nullptr;
  REQUIRE(api->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK);
  CHECK(std::string(port) == "443");
  api->free(host);
  api->free(port);
  api->url_cleanup(u);

  CURL* easy = api->easy_init();
  REQUIRE(easy != nullptr);
  CHECK(std::string(api->easy_strerror(CURLE_OK)) == "No error");
  api->easy_cleanup(easy);
}
