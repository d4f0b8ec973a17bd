// util::read_bounded: a stream is read to its end up to a bound, and one that holds more is caught
// after reading just past the bound (a pipe or /dev/zero has no size to check first).
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "util/bounded_read.hpp"

namespace bounded_read_test {

TEST_CASE("read_bounded: whole streams up to the bound, and where a stream holds more") {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{16383}, std::size_t{16384},
                              std::size_t{16385}, std::size_t{100000}}) {
    CAPTURE(n);
    const std::string data(n, 'x');
    std::istringstream exact(data);
    std::string out = "prefix:";  // appended to
    CHECK(shardcheck::util::read_bounded(exact, n + 7, out));
    CHECK(out == "prefix:" + data);
    std::istringstream over(data + "y");
    std::string cut = "prefix:";
    CHECK_FALSE(shardcheck::util::read_bounded(over, n + 7, cut));
    CHECK(cut.size() > n + 7);  // it read past the bound, no more than a chunk past it
    CHECK(cut.size() <= n + 7 + 16384);
  }
}

}  // namespace bounded_read_test
