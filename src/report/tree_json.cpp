// `inspect --format json`: the contract other tools read. Keep the documented names stable.
#include "report/json_writer.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {

std::string render_tree_json(const ModuleTree& tree, const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  out.reserve(tree.modules.size() * 160 + 1024);
  JsonWriter w(out);
  w.begin_object();
  w.key("model_type").value(tree.model_type);
  w.key("architecture").value(tree.architecture);
  w.key("transformers_version").value(tree.transformers.str());
  w.key("num_params").value(tree.num_params);
  w.key("num_tensors").value(tree.num_tensors);
  if (tree.peft) {
    w.key("trainable_params").value(tree.peft->trainable);
    w.key("adapter").value(tree.peft->adapter);
  }
  w.key("dtypes").begin_object();
  for (const auto& [dt, n] : tree.dtype_numel) w.key(dtype_name(dt)).value(n);
  w.end_object();
  w.key("from_checkpoint").value(tree.from_checkpoint);
  w.key("dequantized").value(tree.dequantized);
  w.key("classes_guessed").value(tree.classes_guessed);
  w.key("modules").begin_array();
  for (const auto& m : tree.modules) {
    w.begin_object();
    w.key("path").value(m.path);
    w.key("class").value(m.cls);
    w.key("num_params").value(m.total_numel);
    w.key("own_params").value(m.own_numel);
    w.key("params").begin_array();
    for (const auto& p : m.params) {
      w.begin_object();
      w.key("name").value(p.name);
      w.key("shape").array(p.shape);
      w.key("dtype").value(dtype_name(p.dtype));
      if (!p.tied_to.empty()) w.key("tied_to").value(p.tied_to);
      if (p.buffer) w.key("buffer").value(true);
      if (tree.peft && !p.buffer) w.key("requires_grad").value(p.requires_grad);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("tied").begin_array();
  for (const auto& t : tree.tied) w.begin_array().value(t.alias).value(t.target).end_array();
  w.end_array();
  w.key("no_split_modules").array(tree.no_split_modules);
  w.key("checkpoint_only").begin_object();
  w.key("tensors").value(tree.checkpoint_only_tensors);
  w.key("numel").value(tree.checkpoint_only_numel);
  w.end_object();
  write_diagnostics(w, diagnostics);
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace shardcheck
