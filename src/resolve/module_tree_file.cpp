// `--module-tree tree.json` (shardcheck/module_tree_file.hpp): the schema of docs/module-tree.md read
// into the ModuleTree the registry path builds. Every field is checked where it is read; the first
// problem stops the read with its line and column, the field's place in the schema, what was
// expected and what was found.
#include "shardcheck/module_tree_file.hpp"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "load/located_json.hpp"
#include "resolve/tree_internal.hpp"
#include "shardcheck/finding_codes.hpp"
#include "util/bounded_read.hpp"

namespace shardcheck {
namespace {
// Named inside the anonymous namespace: a unity batch (scripts/build.sh) shares one translation unit
// with other loaders' helpers of the same names.
namespace tree_file {

using detail::LocatedJson;
using JType = LocatedJson::Type;

constexpr std::size_t kMaxBytes = std::size_t{512} << 20;

constexpr std::size_t kMaxDepth = 64;                      // the schema needs 6; a config dict a few more
constexpr std::int64_t kMaxNumel = std::int64_t{1} << 50;  // per tensor: far above any real one

// One finding that stops the read.
struct Bad {
  const char* code;
  std::size_t offset;
  std::string message;
};

// torch dtype names (str(torch.float32) without "torch.") to the dtype set of shardcheck/dtype.hpp.
std::optional<DType> torch_dtype(std::string_view n) {
  if (n.starts_with("torch.")) n.remove_prefix(6);
  static constexpr std::array<std::pair<std::string_view, DType>, 17> kNames{{
      {"float32", DType::F32},
      {"bfloat16", DType::BF16},
      {"float16", DType::F16},
      {"float64", DType::F64},
      {"int8", DType::I8},
      {"uint8", DType::U8},
      {"int16", DType::I16},
      {"int32", DType::I32},
      {"int64", DType::I64},
      {"uint16", DType::U16},
      {"uint32", DType::U32},
      {"uint64", DType::U64},
      {"bool", DType::BOOL},
      {"float8_e4m3fn", DType::F8_E4M3},
      {"float8_e5m2", DType::F8_E5M2},
      {"complex64", DType::C64},
      {"float8_e8m0fnu", DType::F8_E8M0},
  }};
  for (const auto& [name, d] : kNames)
    if (name == n) return d;
  return std::nullopt;
}

// "the string \"abc\"", "the integer 3", "an array", ... for "found ...".
std::string found(const LocatedJson& v) {
  if (v.type == JType::string) {
    std::string shown = v.text.size() > 60 ? v.text.substr(0, 60) + "..." : v.text;
    return fmt::format("the string \"{}\"", shown);
  }
  if (v.type == JType::number && v.integer) return fmt::format("the integer {}", v.int_value);
  if (v.type == JType::boolean) return v.boolean ? "true" : "false";
  return v.type_name();
}

// A string's characters as Python's list(str) gives them: one per code point.
std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = 1;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xf0)
      n = 4;
    else if (c >= 0xe0)
      n = 3;
    else if (c >= 0xc0)
      n = 2;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

class TreeReader {
 public:
  TreeReader(const ResolveOptions& options) : options_(options) {}

  ModuleTree read(const LocatedJson& root) {
    expect(root, JType::object, "the file", "an object (docs/module-tree.md)");
    header(root);
    ModuleTree tree;
    tree.transformers = options_.transformers;
    producer(root, tree);
    const LocatedJson& model = member(root, "model", "");
    expect(model, JType::object, "model", "an object");
    modules(member(root, "modules", ""), tree);
    classes(root, tree);
    model_fields(model, tree);
    tied(tree);
    return tree;
  }

 private:
  [[noreturn]] static void bad(const LocatedJson& at, const std::string& where, std::string_view expected,
                               const char* code = "TREE003") {
    throw Bad{code, at.offset, fmt::format("{}: expected {}, found {}", where, expected, found(at))};
  }

  static void expect(const LocatedJson& v, JType type, const std::string& where, std::string_view expected) {
    if (v.type != type) bad(v, where, expected);
  }

  static std::string field(const std::string& where, std::string_view key) {
    return where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
  }

  // A required member of `obj` (an object already checked).
  static const LocatedJson& member(const LocatedJson& obj, std::string_view key, const std::string& where) {
    if (const LocatedJson* v = obj.find(key)) return *v;
    throw Bad{"TREE003", obj.offset,
              fmt::format("{}: expected a member \"{}\", found an object without it",
                          where.empty() ? "the file" : where, key)};
  }

  // An optional member: nullptr when absent or null.
  static const LocatedJson* optional(const LocatedJson& obj, std::string_view key) {
    const LocatedJson* v = obj.find(key);
    return v && v->type != JType::null ? v : nullptr;
  }

  static const std::string& text(const LocatedJson& v, const std::string& where,
                                 std::string_view expected = "a string") {
    expect(v, JType::string, where, expected);
    return v.text;
  }

  static bool flag(const LocatedJson& v, const std::string& where) {
    expect(v, JType::boolean, where, "true or false");
    return v.boolean;
  }

  void header(const LocatedJson& root) {
    const LocatedJson& format = member(root, "format", "");
    if (format.type != JType::string || format.text != "shardcheck-module-tree")
      bad(format, "format", "\"shardcheck-module-tree\"");
    const LocatedJson& version = member(root, "format_version", "");
    if (version.type != JType::number || !version.integer) bad(version, "format_version", "an integer");
    if (version.int_value != kModuleTreeFormatVersion)
      bad(version, "format_version",
          fmt::format("{} (the version this shardcheck reads; dump the model with the helper of the same release)",
                      kModuleTreeFormatVersion),
          "TREE004");
  }

  void producer(const LocatedJson& root, ModuleTree& tree) {
    const LocatedJson* p = optional(root, "producer");
    if (!p) return;
    expect(*p, JType::object, "producer", "an object of versions");
    for (const auto& [key, v] : p->members)
      if (v.type != JType::null) text(v, field("producer", key), "a version string or null");
    if (const LocatedJson* t = optional(*p, "transformers"))
      if (const auto v = Version::parse(t->text)) tree.transformers = *v;
  }

  std::vector<std::int64_t> shape(const LocatedJson& v, const std::string& where, std::int64_t& numel) {
    expect(v, JType::array, where, "an array of non-negative integers");
    std::vector<std::int64_t> out;
    numel = 1;
    for (const auto& d : v.items) {
      if (d.type != JType::number || !d.integer || d.int_value < 0) bad(d, where, "an array of non-negative integers");
      if (__builtin_mul_overflow(numel, d.int_value, &numel) || numel > kMaxNumel)
        bad(d, where, fmt::format("a tensor of at most 2^50 elements"));
      out.push_back(d.int_value);
    }
    return out;
  }

  DType dtype(const LocatedJson& v, const std::string& where) {
    const auto d = torch_dtype(text(v, where, "a torch dtype name"));
    if (!d) bad(v, where, "a torch dtype name (float32, bfloat16, float16, int8, uint8, ...)");
    return *d;
  }

  // A parameter or (buffer) a buffer of module `m`: nullopt for a non-persistent buffer, which is
  // in neither parameters() nor the state_dict.
  std::optional<ParamInfo> tensor(const LocatedJson& v, const std::string& where, bool buffer) {
    expect(v, JType::object, where, "an object");
    ParamInfo p;
    p.name = text(member(v, "name", where), field(where, "name"));
    if (p.name.empty() || p.name.find('.') != std::string::npos)
      bad(member(v, "name", where), field(where, "name"), "a non-empty attribute name without '.'");
    p.shape = shape(member(v, "shape", where), field(where, "shape"), p.numel);
    p.dtype = dtype(member(v, "dtype", where), field(where, "dtype"));
    if (buffer) {
      p.buffer = true;
      p.requires_grad = false;
      if (!flag(member(v, "persistent", where), field(where, "persistent"))) return std::nullopt;
      return p;
    }
    p.requires_grad = flag(member(v, "requires_grad", where), field(where, "requires_grad"));
    if (const LocatedJson* t = optional(v, "tied_to")) {
      p.tied_to = text(*t, field(where, "tied_to"), "the full name of an earlier parameter, or null");
      tied_at_.push_back({t, field(where, "tied_to")});
    }
    return p;
  }

  void module(const LocatedJson& v, std::size_t i, ModuleTree& tree) {
    const std::string where = fmt::format("modules[{}]", i);
    expect(v, JType::object, where, "an object");
    const LocatedJson& path_v = member(v, "path", where);
    Module m;
    m.path = text(path_v, field(where, "path"));
    m.cls = text(member(v, "class", where), field(where, "class"));
    if (m.cls.empty()) bad(member(v, "class", where), field(where, "class"), "a class name");
    if (i == 0 && !m.path.empty()) bad(path_v, field(where, "path"), "\"\" (the root module comes first)");
    if (i > 0) {
      const std::size_t dot = m.path.rfind('.');
      m.name = dot == std::string::npos ? m.path : m.path.substr(dot + 1);
      if (m.name.empty() || m.path.front() == '.' || m.path.find("..") != std::string::npos)
        bad(path_v, field(where, "path"), "a dotted module path with no empty name");
      const auto parent = index_.find(dot == std::string::npos ? std::string() : m.path.substr(0, dot));
      if (parent == index_.end())
        bad(path_v, field(where, "path"), "a module whose parent is listed before it (pre-order, as named_modules())",
            "TREE005");
      m.parent = parent->second;
    }
    if (!index_.emplace(m.path, static_cast<int>(i)).second)
      bad(path_v, field(where, "path"), "each module path once", "TREE005");
    if (const LocatedJson* ps = optional(v, "parameters")) {
      expect(*ps, JType::array, field(where, "parameters"), "an array");
      for (std::size_t k = 0; k < ps->items.size(); ++k)
        m.params.push_back(*tensor(ps->items[k], fmt::format("{}.parameters[{}]", where, k), false));
    }
    if (const LocatedJson* bs = optional(v, "buffers")) {
      expect(*bs, JType::array, field(where, "buffers"), "an array");
      for (std::size_t k = 0; k < bs->items.size(); ++k)
        if (auto b = tensor(bs->items[k], fmt::format("{}.buffers[{}]", where, k), true)) m.params.push_back(*b);
    }
    for (const auto& p : m.params)
      if (!names_.emplace(qualified_name(m.path, p.name)).second)
        bad(v, where, fmt::format("each attribute once; '{}' is listed twice", p.name), "TREE005");
    if (m.parent >= 0) tree.modules[static_cast<std::size_t>(m.parent)].children.push_back(static_cast<int>(i));
    tree.modules.push_back(std::move(m));
  }

  void modules(const LocatedJson& v, ModuleTree& tree) {
    expect(v, JType::array, "modules", "an array of modules, the root first");
    if (v.items.empty()) bad(v, "modules", "at least the root module");
    for (std::size_t i = 0; i < v.items.size(); ++i) module(v.items[i], i, tree);
  }

  void classes(const LocatedJson& root, ModuleTree& tree) {
    for (const auto& m : tree.modules) tree.class_chains.emplace(m.cls, std::vector<std::string>{m.cls});
    const LocatedJson* c = optional(root, "classes");
    if (!c) return;
    expect(*c, JType::object, "classes", "an object of class name -> its MRO's class names");
    for (const auto& [cls, chain] : c->members) {
      const std::string where = field("classes", cls);
      expect(chain, JType::array, where, "an array of class names (type.__mro__), the class first");
      std::vector<std::string> names;
      for (const auto& n : chain.items) names.push_back(text(n, where, "an array of class names"));
      if (names.empty() || names.front() != cls)
        bad(chain, where, fmt::format("an array that starts with \"{}\"", cls));
      tree.class_chains[cls] = std::move(names);
    }
  }

  // A names attribute as the object held it: {"type": list|tuple|set|frozenset|str|none, "value": ...}.
  ModuleTree::HeldNoSplit held(const LocatedJson& v, const std::string& where, std::vector<std::string>& items) {
    expect(v, JType::object, where, "an object {\"type\": ..., \"value\": ...}");
    ModuleTree::HeldNoSplit h;
    const LocatedJson& type = member(v, "type", where);
    h.type = text(type, field(where, "type"));
    const LocatedJson& value = member(v, "value", where);
    items.clear();
    if (h.type == "none") {
      if (value.type != JType::null) bad(value, field(where, "value"), "null for type none");
    } else if (h.type == "str") {
      h.text = text(value, field(where, "value"), "a string for type str");
      items = code_points(h.text);
    } else if (h.type == "list" || h.type == "tuple" || h.type == "set" || h.type == "frozenset") {
      expect(value, JType::array, field(where, "value"), "an array of strings");
      for (const auto& n : value.items) items.push_back(text(n, field(where, "value"), "an array of strings"));
    } else {
      bad(type, field(where, "type"), "one of list, tuple, set, frozenset, str, none");
    }
    return h;
  }

  std::string module_path(const LocatedJson& model, std::string_view key) {
    const LocatedJson* v = optional(model, key);
    if (!v) return {};
    const std::string& path = text(*v, field("model", key), "a module path or null");
    if (!index_.count(path)) bad(*v, field("model", key), "the path of a module listed in modules", "TREE005");
    return path;
  }

  void plan(const LocatedJson& model, std::string_view key, std::vector<std::pair<std::string, std::string>>* out) {
    const LocatedJson* v = optional(model, key);
    if (!v) return;
    expect(*v, JType::object, field("model", key), "an object of module pattern -> strategy");
    for (const auto& [pattern, value] : v->members) {
      const std::string& s = text(value, field(field("model", key), pattern), "a string");
      if (out) out->emplace_back(pattern, s);
    }
  }

  void model_fields(const LocatedJson& model, ModuleTree& tree) {
    const LocatedJson& cls = member(model, "class", "model");
    tree.architecture = text(cls, "model.class");
    if (tree.architecture != tree.modules.front().cls)
      bad(cls, "model.class", fmt::format("the root module's class \"{}\"", tree.modules.front().cls), "TREE005");
    if (const LocatedJson* config = optional(model, "config")) {
      expect(*config, JType::object, "model.config", "an object (model.config.to_dict()) or null");
      if (const LocatedJson* t = optional(*config, "model_type")) tree.model_type = text(*t, "model.config.model_type");
      if (const LocatedJson* a = optional(*config, "_attn_implementation"))
        if (a->type == JType::string) tree.attn_implementation = a->text;
    }
    tree.base_model_path = module_path(model, "base_model_path");
    tree.input_embeddings = module_path(model, "input_embeddings");
    tree.output_embeddings = module_path(model, "output_embeddings");
    tree.held_no_split =
        held(member(model, "no_split_modules", "model"), "model.no_split_modules", tree.no_split_modules);
    if (const LocatedJson* d = optional(model, "no_split_modules_declared")) {
      expect(*d, JType::object, "model.no_split_modules_declared",
             "an object {\"class\": ..., \"value\": ...} or null");
      tree.held_no_split->declared_by =
          text(member(*d, "class", "model.no_split_modules_declared"), "model.no_split_modules_declared.class");
      tree.held_no_split->declared_text =
          text(member(*d, "value", "model.no_split_modules_declared"), "model.no_split_modules_declared.value");
    }
    if (const LocatedJson* k = optional(model, "keep_in_fp32_modules"))
      held(*k, "model.keep_in_fp32_modules", tree.keep_in_fp32_modules);
    if (const LocatedJson* k = optional(model, "keep_in_fp32_modules_strict"))
      held(*k, "model.keep_in_fp32_modules_strict", tree.keep_in_fp32_modules_strict);
    plan(model, "tp_plan", nullptr);  // checked; tensor parallelism from a dump is not simulated yet
    plan(model, "fsdp_plan", &tree.fsdp_plan);
  }

  // Each tied_to names an earlier parameter that owns its storage, of the same shape and dtype.
  void tied(ModuleTree& tree) {
    std::unordered_map<std::string, const ParamInfo*> owners;
    std::size_t next = 0;
    for (const auto& m : tree.modules)
      for (const auto& p : m.params) {
        if (p.buffer) continue;
        const std::string name = qualified_name(m.path, p.name);
        if (!p.tied_to.empty()) {
          const auto& [at, where] = tied_at_[next++];
          const auto it = owners.find(p.tied_to);
          if (it == owners.end())
            bad(*at, where, "the full name of an earlier parameter that is not itself tied", "TREE005");
          if (it->second->shape != p.shape || it->second->dtype != p.dtype)
            bad(*at, where, "a parameter of the same shape and dtype (one Parameter under two names)", "TREE005");
          tree.tied.push_back({name, p.tied_to});
          continue;
        }
        owners.emplace(name, &p);
      }
  }

  const ResolveOptions& options_;
  std::unordered_map<std::string, int> index_;                       // module path -> index
  std::unordered_set<std::string> names_;                            // parameter and buffer full names
  std::vector<std::pair<const LocatedJson*, std::string>> tied_at_;  // each tied_to, in tree order
};

}  // namespace tree_file
}  // namespace

std::optional<ModuleTree> parse_module_tree_file(std::string_view text, const std::string& path,
                                                 const ResolveOptions& options, DiagnosticSink& sink) {
  auto parsed = detail::parse_located_json(text, tree_file::kMaxDepth);
  if (const auto* e = std::get_if<detail::LocatedJsonError>(&parsed)) {
    const auto [line, column] = detail::line_column(text, e->offset);
    sink.report(finding("TREE002", in_file(path, line, column), "not valid JSON: " + e->message,
                        "write the file with `python3 -m shardcheck dump` or shardcheck.dump_model"));
    return std::nullopt;
  }
  try {
    ModuleTree tree = tree_file::TreeReader(options).read(std::get<detail::LocatedJson>(parsed));
    tree.config_path = path;
    tree.source_file = path;
    finalize_counts(tree);
    return tree;
  } catch (const tree_file::Bad& b) {
    const auto [line, column] = detail::line_column(text, b.offset);
    sink.report(finding(b.code, in_file(path, line, column), b.message, "docs/module-tree.md describes the schema"));
    return std::nullopt;
  }
}

std::optional<ModuleTree> load_module_tree_file(const std::string& path, const ResolveOptions& options,
                                                DiagnosticSink& sink) {
  std::error_code ec;
  std::ifstream in;
  if (!std::filesystem::is_directory(path, ec)) in.open(path, std::ios::binary);
  std::string text;
  const bool opened = in.is_open();
  if (!opened || !util::read_bounded(in, tree_file::kMaxBytes, text)) {
    const char* what =
        !opened
            ? (std::filesystem::is_directory(path, ec) ? "expected a module-tree file, found a directory"
                                                       : "cannot open the module-tree file")
            : (text.size() > tree_file::kMaxBytes ? "expected a module-tree file of at most 512 MiB, found a longer one"
                                                  : "cannot read the module-tree file");
    sink.report(
        finding("TREE001", in_file(path), what, "give the file `python3 -m shardcheck dump ... -o FILE` wrote"));
    return std::nullopt;
  }
  return parse_module_tree_file(text, path, options, sink);
}

}  // namespace shardcheck
