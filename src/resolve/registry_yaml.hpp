#pragma once
// The YAML tree the architecture registry (rules/models/*.yaml) is read from: built from yaml-cpp's
// event stream into an arena instead of YAML::Node. The registry is read in every process, and
// YAML::Node (a shared_ptr graph, a linear key search that converts every key node to a string on
// each lookup, and YAML::Clone for every `extends` merge) was the largest cost of `inspect` on a
// sparse checkpoint after the checkpoint itself.
//
// Node kinds follow yaml-cpp's node API exactly (the events are what its NodeBuilder consumes): a
// plain `~`/`null`/empty value is null, quoted and block scalars carry the "!" tag (`quoted`).
// Every node keeps the file and the 0-based line/column of its start mark, also after `extends`
// merging and `{P}` substitution, so malformed rules are reported where they are written.
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck::registry_yaml {

struct Node {
  enum class Kind : std::uint8_t { null, scalar, sequence, map };
  Kind kind = Kind::null;
  bool quoted = false;  // yaml-cpp tag "!": a quoted or block scalar stays a string
  int line = -1;        // 0-based start mark; -1 when unknown
  int column = -1;
  const std::string* file = nullptr;             // the rules file the node was written in
  std::string text;                              // scalar text
  std::vector<Node*> items;                      // sequence
  std::vector<std::pair<Node*, Node*>> entries;  // map, in file order (duplicates as written)

  bool is_null() const { return kind == Kind::null; }
  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_sequence() const { return kind == Kind::sequence; }
  bool is_map() const { return kind == Kind::map; }
  // The value of the first entry whose key is the scalar `key` (YAML::Node::operator[] on a const
  // node: a null key never matches), or nullptr (also for anything but a map).
  Node* get(std::string_view key) const;
};

// Owns every node of one registry load; addresses are stable.
class Arena {
 public:
  Node* make(Node::Kind kind, const Node* position_from = nullptr);
  Node* copy(const Node& n) { return &nodes_.emplace_back(n); }

 private:
  std::deque<Node> nodes_;
};

// A YAML syntax error (yaml-cpp's message and 0-based mark), or a file that cannot be read.
struct SyntaxError {
  int line = -1;
  int column = -1;
  std::string message;
};

// Parses the first document of the file at `*path` (the string must outlive the arena's use);
// an empty file is a null node. Throws SyntaxError.
Node* parse_file(const std::string* path, Arena& arena);

// REG006: a rules file shardcheck cannot use, at the 0-based mark (line, column) when known.
Diagnostic rules_error(const std::string& path, std::string message, int line = -1, int column = -1);

}  // namespace shardcheck::registry_yaml
