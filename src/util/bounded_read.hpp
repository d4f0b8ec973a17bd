#pragma once
// Reading a whole stream with an upper bound. A file whose size the file system does not tell (a
// pipe as in `--adapter <(...)`, /dev/stdin, a /proc file) is read until its end, and `/dev/zero`
// has none: without a bound a mistyped path reads until memory runs out.

#include <cstddef>
#include <istream>
#include <string>

namespace shardcheck::util {

// Appends what `in` holds to `out`, in chunks, and stops once `out` holds more than `max_bytes`.
// False when it stopped there (the stream holds more than max_bytes) or a read failed.
bool read_bounded(std::istream& in, std::size_t max_bytes, std::string& out);

}  // namespace shardcheck::util
