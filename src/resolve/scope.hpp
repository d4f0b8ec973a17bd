#pragma once
// Name scopes for evaluating registry expressions: config fields at the bottom, then each module's
// arguments and loop indices. Lookup walks outward (dynamic scoping: a layer index `i` is visible
// to every module inside that layer).

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
    if (auto it = index_.find(name); it != index_.end()) {
      vars_[it->second].second = std::move(v);
      return;
    }
    index_.emplace(name, vars_.size());
    vars_.emplace_back(name, std::move(v));
  }
  bool has_own(const std::string& name) const { return index_.count(name) != 0; }
  const Value* get_own(std::string_view name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &vars_[it->second].second;
  }
  const Value* find(std::string_view name) const {
    for (const Frame* f = this; f; f = f->parent_)
      if (const Value* v = f->get_own(name)) return v;
    return nullptr;
  }
  Lookup lookup() const {
    return [this](std::string_view name) { return find(name); };
  }

 private:
  const Frame* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace shardcheck
