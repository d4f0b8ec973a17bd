#pragma once
// Whether large input files may be read by mapping them instead of copying them.
//
// Why: on the CI machine (a VM whose host takes back freed guest memory) every fresh page costs a
// fault on the host as well, so copying DeepSeek-V3's 8.9 MB index into new memory cost 3-5 ms of
// `inspect`'s critical path and up to 5x that on a first run; mapping the page cache costs ~1 ms.
//
// The catch: a mapped file that another process truncates while it is read raises SIGBUS. A
// library must not take over a process's signals, so mapping is off until a program opts in with
// allow_mapped_reads(), which installs a SIGBUS handler that ends the process with a clear message
// and exit code 3 (I/O error) instead of a crash. The shardcheck CLI opts in; embedders get copies.

namespace shardcheck::platform {

// Installs the SIGBUS handler (once) and lets PaddedFile map large files from then on. Call it
// from a program's main thread before loading anything; false when the handler cannot be set
// (mapping then stays off).
bool allow_mapped_reads();

bool mapped_reads_allowed();

}  // namespace shardcheck::platform
