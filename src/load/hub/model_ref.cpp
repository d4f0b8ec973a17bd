// Parsing `org/name[@revision]` model references.
//
// The repo-id rules are huggingface_hub's (src/huggingface_hub/utils/_validators.py,
// validate_repo_id / REPO_ID_REGEX): at most one '/', each part made of [A-Za-z0-9_.-], starting
// and ending with a letter, digit or '_' (the regex's \b), the name at most 96 characters, no
// "--" or ".." anywhere, no ".git" suffix. Python's \w also admits non-ASCII letters; the Hub
// itself only creates ASCII names, so only ASCII is accepted here.

#include <algorithm>

#include "shardcheck/hub.hpp"

namespace shardcheck {
namespace {

bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

bool valid_part(std::string_view part, std::size_t max_len) {
  if (part.empty() || part.size() > max_len) return false;
  if (!is_word(part.front()) || !is_word(part.back())) return false;
  return std::all_of(part.begin(), part.end(), [](char c) { return is_word(c) || c == '-' || c == '.'; });
}

// Branch and tag names are git ref names (the Hub also serves "refs/pr/N"), so git's
// check-ref-format rules apply: no control bytes, space, ~ ^ : ? * [ or backslash; no "..", "@{",
// empty component, component starting with '.', or trailing ".lock". They also keep the name safe
// as a cache path (refs/<revision>).
bool valid_revision(std::string_view rev) {
  if (rev.empty() || rev.size() > 256 || rev == "@") return false;
  for (char c : rev) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
    if (std::string_view("~^:?*[\\").find(c) != std::string_view::npos) return false;
  }
  if (rev.find("..") != std::string_view::npos || rev.find("@{") != std::string_view::npos || rev.ends_with(".lock") ||
      rev.back() == '.')
    return false;
  std::size_t start = 0;
  while (start <= rev.size()) {
    std::size_t end = rev.find('/', start);
    if (end == std::string_view::npos) end = rev.size();
    const std::string_view component = rev.substr(start, end - start);
    if (component.empty() || component.front() == '.') return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::optional<ModelRef> parse_model_ref(std::string_view text) {
  ModelRef ref;
  if (const auto at = text.find('@'); at != std::string_view::npos) {
    const std::string_view rev = text.substr(at + 1);
    if (!valid_revision(rev)) return std::nullopt;
    ref.revision = std::string(rev);
    ref.revision_given = true;
    text = text.substr(0, at);
  }
  if (std::count(text.begin(), text.end(), '/') > 1) return std::nullopt;
  if (text.find("--") != std::string_view::npos || text.find("..") != std::string_view::npos || text.ends_with(".git"))
    return std::nullopt;
  const auto slash = text.find('/');
  if (slash != std::string_view::npos && !valid_part(text.substr(0, slash), 96)) return std::nullopt;
  const std::string_view name = slash == std::string_view::npos ? text : text.substr(slash + 1);
  if (!valid_part(name, 96)) return std::nullopt;
  ref.repo_id = std::string(text);
  return ref;
}

// huggingface_hub file_download.py repo_folder_name: f"{repo_type}s--{repo_id}" with '/' -> "--".
std::string repo_folder_name(const ModelRef& ref) {
  std::string out = "models--";
  for (char c : ref.repo_id) {
    if (c == '/')
      out += "--";
    else
      out += c;
  }
  return out;
}

}  // namespace shardcheck
