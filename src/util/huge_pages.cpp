#include "util/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>
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

void* HugePageResource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment > kHugePageBytes) throw std::bad_alloc();
  void* p = map_huge(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void HugePageResource::do_deallocate(void* p, std::size_t bytes, std::size_t /*alignment*/) { unmap_huge(p, bytes); }

}  // namespace shardcheck::util
