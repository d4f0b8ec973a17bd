// Loads rules/models/*.yaml into ArchSpec values. The file format is documented in
// rules/models/README.md; this file only turns YAML into typed specs and reports malformed data
// with file:line:col (ExitCode::bad_rules).
#include "shardcheck/registry.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace shardcheck {
namespace fs = std::filesystem;

Version TransformersVersions::newest() { return Version{5, 16, 0}; }

namespace {

// A YAML problem found while reading the registry; turned into a Diagnostic at the top level.
struct RulesError {
  std::string file;
  YAML::Mark mark;
  std::string message;
};

[[noreturn]] void fail(const std::string& file, const YAML::Node& node, std::string message) {
  throw RulesError{file, node.Mark(), std::move(message)};
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

// ---------------------------------------------------------------- raw files, extends, vars

struct RawFile {
  std::string path;
  YAML::Node root;
};

// Child maps override parent maps key by key (one level deep for `classes`, `config.defaults`,
// `config.derived`, `vars`, `tied_weights`); everything else is replaced whole.
YAML::Node merge(const YAML::Node& parent, const YAML::Node& child) {
  YAML::Node out = YAML::Clone(parent);
  out.remove("abstract");
  for (auto it = child.begin(); it != child.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const YAML::Node value = it->second;  // a copy: it->second lives only as long as the iterator proxy
    const bool mergeable = key == "classes" || key == "vars" || key == "tied_weights" || key == "config";
    if (mergeable && value.IsMap() && out[key].IsMap()) {
      YAML::Node target = out[key];
      for (auto c = value.begin(); c != value.end(); ++c) {
        const std::string sub = c->first.as<std::string>();
        if (key == "config" && c->second.IsMap() && target[sub].IsMap()) {
          YAML::Node inner = target[sub];
          for (auto d = c->second.begin(); d != c->second.end(); ++d)
            inner[d->first.as<std::string>()] = YAML::Clone(d->second);
        } else {
          target[sub] = YAML::Clone(c->second);
        }
      }
    } else if (key != "extends") {
      out[key] = YAML::Clone(value);
    }
  }
  return out;
}

// `{P}` and friends: textual substitution in every scalar and map key.
YAML::Node substitute(const YAML::Node& node, const std::vector<std::pair<std::string, std::string>>& vars) {
  auto subst = [&](std::string s) {
    for (auto& [k, v] : vars) s = replace_all(std::move(s), "{" + k + "}", v);
    return s;
  };
  if (node.IsScalar()) {
    YAML::Node out(subst(node.Scalar()));
    out.SetTag(node.Tag());  // "!" marks a quoted scalar: it stays a string, never a number
    return out;
  }
  if (node.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& item : node) out.push_back(substitute(item, vars));
    return out;
  }
  if (node.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (auto it = node.begin(); it != node.end(); ++it)
      out[subst(it->first.as<std::string>())] = substitute(it->second, vars);
    return out;
  }
  return node;
}

// ---------------------------------------------------------------- typed readers

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  std::string str(const YAML::Node& n, const char* what) const {
    if (!n.IsScalar()) fail(file_, n, fmt::format("expected a string for {}", what));
    return n.Scalar();
  }

  // A YAML scalar becomes an expression: strings are parsed, numbers/bools/null are constants.
  Expr expr(const YAML::Node& n, const char* what) const {
    if (n.IsNull()) return Expr::constant(Value());
    if (!n.IsScalar()) fail(file_, n, fmt::format("expected an expression for {}", what));
    try {
      return Expr::parse(n.Scalar());
    } catch (const ExprError& e) {
      fail(file_, n, fmt::format("bad expression for {}: {}", what, e.what()));
    }
  }

  // A literal value (config defaults): plain scalars typed as YAML 1.2 core would type them.
  Value literal(const YAML::Node& n) const {
    if (n.IsNull()) return Value();
    if (n.IsSequence()) {
      ValueList items;
      for (const auto& item : n) items.push_back(literal(item));
      return Value(std::move(items));
    }
    if (!n.IsScalar()) fail(file_, n, "expected a scalar or a list");
    if (n.Tag() == "!") return Value(n.Scalar());  // quoted: always a string
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True") return Value(true);
    if (s == "false" || s == "False") return Value(false);
    if (s == "null" || s == "~") return Value();
    try {
      std::size_t used = 0;
      long long i = std::stoll(s, &used);
      if (used == s.size()) return Value(static_cast<std::int64_t>(i));
      double d = std::stod(s, &used);
      if (used == s.size()) return Value(d);
    } catch (...) {
    }
    return Value(s);
  }

  std::vector<NamedExpr> named_exprs(const YAML::Node& map, const char* what) const {
    std::vector<NamedExpr> out;
    if (!map) return out;
    if (!map.IsMap()) fail(file_, map, fmt::format("expected a map for {}", what));
    for (auto it = map.begin(); it != map.end(); ++it)
      out.push_back({it->first.as<std::string>(), expr(it->second, what)});
    return out;
  }

  std::vector<NamedExpr> literals(const YAML::Node& map, const char* what) const {
    std::vector<NamedExpr> out;
    if (!map) return out;
    if (!map.IsMap()) fail(file_, map, fmt::format("expected a map for {}", what));
    for (auto it = map.begin(); it != map.end(); ++it)
      out.push_back({it->first.as<std::string>(), Expr::constant(literal(it->second))});
    return out;
  }

  std::vector<ClassVariant> variants(const YAML::Node& seq) const {
    std::vector<ClassVariant> out;
    if (!seq) return out;
    if (!seq.IsSequence()) fail(file_, seq, "expected a list of {if: ..., class: ...} for variants");
    for (const auto& v : seq) {
      if (!v.IsMap() || !v["if"] || !v["class"]) fail(file_, v, "a variant needs `if` and `class`");
      out.push_back({expr(v["if"], "variant condition"), str(v["class"], "variant class")});
    }
    return out;
  }

  ParamSpec param(const std::string& name, const YAML::Node& n) const {
    ParamSpec p;
    p.name = name;
    const YAML::Node shape = n.IsSequence() ? n : n["shape"];
    if (!shape || !shape.IsSequence()) fail(file_, n, fmt::format("parameter '{}' needs a shape list", name));
    for (const auto& dim : shape) p.shape.push_back(expr(dim, "a shape dimension"));
    if (n.IsMap()) {
      for (auto it = n.begin(); it != n.end(); ++it) {
        const std::string key = it->first.as<std::string>();
        if (key != "shape" && key != "if" && key != "dtype" && key != "from" && key != "buffer")
          fail(file_, it->first, fmt::format("unknown key '{}' in parameter '{}'", key, name));
      }
      if (n["if"]) p.condition = expr(n["if"], "parameter condition");
      if (n["dtype"]) p.dtype = expr(n["dtype"], "parameter dtype");
      if (n["buffer"]) p.buffer = n["buffer"].as<bool>();
      if (const auto& from = n["from"]) {
        if (!from.IsSequence()) fail(file_, from, "`from` must be a list of tensor-name globs");
        for (const auto& f : from) p.from.push_back(str(f, "from"));
      }
    }
    return p;
  }

  ChildSpec child(const std::string& name, const YAML::Node& n) const {
    ChildSpec c;
    c.name = name;
    if (n.IsScalar()) {
      c.cls = n.Scalar();
      return c;
    }
    if (!n.IsMap()) fail(file_, n, fmt::format("child '{}' must be a class name or a map", name));
    static const std::set<std::string> known = {"class", "variants", "args", "if", "repeat", "index",
                                                "item", "item_variants", "item_args", "name"};
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!known.count(it->first.as<std::string>()))
        fail(file_, it->first, fmt::format("unknown key '{}' in child '{}'", it->first.as<std::string>(), name));
    if (n["repeat"]) {
      c.repeat = expr(n["repeat"], "repeat");
      c.cls = n["class"] ? str(n["class"], "class") : "ModuleList";
      if (!n["item"]) fail(file_, n, fmt::format("repeated child '{}' needs `item`", name));
      c.item = str(n["item"], "item");
      if (n["index"]) c.index = str(n["index"], "index");
      c.item_variants = variants(n["item_variants"]);
      c.item_args = named_exprs(n["item_args"], "item_args");
    } else {
      if (!n["class"]) fail(file_, n, fmt::format("child '{}' needs `class`", name));
      c.cls = str(n["class"], "class");
    }
    c.variants = variants(n["variants"]);
    c.args = named_exprs(n["args"], "args");
    if (n["if"]) c.condition = expr(n["if"], "child condition");
    // `name:` overrides the map key as the attribute name, so that two mutually exclusive entries
    // (their `if:` conditions) can register the same attribute with different structures, e.g. a
    // 4.x `experts` ModuleList and a 5.x fused `experts` module.
    if (n["name"]) c.name = str(n["name"], "name");
    return c;
  }

  ClassSpec cls(const std::string& name, const YAML::Node& n) const {
    ClassSpec c;
    c.name = name;
    c.source = file_;
    if (n.IsNull()) return c;
    if (!n.IsMap()) fail(file_, n, fmt::format("class '{}' must be a map", name));
    static const std::set<std::string> known = {"bases", "args", "children", "params", "doc"};
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!known.count(it->first.as<std::string>()))
        fail(file_, it->first, fmt::format("unknown key '{}' in class '{}'", it->first.as<std::string>(), name));
    if (const auto& bases = n["bases"]) {
      if (bases.IsScalar()) c.bases.push_back(bases.Scalar());
      else for (const auto& b : bases) c.bases.push_back(str(b, "base class"));
    }
    c.arg_defaults = named_exprs(n["args"], "class args");
    if (const auto& children = n["children"]) {
      if (!children.IsMap()) fail(file_, children, "children must be a map (name: class) in registration order");
      for (auto it = children.begin(); it != children.end(); ++it)
        c.children.push_back(child(it->first.as<std::string>(), it->second));
      c.structure_declared = true;
    }
    if (const auto& params = n["params"]) {
      if (!params.IsMap()) fail(file_, params, "params must be a map (name: shape) in registration order");
      for (auto it = params.begin(); it != params.end(); ++it)
        c.params.push_back(param(it->first.as<std::string>(), it->second));
      c.structure_declared = true;
    }
    return c;
  }

  void classes(const YAML::Node& map, std::map<std::string, ClassSpec>& out) const {
    if (!map) return;
    if (!map.IsMap()) fail(file_, map, "classes must be a map");
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string name = it->first.as<std::string>();
      out[name] = cls(name, it->second);
    }
  }

  ArchSpec arch(const YAML::Node& root) const {
    ArchSpec a;
    a.source = file_;
    static const std::set<std::string> known = {
        "model_type", "since", "vars", "extends", "architectures", "base_model_prefix", "base_model_class",
        "no_split_modules", "config", "tied_weights", "checkpoint", "classes", "doc", "abstract",
        "activations", "fsdp_plan"};
    for (auto it = root.begin(); it != root.end(); ++it)
      if (!known.count(it->first.as<std::string>()))
        fail(file_, it->first, fmt::format("unknown top-level key '{}'", it->first.as<std::string>()));
    if (!root["model_type"]) fail(file_, root, "missing `model_type`");
    a.model_type = str(root["model_type"], "model_type");
    if (root["since"]) a.since = str(root["since"], "since");
    if (const auto& archs = root["architectures"]) {
      for (const auto& x : archs) a.architectures.push_back(str(x, "architectures"));
    }
    if (a.architectures.empty()) fail(file_, root, "`architectures` must list at least one head class");
    if (root["base_model_prefix"]) a.base_model_prefix = str(root["base_model_prefix"], "base_model_prefix");
    if (root["base_model_class"]) a.base_model_class = str(root["base_model_class"], "base_model_class");
    if (const auto& ns = root["no_split_modules"]) {
      if (ns.IsSequence()) {
        ValueList items;
        for (const auto& x : ns) items.push_back(Value(str(x, "no_split_modules")));
        a.no_split_modules = Expr::constant(Value(std::move(items)));
      } else {
        a.no_split_modules = expr(ns, "no_split_modules");
      }
    }
    if (const auto& config = root["config"]) {
      a.defaults = literals(config["defaults"], "config.defaults");
      a.derived = named_exprs(config["derived"], "config.derived");
    }
    if (const auto& act = root["activations"]) {
      a.activations = named_exprs(act, "activations");
      static const std::set<std::string> fields = {"layer", "layers", "checkpointed", "logits"};
      for (auto it = act.begin(); it != act.end(); ++it)
        if (!fields.count(it->first.as<std::string>()))
          fail(file_, it->first, fmt::format("unknown activations field '{}' (expected layer, layers, checkpointed, logits)",
                                             it->first.as<std::string>()));
    }
    if (const auto& plan = root["fsdp_plan"]) {
      auto entries = [&](const YAML::Node& m, const char* what) {
        std::vector<std::pair<std::string, std::string>> out;
        if (!m.IsMap()) fail(file_, m, fmt::format("`fsdp_plan.{}` must map module patterns to strategies", what));
        for (auto it = m.begin(); it != m.end(); ++it) {
          const std::string strategy = str(it->second, "fsdp_plan strategy");
          if (strategy != "free_full_weight" && strategy != "keep_full_weight")
            fail(file_, it->second, fmt::format("expected free_full_weight or keep_full_weight, found '{}'", strategy));
          out.emplace_back(it->first.as<std::string>(), strategy);
        }
        return out;
      };
      for (auto it = plan.begin(); it != plan.end(); ++it) {
        const std::string key = it->first.as<std::string>();
        if (key == "base") a.fsdp_plan_base = entries(it->second, "base");
        else if (key == "head") a.fsdp_plan_head = entries(it->second, "head");
        else fail(file_, it->first, fmt::format("unknown fsdp_plan field '{}' (expected base, head)", key));
      }
    }
    if (const auto& tied = root["tied_weights"]) {
      for (auto it = tied.begin(); it != tied.end(); ++it)
        a.tied_weights.push_back({it->first.as<std::string>(), str(it->second, "tied weight target")});
    }
    if (const auto& ck = root["checkpoint"]) {
      if (const auto& renames = ck["renames"]) {
        for (const auto& r : renames) {
          CheckpointRename rn{str(r["from"], "rename from"), str(r["to"], "rename to"), std::nullopt};
          if (r["if"]) rn.condition = expr(r["if"], "rename condition");
          a.renames.push_back(std::move(rn));
        }
      }
      if (const auto& ignore = ck["ignore_unexpected"])
        for (const auto& x : ignore) a.ignore_unexpected.push_back(str(x, "ignore_unexpected"));
    }
    classes(root["classes"], a.classes);
    return a;
  }

 private:
  std::string file_;
};

std::vector<std::pair<std::string, std::string>> vars_of(const YAML::Node& root) {
  std::vector<std::pair<std::string, std::string>> vars;
  if (const auto& v = root["vars"])
    for (auto it = v.begin(); it != v.end(); ++it)
      vars.emplace_back(it->first.as<std::string>(), it->second.as<std::string>());
  return vars;
}

YAML::Node resolve_extends(const std::string& name, const std::map<std::string, RawFile>& raw,
                           std::vector<std::string>& stack) {
  const RawFile& f = raw.at(name);
  if (!f.root["extends"]) return f.root;
  const std::string parent = f.root["extends"].as<std::string>();
  if (!raw.count(parent)) fail(f.path, f.root["extends"], fmt::format("extends unknown file '{}'", parent));
  if (std::find(stack.begin(), stack.end(), parent) != stack.end())
    fail(f.path, f.root["extends"], fmt::format("`extends` cycle through '{}'", parent));
  stack.push_back(name);
  YAML::Node base = resolve_extends(parent, raw, stack);
  stack.pop_back();
  return merge(base, f.root);
}

Diagnostic rules_diag(const RulesError& e) {
  Diagnostic d;
  d.code = "REG001";
  d.severity = Severity::error;
  d.location.file = e.file;
  if (e.mark.line >= 0) {
    d.location.line = e.mark.line + 1;
    d.location.column = e.mark.column + 1;
  }
  d.message = e.message;
  d.exit_code = ExitCode::bad_rules;
  return d;
}

}  // namespace

std::optional<Registry> Registry::load_for(const fs::path& rules_dir, const ModelConfig& config,
                                           DiagnosticSink& sink) {
  std::vector<std::string> wanted{config.model_type};
  if (config.raw.contains("text_config") && config.raw["text_config"].is_object() &&
      config.raw["text_config"].contains("model_type") && config.raw["text_config"]["model_type"].is_string())
    wanted.push_back(config.raw["text_config"]["model_type"].get<std::string>());
  return load(rules_dir, sink, wanted);
}

std::optional<Registry> Registry::load(const fs::path& rules_dir, DiagnosticSink& sink,
                                       const std::vector<std::string>& wanted) {
  const fs::path dir = rules_dir / "models";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    Diagnostic d;
    d.code = "REG002";
    d.location.file = dir.string();
    d.message = fmt::format("expected the architecture registry at {}, found no directory", dir.string());
    d.help = "pass --rules DIR or set SHARDCHECK_RULES to the rules/ directory of shardcheck";
    d.exit_code = ExitCode::bad_rules;
    sink.report(std::move(d));
    return std::nullopt;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  Registry reg;
  std::map<std::string, RawFile> raw;  // keyed by file stem
  bool ok = true;
  auto parse = [&](const fs::path& path) {
    const std::string stem = path.stem().string();
    if (raw.count(stem)) return;
    try {
      raw[stem] = RawFile{path.string(), YAML::LoadFile(path.string())};
    } catch (const YAML::Exception& e) {
      sink.report(rules_diag({path.string(), e.mark, e.msg}));
      ok = false;
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
    for (std::string stem : wanted) {
      for (int depth = 0; !stem.empty() && depth < 16; ++depth) {
        parse(dir / (stem + ".yaml"));
        auto it = raw.find(stem);
        if (it == raw.end() || !it->second.root["extends"]) break;
        stem = it->second.root["extends"].as<std::string>();
        if (!fs::is_regular_file(dir / (stem + ".yaml"), ec)) break;  // reported by resolve_extends
      }
    }
  } else {
    for (const auto& path : files) parse(path);
  }
  for (const auto& [stem, file] : raw) {
    try {
      if (stem.starts_with("_")) {  // shared class libraries (torch.nn builtins and the like)
        Reader(file.path).classes(file.root["classes"], reg.builtins_);
        continue;
      }
      std::vector<std::string> stack;
      const YAML::Node resolved = resolve_extends(stem, raw, stack);
      if (resolved["abstract"] && resolved["abstract"].as<bool>()) continue;  // a template for `extends`
      // A new handle, not `resolved = ...`: for a file without `extends`, `resolved` IS its raw root,
      // and yaml-cpp's Node::operator= would rewrite that shared node in place, so every file that
      // extends it later would inherit its {P} already substituted.
      const YAML::Node merged = substitute(resolved, vars_of(resolved));
      ArchSpec arch = Reader(file.path).arch(merged);
      // One file per model_type, named after it: lookups and partial loading rely on it.
      if (arch.model_type != stem)
        throw RulesError{file.path, file.root["model_type"] ? file.root["model_type"].Mark() : file.root.Mark(),
                         fmt::format("expected model_type '{}' (the file name), found '{}'", stem, arch.model_type)};
      if (reg.archs_.count(arch.model_type)) {
        sink.report(rules_diag({file.path, merged["model_type"].Mark(),
                                fmt::format("model_type '{}' is defined twice", arch.model_type)}));
        ok = false;
        continue;
      }
      reg.archs_[arch.model_type] = std::move(arch);
    } catch (const RulesError& e) {
      sink.report(rules_diag(e));
      ok = false;
    } catch (const YAML::Exception& e) {
      sink.report(rules_diag({file.path, e.mark, e.msg}));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return reg;
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
