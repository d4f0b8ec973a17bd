// Loads rules/models/*.yaml into ArchSpec values. The file format is documented in
// rules/models/README.md; this file only turns YAML into typed specs and reports malformed data
// with file:line:col (ExitCode::bad_rules).
#include "shardcheck/registry.hpp"
#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <regex>
#include <set>
#include <tuple>

#include "registry_yaml.hpp"

namespace shardcheck {
namespace fs = std::filesystem;

Version TransformersVersions::newest() { return Version{5, 16, 0}; }

namespace {

using registry_yaml::Arena;
using registry_yaml::Node;

// A problem found while reading the registry; turned into a Diagnostic at the top level. `node`
// gives the position (and the file, which for an inherited key is the `extends` parent's).
struct RulesError {
  std::string file;
  int line = -1;  // 0-based
  int column = -1;
  std::string message;
};

[[noreturn]] void fail(const std::string& file, const Node* node, std::string message) {
  if (!node) throw RulesError{file, -1, -1, std::move(message)};
  throw RulesError{node->file ? *node->file : file, node->line, node->column, std::move(message)};
}

const char* kind_name(const Node& n) {
  switch (n.kind) {
    case Node::Kind::null:
      return "nothing";
    case Node::Kind::scalar:
      return "a single value";
    case Node::Kind::sequence:
      return "a list";
    case Node::Kind::map:
      return "a map";
  }
  return "?";
}

// A map key as text. yaml-cpp's as<std::string>() spelling: a null key reads "null".
std::string key_text(const std::string& file, const Node& key) {
  if (key.is_null()) return "null";
  if (!key.is_scalar()) fail(file, &key, fmt::format("expected a name as the key, found {}", kind_name(key)));
  return key.text;
}

// yaml-cpp 0.7 convert<bool>::decode (src/convert.cpp): y/yes/true/on and n/no/false/off in
// lower, UPPER or Capitalised spelling.
std::optional<bool> yaml_cpp_bool(const Node& n) {
  if (!n.is_scalar()) return std::nullopt;
  const std::string& s = n.text;
  auto all = [](std::string_view v, int (*pred)(int)) {
    return std::all_of(v.begin(), v.end(), [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; });
  };
  const bool flexible =
      s.empty() || all(s, ::islower) ||
      (std::isupper(static_cast<unsigned char>(s[0])) &&
       (all(std::string_view(s).substr(1), ::islower) || all(std::string_view(s).substr(1), ::isupper)));
  if (!flexible) return std::nullopt;
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "y" || lower == "yes" || lower == "true" || lower == "on") return true;
  if (lower == "n" || lower == "no" || lower == "false" || lower == "off") return false;
  return std::nullopt;
}

bool bool_value(const std::string& file, const Node& n, const char* what) {
  auto b = yaml_cpp_bool(n);
  if (!b)
    fail(file, &n,
         fmt::format("expected true or false for {}, found {}", what,
                     n.is_scalar() ? fmt::format("'{}'", n.text) : kind_name(n)));
  return *b;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

// ---------------------------------------------------------------- raw files, extends, vars

struct RawFile {
  std::string path;
  Node* root = nullptr;
};

// Sets `key` in a map built here: an existing entry keeps its place and takes the new value (as
// YAML::Node's `map[key] = value` does), a new key goes last.
void assign(Arena& arena, Node& map, const std::string& key, const Node& key_position, Node* value) {
  for (auto& [k, v] : map.entries)
    if (k->text == key) {
      v = value;
      return;
    }
  Node* k = arena.make(Node::Kind::scalar, &key_position);
  k->text = key;
  map.entries.emplace_back(k, value);
}

// A fresh map with the entries of `src`, duplicates kept (as YAML::Clone keeps them; `{P}`
// substitution later collapses them into the first key's place holding the last value).
Node* copy_map(Arena& arena, const Node& src) {
  Node* out = arena.make(Node::Kind::map, &src);
  out->entries = src.entries;
  return out;
}

// Child maps override parent maps key by key (one level deep for `classes`, `vars`,
// `tied_weights`, two for `config`: `config.defaults`/`config.derived` merge key by key);
// everything else is replaced whole. The parent's `abstract` is not inherited, the child's
// `extends` is not copied. Nodes are shared, not cloned: nothing is modified after building.
Node* merge(Arena& arena, const std::string& child_file, const Node& parent, const Node& child) {
  Node* out = arena.make(Node::Kind::map, &child);
  if (parent.is_map())
    for (const auto& [k, v] : parent.entries)
      if (!(k->is_scalar() && k->text == "abstract")) out->entries.emplace_back(k, v);
  for (const auto& [ck, value] : child.entries) {
    const std::string key = key_text(child_file, *ck);
    const bool mergeable = key == "classes" || key == "vars" || key == "tied_weights" || key == "config";
    Node* existing = out->get(key);
    if (mergeable && value->is_map() && existing && existing->is_map()) {
      Node* target = copy_map(arena, *existing);
      for (const auto& [sk, sv] : value->entries) {
        const std::string sub = key_text(child_file, *sk);
        Node* inner = target->get(sub);
        if (key == "config" && sv->is_map() && inner && inner->is_map()) {
          Node* merged = copy_map(arena, *inner);
          for (const auto& [dk, dv] : sv->entries) assign(arena, *merged, key_text(child_file, *dk), *dk, dv);
          assign(arena, *target, sub, *sk, merged);
        } else {
          assign(arena, *target, sub, *sk, sv);
        }
      }
      assign(arena, *out, key, *ck, target);
    } else if (key != "extends") {
      assign(arena, *out, key, *ck, value);
    }
  }
  return out;
}

using Vars = std::vector<std::pair<std::string, std::string>>;

// `{P}` and friends: textual substitution in every scalar and map key, applied in `vars` order.
Node* substitute(Arena& arena, const std::string& file, Node* node, const Vars& vars) {
  auto subst = [&](std::string s) {
    for (auto& [k, v] : vars) s = replace_all(std::move(s), "{" + k + "}", v);
    return s;
  };
  switch (node->kind) {
    case Node::Kind::scalar: {
      if (node->text.find('{') == std::string::npos) return node;  // nothing to substitute
      Node* out = arena.copy(*node);
      out->text = subst(node->text);
      return out;
    }
    case Node::Kind::sequence: {
      Node* out = arena.make(Node::Kind::sequence, node);
      out->items.reserve(node->items.size());
      for (Node* item : node->items) out->items.push_back(substitute(arena, file, item, vars));
      return out;
    }
    case Node::Kind::map: {
      Node* out = arena.make(Node::Kind::map, node);
      out->entries.reserve(node->entries.size());
      for (const auto& [k, v] : node->entries)
        assign(arena, *out, subst(key_text(file, *k)), *k, substitute(arena, file, v, vars));
      return out;
    }
    case Node::Kind::null:
      break;
  }
  return node;
}

// ---------------------------------------------------------------- typed readers

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  std::string key(const Node& k) const { return key_text(file_, k); }

  std::string str(const Node* n, const char* what, const Node* parent = nullptr) const {
    if (!n) fail(file_, parent, fmt::format("expected a string for {}, found nothing", what));
    if (!n->is_scalar()) fail(file_, n, fmt::format("expected a string for {}", what));
    return n->text;
  }

  // A YAML scalar becomes an expression: strings are parsed, numbers/bools/null are constants.
  Expr expr(const Node* n, const char* what) const {
    if (n->is_null()) return Expr::constant(Value());
    if (!n->is_scalar()) fail(file_, n, fmt::format("expected an expression for {}", what));
    try {
      return Expr::parse(n->text);
    } catch (const ExprError& e) {
      fail(file_, n, fmt::format("bad expression for {}: {}", what, e.what()));
    }
  }

  // A literal value (config defaults): plain scalars typed as YAML 1.2 core would type them.
  Value literal(const Node& n) const {
    if (n.is_null()) return Value();
    if (n.is_sequence()) {
      ValueList items;
      for (const Node* item : n.items) items.push_back(literal(*item));
      return Value(std::move(items));
    }
    if (!n.is_scalar()) fail(file_, &n, "expected a scalar or a list");
    if (n.quoted) return Value(n.text);  // quoted: always a string
    const std::string& s = n.text;
    if (s == "true" || s == "True") return Value(true);
    if (s == "false" || s == "False") return Value(false);
    if (s == "null" || s == "~") return Value();
    // Numbers by from_chars, not stoll/stod: those throw on every string default ("silu"), and
    // a throw costs more than reading the whole file. A leading '+' is YAML's, not from_chars'.
    const char* first = s.data() + (s.size() > 1 && s[0] == '+' && s[1] != '-' ? 1 : 0);
    const char* last = s.data() + s.size();
    std::int64_t i = 0;
    if (auto [end, ec] = std::from_chars(first, last, i); ec == std::errc() && end == last) return Value(i);
    double d = 0;
    if (auto [end, ec] = std::from_chars(first, last, d); ec == std::errc() && end == last) return Value(d);
    return Value(s);
  }

  // A section that may be absent and may be empty (`key:` alone: nothing to read, as looking up
  // or iterating a null YAML::Node gave nothing), but must be a map when written.
  const Node* optional_map(const Node* n, const std::string& what) const {
    if (!n || n->is_null()) return nullptr;
    if (!n->is_map()) fail(file_, n, fmt::format("expected a map for {}", what));
    return n;
  }
  // The same for lists.
  const Node* optional_list(const Node* n, const std::string& what) const {
    if (!n || n->is_null()) return nullptr;
    if (!n->is_sequence()) fail(file_, n, fmt::format("expected a list for {}", what));
    return n;
  }

  // Absent is empty; written, even empty (`args:`), it must be a map.
  std::vector<NamedExpr> named_exprs(const Node* map, const char* what) const {
    std::vector<NamedExpr> out;
    if (!map) return out;
    if (!map->is_map()) fail(file_, map, fmt::format("expected a map for {}", what));
    for (const auto& [k, v] : map->entries) out.push_back({key(*k), expr(v, what)});
    return out;
  }

  std::vector<NamedExpr> literals(const Node* map, const char* what) const {
    std::vector<NamedExpr> out;
    if (!map) return out;
    if (!map->is_map()) fail(file_, map, fmt::format("expected a map for {}", what));
    for (const auto& [k, v] : map->entries) out.push_back({key(*k), Expr::constant(literal(*v))});
    return out;
  }

  std::vector<ClassVariant> variants(const Node* seq) const {
    std::vector<ClassVariant> out;
    if (!seq) return out;
    if (!seq->is_sequence()) fail(file_, seq, "expected a list of {if: ..., class: ...} for variants");
    for (const Node* v : seq->items) {
      if (!v->is_map() || !v->get("if") || !v->get("class")) fail(file_, v, "a variant needs `if` and `class`");
      out.push_back({expr(v->get("if"), "variant condition"), str(v->get("class"), "variant class")});
    }
    return out;
  }

  ParamSpec param(const std::string& name, const Node& n) const {
    ParamSpec p;
    p.name = name;
    const Node* shape = n.is_sequence() ? &n : n.get("shape");
    if (!shape || !shape->is_sequence())
      fail(file_, shape ? shape : &n, fmt::format("parameter '{}' needs a shape list", name));
    for (const Node* dim : shape->items) p.shape.push_back(expr(dim, "a shape dimension"));
    if (n.is_map()) {
      for (const auto& [k, v] : n.entries) {
        const std::string key_name = key(*k);
        if (key_name != "shape" && key_name != "if" && key_name != "dtype" && key_name != "from" &&
            key_name != "buffer" && key_name != "name")
          fail(file_, k, fmt::format("unknown key '{}' in parameter '{}'", key_name, name));
      }
      if (const Node* c = n.get("if")) p.condition = expr(c, "parameter condition");
      // `name:` overrides the map key as the parameter's name, so that two entries with exclusive
      // `if:` conditions can register one parameter with shapes of different rank (Cohere's
      // CohereLayerNorm: [hidden] or [heads, head_dim]).
      if (const Node* nm = n.get("name")) p.name = str(nm, "name");
      if (const Node* d = n.get("dtype")) p.dtype = expr(d, "parameter dtype");
      if (const Node* b = n.get("buffer")) p.buffer = bool_value(file_, *b, "buffer");
      if (const Node* from = n.get("from")) {
        if (!from->is_sequence()) fail(file_, from, "`from` must be a list of tensor-name globs");
        for (const Node* f : from->items) p.from.push_back(str(f, "from"));
      }
    }
    return p;
  }

  ChildSpec child(const std::string& name, const Node& n) const {
    ChildSpec c;
    c.name = name;
    if (n.is_scalar()) {
      c.cls = n.text;
      return c;
    }
    if (!n.is_map()) fail(file_, &n, fmt::format("child '{}' must be a class name or a map", name));
    static const std::set<std::string, std::less<>> known = {"class",     "variants", "args",     "if",
                                                             "repeat",    "index",    "item",     "item_variants",
                                                             "item_args", "name",     "submodel", "unreached"};
    for (const auto& [k, v] : n.entries)
      if (!known.count(key(*k))) fail(file_, k, fmt::format("unknown key '{}' in child '{}'", key(*k), name));
    if (const Node* repeat = n.get("repeat")) {
      c.repeat = expr(repeat, "repeat");
      c.cls = n.get("class") ? str(n.get("class"), "class") : "ModuleList";
      if (!n.get("item")) fail(file_, &n, fmt::format("repeated child '{}' needs `item`", name));
      c.item = str(n.get("item"), "item");
      if (n.get("index")) c.index = str(n.get("index"), "index");
      c.item_variants = variants(n.get("item_variants"));
      c.item_args = named_exprs(n.get("item_args"), "item_args");
    } else if (const Node* sub = n.get("submodel")) {
      c.submodel = str(sub, "submodel");
    } else {
      if (!n.get("class")) fail(file_, &n, fmt::format("child '{}' needs `class` (or `submodel`)", name));
      c.cls = str(n.get("class"), "class");
    }
    c.variants = variants(n.get("variants"));
    c.args = named_exprs(n.get("args"), "args");
    if (const Node* cond = n.get("if")) c.condition = expr(cond, "child condition");
    if (const Node* u = n.get("unreached")) c.unreached = expr(u, "unreached condition");
    // `name:` overrides the map key as the attribute name, so that two mutually exclusive entries
    // (their `if:` conditions) can register the same attribute with different structures, e.g. a
    // 4.x `experts` ModuleList and a 5.x fused `experts` module.
    if (n.get("name")) c.name = str(n.get("name"), "name");
    return c;
  }

  ClassSpec cls(const std::string& name, const Node& n) const {
    ClassSpec c;
    c.name = name;
    c.source = file_;
    if (n.is_null()) return c;
    if (!n.is_map()) fail(file_, &n, fmt::format("class '{}' must be a map", name));
    static const std::set<std::string, std::less<>> known = {"bases", "args", "children", "params", "doc"};
    for (const auto& [k, v] : n.entries)
      if (!known.count(key(*k))) fail(file_, k, fmt::format("unknown key '{}' in class '{}'", key(*k), name));
    if (const Node* bases = n.get("bases")) {
      if (bases->is_scalar())
        c.bases.push_back(bases->text);
      else if (optional_list(bases, "bases"))
        for (const Node* b : bases->items) c.bases.push_back(str(b, "base class"));
    }
    c.arg_defaults = named_exprs(n.get("args"), "class args");
    if (const Node* children = n.get("children")) {
      if (!children->is_map()) fail(file_, children, "children must be a map (name: class) in registration order");
      for (const auto& [k, v] : children->entries) c.children.push_back(child(key(*k), *v));
      c.structure_declared = true;
    }
    if (const Node* params = n.get("params")) {
      if (!params->is_map()) fail(file_, params, "params must be a map (name: shape) in registration order");
      for (const auto& [k, v] : params->entries) c.params.push_back(param(key(*k), *v));
      c.structure_declared = true;
    }
    return c;
  }

  // tp_styles: {name: {matrix_dim: -2, vector_dim: -1, packed: 2, exact: true, source: "..."}}; an
  // absent dim keeps the parameter whole on every TP rank.
  void tp_styles(const Node* map, std::map<std::string, TpStyle>& out) const {
    if (!map) return;
    if (!map->is_map()) fail(file_, map, "tp_styles must be a map");
    auto dim = [&](const Node* n, const char* what) -> std::optional<int> {
      if (!n || n->is_null()) return std::nullopt;
      const std::string t = str(n, what);
      int d = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
      if (ec != std::errc() || end != t.data() + t.size() || d < -3 || d > 2)
        fail(file_, n, fmt::format("expected a dimension from -3 to 2 for {}, found '{}'", what, t));
      return d;
    };
    static const std::set<std::string, std::less<>> fields = {"matrix_dim",
                                                              "vector_dim",
                                                              "packed",
                                                              "exact",
                                                              "forward_all_reduce",
                                                              "backward_all_reduce",
                                                              "forward_all_gather",
                                                              "backward_all_gather",
                                                              "grad_all_reduce",
                                                              "routing_all_reduce",
                                                              "source"};
    for (const auto& [k, v] : map->entries) {
      TpStyle st;
      st.name = key(*k);
      if (!v->is_map() && !v->is_null()) fail(file_, v, fmt::format("tp style '{}' must be a map", st.name));
      if (v->is_map()) {
        for (const auto& [fk, fv] : v->entries)
          if (!fields.count(key(*fk)))
            fail(file_, fk,
                 fmt::format("unknown tp style field '{}' (expected matrix_dim, vector_dim, packed, exact, "
                             "forward_all_reduce, backward_all_reduce, forward_all_gather, backward_all_gather, "
                             "grad_all_reduce, routing_all_reduce, source)",
                             key(*fk)));
        st.matrix_dim = dim(v->get("matrix_dim"), "matrix_dim");
        st.vector_dim = dim(v->get("vector_dim"), "vector_dim");
        if (const Node* p = v->get("packed")) {
          const std::string t = str(p, "packed");
          const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), st.packed);
          if (ec != std::errc() || end != t.data() + t.size() || st.packed < 1 || st.packed > 16)
            fail(file_, p, fmt::format("expected a block count from 1 to 16 for packed, found '{}'", t));
        }
        if (const Node* e = v->get("exact")) st.exact = bool_value(file_, *e, "exact");
        st.forward_all_reduce = dim(v->get("forward_all_reduce"), "forward_all_reduce");
        st.backward_all_reduce = dim(v->get("backward_all_reduce"), "backward_all_reduce");
        st.forward_all_gather = dim(v->get("forward_all_gather"), "forward_all_gather");
        st.backward_all_gather = dim(v->get("backward_all_gather"), "backward_all_gather");
        if (const Node* g = v->get("grad_all_reduce")) st.grad_all_reduce = bool_value(file_, *g, "grad_all_reduce");
        if (const Node* g = v->get("routing_all_reduce"))
          st.routing_all_reduce = bool_value(file_, *g, "routing_all_reduce");
        if (const Node* src = v->get("source")) st.source = str(src, "source");
      }
      out[st.name] = std::move(st);
    }
  }

  void classes(const Node* map, std::map<std::string, ClassSpec>& out) const {
    if (!map) return;
    if (!map->is_map()) fail(file_, map, "classes must be a map");
    for (const auto& [k, v] : map->entries) {
      std::string name = key(*k);
      out[name] = cls(name, *v);
    }
  }

  ArchSpec arch(const Node& root) const {
    ArchSpec a;
    a.source = file_;
    if (!root.is_map() && !root.is_null()) fail(file_, &root, "expected a map of top-level keys");
    static const std::set<std::string, std::less<>> known = {"model_type",
                                                             "since",
                                                             "vars",
                                                             "extends",
                                                             "architectures",
                                                             "base_model_prefix",
                                                             "supports_sdpa",
                                                             "base_model_class",
                                                             "no_split_modules",
                                                             "keep_in_fp32_modules",
                                                             "keep_in_fp32_modules_strict",
                                                             "config",
                                                             "tied_weights",
                                                             "checkpoint",
                                                             "classes",
                                                             "doc",
                                                             "abstract",
                                                             "activations",
                                                             "attention_masks",
                                                             "eager_attention",
                                                             "parallel_residual",
                                                             "fsdp_plan",
                                                             "tp_plan",
                                                             "ep_plan",
                                                             "sub_configs",
                                                             "embeddings",
                                                             "model_errors"};
    for (const auto& [k, v] : root.entries)
      if (!known.count(key(*k))) fail(file_, k, fmt::format("unknown top-level key '{}'", key(*k)));
    if (!root.get("model_type")) fail(file_, &root, "missing `model_type`");
    a.model_type = str(root.get("model_type"), "model_type");
    if (const Node* since = root.get("since")) a.since = str(since, "since");
    if (const Node* archs = root.get("architectures")) {
      if (archs->is_sequence())
        for (const Node* x : archs->items) a.architectures.push_back(str(x, "architectures"));
      else if (!archs->is_null() && !archs->is_scalar())
        fail(file_, archs, "`architectures` must list at least one head class");
    }
    if (a.architectures.empty()) {
      const Node* archs = root.get("architectures");
      fail(file_, archs ? archs : &root, "`architectures` must list at least one head class");
    }
    if (const Node* p = root.get("base_model_prefix")) a.base_model_prefix = str(p, "base_model_prefix");
    if (const Node* p = root.get("supports_sdpa")) {
      const std::string v = str(p, "supports_sdpa");
      if (v != "true" && v != "false")
        fail(file_, p, fmt::format("expected true or false for supports_sdpa, found '{}'", v));
      a.supports_sdpa = v == "true";
    }
    if (const Node* b = root.get("base_model_class")) a.base_model_class = str(b, "base_model_class");
    if (const Node* sc = optional_map(root.get("sub_configs"), "sub_configs"))
      for (const auto& [k, v] : sc->entries) {
        ArchSpec::SubConfig c;
        c.key = key(*k);
        if (v->is_scalar()) {
          c.model_type = v->text;
        } else if (v->is_map() && v->get("type")) {
          c.model_type = str(v->get("type"), "sub_configs type");
          if (const Node* f = v->get("flat")) c.flat = bool_value(file_, *f, "flat");
        } else {
          fail(file_, v, fmt::format("sub_configs.{}: expected a model_type or {{type: ..., flat: true}}", c.key));
        }
        a.sub_configs.push_back(std::move(c));
      }
    if (const Node* ns = root.get("no_split_modules")) {
      if (ns->is_sequence()) {
        ValueList items;
        for (const Node* x : ns->items) items.push_back(Value(str(x, "no_split_modules")));
        a.no_split_modules = Expr::constant(Value(std::move(items)));
      } else {
        a.no_split_modules = expr(ns, "no_split_modules");
      }
    }
    for (const auto& [field, into] : {std::pair{"keep_in_fp32_modules", &a.keep_in_fp32_modules},
                                      std::pair{"keep_in_fp32_modules_strict", &a.keep_in_fp32_modules_strict}})
      if (const Node* list = root.get(field)) {
        if (!list->is_sequence())
          fail(file_, list, fmt::format("`{}` must list parameter-name patterns ([] for none)", field));
        for (const Node* x : list->items) {
          into->push_back(str(x, field));
          std::string glob;  // build_tree.cpp keep_in_fp32_pattern compiles it with '*' as '.*'
          for (char c : into->back()) glob += c == '*' ? std::string(".*") : std::string(1, c);
          try {
            std::regex{glob};
          } catch (const std::regex_error&) {
            fail(file_, x, fmt::format("`{}`: '{}' is not a valid pattern", field, into->back()));
          }
        }
      }
    if (const Node* config = optional_map(root.get("config"), "config")) {
      a.defaults = literals(config->get("defaults"), "config.defaults");
      if (const Node* am = optional_map(config->get("attribute_map"), "config.attribute_map"))
        for (const auto& [k, v] : am->entries) a.attribute_map.emplace_back(key(*k), str(v, "config.attribute_map"));
      a.derived = named_exprs(config->get("derived"), "config.derived");
    }
    if (const Node* act = root.get("activations")) {
      a.activations = named_exprs(act, "activations");
      static const std::set<std::string, std::less<>> fields = {
          "layer",           "layer_fp32",       "layers",
          "checkpointed",    "logits",           "experts_per_token",
          "tp_split",        "tp_split_fp32",    "tp_added",
          "cp_kv",           "layer_bool",       "layer_fp32_cast",
          "layer_fp32_only", "layer_fixed_fp32", "layer_fixed_fp32_cast"};
      for (const auto& [k, v] : act->entries)
        if (!fields.count(key(*k)))
          fail(file_, k,
               fmt::format("unknown activations field '{}' (expected layer, layer_fp32, layers, checkpointed, "
                           "logits, experts_per_token, tp_split, tp_split_fp32, tp_added, cp_kv, layer_bool, "
                           "layer_fp32_cast, layer_fp32_only, layer_fixed_fp32, layer_fixed_fp32_cast)",
                           key(*k)));
    }
    // The explicit masks SDPA gets (sliding-window layers): evaluated beside the activation model as
    // `mask_layers` and `mask_from_tokens`, a top-level key so that a child inherits or replaces it whole.
    if (const Node* masks = root.get("attention_masks")) {
      static const std::set<std::string, std::less<>> fields = {"masked_layers", "from_tokens"};
      for (const auto& [k, v] : optional_map(masks, "attention_masks")->entries)
        if (!fields.count(key(*k)))
          fail(file_, k,
               fmt::format("unknown attention_masks field '{}' (expected masked_layers, from_tokens)", key(*k)));
      for (NamedExpr& e : named_exprs(masks, "attention_masks"))
        a.activations.push_back({e.name == "masked_layers" ? "mask_layers" : "mask_from_tokens", std::move(e.expr)});
    }
    // What eager attention keeps beside the SDPA model above (its seq x seq probabilities, repeat_kv's
    // copies, no logsumexp): evaluated beside the activation model as `eager_<field>`, a top-level key
    // so that a child inherits or replaces it whole (docs/activations.md).
    if (const Node* eager = root.get("eager_attention")) {
      static const std::set<std::string, std::less<>> fields = {
          "layer", "layer_fp32", "kv_repeat", "kv_heads", "scores_fp32", "scores", "scores_cast", "scores_bool"};
      for (const auto& [k, v] : optional_map(eager, "eager_attention")->entries)
        if (!fields.count(key(*k)))
          fail(file_, k,
               fmt::format("unknown eager_attention field '{}' (expected layer, layer_fp32, kv_repeat, kv_heads, "
                           "scores_fp32, scores, scores_cast, scores_bool)",
                           key(*k)));
      for (NamedExpr& e : named_exprs(eager, "eager_attention"))
        a.activations.push_back({"eager_" + e.name, std::move(e.expr)});
    }
    // Failures of transformers' own model code for some configurations (ARCH006), a top-level key that a
    // child inherits or replaces whole.
    if (const Node* errors = optional_list(root.get("model_errors"), "model_errors")) {
      for (const Node* e : errors->items) {
        if (!e->is_map()) fail(file_, e, "expected {if: ..., stage: ..., error: ..., help: ...} for a model error");
        for (const auto& [k, v] : e->entries)
          if (key(*k) != "if" && key(*k) != "stage" && key(*k) != "error" && key(*k) != "help")
            fail(file_, k, fmt::format("unknown model_errors field '{}' (expected if, stage, error, help)", key(*k)));
        if (!e->get("if")) fail(file_, e, "expected `if:`, the condition under which the model code fails");
        ModelError me{expr(e->get("if"), "model error condition"), str(e->get("stage"), "model error stage", e),
                      str(e->get("error"), "model error message", e), str(e->get("help"), "model error help", e)};
        if (me.stage != "load" && me.stage != "forward")
          fail(file_, e->get("stage"),
               fmt::format("expected load or forward for a model error's stage, found '{}'", me.stage));
        a.model_errors.push_back(std::move(me));
      }
    }
    // Whether a decoder block's attention and MLP both read the block's input (GPT-NeoX's
    // use_parallel_residual): which TP input gradients a LoRA step all-reduces. Evaluated beside the
    // activation model as `parallel_residual`.
    if (const Node* parallel = root.get("parallel_residual")) {
      a.activations.push_back({"parallel_residual", expr(parallel, "parallel_residual")});
    }
    // Both plans map name patterns to a value: fsdp_plan to a strategy, tp_plan to a style name
    // (checked against the style table once every file is read).
    auto plan_entries = [&](const Node& m, const std::string& what, const char* value_kind,
                            const std::set<std::string, std::less<>>* allowed) {
      std::vector<std::pair<std::string, std::string>> out;
      if (!m.is_map()) fail(file_, &m, fmt::format("`{}` must map module patterns to {}", what, value_kind));
      for (const auto& [k, v] : m.entries) {
        const std::string value = str(v, what.c_str());
        if (allowed && !allowed->count(value))
          fail(file_, v, fmt::format("expected free_full_weight or keep_full_weight, found '{}'", value));
        out.emplace_back(key(*k), value);
      }
      return out;
    };
    static const std::set<std::string, std::less<>> fsdp_strategies = {"free_full_weight", "keep_full_weight"};
    if (const Node* plan = optional_map(root.get("fsdp_plan"), "fsdp_plan"))
      for (const auto& [k, v] : plan->entries) {
        const std::string field = key(*k);
        if (field == "base")
          a.fsdp_plan_base = plan_entries(*v, "fsdp_plan.base", "strategies", &fsdp_strategies);
        else if (field == "head")
          a.fsdp_plan_head = plan_entries(*v, "fsdp_plan.head", "strategies", &fsdp_strategies);
        else
          fail(file_, k, fmt::format("unknown fsdp_plan field '{}' (expected base, head)", field));
      }
    if (const Node* plan = optional_map(root.get("tp_plan"), "tp_plan")) {
      a.tp_plan.emplace();
      for (const auto& [k, v] : plan->entries) {
        const std::string field = key(*k);
        if (field == "base")
          a.tp_plan->base = plan_entries(*v, "tp_plan.base", "tensor-parallel styles", nullptr);
        else if (field == "head")
          a.tp_plan->head = plan_entries(*v, "tp_plan.head", "tensor-parallel styles", nullptr);
        else
          fail(file_, k, fmt::format("unknown tp_plan field '{}' (expected base, head)", field));
      }
    }
    if (const Node* plan = optional_map(root.get("ep_plan"), "ep_plan")) {
      a.ep_plan.emplace();
      for (const auto& [k, v] : plan->entries) {
        if (key(*k) != "base") fail(file_, k, fmt::format("unknown ep_plan field '{}' (expected base)", key(*k)));
        a.ep_plan->base = plan_entries(*v, "ep_plan.base", "tensor-parallel styles", nullptr);
      }
    }
    if (const Node* emb = optional_map(root.get("embeddings"), "embeddings")) {
      if (const Node* in = emb->get("input")) a.input_embeddings = str(in, "embeddings.input");
      if (const Node* out = emb->get("output")) a.output_embeddings = str(out, "embeddings.output");
    }
    if (const Node* tied = optional_map(root.get("tied_weights"), "tied_weights")) {
      for (const auto& [k, v] : tied->entries) a.tied_weights.push_back({key(*k), str(v, "tied weight target")});
    }
    if (const Node* ck = optional_map(root.get("checkpoint"), "checkpoint")) {
      if (const Node* renames = optional_list(ck->get("renames"), "checkpoint.renames")) {
        for (const Node* r : renames->items) {
          if (!r->is_map()) fail(file_, r, "expected {from: ..., to: ..., if: ...} for a checkpoint rename");
          CheckpointRename rn{str(r->get("from"), "rename from", r), str(r->get("to"), "rename to", r), std::nullopt};
          if (const Node* cond = r->get("if")) rn.condition = expr(cond, "rename condition");
          a.renames.push_back(std::move(rn));
        }
      }
      if (const Node* ignore = optional_list(ck->get("ignore_unexpected"), "checkpoint.ignore_unexpected"))
        for (const Node* x : ignore->items) a.ignore_unexpected.push_back(str(x, "ignore_unexpected"));
      if (const Node* dq = optional_map(ck->get("dequantize"), "checkpoint.dequantize")) {
        CheckpointDequantize rule;
        if (const Node* cond = dq->get("if")) rule.condition = expr(cond, "dequantize condition");
        rule.scales_suffix = str(dq->get("scales_suffix"), "dequantize scales_suffix", dq);
        const Node* dtypes = optional_list(dq->get("dtypes"), "checkpoint.dequantize.dtypes");
        if (!dtypes || dtypes->items.empty())
          fail(file_, dq, "expected a list of safetensors dtypes for checkpoint.dequantize.dtypes");
        for (const Node* x : dtypes->items) {
          const std::string name = str(x, "dequantize dtype");
          auto d = parse_dtype(name);
          if (!d) fail(file_, x, fmt::format("expected a safetensors dtype name (F8_E4M3, ...), found '{}'", name));
          rule.dtypes.push_back(*d);
        }
        a.dequantize = std::move(rule);
      }
    }
    classes(root.get("classes"), a.classes);
    return a;
  }

 private:
  std::string file_;
};

Vars vars_of(const std::string& file, const Node& root) {
  Vars vars;
  const Node* v = root.get("vars");
  if (!v || v->is_null()) return vars;
  if (!v->is_map()) fail(file, v, "expected a map for vars (name: text)");
  for (const auto& [k, value] : v->entries) {
    const std::string name = key_text(file, *k);
    if (value->is_null())
      vars.emplace_back(name, "null");  // yaml-cpp's as<std::string>() of ~
    else if (value->is_scalar())
      vars.emplace_back(name, value->text);
    else
      fail(file, value, fmt::format("expected a string for vars.{}", name));
  }
  return vars;
}

// The parent named by `extends`, or nullptr. Only the first `extends` key counts.
const Node* extends_of(const std::string& file, const Node& root) {
  const Node* e = root.get("extends");
  if (e && !e->is_scalar()) fail(file, e, "expected a file name (without .yaml) for extends");
  return e;
}

Node* resolve_extends(Arena& arena, const std::string& name, const std::map<std::string, RawFile>& raw,
                      std::vector<std::string>& stack) {
  const RawFile& f = raw.at(name);
  if (!f.root->is_map() && !f.root->is_null()) fail(f.path, f.root, "expected a map of top-level keys");
  const Node* ext = extends_of(f.path, *f.root);
  if (!ext) return f.root;
  const std::string& parent = ext->text;
  if (!raw.count(parent)) fail(f.path, ext, fmt::format("extends unknown file '{}'", parent));
  if (std::find(stack.begin(), stack.end(), parent) != stack.end())
    fail(f.path, ext, fmt::format("`extends` cycle through '{}'", parent));
  stack.push_back(name);
  Node* base = resolve_extends(arena, parent, raw, stack);
  stack.pop_back();
  return merge(arena, f.path, *base, *f.root);
}

Diagnostic rules_diag(const RulesError& e) {
  Diagnostic d = finding("REG001", in_file(e.file), e.message);
  if (e.line >= 0) {
    d.location.line = e.line + 1;
    d.location.column = e.column + 1;
  }
  return d;
}

}  // namespace

void apply_checkpoint_rename(std::string& name, std::string_view from, std::string_view to) {
  if (from.starts_with('^')) {
    from.remove_prefix(1);
    if (name.starts_with(from)) name.replace(0, from.size(), to);
    return;
  }
  for (std::size_t pos = 0; (pos = name.find(from, pos)) != std::string::npos; pos += to.size())
    name.replace(pos, from.size(), to);
}

std::optional<std::string> undo_checkpoint_rename(const std::string& name, std::string_view from, std::string_view to) {
  if (from.starts_with('^')) {
    if (!name.starts_with(to)) return std::nullopt;
    return std::string(from.substr(1)) + name.substr(to.size());
  }
  const auto at = name.find(to);
  if (at == std::string::npos) return std::nullopt;
  return std::string(name).replace(at, to.size(), from);
}

std::optional<Registry> Registry::load_for(const fs::path& rules_dir, const ModelConfig& config, DiagnosticSink& sink) {
  // Its model_type and every sub-config's (text_config, vision_config, ... of composite models).
  std::vector<std::string> wanted{config.model_type};
  config.for_each_field("", [&](std::string_view key, const ConfigField& c) {
    if (!c.object || key.find('.') != std::string_view::npos) return;
    if (auto type = config.string_field(std::string(key) + ".model_type")) wanted.push_back(*type);
  });
  return load(rules_dir, sink, wanted);
}

std::optional<Registry> Registry::load(const fs::path& rules_dir, DiagnosticSink& sink,
                                       const std::vector<std::string>& wanted) {
  const fs::path dir = rules_dir / "models";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    sink.report(finding("REG002", in_file(dir.string()),
                        fmt::format("expected the architecture registry at {}, found no directory", dir.string()),
                        "pass --rules DIR or set SHARDCHECK_RULES to the rules/ directory of shardcheck"));
    return std::nullopt;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  Registry reg;
  Arena arena;
  std::deque<std::string> paths;       // the file names nodes point at
  std::map<std::string, RawFile> raw;  // keyed by file stem
  bool ok = true;
  // A mistake in an `extends` parent is found again for every file that extends it, at the same
  // place: report it once.
  std::set<std::tuple<std::string, int, int, std::string>> reported;
  auto report = [&](const RulesError& e) {
    ok = false;
    if (reported.emplace(e.file, e.line, e.column, e.message).second) sink.report(rules_diag(e));
  };
  auto parse = [&](const fs::path& path) {
    const std::string stem = path.stem().string();
    if (raw.count(stem)) return;
    const std::string& name = paths.emplace_back(path.string());
    try {
      raw[stem] = RawFile{name, registry_yaml::parse_file(&name, arena)};
    } catch (const registry_yaml::SyntaxError& e) {
      report({name, e.line, e.column, e.message});
    }
  };
  // Parsing YAML dominates a run on a small model, so when the caller names the model types it
  // needs and each has its file (<model_type>.yaml), only those, their `extends` parents and the
  // shared `_*.yaml` libraries are read. Otherwise (unknown type: list what is known) all are.
  const bool partial = !wanted.empty() && std::all_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
    return w.empty() || fs::is_regular_file(dir / (w + ".yaml"), ec);
  });
  if (partial) {
    for (const auto& path : files)
      if (path.stem().string().starts_with("_")) parse(path);
    // The wanted types, their `extends` parents, and the types their `sub_configs` name.
    std::vector<std::string> queue = wanted;
    for (std::size_t q = 0; q < queue.size() && q < 64; ++q) {
      std::string stem = queue[q];
      for (int depth = 0; !stem.empty() && depth < 16; ++depth) {
        parse(dir / (stem + ".yaml"));
        auto it = raw.find(stem);
        if (it == raw.end()) break;
        if (const Node* sc = it->second.root->get("sub_configs"); sc && sc->is_map())
          for (const auto& [k, v] : sc->entries) {
            const Node* t = v->is_map() ? v->get("type") : v;
            if (t && t->is_scalar() && fs::is_regular_file(dir / (t->text + ".yaml"), ec)) queue.push_back(t->text);
          }
        const Node* ext = it->second.root->get("extends");
        if (!ext || !ext->is_scalar()) break;  // a malformed `extends` is reported by resolve_extends
        stem = ext->text;
        if (!fs::is_regular_file(dir / (stem + ".yaml"), ec)) break;  // reported by resolve_extends
      }
    }
  } else {
    for (const auto& path : files) parse(path);
  }
  for (const auto& [stem, file] : raw) {
    try {
      if (stem.starts_with("_")) {  // shared class libraries (torch.nn builtins and the like)
        if (!file.root->is_map() && !file.root->is_null())
          fail(file.path, file.root, "expected a map of top-level keys");
        Reader(file.path).classes(file.root->get("classes"), reg.builtins_);
        Reader(file.path).tp_styles(file.root->get("tp_styles"), reg.tp_styles_);
        continue;
      }
      std::vector<std::string> stack;
      Node* resolved = resolve_extends(arena, stem, raw, stack);
      if (const Node* abstract = resolved->get("abstract"); abstract && bool_value(file.path, *abstract, "abstract"))
        continue;  // a template for `extends`
      const Node* merged = substitute(arena, file.path, resolved, vars_of(file.path, *resolved));
      ArchSpec arch = Reader(file.path).arch(*merged);
      // One file per model_type, named after it: lookups and partial loading rely on it.
      if (arch.model_type != stem) {
        const Node* mt = file.root->get("model_type");
        fail(file.path, mt ? mt : file.root,
             fmt::format("expected model_type '{}' (the file name), found '{}'", stem, arch.model_type));
      }
      if (reg.archs_.count(arch.model_type)) {
        report({file.path, merged->get("model_type")->line, merged->get("model_type")->column,
                fmt::format("model_type '{}' is defined twice", arch.model_type)});
        continue;
      }
      // Every style a tp_plan names is described in a shared `_*.yaml` (read first: "_" sorts
      // before every model_type).
      for (const auto& [what, spec] : {std::pair{"tp_plan", &arch.tp_plan}, std::pair{"ep_plan", &arch.ep_plan}})
        if (*spec)
          for (const auto* plan : {&(*spec)->base, &(*spec)->head})
            for (const auto& [pattern, style] : *plan)
              if (!reg.tp_styles_.count(style))
                fail(file.path, merged->get(what),
                     fmt::format("{} entry '{}': unknown tensor-parallel style '{}' (described in "
                                 "models/_tensor_parallel.yaml)",
                                 what, pattern, style));
      reg.archs_[arch.model_type] = std::move(arch);
    } catch (const RulesError& e) {
      report(e);
    }
  }
  if (!ok) return std::nullopt;
  return reg;
}

const TpStyle* Registry::find_tp_style(const std::string& name) const {
  auto it = tp_styles_.find(name);
  return it == tp_styles_.end() ? nullptr : &it->second;
}

const ArchSpec* Registry::find(const std::string& model_type) const {
  auto it = archs_.find(model_type);
  return it == archs_.end() ? nullptr : &it->second;
}

const ClassSpec* Registry::find_class(const ArchSpec& arch, const std::string& cls) const {
  if (auto it = arch.classes.find(cls); it != arch.classes.end()) return &it->second;
  if (auto it = builtins_.find(cls); it != builtins_.end()) return &it->second;
  return nullptr;
}

std::vector<std::string> Registry::model_types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : archs_) out.push_back(k);
  return out;
}

std::vector<std::string> Registry::class_chain(const ArchSpec& arch, const std::string& cls) const {
  std::vector<std::string> chain{cls};
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const ClassSpec* spec = find_class(arch, chain[i]);
    if (!spec) continue;
    for (const auto& b : spec->bases)
      if (std::find(chain.begin(), chain.end(), b) == chain.end()) chain.push_back(b);
  }
  return chain;
}

}  // namespace shardcheck
