#pragma once
// Name scopes for evaluating registry expressions: config fields at the bottom, then each module's
// arguments and loop indices. Lookup walks outward (dynamic scoping: a layer index `i` is visible
// to every module inside that layer).

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shardcheck/expr.hpp"

namespace shardcheck {

class Frame {
 public:
  explicit Frame(const Frame* parent = nullptr) : parent_(parent) {}
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  void set(const std::string& name, Value v) {
    if (const std::size_t i = own_index(name); i != kAbsent) {
      vars_[i].second = std::move(v);
      return;
    }
    vars_.emplace_back(name, std::move(v));
    if (vars_.size() == kScanned + 1)  // from now on looked up by hash: index all
      for (std::size_t i = 0; i < vars_.size(); ++i) index_.emplace(vars_[i].first, i);
    else if (vars_.size() > kScanned + 1)
      index_.emplace(name, vars_.size() - 1);
  }
  bool has_own(std::string_view name) const { return get_own(name) != nullptr; }
  const Value* get_own(std::string_view name) const {
    const std::size_t i = own_index(name);
    return i == kAbsent ? nullptr : &vars_[i].second;
  }
  const Value* find(std::string_view name) const {
    for (const Frame* f = this; f; f = f->parent_)
      if (const Value* v = f->get_own(name)) return v;
    return nullptr;
  }
  // This frame's own names and values, in the order they were first set.
  template <class F>
  void for_each_own(F&& f) const {
    for (const auto& [name, value] : vars_) f(name, value);
  }
  Lookup lookup() const {
    return [this](std::string_view name) { return find(name); };
  }

 private:
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

  // Without allocating: a module's frame holds a few arguments, scanned in order; the config's
  // (~100 fields) is hashed with the view itself. Every name an expression uses is looked up
  // through several frames, and the std::string key each probe used to build allocated for every
  // name longer than 15 characters (num_attention_heads, moe_intermediate_size, ...).
  std::size_t own_index(std::string_view name) const {
    if (vars_.size() <= kScanned) {
      for (std::size_t i = 0; i < vars_.size(); ++i)
        if (vars_[i].first == name) return i;
      return kAbsent;
    }
    auto it = index_.find(name);
    return it == index_.end() ? kAbsent : it->second;
  }

  struct ViewHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr std::size_t kScanned = 8;
  const Frame* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
  std::unordered_map<std::string, std::size_t, ViewHash, std::equal_to<>> index_;
};

}  // namespace shardcheck
