// Tests for the Hub model source's pure parts: model ids (huggingface_hub validate_repo_id rules),
// the environment (huggingface_hub constants.py defaults), HTTP header text, and the cache layout
// (file_download.py). The transfers themselves are tested against nginx in tests/hub/.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "load/hub/hub_detail.hpp"
#include "load/hub/http_text.hpp"
#include "shardcheck/hub.hpp"

using namespace shardcheck;
using namespace shardcheck::hub;
namespace fs = std::filesystem;

namespace {

HubEnvironment env_of(const std::map<std::string, std::string>& vars) {
  return hub_environment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("shardcheck-test-hub-" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("hub: model ids as huggingface_hub validates them") {
  auto ref = parse_model_ref("meta-llama/Meta-Llama-3-8B");
  REQUIRE(ref);
  CHECK(ref->repo_id == "meta-llama/Meta-Llama-3-8B");
  CHECK(ref->revision == "main");
  CHECK_FALSE(ref->revision_given);
  CHECK(repo_folder_name(*ref) == "models--meta-llama--Meta-Llama-3-8B");

  ref = parse_model_ref("deepseek-ai/DeepSeek-V3@refs/pr/12");
  REQUIRE(ref);
  CHECK(ref->repo_id == "deepseek-ai/DeepSeek-V3");
  CHECK(ref->revision == "refs/pr/12");
  CHECK(ref->revision_given);

  CHECK(parse_model_ref("gpt2"));  // a canonical model without an owner
  CHECK(parse_model_ref("Qwen/Qwen2.5-0.5B@0123456789abcdef0123456789abcdef01234567"));
  CHECK(parse_model_ref("a_b/c.d-e"));
  CHECK(parse_model_ref("org/" + std::string(96, 'x')));

  for (const char* bad : {"",
                          "/",
                          "org/",
                          "/name",
                          "a/b/c",
                          "org--x/name",
                          "org/na..me",
                          "-org/name",
                          "org/name-",
                          ".org/name",
                          "org/name.git",
                          "org/na me",
                          "org/naé",
                          "org/name@",
                          "org/name@a b",
                          "org/name@../x",
                          "org/name@a//b",
                          "org/name@/a",
                          "org/name@a\\b",
                          "org/name@.hidden",
                          "org/name@a..b",
                          "org/name@x.lock",
                          "org/name@a@{1}",
                          "org/name@a:b",
                          "org/name@a/"})
    CHECK_MESSAGE(!parse_model_ref(bad), bad);
  CHECK_FALSE(parse_model_ref("org/" + std::string(97, 'x')));
}

TEST_CASE("hub: environment defaults and overrides follow huggingface_hub constants.py") {
  const HubEnvironment d = env_of({{"HOME", "/home/u"}});
  CHECK(d.endpoint == "https://huggingface.co");
  CHECK(d.hf_cache == fs::path("/home/u/.cache/huggingface/hub"));
  CHECK(d.header_cache == fs::path("/home/u/.cache/shardcheck"));
  CHECK_FALSE(d.token);
  CHECK_FALSE(d.offline);
  CHECK(d.timeout_seconds == 10);
  CHECK(d.max_connections == 8);

  const HubEnvironment x =
      env_of({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/xdg"}, {"HF_ENDPOINT", "http://mirror:8080//"}});
  CHECK(x.endpoint == "http://mirror:8080");
  CHECK(x.hf_cache == fs::path("/xdg/huggingface/hub"));
  CHECK(x.header_cache == fs::path("/xdg/shardcheck"));

  CHECK(env_of({{"HF_HOME", "/hf"}}).hf_cache == fs::path("/hf/hub"));
  CHECK(env_of({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/c"}}).hf_cache == fs::path("/c"));
  CHECK(env_of({{"HUGGINGFACE_HUB_CACHE", "/legacy"}}).hf_cache == fs::path("/legacy"));
  CHECK(env_of({{"SHARDCHECK_CACHE", "/sc"}}).header_cache == fs::path("/sc"));

  // constants._is_true: 1/ON/YES/TRUE in any case; TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is unset.
  for (const char* on : {"1", "on", "Yes", "TRUE"}) CHECK(env_of({{"HF_HUB_OFFLINE", on}}).offline);
  for (const char* off : {"0", "false", "y", ""}) CHECK_FALSE(env_of({{"HF_HUB_OFFLINE", off}}).offline);
  CHECK(env_of({{"TRANSFORMERS_OFFLINE", "1"}}).offline);

  CHECK(env_of({{"HF_HUB_DOWNLOAD_TIMEOUT", "3"}}).timeout_seconds == 3);
  CHECK(env_of({{"HF_HUB_DOWNLOAD_TIMEOUT", "x"}}).timeout_seconds == 10);
  CHECK(env_of({{"SHARDCHECK_HUB_CONNECTIONS", "1000"}}).max_connections == 64);
  CHECK_FALSE(env_of({{"CI", "true"}}).progress);
}

TEST_CASE("hub: token from HF_TOKEN, else the token file, stripped; never from an empty value") {
  const fs::path dir = scratch("token");
  write(dir / "hf" / "token", "  hf_fromfile\n");
  write(dir / "other", "hf_other\n");
  write(dir / "blank", " \n");

  auto e = env_of({{"HF_HOME", (dir / "hf").string()}});
  CHECK(e.token == "hf_fromfile");
  CHECK(e.token_source == (dir / "hf" / "token").string());
  CHECK(env_of({{"HF_HOME", (dir / "hf").string()}, {"HF_TOKEN", " hf_env "}}).token == "hf_env");
  CHECK(env_of({{"HF_HOME", (dir / "hf").string()}, {"HF_TOKEN_PATH", (dir / "other").string()}}).token == "hf_other");
  CHECK(env_of({{"HF_HOME", (dir / "hf").string()}, {"HUGGING_FACE_HUB_TOKEN", "hf_legacy"}}).token == "hf_legacy");
  CHECK_FALSE(env_of({{"HF_HOME", (dir / "hf").string()}, {"HF_TOKEN_PATH", (dir / "blank").string()}}).token);
  CHECK_FALSE(env_of({{"HF_HOME", (dir / "hf").string()}, {"HF_HUB_DISABLE_IMPLICIT_TOKEN", "1"}}).token);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("hub: HTTP header text") {
  auto cr = parse_content_range("bytes 0-99999/4220953136");
  REQUIRE(cr);
  CHECK(cr->first == 0);
  CHECK(cr->last == 99999);
  CHECK(cr->complete == 4220953136ull);
  cr = parse_content_range(" bytes 8-15/* ");
  REQUIRE(cr);
  CHECK_FALSE(cr->complete);
  for (const char* bad : {"", "bytes", "bytes 5-4/10", "bytes 0-9/9", "bytes 0-9", "items 0-9/10", "bytes -9/10",
                          "bytes 0-18446744073709551616/1", "bytes 0x1-2/3", "bytes 1-2/3/4"})
    CHECK_MESSAGE(!parse_content_range(bad), bad);

  CHECK(parse_decimal_u64("18446744073709551615") == 18446744073709551615ull);
  CHECK_FALSE(parse_decimal_u64("18446744073709551616"));
  CHECK_FALSE(parse_decimal_u64("-1"));
  CHECK_FALSE(parse_decimal_u64(""));

  auto field = split_header_line("X-Repo-Commit:  abc \r\n");
  REQUIRE(field);
  CHECK(field->first == "X-Repo-Commit");
  CHECK(field->second == "abc");
  CHECK_FALSE(split_header_line("HTTP/1.1 200 OK\r\n"));
  CHECK_FALSE(split_header_line("\r\n"));
  CHECK_FALSE(split_header_line("Bad Name: x"));
  CHECK(header_name_is("content-RANGE", "Content-Range"));
  CHECK_FALSE(header_name_is("Content-Rang", "Content-Range"));

  CHECK(parse_retry_after_seconds(" 7 ") == 7u);
  CHECK_FALSE(parse_retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"));

  // huggingface_hub hf_hub_url: quote(revision, safe="") and quote(filename) keeping '/'.
  CHECK(url_quote("refs/pr/1", false) == "refs%2Fpr%2F1");
  CHECK(url_quote("sub dir/model-00001.safetensors", true) == "sub%20dir/model-00001.safetensors");
  CHECK(url_quote("a~b_c.d-e", false) == "a~b_c.d-e");
}

TEST_CASE("hub: snapshots in a cache laid out as huggingface_hub does") {
  const fs::path root = scratch("cache") / "models--org--name";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  write(root / "refs" / "main", commit);
  write(root / "refs" / "refs" / "pr" / "1", commit + "\n");
  write(root / "snapshots" / commit / "config.json", "{}");
  write(root / "snapshots" / commit / "model.safetensors.index.json",
        R"({"metadata":{},"weight_map":{"a":"m-1.safetensors","bb":"m-2.safetensors","c":"m-1.safetensors",
            "d":"../escape.safetensors"}})");
  write(root / "snapshots" / commit / "m-1.safetensors", "x");

  auto snap = find_snapshot(root, "main");
  REQUIRE(snap);
  CHECK(snap->commit == commit);
  CHECK(snap->dir == root / "snapshots" / commit);
  CHECK(find_snapshot(root, "refs/pr/1"));
  CHECK(find_snapshot(root, commit));  // a commit hash needs no ref file
  CHECK_FALSE(find_snapshot(root, "dev"));
  CHECK_FALSE(find_snapshot(root, "89abcdef0123456789abcdef0123456701234567"));
  write(root / "refs" / "evil", "../../../etc");
  CHECK_FALSE(find_snapshot(root, "evil"));

  const SnapshotContents c = inspect_snapshot(snap->dir);
  CHECK(c.config);
  CHECK(c.index);
  CHECK_FALSE(c.single_file);
  CHECK(c.listed_shards == 3);
  REQUIRE(c.missing_shards.size() == 1);  // "../escape" is never looked for: the loader reports IX008
  CHECK(c.missing_shards[0] == "m-2.safetensors");

  auto shards = index_shards(R"({"weight_map":{"a.w":"s1","bb.w":"s2","c.w":"s1","d":7}})");
  REQUIRE(shards);
  REQUIRE(shards->size() == 2);
  CHECK((*shards)[0].name == "s1");
  CHECK((*shards)[0].tensors == 2);
  CHECK((*shards)[0].name_bytes == 6);
  CHECK((*shards)[1].name_bytes == 4);
  CHECK_FALSE(index_shards("not json"));
  CHECK_FALSE(index_shards(R"({"weight_map":[]})"));
  CHECK(is_commit_hash(commit));
  CHECK_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  fs::remove_all(root.parent_path().parent_path());
}
