// Event-built YAML tree for the architecture registry (registry_yaml.hpp says why not YAML::Node).
// The handler mirrors yaml-cpp 0.7's NodeBuilder (src/nodebuilder.cpp): the same events become the
// same node kinds with the same marks; an alias shares the anchored node, as NodeBuilder does.
#include "shardcheck/finding_codes.hpp"
#include "registry_yaml.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <fstream>
#include <map>
#include <sstream>

namespace shardcheck::registry_yaml {

Node* Node::get(std::string_view key) const {
  if (kind != Kind::map) return nullptr;
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::scalar && k->text == key) return v;
  return nullptr;
}

Node* Arena::make(Node::Kind kind, const Node* position_from) {
  Node& n = nodes_.emplace_back();
  n.kind = kind;
  if (position_from) {
    n.line = position_from->line;
    n.column = position_from->column;
    n.file = position_from->file;
  }
  return &n;
}

namespace {

class Builder : public YAML::EventHandler {
 public:
  Builder(const std::string* file, Arena& arena) : file_(file), arena_(arena) {}
  Node* root = nullptr;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(make(Node::Kind::null, mark), anchor); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    // yaml-cpp's parser rejects an alias to an unknown anchor; one still open (recursive) is an
    // empty placeholder, as in NodeBuilder, where it is the same node.
    add(it != anchors_.end() ? it->second : make(Node::Kind::null, YAML::Mark::null_mark()), YAML::NullAnchor);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Node* n = make(Node::Kind::scalar, mark);
    n->text = value;
    n->quoted = tag == "!";
    add(n, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(make(Node::Kind::sequence, mark), anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(make(Node::Kind::map, mark), anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    Node* node;
    Node* pending_key;
  };

  Node* make(Node::Kind kind, const YAML::Mark& mark) {
    Node* n = arena_.make(kind);
    n->line = mark.line;
    n->column = mark.column;
    n->file = file_;
    return n;
  }
  void open(Node* n, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = n;
    add_to_parent(n);
    stack_.push_back({n, nullptr});
  }
  void close() { stack_.pop_back(); }
  void add(Node* n, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = n;
    add_to_parent(n);
  }
  void add_to_parent(Node* n) {
    if (stack_.empty()) {
      if (!root) root = n;
      return;
    }
    Open& p = stack_.back();
    if (p.node->kind == Node::Kind::sequence) {
      p.node->items.push_back(n);
    } else if (!p.pending_key) {
      p.pending_key = n;
    } else {
      p.node->entries.emplace_back(p.pending_key, n);
      p.pending_key = nullptr;
    }
  }

  const std::string* file_;
  Arena& arena_;
  std::vector<Open> stack_;
  std::map<YAML::anchor_t, Node*> anchors_;
};

}  // namespace

Diagnostic rules_error(const std::string& path, std::string message, int line, int column) {
  Diagnostic d = finding("REG006", in_file(path), std::move(message));
  if (line >= 0) {
    d.location.line = line + 1;
    d.location.column = column + 1;
  }
  return d;
}

Node* parse_file(const std::string* path, Arena& arena) {
  std::ifstream in(*path, std::ios::binary);
  if (!in) throw SyntaxError{-1, -1, "cannot open the file"};
  std::stringstream read;
  read << in.rdbuf();
  const std::string text = std::move(read).str();
  Builder builder(path, arena);
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    parser.HandleNextDocument(builder);
  } catch (const YAML::Exception& e) {
    throw SyntaxError{e.mark.line, e.mark.column, e.msg};
  }
  if (!builder.root) {  // an empty file: YAML::LoadFile gives a null node without a mark
    builder.root = arena.make(Node::Kind::null);
    builder.root->file = path;
  }
  return builder.root;
}

}  // namespace shardcheck::registry_yaml
