// util::same_text, the inline name compare of the hash tables and the matchers: every length
// (the word loop, the overlapping last word, the short forms) and a difference at every position.
#include <doctest/doctest.h>

#include <string>

#include "util/name_table.hpp"

using shardcheck::util::same_text;

TEST_CASE("same_text: equal exactly when the bytes are, at every length and position") {
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string a(n, 'a');
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + (i * 7) % 26);
    const std::string b = a;
    INFO("length " << n);
    CHECK(same_text(a, b));
    for (std::size_t i = 0; i < n; ++i) {
      std::string c = a;
      c[i] = static_cast<char>(c[i] ^ 0x01);
      INFO("differs at " << i);
      CHECK_FALSE(same_text(a, c));
      CHECK_FALSE(same_text(c, a));
    }
    CHECK_FALSE(same_text(a, a + "x"));
    if (n > 0) CHECK_FALSE(same_text(a, std::string_view(a).substr(1)));
  }
  // Views into larger buffers: only the viewed bytes count.
  const std::string text = "model.layers.0.mlp|model.layers.0.mlp.x";
  CHECK(same_text(std::string_view(text).substr(0, 18), std::string_view(text).substr(19, 18)));
}

TEST_CASE("NameIndex: finds what was inserted, keeps the first value, misses the rest") {
  shardcheck::util::NameIndex<int> index;
  CHECK(index.try_emplace("model.layers.0.self_attn.q_proj.weight", 1).second);
  CHECK(index.try_emplace("model.layers.0.self_attn.k_proj.weight", 2).second);
  CHECK_FALSE(index.try_emplace("model.layers.0.self_attn.q_proj.weight", 3).second);
  REQUIRE(index.find("model.layers.0.self_attn.q_proj.weight"));
  CHECK(*index.find("model.layers.0.self_attn.q_proj.weight") == 1);
  CHECK(*index.find("model.layers.0.self_attn.k_proj.weight") == 2);
  CHECK_FALSE(index.find("model.layers.0.self_attn.v_proj.weight"));
  CHECK_FALSE(index.find(""));
  CHECK(index.size() == 2);
}
