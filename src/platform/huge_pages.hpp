#pragma once
// Anonymous memory backed by transparent huge pages, for the few large, short-lived buffers of a
// big checkpoint load (the index text, the tensor tables, their names).
//
// Why: shardcheck runs as a fresh process, so every page it writes is a page fault. On the CI
// machine (a VM) one 4 KiB fault costs about 12 us: touching 32 MiB of fresh malloc'd memory took
// 100 ms, the same memory in 2 MiB pages advised MADV_HUGEPAGE 2.2 ms (median of 5, after the
// first run). The load of DeepSeek-V3's 92k tensor descriptions spent more time in page faults
// than in parsing. The kernel's default policy on Debian is `madvise`, so huge pages come only to
// memory that asks for them; when it is `never`, or no huge page is free, the same calls still
// work with small pages.

#include <cstddef>
#include <memory_resource>

namespace shardcheck::platform {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// A 2 MiB-aligned anonymous mapping of at least `bytes` bytes (rounded up to whole huge pages),
// zero-filled, advised MADV_HUGEPAGE. nullptr when the mapping fails.
void* map_huge(std::size_t bytes);
// Releases a mapping from map_huge with the same `bytes`.
void unmap_huge(void* p, std::size_t bytes);

// Upstream for std::pmr::monotonic_buffer_resource: blocks of 2 MiB and more are whole map_huge
// mappings; smaller ones come from the heap, so that a small model's tables do not cost a 2 MiB
// page each (the monotonic resource asks for geometrically growing blocks, so a large table
// reaches huge pages after a few small blocks). Thread-safe as operator new is.
class HugePageResource final : public std::pmr::memory_resource {
 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

// From here on, the main heap grows in large steps and takes transparent huge pages, so the many
// small blocks of a large model's tree land in a few 2 MiB pages rather than in hundreds of 4 KiB
// page faults. For a short-lived process about to build large tables (inspect/plan/check), not
// for a library inside someone else's program: it sets process-wide malloc options. Equivalent
// to GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=..., which only the environment
// can set. DeepSeek-V3 inspect: 780 -> ~550 page faults, wall 51 -> 45 ms (medians of 15); with
// nothing written above the advised boundary before the advice, ~700 -> 225 faults, 44 -> 37 ms.
// Does nothing outside glibc.
void use_huge_page_heap();

// One region of tables: a monotonic (bump) allocator over huge-page blocks. Allocation is a
// pointer increment; nothing is freed until the arena goes, all at once. Not thread-safe.
class HugePageArena final : public std::pmr::memory_resource {
 public:
  explicit HugePageArena(std::size_t first_block = std::size_t{64} << 10) : bump_(first_block, &upstream_) {}
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override { return bump_.allocate(bytes, alignment); }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  HugePageResource upstream_;
  std::pmr::monotonic_buffer_resource bump_;
};

}  // namespace shardcheck::platform
