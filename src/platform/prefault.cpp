#include "platform/prefault.hpp"

#include "platform/tuning.hpp"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdlib>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

namespace shardcheck::platform {

void prefault_heap(std::size_t bytes) {
#if defined(__GLIBC__)
  if (!tuning_enabled()) return;
  static bool done = false;
  if (done) return;
  done = true;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  mallopt(M_TOP_PAD, static_cast<int>(bytes));             // the next growth adds `bytes`,
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(4 * bytes));  // which free() then keeps
  const auto old_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  void* volatile block = std::malloc(mallinfo2().keepcost + page);  // volatile: keep free(malloc(n))
  std::free(block);
  const auto new_break = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::uintptr_t start = (old_break + page - 1) & ~(page - 1);
  if (new_break > start)
    // NOLINTNEXTLINE(performance-no-int-to-ptr): page arithmetic on the heap's break
    ::madvise(reinterpret_cast<void*>(start), new_break - start, MADV_POPULATE_WRITE);
#else
  (void)bytes;
#endif
}

}  // namespace shardcheck::platform
