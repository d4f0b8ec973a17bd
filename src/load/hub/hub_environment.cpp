// The environment variables that say where the Hub and its caches are. Names and defaults are
// huggingface_hub's (src/huggingface_hub/constants.py; token lookup in utils/_auth.py), so a
// machine set up for transformers needs no extra settings:
//   HF_ENDPOINT            default https://huggingface.co (trailing '/' stripped)
//   HF_HOME                default $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
//   HF_HUB_CACHE           default $HF_HOME/hub (legacy HUGGINGFACE_HUB_CACHE)
//   HF_TOKEN               legacy HUGGING_FACE_HUB_TOKEN; else the file HF_TOKEN_PATH, default
//                          $HF_HOME/token; surrounding whitespace stripped, empty = no token
//   HF_HUB_DISABLE_IMPLICIT_TOKEN  a token from the file is not sent
//   HF_HUB_OFFLINE         legacy TRANSFORMERS_OFFLINE; true for 1/ON/YES/TRUE (constants._is_true)
//   HF_HUB_DOWNLOAD_TIMEOUT  seconds, default 10
// shardcheck's own: SHARDCHECK_CACHE (header cache root), SHARDCHECK_HUB_CONNECTIONS (1-64, default 8).

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "shardcheck/hub.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> nonempty(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// constants.py _is_true: value.upper() in {"1", "ON", "YES", "TRUE"}.
bool hf_is_true(const std::optional<std::string>& v) {
  if (!v) return false;
  const std::string u = ascii_upper(*v);
  return u == "1" || u == "ON" || u == "YES" || u == "TRUE";
}

std::string strip(std::string s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.back())) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return s.substr(i);
}

// expanduser for a leading "~".
fs::path expand_home(const std::string& p, const GetEnv& getenv) {
  if (p == "~" || p.starts_with("~/")) {
    const char* home = getenv("HOME");
    return fs::path(home ? home : "/") / p.substr(p.size() > 1 ? 2 : 1);
  }
  return fs::path(p);
}

long parse_positive(const std::optional<std::string>& v, long fallback, long max) {
  if (!v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0' || n <= 0) return fallback;
  return n > max ? max : n;
}

}  // namespace

HubEnvironment hub_environment(const GetEnv& getenv) {
  HubEnvironment env;
  if (auto e = nonempty(getenv, "HF_ENDPOINT")) {
    std::string endpoint = *e;
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    env.endpoint = endpoint;
  }
  const std::string xdg = nonempty(getenv, "XDG_CACHE_HOME").value_or("~/.cache");
  const fs::path hf_home = expand_home(nonempty(getenv, "HF_HOME").value_or(xdg + "/huggingface"), getenv);
  if (auto c = nonempty(getenv, "HF_HUB_CACHE"))
    env.hf_cache = expand_home(*c, getenv);
  else if (auto legacy = nonempty(getenv, "HUGGINGFACE_HUB_CACHE"))
    env.hf_cache = expand_home(*legacy, getenv);
  else
    env.hf_cache = hf_home / "hub";
  if (auto c = nonempty(getenv, "SHARDCHECK_CACHE"))
    env.header_cache = expand_home(*c, getenv);
  else
    env.header_cache = expand_home(xdg, getenv) / "shardcheck";

  if (auto t = nonempty(getenv, "HF_TOKEN"); t && !strip(*t).empty()) {
    env.token = strip(*t);
    env.token_source = "HF_TOKEN";
  } else if (auto legacy = nonempty(getenv, "HUGGING_FACE_HUB_TOKEN"); legacy && !strip(*legacy).empty()) {
    env.token = strip(*legacy);
    env.token_source = "HUGGING_FACE_HUB_TOKEN";
  } else if (!hf_is_true(nonempty(getenv, "HF_HUB_DISABLE_IMPLICIT_TOKEN"))) {
    const fs::path token_path =
        nonempty(getenv, "HF_TOKEN_PATH") ? expand_home(*nonempty(getenv, "HF_TOKEN_PATH"), getenv) : hf_home / "token";
    std::ifstream in(token_path);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      if (std::string token = strip(text.str()); !token.empty()) {
        env.token = std::move(token);
        env.token_source = token_path.string();
      }
    }
  }
  auto offline = nonempty(getenv, "HF_HUB_OFFLINE");
  if (!offline) offline = nonempty(getenv, "TRANSFORMERS_OFFLINE");
  env.offline = hf_is_true(offline);
  env.timeout_seconds = parse_positive(nonempty(getenv, "HF_HUB_DOWNLOAD_TIMEOUT"), 10, 3600);
  env.max_connections = static_cast<unsigned>(parse_positive(nonempty(getenv, "SHARDCHECK_HUB_CONNECTIONS"), 8, 64));
  // A progress line only where someone watches it: stderr is a terminal and this is not CI
  // (GitHub Actions, GitLab and most others set CI), and huggingface_hub's switch is not set.
  env.progress =
      isatty(STDERR_FILENO) && !nonempty(getenv, "CI") && !hf_is_true(nonempty(getenv, "HF_HUB_DISABLE_PROGRESS_BARS"));
  return env;
}

HubEnvironment hub_environment_from_process() {
  return hub_environment([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace shardcheck
