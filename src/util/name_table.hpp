#pragma once
// Hash tables keyed by names (tensor names, module paths), built for the ~100k names of a large
// checkpoint: open addressing, 8 bytes per slot, a hash that takes 8 bytes of the name per step.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardcheck::util {

// Whether two names are equal, inline, in 8-byte words (the last one overlapping): names compared
// here are tens of bytes, and a call to memcmp per compare (92k tensors, several compares each)
// cost more than the compare.
inline bool same_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  std::size_t n = a.size();
  auto word8 = [](const char* x) {
    std::uint64_t w;
    std::memcpy(&w, x, 8);
    return w;
  };
  if (n >= 8) {
    for (; n > 8; p += 8, q += 8, n -= 8)
      if (word8(p) != word8(q)) return false;
    return word8(p + n - 8) == word8(q + n - 8);
  }
  if (n >= 4) {
    std::uint32_t x, y, u, v;
    std::memcpy(&x, p, 4);
    std::memcpy(&y, q, 4);
    std::memcpy(&u, p + n - 4, 4);
    std::memcpy(&v, q + n - 4, 4);
    return x == y && u == v;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != q[i]) return false;
  return true;
}

// Open-addressing hash set of names, for the ~100k tensor names of a large checkpoint. It stores
// only a 32-bit hash and a 32-bit value per slot (8 bytes, so 100k names fit in 2 MB of cache);
// the names themselves stay where the caller keeps them, and `name_of(value)` fetches one for
// the final comparison. std::unordered_map spent most of its time in malloc and cache misses.
class NameTable {
 public:
  // `memory`: where the slots live (a big table belongs in a huge-page arena, see
  // platform/huge_pages.hpp); the heap by default.
  explicit NameTable(std::size_t expected_names = 0,
                     std::pmr::memory_resource* memory = std::pmr::get_default_resource())
      : slots_(memory) {
    reset(expected_names);
  }

  // Empties the table, keeping its memory when it is large enough.
  void reset(std::size_t expected_names) {
    std::size_t capacity = 16;
    while (capacity < 2 * expected_names) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
  }

  // Stores `value` under `name` unless the name is present. Returns the value stored under the
  // name and whether this call inserted it.
  template <class NameOf>
  std::pair<std::uint32_t, bool> try_emplace(std::string_view name, std::uint32_t value, const NameOf& name_of) {
    return try_emplace_hashed(name, hash(name), value, name_of);
  }

  template <class NameOf>
  std::optional<std::uint32_t> find(std::string_view name, const NameOf& name_of) const {
    return find_hashed(name, hash(name), name_of);
  }

  // The same, with `h` = hash(name) computed by the caller (who may have needed it anyway).
  template <class NameOf>
  std::pair<std::uint32_t, bool> try_emplace_hashed(std::string_view name, std::uint32_t h, std::uint32_t value,
                                                    const NameOf& name_of) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value_plus_one == 0) {
        s = Slot{h, value + 1};
        ++size_;
        return {value, true};
      }
      if (s.hash == h && same_text(name_of(s.value_plus_one - 1), name)) return {s.value_plus_one - 1, false};
    }
  }

  template <class NameOf>
  std::optional<std::uint32_t> find_hashed(std::string_view name, std::uint32_t h, const NameOf& name_of) const {
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value_plus_one == 0) return std::nullopt;
      if (s.hash == h && same_text(name_of(s.value_plus_one - 1), name)) return s.value_plus_one - 1;
    }
  }

  // Tensor names are long and share prefixes ("model.layers.12.mlp.experts.7."), so the hash
  // takes 8 bytes per step; std::hash (murmur with a byte-wise tail) cost three times as much.
  static std::uint32_t hash(std::string_view s) { return fold(hash64(s)); }
  // The table's hash is these 64 bits folded; callers that keep a 64-bit hash of a name (to
  // compare names across tables) derive the table's from it.
  static std::uint32_t fold(std::uint64_t h) { return static_cast<std::uint32_t>(h ^ (h >> 32)); }
  static std::uint64_t hash64(std::string_view s) {
    const char* p = s.data();
    std::size_t n = s.size();
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    auto mix = [&h](std::uint64_t word) {
      h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    };
    for (; n >= 8; p += 8, n -= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);
      mix(word);
    }
    std::uint64_t tail = 0;
    if (n) std::memcpy(&tail, p, n);
    mix(tail);
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 29);
  }

 private:
  struct Slot {
    std::uint32_t hash = 0;
    std::uint32_t value_plus_one = 0;  // 0 marks an empty slot
  };
  void rehash(std::size_t capacity) {
    std::pmr::vector<Slot> old(capacity, slots_.get_allocator());
    old.swap(slots_);
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.value_plus_one == 0) continue;
      std::size_t i = s.hash & mask_;
      while (slots_[i].value_plus_one != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::pmr::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

// A map from names to values that owns its keys: NameTable over a vector of (key, value). For
// the module paths of a tree, looked up once per checkpoint tensor; std::unordered_map<std::string>
// spent most of that time hashing (std::hash reads a byte at a time at the tail) and chasing nodes.
template <class V>
class NameIndex {
 public:
  explicit NameIndex(std::size_t expected = 0) : table_(expected) { entries_.reserve(expected); }

  // Inserts unless the key is present (the first value stays, as with std::map::emplace).
  // Returns the value under the key and whether it was inserted.
  std::pair<V*, bool> try_emplace(std::string key, V value) {
    const auto next = static_cast<std::uint32_t>(entries_.size());
    auto [at, inserted] = table_.try_emplace(key, next, name_of());
    if (inserted) entries_.emplace_back(std::move(key), std::move(value));
    return {&entries_[at].second, inserted};
  }

  const V* find(std::string_view key) const {
    const auto at = table_.find(key, name_of());
    return at ? &entries_[*at].second : nullptr;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  auto name_of() const {
    return [this](std::uint32_t i) { return std::string_view(entries_[i].first); };
  }
  NameTable table_;
  std::vector<std::pair<std::string, V>> entries_;
};

}  // namespace shardcheck::util
