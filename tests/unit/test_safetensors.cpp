// Tests for the safetensors header reader (src/load/safetensors.cpp). Files are built as byte
// strings in memory; the first group mirrors the Rust crate's own unit tests
// (safetensors/src/tensor.rs @24b0b28, mod tests), then one test per diagnostic code, then the
// committed catalogue of broken files (fixtures/broken, scripts/gen_broken.py).

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "shardcheck/checkpoint.hpp"
#include "shardcheck/finding_codes.hpp"
#include "diag_query.hpp"

using namespace shardcheck;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

// A tensor's shape as a vector, for comparisons.
std::vector<std::int64_t> dims(const TensorInfo& t) { return {t.shape.begin(), t.shape.end()}; }

std::string le64(std::uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// A file image: length prefix, header, `data_bytes` zero bytes.
std::string file_with(std::string_view header, std::size_t data_bytes = 0) {
  return le64(header.size()) + std::string(header) + std::string(data_bytes, '\0');
}

struct Parsed {
  std::optional<SafetensorsFile> file;
  DiagnosticSink sink;

  bool has(std::string_view code) const { return count(code) > 0; }
  std::size_t count(std::string_view code) const { return test::count_code(sink, code); }
  const Diagnostic* first(std::string_view code) const { return test::first_code(sink, code); }
  // Codes of all diagnostics, for readable failure messages.
  std::string codes() const { return test::dump(sink); }
  bool clean() const { return sink.items().empty() && file.has_value(); }
};

// Splits a whole file image the way the reader does: 8-byte length, then the rest.
Parsed parse_image(std::string_view bytes, const std::string& label = "test.safetensors") {
  Parsed p;
  std::uint64_t n = 0;
  std::string_view rest;
  if (bytes.size() >= 8) {
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    rest = bytes.substr(8);
  }
  p.file = parse_safetensors_header(rest, n, bytes.size(), label, p.sink);
  return p;
}

std::string entry(std::string_view dtype, std::string_view shape, std::uint64_t begin, std::uint64_t end) {
  return "{\"dtype\":\""s + std::string(dtype) + "\",\"shape\":" + std::string(shape) + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A scratch directory removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path =
        fs::temp_directory_path() / ("shardcheck-st-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, std::string_view bytes) const {
    std::ofstream(path / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path / name;
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conformance with the crate's unit tests (tensor.rs mod tests).

TEST_CASE("safetensors conformance: test_deserialization") {
  auto p = parse_image(
      "<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":["
      "0,16]}}"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"s);
  REQUIRE_MESSAGE(p.clean(), p.codes());
  REQUIRE(p.file->tensors.size() == 1);
  const TensorInfo& t = p.file->tensors[0];
  CHECK(t.name == "test");
  CHECK(t.dtype == DType::I32);
  CHECK(dims(t) == std::vector<std::int64_t>{2, 2});
  CHECK(t.begin == 0);
  CHECK(t.end == 16);
  CHECK(t.numel() == 4);
  CHECK(p.file->header_len == 60);
  CHECK(p.file->file_size == 84);
}

TEST_CASE("safetensors conformance: test_empty_shapes_allowed (0-rank scalar)") {
  auto p = parse_image(
      "8\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,"
      "4]}}"
      "\x00\x00\x00\x00"s);
  REQUIRE_MESSAGE(p.clean(), p.codes());
  CHECK(p.file->tensors.at(0).shape.empty());
  CHECK(p.file->tensors.at(0).numel() == 1);
}

TEST_CASE("safetensors conformance: test_zero_sized_tensor") {
  auto p = parse_image(
      "<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}"s);
  REQUIRE_MESSAGE(p.clean(), p.codes());
  CHECK(dims(p.file->tensors.at(0)) == std::vector<std::int64_t>{2, 0});
  CHECK(p.file->tensors.at(0).numel() == 0);
}

TEST_CASE("safetensors conformance: test_header_too_large") {
  auto p = parse_image(
      "<\x00\x00\x00\x00\xff\xff\xff{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":["
      "0,16]}}"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"s);
  CHECK_FALSE(p.file);
  CHECK(p.has("ST002"));
  CHECK(p.sink.first_error_exit_code() == ExitCode::bad_safetensors);
}

TEST_CASE("safetensors conformance: test_header_too_small") {
  auto p = parse_image("");
  CHECK_FALSE(p.file);
  CHECK(p.has("ST001"));
  CHECK(p.sink.first_error_exit_code() == ExitCode::truncated_file);
}

TEST_CASE("safetensors conformance: test_invalid_header_length") {
  auto p = parse_image("<\x00\x00\x00\x00\x00\x00\x00"s);
  CHECK_FALSE(p.file);
  REQUIRE(p.has("ST003"));
  CHECK(p.first("ST003")->message.find("missing 60 bytes") != std::string::npos);
  CHECK(p.sink.first_error_exit_code() == ExitCode::truncated_file);
}

TEST_CASE("safetensors conformance: test_invalid_header_non_utf8") {
  auto p = parse_image("\x01\x00\x00\x00\x00\x00\x00\x00\xff"s);
  CHECK_FALSE(p.file);
  REQUIRE(p.has("ST004"));
  CHECK(p.first("ST004")->location.byte_offset == 8u);
}

TEST_CASE("safetensors conformance: test_invalid_header_not_json") {
  auto p = parse_image("\x01\x00\x00\x00\x00\x00\x00\x00{"s);
  CHECK_FALSE(p.file);
  CHECK(p.has("ST005"));
}

TEST_CASE("safetensors conformance: test_whitespace_padded_header") {
  auto p = parse_image("\x06\x00\x00\x00\x00\x00\x00\x00{}\x0D\x20\x09\x0A"s);
  REQUIRE_MESSAGE(p.clean(), p.codes());
  CHECK(p.file->tensors.empty());
}

TEST_CASE("safetensors conformance: test_whitespace_leading_padded_header") {
  auto p = parse_image("\x06\x00\x00\x00\x00\x00\x00\x00\x09\x0A{}\x0D\x20"s);
  REQUIRE_MESSAGE(p.clean(), p.codes());
  CHECK(p.file->tensors.empty());
}

TEST_CASE("safetensors conformance: test_invalid_info") {
  auto p = parse_image(
      "<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0, 4]}}"s);
  REQUIRE(p.has("ST015"));
  CHECK(p.first("ST015")->message.find("span 4 bytes; expected 16") != std::string::npos);
  // The crate stops there; we also see that the 4 data bytes are missing.
  CHECK(p.has("ST020"));
}

TEST_CASE("safetensors conformance: test_validation_overflow") {
  SUBCASE("shape product overflows") {
    auto p = parse_image(
        "O\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,"
        "18446744073709551614],"
        "\"data_offsets\":[0,16]}}\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"s);
    CHECK(p.has("ST013"));
    CHECK(p.file->tensors.empty());
  }
  SUBCASE("numel x bits overflows") {
    auto p = parse_image(
        "N\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,"
        "9223372036854775807],"
        "\"data_offsets\":[0,16]}}\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"s);
    CHECK(p.has("ST013"));
    CHECK(p.file->tensors.empty());
  }
}

TEST_CASE("safetensors conformance: test_json_attack (10 tensors all at [0,16])") {
  std::string header = "{";
  for (int i = 0; i < 10; ++i)
    header += (i ? ","s : ""s) + "\"weight_" + std::to_string(i) + "\":" + entry("F32", "[2,2]", 0, 16);
  header += "}";
  auto p = parse_image(file_with(header, 16));
  CHECK(p.count("ST019") == 9);
  CHECK(p.sink.items().size() == 9);  // nothing but the overlaps
  CHECK(p.sink.first_error_exit_code() == ExitCode::bad_safetensors);
}

TEST_CASE("safetensors conformance: test_metadata_incomplete_buffer") {
  const std::string header = "{\"test\":" + entry("I32", "[2,2]", 0, 16) + "}";
  SUBCASE("polyglot tail") {
    auto p = parse_image(file_with(header, 16) + "extra_bogus_data_for_polyglot_file");
    REQUIRE(p.has("ST021"));
    CHECK(p.first("ST021")->message.find("34 trailing bytes") != std::string::npos);
    CHECK(p.first("ST021")->location.byte_offset == 8 + header.size() + 16);
    CHECK(p.sink.first_error_exit_code() == ExitCode::truncated_file);
  }
  SUBCASE("missing 2 bytes") {
    auto p = parse_image(file_with(header, 14));
    REQUIRE(p.has("ST020"));
    CHECK(p.first("ST020")->message.find("missing 2 bytes") != std::string::npos);
    CHECK(p.sink.first_error_exit_code() == ExitCode::truncated_file);
  }
}

TEST_CASE("safetensors conformance: test_serialization_fp4 and fp4_misaligned") {
  auto ok = parse_image(file_with("{\"attn.0\":" + entry("F4", "[1,2]", 0, 1) + "}", 1));
  REQUIRE_MESSAGE(ok.clean(), ok.codes());
  CHECK(ok.file->tensors.at(0).dtype == DType::F4);
  auto misaligned = parse_image(file_with("{\"attn.0\":" + entry("F4", "[1,3]", 0, 2) + "}", 2));
  CHECK(misaligned.has("ST014"));
  auto wrong = parse_image(file_with("{\"attn.0\":" + entry("F4", "[1,2]", 0, 2) + "}", 2));
  CHECK(wrong.has("ST015"));
}

// ---------------------------------------------------------------------------------------------
// One test per check.

TEST_CASE("safetensors: every dtype of dtype.hpp is accepted with its bit width") {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto dt = static_cast<DType>(i);
    const int bits = dtype_bits(dt);
    const std::uint64_t bytes = 8u * static_cast<unsigned>(bits) / 8u;  // shape [8]
    auto p = parse_image(file_with("{\"t\":" + entry(dtype_name(dt), "[8]", 0, bytes) + "}", bytes));
    INFO(dtype_name(dt));
    REQUIRE_MESSAGE(p.clean(), p.codes());
    CHECK(p.file->tensors.at(0).dtype == dt);
  }
}

TEST_CASE("safetensors: ST001 file shorter than the length prefix") {
  auto p = parse_image("\x01\x02\x03"s);
  REQUIRE(p.has("ST001"));
  CHECK(p.first("ST001")->message.find("3 bytes long") != std::string::npos);
  CHECK(p.first("ST001")->location.file == "test.safetensors");
}

TEST_CASE("safetensors: ST002 header length limit is exactly 100,000,000") {
  DiagnosticSink sink;
  // N = limit is allowed (the file is then too short, which is a different problem).
  CHECK_FALSE(parse_safetensors_header("", kMaxSafetensorsHeader, 16, "f", sink));
  CHECK(sink.items().at(0).code == "ST003");
  DiagnosticSink over;
  CHECK_FALSE(parse_safetensors_header("", kMaxSafetensorsHeader + 1, 16, "f", over));
  CHECK(over.items().at(0).code == "ST002");
  CHECK(over.items().at(0).message.find("100000001") != std::string::npos);
}

TEST_CASE("safetensors: ST003 header shorter than announced, in the file or in the caller's buffer") {
  auto p = parse_image(le64(100) + "{\"a\":");
  REQUIRE(p.has("ST003"));
  CHECK(p.first("ST003")->message.find("missing 95 bytes") != std::string::npos);
  CHECK(p.first("ST003")->exit_code == ExitCode::truncated_file);
  DiagnosticSink sink;  // file long enough, but only part of the header handed over
  CHECK_FALSE(parse_safetensors_header("{}", 10, 100, "f", sink));
  CHECK(sink.items().at(0).code == "ST003");
}

TEST_CASE("safetensors: ST004 points at the first invalid UTF-8 byte") {
  const std::string header = "{\"caf\xc3\xa9\":" + entry("U8", "[1]", 0, 1) + ",\"b\xc0\xaf\":1}";
  auto p = parse_image(file_with(header, 1));
  REQUIRE(p.has("ST004"));
  CHECK(p.first("ST004")->location.byte_offset == 8 + header.find('\xc0'));
  CHECK(p.first("ST004")->message.find("0xc0") != std::string::npos);
  // Surrogates, code points above U+10FFFF and cut-off sequences are invalid too.
  CHECK(parse_image(file_with("{\"\xed\xa0\x80\":1}")).has("ST004"));
  CHECK(parse_image(file_with("{\"\xf4\x90\x80\x80\":1}")).has("ST004"));
  auto cut = parse_image(file_with("{}  \xf0\x9f\x98"));
  REQUIRE(cut.has("ST004"));
  CHECK(cut.first("ST004")->location.byte_offset == 8u + 4u);
  // Four-byte characters in names are fine.
  CHECK(parse_image(file_with("{\"\xf0\x9f\x98\x80\":" + entry("U8", "[1]", 0, 1) + "}", 1)).clean());
}

TEST_CASE("safetensors: ST005 malformed JSON, empty header, trailing garbage, NUL bytes") {
  CHECK(parse_image(file_with("")).has("ST005"));
  CHECK(parse_image(file_with("   ")).has("ST005"));
  CHECK(parse_image(file_with("{} x")).has("ST005"));
  CHECK(parse_image(file_with("{}\x00"s)).has("ST005"));  // NUL padding is not JSON whitespace
  CHECK(parse_image(file_with("{}\x00garbage"s)).has("ST005"));
  CHECK(parse_image(file_with("{\"a\x00\":" + entry("U8", "[1]", 0, 1) + "}", 1)).has("ST005"));
  auto syntax = parse_image(file_with("{\"a\": }"));
  REQUIRE(syntax.has("ST005"));
  // The reader names where the text breaks.
  CHECK(syntax.first("ST005")->message.find("line 1, column 7") != std::string::npos);
}

TEST_CASE("safetensors: ST006 header must be an object") {
  for (std::string h : {"[]", "1", "\"x\"", "null", "true"}) {
    auto p = parse_image(file_with(h));
    INFO(h);
    CHECK(p.has("ST006"));
    CHECK_FALSE(p.file);
  }
}

TEST_CASE("safetensors: ST007 __metadata__ is a string->string map (null allowed, as serde)") {
  auto ok = parse_image(file_with("{\"__metadata__\":{\"format\":\"pt\",\"x\":\"\"}}"));
  REQUIRE_MESSAGE(ok.clean(), ok.codes());
  CHECK(ok.file->metadata.at("format") == "pt");
  CHECK(parse_image(file_with("{\"__metadata__\":null}")).clean());
  auto bad_value = parse_image(file_with("{\"__metadata__\":{\"a\":\"ok\",\"n\":1,\"o\":{}}}"));
  CHECK(bad_value.count("ST007") == 2);
  CHECK(bad_value.file->metadata.at("a") == "ok");
  CHECK(parse_image(file_with("{\"__metadata__\":[\"a\"]}")).has("ST007"));
  CHECK(parse_image(file_with("{\"__metadata__\":\"pt\"}")).has("ST007"));
  CHECK(parse_image(file_with("{\"__metadata__\":{},\"__metadata__\":{}}")).has("ST007"));
}

TEST_CASE("safetensors: ST008 entry shape: object, exactly dtype/shape/data_offsets, no repeats") {
  CHECK(parse_image(file_with("{\"w\":5}")).has("ST008"));
  auto missing = parse_image(file_with("{\"w\":{\"dtype\":\"F32\"}}"));
  REQUIRE(missing.has("ST008"));
  CHECK(missing.first("ST008")->message.find("lacks shape, data_offsets") != std::string::npos);
  auto extra =
      parse_image(file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"offset\":0}}", 4));
  REQUIRE(extra.has("ST008"));
  CHECK(extra.first("ST008")->message.find("unexpected key 'offset'") != std::string::npos);
  auto repeated =
      parse_image(file_with("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4));
  REQUIRE(repeated.has("ST008"));
  CHECK(repeated.file->tensors.at(0).dtype == DType::F32);  // the first wins, and is reported
}

TEST_CASE("safetensors: ST009 unknown dtype lists the 22 accepted names") {
  auto p = parse_image(file_with("{\"w\":" + entry("f32", "[1]", 0, 4) + "}", 4));
  REQUIRE(p.has("ST009"));
  const std::string& msg = p.first("ST009")->message;
  CHECK(msg.find("unknown dtype 'f32'") != std::string::npos);
  for (int i = 0; i < kNumDTypes; ++i)
    CHECK(msg.find(std::string(dtype_name(static_cast<DType>(i)))) != std::string::npos);
  CHECK(p.file->tensors.empty());
  CHECK(parse_image(file_with("{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4)).has("ST009"));
}

TEST_CASE("safetensors: ST010 shape entries are non-negative integers") {
  auto negative = parse_image(file_with("{\"w\":" + entry("F32", "[2,-3]", 0, 4) + "}", 4));
  REQUIRE(negative.has("ST010"));
  CHECK(negative.first("ST010")->message.find("shape[1] is -3") != std::string::npos);
  CHECK(parse_image(file_with("{\"w\":" + entry("F32", "[1.0]", 0, 4) + "}", 4)).has("ST010"));
  CHECK(parse_image(file_with("{\"w\":" + entry("F32", "[\"1\"]", 0, 4) + "}", 4)).has("ST010"));
  CHECK(parse_image(file_with("{\"w\":" + entry("F32", "4", 0, 4) + "}", 4)).has("ST010"));
  CHECK(parse_image(file_with("{\"w\":" + entry("F32", "[[1]]", 0, 4) + "}", 4)).has("ST010"));
  // 2^64: serde_json reads it as a float, which a u64 extent refuses (Deserialization).
  auto huge = parse_image(file_with("{\"a\":" + entry("U8", "[18446744073709551616]", 0, 1) + "}"));
  REQUIRE(huge.has("ST010"));
  CHECK(huge.first("ST010")->message.find(
            "shape[0] is 18446744073709551616; expected a non-negative integer below 2^64") != std::string::npos);
}

TEST_CASE("safetensors: ST011 data_offsets is two non-negative integers") {
  for (std::string offsets : {"[0]", "[0,4,8]", "[-1,4]", "[0,4.5]", "\"0,4\"", "{}", "[0,\"4\"]"}) {
    auto p = parse_image(file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" + offsets + "}}", 4));
    INFO(offsets);
    CHECK(p.has("ST011"));
    CHECK_FALSE(p.has("ST021"));  // the tensor's extent is unknown: no claim about trailing bytes
  }
}

TEST_CASE("safetensors: ST012 data_offsets end before begin") {
  auto p = parse_image(file_with("{\"w\":" + entry("U8", "[0]", 4, 0) + "}", 4));
  REQUIRE(p.has("ST012"));
  CHECK(p.first("ST012")->message.find("[4, 0]") != std::string::npos);
}

TEST_CASE("safetensors: ST013 overflow follows the crate's fold order") {
  // [0, huge, huge] is zero elements: no overflow in the crate, none here.
  auto zero =
      parse_image(file_with("{\"w\":" + entry("U8", "[0,9223372036854775807,9223372036854775807]", 0, 0) + "}"));
  CHECK_MESSAGE(zero.clean(), zero.codes());
  CHECK(parse_image(file_with("{\"w\":" + entry("U8", "[4294967296,4294967296]", 0, 0) + "}")).has("ST013"));
  // A zero-element shape with a dimension beyond int64 cannot be held in TensorInfo.
  auto wide = parse_image(file_with("{\"w\":" + entry("U8", "[0,18446744073709551615]", 0, 0) + "}"));
  CHECK(wide.has("ST013"));
}

TEST_CASE("safetensors: ST014 sub-byte dtypes must fill whole bytes") {
  CHECK(parse_image(file_with("{\"w\":" + entry("F6_E2M3", "[4]", 0, 3) + "}", 3)).clean());
  auto p = parse_image(file_with("{\"w\":" + entry("F6_E3M2", "[3]", 0, 3) + "}", 3));
  REQUIRE(p.has("ST014"));
  CHECK(p.first("ST014")->message.find("18 bits") != std::string::npos);
}

TEST_CASE("safetensors: ST015 byte length says expected vs found and points at the key") {
  const std::string header = "{\"a\":" + entry("BF16", "[4]", 0, 8) + ",\"b\":" + entry("BF16", "[4]", 8, 10) + "}";
  auto p = parse_image(file_with(header, 10));
  REQUIRE(p.count("ST015") == 1);
  const Diagnostic& d = *p.first("ST015");
  CHECK(d.message.find("'b'") != std::string::npos);
  CHECK(d.message.find("span 2 bytes; expected 8") != std::string::npos);
  CHECK(d.location.byte_offset == 8 + header.find("\"b\""));
  CHECK(d.exit_code == ExitCode::bad_safetensors);
}

TEST_CASE("safetensors: ST016 duplicate tensor names") {
  const std::string header = "{\"w\":" + entry("U8", "[1]", 0, 1) + ",\"v\":" + entry("U8", "[1]", 1, 2) +
                             ",\"w\":" + entry("U8", "[1]", 2, 3) + "}";
  auto p = parse_image(file_with(header, 3));
  CHECK(p.count("ST016") == 1);
  CHECK(p.sink.items().size() == 1);
  CHECK(p.file->tensors.size() == 2);  // the first "w" and "v"
}

TEST_CASE("safetensors: ST017/ST018/ST019 layout reports every hole and overlap with offsets") {
  SUBCASE("not starting at zero") {
    auto p = parse_image(file_with("{\"w\":" + entry("U8", "[2]", 2, 4) + "}", 4));
    REQUIRE(p.has("ST017"));
    CHECK(p.first("ST017")->location.byte_offset == 8 + p.file->header_len);
  }
  SUBCASE("holes and overlaps in one header, header order differs from offset order") {
    const std::string header = "{\"d\":" + entry("U8", "[4]", 20, 24) + ",\"a\":" + entry("U8", "[4]", 0, 4) +
                               ",\"b\":" + entry("U8", "[4]", 8, 12) + ",\"c\":" + entry("U8", "[4]", 10, 14) + "}";
    auto p = parse_image(file_with(header, 24));
    CHECK(p.count("ST018") == 2);  // [4,8) and [14,20)
    REQUIRE(p.count("ST019") == 1);
    const Diagnostic& overlap = *p.first("ST019");
    CHECK(overlap.message.find("'c'") != std::string::npos);
    CHECK(overlap.message.find("'b'") != std::string::npos);
    CHECK(overlap.message.find("[10, 12) (2 bytes)") != std::string::npos);
    CHECK(overlap.location.byte_offset == 8 + header.size() + 10);
    const Diagnostic& hole = *p.first("ST018");
    CHECK(hole.message.find("hole of 4 bytes") != std::string::npos);
    CHECK(hole.location.byte_offset == 8 + header.size() + 4);
    CHECK(p.file->tensors.size() == 4);
    CHECK(p.file->tensors[0].name == "d");  // header order kept
  }
  SUBCASE("zero-size tensors may sit at a boundary but not inside another tensor") {
    auto ok =
        parse_image(file_with("{\"e\":" + entry("F32", "[0]", 4, 4) + ",\"a\":" + entry("F32", "[1]", 0, 4) + "}", 4));
    CHECK_MESSAGE(ok.clean(), ok.codes());
    auto inside =
        parse_image(file_with("{\"e\":" + entry("U8", "[0]", 2, 2) + ",\"a\":" + entry("U8", "[4]", 0, 4) + "}", 4));
    CHECK(inside.has("ST019"));
  }
}

TEST_CASE("safetensors: ST020/ST021 coverage of the file") {
  const std::string header = "{\"w\":" + entry("F32", "[4]", 0, 16) + "}";
  auto short_file = parse_image(file_with(header, 3));
  REQUIRE(short_file.has("ST020"));
  CHECK(short_file.first("ST020")->message.find("missing 13 bytes") != std::string::npos);
  auto long_file = parse_image(file_with(header, 17));
  CHECK(long_file.has("ST021"));
  // Truncation is certain even when another entry is malformed; trailing bytes are not.
  const std::string with_bad = "{\"w\":" + entry("F32", "[4]", 0, 16) + ",\"x\":{}}";
  CHECK(parse_image(file_with(with_bad, 3)).has("ST020"));
  CHECK_FALSE(parse_image(file_with(with_bad, 20)).has("ST021"));
  // A data end near 2^64 cannot fit any file.
  auto huge =
      parse_image(file_with("{\"w\":" + entry("U8", "[1]", 18446744073709551614u, 18446744073709551615u) + "}"));
  CHECK(huge.has("ST020"));
}

TEST_CASE("safetensors: every problem in a header is reported, not just the first") {
  const std::string header = "{\"a\":" + entry("F99", "[1]", 0, 1) + ",\"b\":" + entry("U8", "[-1]", 1, 2) +
                             ",\"c\":" + entry("U8", "[2]", 2, 3) + ",\"__metadata__\":{\"k\":3}}";
  auto p = parse_image(file_with(header, 3), "multi.safetensors");
  CHECK(p.has("ST009"));
  CHECK(p.has("ST010"));
  CHECK(p.has("ST015"));
  CHECK(p.has("ST007"));
  for (const auto& d : p.sink.items()) {
    CHECK(d.location.file == "multi.safetensors");
    CHECK(d.severity == Severity::error);
    CHECK(d.code.size() == 5);
  }
}

TEST_CASE("safetensors: names with control characters are escaped in one-line messages") {
  auto p = parse_image(file_with("{\"a\\nb\":" + entry("U8", "[1]", 0, 2) + "}", 2));
  REQUIRE(p.has("ST015"));
  CHECK(p.first("ST015")->message.find('\n') == std::string::npos);
  CHECK(p.first("ST015")->message.find("a\\x0ab") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Reading files.

TEST_CASE("safetensors: read_safetensors_file reads only the header of a large sparse file") {
  TempDir dir;
  const std::string header = "{\"w\":" + entry("F32", "[268435456]", 0, 1073741824) + "}";
  const fs::path path = dir.write("big.safetensors", le64(header.size()) + header);
  fs::resize_file(path, 8 + header.size() + 1073741824ull);  // 1 GiB hole, nothing written
  DiagnosticSink sink;
  auto file = read_safetensors_file(path, "big.safetensors", sink);
  REQUIRE(file);
  CHECK(sink.items().empty());
  CHECK(file->file_size == 8 + header.size() + 1073741824ull);
  CHECK(file->tensors.at(0).numel() == 268435456);
}

TEST_CASE("safetensors: read_safetensors_file reports every prefix problem the same way") {
  TempDir dir;
  DiagnosticSink sink;
  CHECK_FALSE(read_safetensors_file(dir.write("e.safetensors", ""), "e", sink));
  CHECK_FALSE(read_safetensors_file(dir.write("big.safetensors", le64(1ull << 40) + "{}"), "big", sink));
  CHECK_FALSE(read_safetensors_file(dir.write("t.safetensors", le64(64) + "{}"), "t", sink));
  REQUIRE(sink.items().size() == 3);
  CHECK(sink.items()[0].code == "ST001");
  CHECK(sink.items()[1].code == "ST002");
  CHECK(sink.items()[2].code == "ST003");
  CHECK(sink.items()[2].location.file == "t");
}

TEST_CASE("safetensors: ST022 unreadable paths are io errors") {
  TempDir dir;
  DiagnosticSink sink;
  CHECK_FALSE(read_safetensors_file(dir.path / "absent.safetensors", "absent", sink));
  fs::create_directory(dir.path / "d.safetensors");
  CHECK_FALSE(read_safetensors_file(dir.path / "d.safetensors", "d", sink));
  REQUIRE(sink.items().size() == 2);
  for (const auto& d : sink.items()) {
    CHECK(d.code == "ST022");
    CHECK(d.exit_code == ExitCode::io);
  }
  CHECK(sink.items()[0].message.find("no such file") != std::string::npos);
  CHECK(sink.items()[1].message.find("not a regular file") != std::string::npos);
  // A FIFO named like a shard: refused at once, not a read that waits forever for a writer.
  REQUIRE(::mkfifo((dir.path / "pipe.safetensors").c_str(), 0600) == 0);
  CHECK_FALSE(read_safetensors_file(dir.path / "pipe.safetensors", "pipe", sink));
  REQUIRE(sink.items().size() == 3);
  CHECK(sink.items()[2].message.find("not a regular file") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Robustness: mutated headers never crash or read out of bounds (ASan/UBSan builds check this).

TEST_CASE("safetensors: mutated headers are handled without crashing") {
  const std::string seed = file_with("{\"__metadata__\":{\"format\":\"pt\"},\"a\":" + entry("BF16", "[2,3]", 0, 12) +
                                         ",\"b\":" + entry("F4", "[4]", 12, 14) + "}",
                                     14);
  std::mt19937 rng(12345);
  const std::string alphabet =
      "{}[]\":,-0123456789.eE \t\x00\xff\x80"
      "abdtypeshapeF32U8";
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 8);
          break;
        case 2:
          bytes.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 3:
          bytes.resize(at);
          break;
      }
      if (bytes.empty()) break;
    }
    if (rng() % 2 && bytes.size() >= 8) {  // keep the prefix consistent half of the time
      const std::string fixed = le64(bytes.size() - 8 - std::min<std::size_t>(14, bytes.size() - 8));
      bytes.replace(0, 8, fixed);
    }
    auto p = parse_image(bytes);
    for (const auto& d : p.sink.items()) CHECK_FALSE(d.code.empty());
  }
}

// ---------------------------------------------------------------------------------------------
// The committed catalogue of broken inputs.

namespace {

struct Expectation {
  int exit_code = -1;
  std::string substring;
  std::string code;
};

Expectation read_expectation(const fs::path& path) {
  std::ifstream in(path);
  Expectation e;
  std::string line;
  std::getline(in, line);
  e.exit_code = std::stoi(line);
  std::getline(in, e.substring);
  std::getline(in, e.code);
  return e;
}

}  // namespace

TEST_CASE("safetensors: broken catalogue yields the expected code and message for every entry") {
  const fs::path root = fs::path(SHARDCHECK_FIXTURES_DIR) / "broken";
  std::vector<fs::path> expects;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().extension() == ".expect") expects.push_back(e.path());
  std::sort(expects.begin(), expects.end());
  REQUIRE(expects.size() >= 39);

  std::set<std::string> codes_covered;
  for (const fs::path& expect_path : expects) {
    const Expectation want = read_expectation(expect_path);
    const std::string name = expect_path.stem().string();
    INFO("fixture: " << name);
    DiagnosticSink sink;
    if (name.starts_with("index_")) {
      const fs::path dir = root / name;
      REQUIRE(fs::is_directory(dir));
      CHECK(load_checkpoint(dir, sink).has_value());
    } else {
      const fs::path file = root / (name + ".safetensors");
      REQUIRE(fs::is_regular_file(file));
      CHECK(fs::file_size(file) < 1024);
      (void)read_safetensors_file(file, name, sink);
    }
    std::string all;
    for (const auto& d : sink.items()) all += d.code + " " + d.message + "\n";
    INFO("diagnostics:\n" << all);
    CHECK(to_int(sink.first_error_exit_code()) == want.exit_code);
    const bool matched = std::any_of(sink.items().begin(), sink.items().end(), [&](const Diagnostic& d) {
      return d.code == want.code && d.message.find(want.substring) != std::string::npos;
    });
    CHECK(matched);
    for (const auto& d : sink.items()) {  // one problem per fixture: nothing else is reported
      CHECK(d.code == want.code);
      // ... and `shardcheck explain` / SARIF describe it with the severity and exit code it has.
      const FindingCode* doc = find_finding_code(d.code);
      REQUIRE_MESSAGE(doc != nullptr, d.code);
      CHECK(doc->severity == d.severity);
      CHECK(doc->exit_code == d.exit_code);
    }
    codes_covered.insert(want.code);
  }
  // Every failure kind a file can exhibit has a fixture (ST022 and IX001/IX002 are unit-tested).
  auto code = [](const char* family, int i) {
    std::string digits = std::to_string(i);
    return family + std::string(3 - digits.size(), '0') + digits;
  };
  for (int i = 1; i <= 21; ++i) CHECK_MESSAGE(codes_covered.count(code("ST", i)) == 1, code("ST", i));
  for (int i = 3; i <= 16; ++i) CHECK_MESSAGE(codes_covered.count(code("IX", i)) == 1, code("IX", i));
}
