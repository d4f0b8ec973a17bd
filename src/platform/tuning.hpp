#pragma once
// src/platform/: what depends on the allocator's or the kernel's behaviour rather than on FSDP. Every
// piece here buys speed on a short-lived process (page faults on a VM cost more than the parsing, see
// docs/performance.md) and none changes a result: with SHARDCHECK_NO_TUNING set (to anything but "0")
// all of them stand aside and the program runs on plain malloc and copied files (ctest `tuning_off`
// compares the outputs both ways). A library embedding the core gets none of them unless it calls them.

namespace shardcheck::platform {

// False when SHARDCHECK_NO_TUNING is set to a value other than "" or "0"; read once per process.
bool tuning_enabled();

}  // namespace shardcheck::platform
