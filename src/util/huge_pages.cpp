#include "util/huge_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <new>

namespace shardcheck::util {
namespace {

std::size_t round_up(std::size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

}  // namespace

void* map_huge(std::size_t bytes) {
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes);
  // Over-map by one huge page and trim both ends, so the region starts on a 2 MiB boundary: the
  // kernel only backs aligned 2 MiB spans with huge pages.
  void* raw = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t tail = start + size + kHugePageBytes - (aligned + size);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, size, MADV_HUGEPAGE);  // advice only: without it the memory works with small pages
  return p;
}

void unmap_huge(void* p, std::size_t bytes) {
  if (p) ::munmap(p, round_up(bytes == 0 ? 1 : bytes));
}

void use_huge_page_heap() {
#if defined(__GLIBC__)
  constexpr std::size_t kStep = std::size_t{32} << 20;
  static bool done = false;
  if (done) return;
  done = true;
  mallopt(M_TOP_PAD, static_cast<int>(kStep));            // grow the heap 32 MiB at a time,
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(4 * kStep)); // keep it when blocks are freed,
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kStep / 2)); // and serve big blocks from it too;
  mallopt(M_ARENA_MAX, 1);  // threads too (their own arenas would take small pages); the readers
                            // allocate little per file, so they rarely meet on its lock
  // Grow the heap now, then advise the new part; only pages touched later are ever backed.
  const auto old_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  void* volatile block = std::malloc(kStep / 4);  // volatile: the compiler may drop free(malloc(n))
  std::free(block);
  const auto new_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::uintptr_t start = (old_break + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (new_break > start) ::madvise(reinterpret_cast<void*>(start), new_break - start, MADV_HUGEPAGE);
#endif
}

void* HugePageResource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (bytes < kHugePageBytes) return ::operator new(bytes, std::align_val_t{alignment});
  if (alignment > kHugePageBytes) throw std::bad_alloc();
  void* p = map_huge(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void HugePageResource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (bytes < kHugePageBytes)
    ::operator delete(p, std::align_val_t{alignment});  // unsized: clang leaves sized delete off
  else
    unmap_huge(p, bytes);
}

}  // namespace shardcheck::util
