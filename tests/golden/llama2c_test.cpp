// llama2.c checkpoint and tokenizer reader: valid images round-trip, every malformed image is
// rejected with a one-line message naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "llama2c.h"
#include "quality.h"
#include "story.h"

namespace lockstep::host {
namespace {

std::vector<std::uint8_t> valid_image() { return serialize_checkpoint(synthetic_checkpoint()); }

void put_i32(std::vector<std::uint8_t>& b, std::size_t off, std::int32_t v) {
  std::memcpy(&b[off], &v, 4);
}

// Expects parse_checkpoint to throw a one-line ModelError containing `needle`.
void expect_reject(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  try {
    parse_checkpoint(bytes, "test.bin");
    FAIL() << "accepted a malformed checkpoint; expected an error containing '" << needle << "'";
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_EQ(msg.rfind("test.bin: ", 0), 0u) << "message does not name the file: " << msg;
  }
}

TEST(Llama2cReader, SyntheticImageRoundTrips) {
  const auto bytes = valid_image();
  // 28-byte header + floats (stories260K shapes, RoPE tables 512*8) = the real file's size.
  EXPECT_EQ(bytes.size(), 1056540u);
  const Checkpoint ck = parse_checkpoint(bytes, "synthetic");
  const Checkpoint ref = synthetic_checkpoint();
  EXPECT_EQ(ck.config.dim, 64);
  EXPECT_EQ(ck.config.hidden_dim, 172);
  EXPECT_EQ(ck.config.kv_dim(), 32);
  EXPECT_EQ(ck.config.head_size(), 8);
  EXPECT_TRUE(ck.config.shared_classifier);
  EXPECT_EQ(ck.w.w2, ref.w.w2);
  EXPECT_EQ(ck.w.wcls, ref.w.token_embedding);
  EXPECT_EQ(ck.w.rms_final, ref.w.rms_final);
}

TEST(Llama2cReader, RejectsTruncatedHeader) {
  expect_reject(std::vector<std::uint8_t>(27, 0), "shorter than the 28-byte header");
}

TEST(Llama2cReader, RejectsBadHeaderValues) {
  auto b = valid_image();
  put_i32(b, 0, 0);
  expect_reject(b, "bad header: dim = 0");
  b = valid_image();
  put_i32(b, 12, 7);  // n_heads 7 does not divide dim 64
  expect_reject(b, "not divisible by n_heads");
  b = valid_image();
  put_i32(b, 16, 3);  // n_kv_heads 3 does not divide n_heads 8
  expect_reject(b, "not divisible by n_kv_heads");
  b = valid_image();
  put_i32(b, 24, -5);
  expect_reject(b, "bad header: seq_len = -5");
  b = valid_image();
  put_i32(b, 20, std::numeric_limits<std::int32_t>::min());
  expect_reject(b, "vocab_size");
}

TEST(Llama2cReader, RejectsWrongFileSize) {
  auto b = valid_image();
  b.push_back(0);
  expect_reject(b, "wrong file size 1056541 bytes");
  b = valid_image();
  b.resize(b.size() - 4);
  expect_reject(b, "implies 1056540");
  b = valid_image();
  put_i32(b, 4, 173);  // hidden_dim 173: the same bytes no longer match the shapes
  expect_reject(b, "wrong file size");
  b = valid_image();
  put_i32(b, 20, -512);  // a separate classifier would need 512*64 more floats
  expect_reject(b, "wrong file size");
}

TEST(Llama2cReader, RejectsNonFiniteValues) {
  auto b = valid_image();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // wq starts after the embedding (512*64) and rms_att (5*64) floats.
  std::memcpy(&b[28 + 4 * (512 * 64 + 5 * 64 + 3)], &nan, 4);
  expect_reject(b, "non-finite value in wq[3]");
  b = valid_image();
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(&b[28 + 4 * 100], &inf, 4);
  expect_reject(b, "non-finite value in token_embedding[100]");
}

TEST(Llama2cReader, MissingFileIsAnError) {
  EXPECT_THROW(read_checkpoint("/nonexistent/stories260K.bin"), ModelError);
}

TEST(Sha256, KnownVectors) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex({reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size()}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// Serialises a tokenizer in tokenizer.bin format.
std::vector<std::uint8_t> tokenizer_bytes(const Tokenizer& t) {
  std::vector<std::uint8_t> b(4);
  std::memcpy(b.data(), &t.max_token_length, 4);
  for (std::size_t i = 0; i < t.pieces.size(); ++i) {
    std::uint8_t rec[8];
    const std::int32_t len = static_cast<std::int32_t>(t.pieces[i].size());
    std::memcpy(rec, &t.scores[i], 4);
    std::memcpy(rec + 4, &len, 4);
    b.insert(b.end(), rec, rec + 8);
    b.insert(b.end(), t.pieces[i].begin(), t.pieces[i].end());
  }
  return b;
}

TEST(Tokenizer, DecodeRules) {
  const Tokenizer t = synthetic_tokenizer();
  EXPECT_EQ(t.decode(5, 3 + 0x41), "A");          // byte-fallback piece <0x41>
  EXPECT_EQ(t.decode(5, 3 + 0x0A), "\n");
  EXPECT_EQ(t.decode(5, 300), " w300");
  EXPECT_EQ(t.decode(1, 300), "w300");            // leading space dropped after BOS
  EXPECT_EQ(t.decode(5, 600), "");                // out of range
  const std::vector<int> seq = {1, 300, 3 + 0x21, 301};
  EXPECT_EQ(t.decode_all(seq), "w300! w301");
}

TEST(Tokenizer, ParsesAndRejects) {
  const Tokenizer t = synthetic_tokenizer();
  auto b = tokenizer_bytes(t);
  const Tokenizer back = parse_tokenizer(b, 512, "tok.bin");
  EXPECT_EQ(back.pieces, t.pieces);
  EXPECT_EQ(back.max_token_length, 16);
  auto truncated = b;
  truncated.resize(truncated.size() - 2);
  EXPECT_THROW(parse_tokenizer(truncated, 512, "tok.bin"), ModelError);
  auto trailing = b;
  trailing.push_back(0);
  try {
    parse_tokenizer(trailing, 512, "tok.bin");
    FAIL() << "accepted trailing bytes";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("1 trailing bytes"), std::string::npos) << e.what();
  }
  auto badlen = b;
  const std::int32_t huge = 1000;
  std::memcpy(&badlen[8], &huge, 4);  // piece 0 length 1000 > max_token_length 16
  try {
    parse_tokenizer(badlen, 512, "tok.bin");
    FAIL() << "accepted a piece length of 1000";
  } catch (const ModelError& e) {
    // The piece and its byte offset (its score at byte 4, its length at 8).
    EXPECT_NE(std::string(e.what()).find("bad tokenizer piece length 1000 of piece 0 (its score at byte 4;"),
              std::string::npos)
        << e.what();
  }
}

TEST(Tokenizer, PiecesBlobLayout) {
  const Tokenizer t = synthetic_tokenizer();
  const auto blob = pieces_blob(t);
  auto u32 = [&](std::size_t off) {
    std::uint32_t v;
    std::memcpy(&v, &blob[off], 4);
    return v;
  };
  ASSERT_GE(blob.size(), 513u * 4);
  EXPECT_EQ(u32(0), 513u * 4);
  const std::uint32_t a = u32(4 * (3 + 0x41)), e = u32(4 * (3 + 0x41 + 1));
  ASSERT_EQ(e - a, 1u);
  EXPECT_EQ(blob[a], 'A');
  EXPECT_EQ(u32(4 * 512), blob.size());
}

}  // namespace
}  // namespace lockstep::host
