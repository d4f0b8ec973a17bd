#pragma once
// Shared pieces of the FSDP simulators (not public API).

#include <string>
#include <string_view>
#include <unordered_map>
#include <span>
#include <vector>

#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

// Every parameter registration of the tree (tied aliases included, buffers excluded) with the
// attributes FSDP looks at. `storage` identifies the Parameter object: an alias points at its target.
struct ParamEntry {
  std::string_view fqn;  // in the table's one block of names (a PeftModel has ~3,000 parameters)
  int module = -1;
  std::span<const std::int64_t> shape;  // the tree's ParamInfo::shape (the tree outlives the table)
  std::int64_t numel = 0;
  DType dtype = DType::F32;  // after accelerate's upcast (see ParamTable)
  bool requires_grad = true;
  bool unreached = false;    // ParamInfo::unreached: no gradient in a step
  bool ignored = false;      // under an ignored module: never flattened or sharded
  bool packed_4bit = false;  // a bitsandbytes Params4bit
  int storage = -1;          // the entry of the Parameter this name holds (a tied alias: its target's)
};

class ParamTable {
 public:
  ParamTable(const ModuleTree& tree, const FsdpSettings& s);
  // Entries view names_: a copy would view the original's, and a move of a short (inline) string
  // would leave them dangling.
  ParamTable(const ParamTable&) = delete;
  ParamTable& operator=(const ParamTable&) = delete;
  const ParamEntry& operator[](int i) const { return entries_[static_cast<std::size_t>(i)]; }
  std::size_t size() const { return entries_.size(); }
  // The entries of module m's own parameters: consecutive, as the table lists modules in order.
  struct EntryRange {
    struct iterator {
      int i;
      int operator*() const { return i; }
      iterator& operator++() {
        ++i;
        return *this;
      }
      bool operator==(const iterator&) const = default;
    };
    int first = 0, last = 0;
    iterator begin() const { return {first}; }
    iterator end() const { return {last}; }
    bool empty() const { return first == last; }
  };
  EntryRange by_module(int m) const {
    return {first_[static_cast<std::size_t>(m)], first_[static_cast<std::size_t>(m) + 1]};
  }
  bool ignored_module(int m) const { return ignored_module_[static_cast<std::size_t>(m)]; }

 private:
  void share_flags_of_tied_parameters();
  static void apply_preparation(ParamEntry& e, const ModuleTree& tree, const FsdpSettings& s);

  std::string names_;  // every entry's fqn, back to back; sized once, so the views stay valid
  std::vector<ParamEntry> entries_;
  std::vector<int> first_;  // module -> its first entry; first_[modules] = size()
  std::vector<bool> ignored_module_;
};

// The plan's record of ignored parameters (every storage once).
std::vector<IgnoredParam> ignored_params(const ParamTable& params);

ShardPlan plan_header(const FsdpSettings& s, int fsdp_version);

// Elements per alignment step of an FSDP1 flat parameter under use_orig_params=True (16 bytes of
// the compute dtype); flat_unit lays units out with it, and the size policy's rank slices follow it.
std::int64_t flat_alignment_numel(const FsdpSettings& s, DType unit_dtype);

// The unit's all-gather and reduce-scatter dtypes from its master dtype and the mixed precision.
void set_collective_dtypes(ShardUnit& unit, const FsdpSettings& s);

// How PyTorch prints a dtype in its errors ("torch.bfloat16").
std::string torch_dtype_name(DType d);
// What to do about parameters of two dtypes in one unit (FP8 checkpoints get their own advice).
// `names`: the parameters involved (a LoRA adapter among them gets PEFT advice).
std::string mixed_dtype_help(const ModuleTree& tree, const std::vector<DType>& dtypes,
                             const std::vector<std::string>& names = {});

// An FSDP1 unit from its owned parameters: flat layout with the version's padding, then the
// torch.chunk split over the shard group. Reports FlatParameter construction errors.
ShardUnit flat_unit(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan, const ParamTable& params,
                    int module, const std::vector<int>& owned, DiagnosticSink& sink);

void report_duplicated_tie(const ModuleTree& tree, const ShardUnit& unit, const FsdpSettings& s, DiagnosticSink& sink);

// Where a finding about a unit or a parameter is: the model's config.json, with its dotted path.
SourceLocation model_location(const ModuleTree& tree, const std::string& path);

}  // namespace shardcheck
