#include "shardcheck/load_tree.hpp"

#include "shardcheck/registry.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck {

LoadedTree load_module_tree(const std::string& model, bool config_only, const std::string& rules_dir,
                            const ResolveOptions& options, DiagnosticSink& sink, std::function<void()> alongside) {
  LoadedTree out;
  util::StageTimer timer("load: config.json");
  DiagnosticSink load_sink;
  // Declared before the load: the load's reading threads call the expansion's observer, so the
  // load must end (finish(), or its destructor's join) before the expansion goes.
  std::optional<TreeExpansion> expansion;
  auto load = ModelLoad::begin(model, config_only, load_sink, std::move(alongside));
  if (!load) {
    sink.append(load_sink);
    return out;
  }
  // While the checkpoint loads: the registry and the tree's expansion, which need only
  // config.json. Their diagnostics wait, to come out after the load's.
  timer.lap("resolve: registry (overlapped)");
  DiagnosticSink registry_sink, expand_sink;
  auto registry = Registry::load_for(rules_dir, load->config(), registry_sink);
  if (registry) expansion = expand_module_tree(load->config(), *registry, options, expand_sink);
  // Headers read from now on are paired with the tree's parameters on the reading threads.
  if (expansion)
    if (FileObserver* observer = expansion->checkpoint_observer()) load->observe(observer);
  timer.lap("load: wait for checkpoint");
  out.inputs = load->finish(load_sink);
  out.inputs_ok = !load_sink.has_errors();
  sink.append(load_sink);
  sink.append(registry_sink);
  if (!registry || !out.inputs_ok) return out;
  sink.append(expand_sink);
  timer.lap("resolve: complete tree");
  if (expansion) {
    const CheckpointMeta* ckpt = out.inputs->checkpoint ? &*out.inputs->checkpoint : nullptr;
    out.tree = complete_module_tree(std::move(*expansion), ckpt, sink);
  }
  return out;
}

}  // namespace shardcheck
