#include "platform/huge_pages.hpp"

#include "platform/tuning.hpp"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <new>

namespace shardcheck::platform {
namespace {

std::size_t round_up(std::size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

}  // namespace

void* map_huge(std::size_t bytes) {
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes);
  if (!tuning_enabled()) {  // plain small pages, same size (unmap_huge rounds alike)
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by one huge page and trim both ends, so the region starts on a 2 MiB boundary: the
  // kernel only backs aligned 2 MiB spans with huge pages.
  void* raw = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t tail = start + size + kHugePageBytes - (aligned + size);
  if (tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + size), tail);  // NOLINT(performance-no-int-to-ptr): page arithmetic
  void* p = reinterpret_cast<void*>(aligned);                 // NOLINT(performance-no-int-to-ptr): page arithmetic
  ::madvise(p, size, MADV_HUGEPAGE);  // advice only: without it the memory works with small pages
  return p;
}

void unmap_huge(void* p, std::size_t bytes) {
  if (p) ::munmap(p, round_up(bytes == 0 ? 1 : bytes));
}

void use_huge_page_heap() {
#if defined(__GLIBC__)
  if (!tuning_enabled()) return;
  constexpr std::size_t kStep = std::size_t{32} << 20;
  static bool done = false;
  if (done) return;
  done = true;
  mallopt(M_TOP_PAD, static_cast<int>(kStep));             // grow the heap 32 MiB at a time,
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(4 * kStep));  // keep it when blocks are freed,
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kStep / 2));  // and serve big blocks from it too;
  mallopt(M_ARENA_MAX, 1);  // threads too (their own arenas would take small pages); the readers
                            // allocate little per file, so they rarely meet on its lock
  // Grow the heap now, then advise the new part; only pages touched later are ever backed. A 2 MiB
  // span that gets one small page before the advice keeps small pages for good (its page table
  // exists), so nothing may be written above `start` until it is advised. Asking for a little
  // more than the free top of the heap makes malloc grow the heap by that plus M_TOP_PAD while
  // writing only just past the old break (the block's header, and the new top's after it).
  constexpr std::size_t kNudge = 4096;
  const auto old_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  void* volatile block = std::malloc(mallinfo2().keepcost + kNudge);  // volatile: keep free(malloc(n))
  std::free(block);
  const auto new_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::uintptr_t start = (old_break + 2 * kNudge + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (new_break <= start) return;
  ::madvise(reinterpret_cast<void*>(start), new_break - start, MADV_HUGEPAGE);  // NOLINT(performance-no-int-to-ptr)
  // malloc carves new blocks from the bottom of the free top (keepcost bytes below the break): the
  // next allocations, up to 2 MiB of them, would land below `start` in small pages, one 4 KiB
  // fault each. One block that is never touched nor freed fills that span, so new blocks begin in
  // huge pages; it costs address space, not memory.
  const std::uintptr_t top = new_break - mallinfo2().keepcost;
  constexpr std::uintptr_t kChunkHeader = 2 * sizeof(std::size_t);
  if (top + kChunkHeader < start) {
    [[maybe_unused]] static void* volatile filler = nullptr;  // kept for the life of the process
    filler = std::malloc(start - top - kChunkHeader);
  }
#endif
}

// With tuning off every block comes from operator new (tuning_enabled() is fixed for the process, so
// deallocation takes the same path).
void* HugePageResource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (bytes < kHugePageBytes || !tuning_enabled()) return ::operator new (bytes, std::align_val_t{alignment});
  if (alignment > kHugePageBytes) throw std::bad_alloc();
  void* p = map_huge(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void HugePageResource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (bytes < kHugePageBytes || !tuning_enabled())
    ::operator delete (p, std::align_val_t{alignment});  // unsized: clang leaves sized delete off
  else
    unmap_huge(p, bytes);
}

}  // namespace shardcheck::platform
