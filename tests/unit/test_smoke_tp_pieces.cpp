// smoke --weights under tensor parallelism: which elements of a checkpoint tensor a TP rank's local
// tensor holds. transformers 5.12.1 get_tensor_shard cuts one dimension into torch.chunk pieces
// (ceil(n / tp), the last smaller), a packed style each of its blocks alike; the local tensor is
// row-major over the cut shape. Expected indices are written out by hand below.
#include <doctest/doctest.h>

#include <vector>

#include "smoke/weights.hpp"

using namespace shardcheck::smoke;

namespace {

// The full-tensor index of every local element, in local order, as for_tp_runs reports them.
std::vector<std::int64_t> indices(const TpPiece& p, std::int64_t from, std::int64_t numel) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(numel), -1);
  for_tp_runs(p, from, numel, [&](std::int64_t full, std::int64_t run, std::int64_t at) {
    for (std::int64_t k = 0; k < run; ++k) out[static_cast<std::size_t>(at + k)] = full + k;
  });
  return out;
}

}  // namespace

TEST_CASE("TP pieces: colwise rows, rowwise columns, packed blocks, uneven last piece") {
  // colwise weight [5, 3] over 2 ranks: pieces of ceil(5/2) = 3 rows; rank 1 holds rows 3 and 4.
  const TpPiece rows{{5, 3}, 0, 1, 3, 2};
  CHECK(indices(rows, 0, 6) == std::vector<std::int64_t>{9, 10, 11, 12, 13, 14});
  CHECK(indices(rows, 4, 2) == std::vector<std::int64_t>{13, 14});  // from the middle of a row
  // rowwise weight [2, 6] over 2 ranks: columns 3..5 of every row.
  const TpPiece cols{{2, 6}, 1, 1, 3, 3};
  CHECK(indices(cols, 0, 6) == std::vector<std::int64_t>{3, 4, 5, 9, 10, 11});
  CHECK(indices(cols, 2, 3) == std::vector<std::int64_t>{5, 9, 10});  // across a row boundary
  // packed_colwise experts [2, 8, 3] (gate and up of 4 rows each) over 2 ranks: rank 1 holds rows
  // 2..3 of each block: rows 2, 3 (gate) and 6, 7 (up) of every expert.
  const TpPiece packed{{2, 8, 3}, 1, 2, 2, 2};
  std::vector<std::int64_t> want;
  for (std::int64_t e = 0; e < 2; ++e)
    for (std::int64_t row : {2, 3, 6, 7})
      for (std::int64_t c = 0; c < 3; ++c) want.push_back((e * 8 + row) * 3 + c);
  CHECK(indices(packed, 0, 24) == want);
  // 52 intermediate rows over 8 ranks: 7 pieces of 7 and one of 3 (rows 49..51); a bias [52].
  const TpPiece last{{52}, 0, 1, 49, 3};
  CHECK(indices(last, 0, 3) == std::vector<std::int64_t>{49, 50, 51});
}
