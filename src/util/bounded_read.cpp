#include "util/bounded_read.hpp"

namespace shardcheck::util {

bool read_bounded(std::istream& in, std::size_t max_bytes, std::string& out) {
  char chunk[16384];
  while (out.size() <= max_bytes && in.read(chunk, sizeof chunk).gcount() > 0)
    out.append(chunk, static_cast<std::size_t>(in.gcount()));
  return out.size() <= max_bytes && !in.bad();
}

}  // namespace shardcheck::util
