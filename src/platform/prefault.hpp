#pragma once
// Page faults are the largest cost of a short run on the machines this was measured on (a VM where
// each first touch of a page costs ~12 us, while MADV_POPULATE_WRITE backs pages at ~3 us each): a
// `shardcheck lint` of one file took ~60 heap faults, 0.7 ms of its ~5 ms.

#include <cstddef>

namespace shardcheck::platform {

// Grows the heap by about `bytes` now and backs those pages in one system call, so the run's first
// allocations do not fault one page at a time; the heap keeps them when blocks are freed. For a
// process that will allocate at least that much (a lint of one file uses ~250 KB). Advice only:
// where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) pages fault as usual. Not for
// processes that call use_huge_page_heap (platform/huge_pages.hpp).
void prefault_heap(std::size_t bytes);

}  // namespace shardcheck::platform
