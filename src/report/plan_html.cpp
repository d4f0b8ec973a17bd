// `plan --format html`: one self-contained page (no network, no external file) to look at a plan:
// the verdict, a stacked bar per rank against the GPU's memory, the findings with their fixes, the
// FSDP units, the module tree with each unit marked, and the settings with where each came from.
// Every number is the plan's own (the JSON contract, embedded as it is, feeds the settings table);
// nothing is computed here but widths for drawing.
#include <fmt/format.h>

#include <algorithm>

#include "shardcheck/report.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck {
namespace {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON inside <script>: only "</" could end the element early.
std::string script_safe(std::string s) {
  for (std::size_t at = 0; (at = s.find("</", at)) != std::string::npos; at += 3) s.replace(at, 2, "<\\/");
  return s;
}

// The verdict for a reader: its name (the JSON's and the CSS class's) with spaces ("does not fit").
std::string verdict_text(FitVerdict v) {
  std::string text = verdict_name(v);
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

// Settings FSDP2 never reads (accelerate utils/dataclasses.py v1.14.0: sharding_strategy gives way to
// reshard_after_forward, use_orig_params is "obsolete in FSDP2", backward_prefetch "is not supported in
// FSDP2"): an FSDP2 page leaves them out of its settings table.
constexpr const char* kFsdp1OnlySettings = R"(["sharding_strategy","use_orig_params","backward_prefetch"])";

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1200px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.verdict{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:600}
.fits{background:#d9f2e1;color:#11643a}.fits_without_activations{background:#fff1cc;color:#7a5300}
.does_not_fit{background:#fddcdc;color:#8c1d1d}.withheld{background:#e6e6ef;color:#3b3b55}
.may_not_fit{background:#fff1cc;color:#7a5300}.not_estimated{background:#e6e6ef;color:#3b3b55}
.rank{display:flex;align-items:center;margin:3px 0}.rank .label{width:96px;font-variant-numeric:tabular-nums}
.bar{position:relative;flex:1;height:18px;background:#f2f3f7;border-radius:3px;overflow:hidden}
.seg{position:absolute;top:0;height:100%}.gpu{position:absolute;top:0;bottom:0;width:3px;background:#d00000;box-shadow:0 0 0 1px #fff}
.total{width:140px;text-align:right;font-variant-numeric:tabular-nums}
.parts{margin:0 140px 6px 96px;font-size:12px;color:#4a5165}.parts i{display:inline-block;width:8px;height:8px;margin:0 3px 0 8px}
.axis .scale{position:relative;flex:1;height:16px;border-top:1px solid #9aa0b0;font-size:11px;color:#4a5165}
.axis .tick{position:absolute;top:0;transform:translateX(-50%);white-space:nowrap}.axis .tick:first-child{transform:none}
.axis .tick:last-child{transform:translateX(-100%)}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
table{border-collapse:collapse;width:100%}td,th{padding:3px 8px;border-bottom:1px solid #e4e6ee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.error{color:#8c1d1d}.warning{color:#7a5300}.note{color:#3b3b55}
pre{background:#f7f8fb;padding:10px;overflow:auto;font-size:12px}code{font-size:12px}
)css";

struct Part {
  const char* name;
  const char* color;
  std::uint64_t RankMemory::*field;
};
constexpr Part kParts[] = {
    {"parameters", "#3f6fd8", &RankMemory::params},       {"gradients", "#6aa84f", &RankMemory::grads},
    {"optimizer", "#e69138", &RankMemory::optimizer},     {"buffers", "#8e7cc3", &RankMemory::buffers},
    {"quant state", "#76a5af", &RankMemory::quant_state}, {"unsharded (transient)", "#c27ba0", &RankMemory::transient},
    {"activations", "#f1c232", &RankMemory::activations}, {"ignored", "#999999", &RankMemory::ignored}};

// The bar's scale, printed: 0, a quarter, half, three quarters and all of `scale` bytes.
void scale_axis(std::string& out, std::uint64_t scale) {
  out += "<div class=\"rank axis\"><span class=\"label\">scale</span><span class=\"scale\">";
  for (int q = 0; q <= 4; ++q)
    out += fmt::format("<span class=\"tick\" style=\"left:{}%\">{}</span>", q * 25,
                       human_bytes(scale / 4 * static_cast<std::uint64_t>(q) + (q == 4 ? scale % 4 : 0)));
  out += "</span><span class=\"total\"></span></div>\n";
}

// Each segment's size as text under its bar: a tooltip is no way to read numbers (nor to print them).
std::string part_sizes(const RankMemory& r) {
  std::string out = "<div class=\"parts\">";
  for (const Part& p : kParts) {
    const std::uint64_t b = r.*(p.field);
    if (b == 0) continue;
    out += fmt::format("<span data-part=\"{}\"><i style=\"background:{}\"></i>{} {}</span>", p.name, p.color, p.name,
                       human_bytes(b));
  }
  return out + "</div>\n";
}

void memory_section(std::string& out, const MemoryEstimate& m) {
  out += "<h2>Memory per rank</h2>\n<div class=\"legend\">";
  for (const Part& p : kParts) out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", p.color, p.name);
  out += "</div>\n";
  // The scale: the GPU's memory, or the largest rank when that is over it.
  std::uint64_t scale = m.gpu_memory;
  for (const auto& r : m.ranks) scale = std::max(scale, r.total());
  if (scale == 0) scale = 1;
  auto pct = [&](std::uint64_t b) { return 100.0 * static_cast<double>(b) / static_cast<double>(scale); };
  scale_axis(out, scale);
  // Consecutive ranks holding the same bytes in every part share one bar ("ranks 0-63").
  auto same = [](const RankMemory& a, const RankMemory& b) {
    for (const Part& p : kParts)
      if (a.*(p.field) != b.*(p.field)) return false;
    return true;
  };
  for (std::size_t i = 0; i < m.ranks.size();) {
    std::size_t j = i + 1;
    while (j < m.ranks.size() && same(m.ranks[i], m.ranks[j])) ++j;
    const RankMemory& r = m.ranks[i];
    const int last = m.ranks[j - 1].rank;
    const std::string label =
        last == r.rank ? fmt::format("rank {}", r.rank) : fmt::format("ranks {}-{}", r.rank, last);
    i = j;
    out += fmt::format(
        "<div class=\"rank\" data-first-rank=\"{}\" data-last-rank=\"{}\" data-total=\"{}\">"
        "<span class=\"label\">{}</span><span class=\"bar\">",
        r.rank, last, r.total(), label);
    double left = 0;
    for (const Part& p : kParts) {
      const std::uint64_t b = r.*(p.field);
      if (b == 0) continue;
      out += fmt::format(
          "<span class=\"seg\" style=\"left:{:.4f}%;width:{:.4f}%;background:{}\" "
          "title=\"{}: {} ({} bytes)\" data-part=\"{}\" data-bytes=\"{}\"></span>",
          left, pct(b), p.color, p.name, human_bytes(b), b, p.name, b);
      left += pct(b);
    }
    out += fmt::format(
        "<span class=\"gpu\" style=\"left:{:.4f}%\" title=\"GPU memory {}\"></span></span>"
        "<span class=\"total\">{}</span></div>\n",
        std::min(pct(m.gpu_memory), 99.8), human_bytes(m.gpu_memory), human_bytes(r.total()));
    out += part_sizes(r);
  }
  out += fmt::format("<p>GPU memory {} ({} bytes); peak {} on rank {}{}.</p>\n", gpu_label(m), m.gpu_memory,
                     human_bytes(m.peak), m.peak_rank,
                     m.activations.available ? "" : "; activations not estimated (give --seq-len and --micro-batch)");
}

void findings_section(std::string& out, const std::vector<Diagnostic>& diagnostics) {
  out += fmt::format("<h2>Findings ({})</h2>\n", diagnostics.size());
  if (diagnostics.empty()) {
    out += "<p>None.</p>\n";
    return;
  }
  out += "<table><tr><th>code</th><th>where</th><th>what</th></tr>\n";
  for (const auto& d : diagnostics) {
    std::string where = d.location.file;
    if (d.location.line > 0) where += fmt::format(":{}", d.location.line);
    if (d.location.model_path) where += " (" + module_label(*d.location.model_path) + ")";
    out += fmt::format("<tr class=\"{}\"><td><code>{}</code> {}</td><td><code>{}</code></td><td>{}{}</td></tr>\n",
                       severity_name(d.severity), escape(d.code), severity_name(d.severity), escape(where),
                       escape(d.message), d.help.empty() ? "" : "<br><b>fix:</b> " + escape(d.help));
  }
  out += "</table>\n";
}

// The replayed step's peak (docs/step-peak.md): its moment and what is alive then, as the text plan prints it.
void step_peak_section(std::string& out, const StepPeak& step) {
  if (!step.available) return;
  out += fmt::format("<p id=\"step-peak\">Peak of a training step: <b>{}</b> at {} (rank {}):</p>\n<table>",
                     human_bytes(step.peak.total()), escape(step.peak.name), step.rank);
  for (const StepPart& p : step.peak.parts)
    out += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>", escape(p.what), human_bytes(p.bytes));
  out += "</table>\n";
}

void units_section(std::string& out, const ShardPlan& plan) {
  out += fmt::format(
      "<details><summary><h2 style=\"display:inline\">{} {} ({})</h2></summary>\n<table>"
      "<tr><th>unit</th><th>class</th><th>elements</th><th>per rank</th><th>padding</th>"
      "<th>dtype</th><th>trains</th></tr>\n",
      plan.units.size(), plan.fsdp_version == 2 ? "fully_shard groups" : "FSDP units", strategy_name(plan.strategy));
  for (const auto& u : plan.units) {
    std::int64_t pad = 0;
    for (auto p : u.rank_pad) pad = std::max(pad, p);
    out += fmt::format(
        "<tr data-unit=\"{}\"><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
        escape(u.path), escape(module_label(u.path)), escape(u.cls), fmt::group_digits(u.numel),
        fmt::group_digits(u.shard_numel), pad == 0 ? std::string("none") : fmt::format("{}", fmt::group_digits(pad)),
        dtype_name(u.dtype), u.gets_grad ? "yes" : "no");
  }
  out += "</table></details>\n";
}

}  // namespace

std::string render_plan_html(const ModuleTree& tree, const ShardPlan& plan, const FsdpSettings& settings,
                             const MemoryEstimate& memory, const CommVolume& comm,
                             const std::vector<Diagnostic>& diagnostics) {
  const PeftSummary* peft = tree.peft ? &*tree.peft : nullptr;
  std::string out;
  out.reserve(1 << 16);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += fmt::format("<title>shardcheck plan: {}</title><style>{}</style></head><body>\n", escape(tree.architecture),
                     kStyle);
  out += fmt::format("<h1>{} <small>({}, transformers {} layout)</small></h1>\n", escape(tree.architecture),
                     escape(tree.model_type), tree.transformers.str());
  out += fmt::format(
      "<p>{} parameters ({}); FSDP{} {} over {} rank(s), shard groups of {}. "
      "<span class=\"verdict {}\" id=\"verdict\">{}</span></p>\n",
      fmt::group_digits(tree.num_params), human_count(tree.num_params), plan.fsdp_version, strategy_name(plan.strategy),
      plan.world_size, plan.shard_group, verdict_name(memory.verdict), verdict_text(memory.verdict));
  if (!memory.verdict_reason.empty()) out += "<p>" + escape(memory.verdict_reason) + "</p>\n";
  if (peft) out += "<p>" + escape(peft_trainable_line(peft->adapter, peft->trainable, peft->total)) + "</p>\n";
  memory_section(out, memory);
  step_peak_section(out, memory.step);
  out += fmt::format(
      "<p>Communication per step per rank: all-gather {} ({} calls), reduce-scatter {} ({} calls), "
      "all-reduce {} ({} calls).</p>\n",
      human_bytes(comm.total.all_gather), comm.total.all_gathers, human_bytes(comm.total.reduce_scatter),
      comm.total.reduce_scatters, human_bytes(comm.total.all_reduce), comm.total.all_reduces);
  findings_section(out, diagnostics);
  units_section(out, plan);
  out += "<details><summary><h2 style=\"display:inline\">Module tree</h2></summary>\n<pre>";
  out += escape(render_plan_tree_text(tree, plan));
  out += "</pre></details>\n";
  out += "<h2>Settings</h2>\n<table id=\"settings\"><tr><th>setting</th><th>value</th><th>from</th></tr></table>\n";
  // The JSON contract, as `plan --format json` prints it: the settings table is read from it.
  out += "<script type=\"application/json\" id=\"plan-json\">";
  out += script_safe(render_plan_json(plan, settings, memory, comm, diagnostics, peft));
  out +=
      "</script>\n<script>\n"
      "const plan = JSON.parse(document.getElementById('plan-json').textContent);\n"
      "const table = document.getElementById('settings');\n"
      "const fsdp2 = plan.settings.fsdp_version && plan.settings.fsdp_version.value === 2;\n"
      "const fsdp1Only = " +
      std::string(kFsdp1OnlySettings) +
      ";\n"
      "// A value as it reads: text unquoted, a list comma-separated, nothing as none.\n"
      "const shown = (v) => v === null ? 'none' : Array.isArray(v) ? v.join(', ') :\n"
      "    typeof v === 'object' ? JSON.stringify(v) : String(v);\n"
      "for (const [name, s] of Object.entries(plan.settings)) {\n"
      "  if (fsdp2 && fsdp1Only.includes(name)) continue;\n"
      "  const row = table.insertRow();\n"
      "  for (const text of [name, shown(s.value), s.source]) row.insertCell().textContent = text;\n"
      "}\n"
      "document.body.dataset.renderedMs = performance.now().toFixed(1);\n"
      "</script>\n</body></html>\n";
  return out;
}

}  // namespace shardcheck
