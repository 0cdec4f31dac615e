// fuzz_model_converter: bytes -> the llama2.c checkpoint reader of the model converter
// (golden/llama2c.h), in one of three modes chosen by the first byte:
//   bit 0 set      the tokenizer reader (parse_tokenizer), 1 + (byte >> 1) pieces;
//   bit 1 set      the header alone (checkpoint_layout): the next 28 bytes are the header and
//                  the 8 after them a claimed file size (u64 little-endian; missing bytes are
//                  0), so every header, however large the file it implies, is reachable
//                  without allocating that file (issue 28: an int overflow of kv_dim() hid
//                  behind the input cap); an accepted layout must be self-consistent, and when
//                  its file is small it is built (zeros) and must parse to the same shapes;
//   otherwise      the whole rest is a checkpoint file (parse_checkpoint).
// Expected rejections: host::ModelError (one line).  A checkpoint that parses is serialised and
// parsed again; it must round-trip exactly.
//
// Allocations stay bounded by the input: parse_checkpoint compares the file size with the size
// the header implies (64-bit, overflow-checked) and bounds the run state before allocating any
// tensor, and parse_tokenizer checks every length against the bytes left.  Inputs are still
// capped (kMaxInput) so a campaign stays fast.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "llama2c.h"

namespace {
constexpr std::size_t kMaxInput = 1u << 20;

// Header mode: checkpoint_layout over a claimed size.
void header_mode(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::host;
  std::uint8_t buf[36] = {};
  std::memcpy(buf, data, size < sizeof buf ? size : sizeof buf);
  std::uint64_t claimed = 0;
  std::memcpy(&claimed, buf + 28, 8);
  CheckpointLayout l;
  try {
    l = checkpoint_layout(std::span<const std::uint8_t>(buf, 28), claimed, "fuzz");
  } catch (const ModelError&) {
    return;
  }
  const Config& c = l.config;
  std::uint64_t floats = 0;
  for (std::uint64_t n : l.tensor_floats) floats += n;  // no wrap: file_bytes was checked
  if (l.file_bytes != claimed || 28 + 4 * floats != claimed) __builtin_trap();
  if (l.run_state_floats > kMaxRunStateFloats || c.kv_dim() <= 0 || c.kv_dim() > c.dim) __builtin_trap();
  if (l.tensor_floats.size() != (c.shared_classifier ? 12u : 13u)) __builtin_trap();
  if (claimed <= kMaxInput) {
    std::vector<std::uint8_t> file(buf, buf + 28);
    file.resize(claimed, 0);
    const Checkpoint ck = parse_checkpoint(file, "fuzz (layout)");  // zeros are finite: must parse
    if (ck.config.dim != c.dim || ck.config.seq_len != c.seq_len || ck.w.wk.size() != l.tensor_floats[3])
      __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::host;
  if (size > kMaxInput || size == 0) return 0;
  // First byte: bit 0 selects the tokenizer reader, bit 1 the header mode; the rest is the file.
  const bool tokenizer = data[0] & 1;
  if (!tokenizer && (data[0] & 2)) {
    header_mode(data + 1, size - 1);
    return 0;
  }
  const std::span<const std::uint8_t> file(data + 1, size - 1);
  if (tokenizer) {
    const int vocab = 1 + (data[0] >> 1);  // 1..128 pieces
    try {
      const Tokenizer t = parse_tokenizer(file, vocab, "fuzz");
      if (t.pieces.size() != std::size_t(vocab) || t.scores.size() != std::size_t(vocab)) __builtin_trap();
      for (int i = 0; i < vocab; ++i) (void)t.decode(i == 0 ? 1 : i - 1, i);
    } catch (const ModelError&) {
    }
    return 0;
  }
  Checkpoint ck;
  try {
    ck = parse_checkpoint(file, "fuzz");
  } catch (const ModelError&) {
    return 0;
  }
  const std::vector<std::uint8_t> again = serialize_checkpoint(ck);
  // The legacy RoPE tables are written as zeros, so compare by re-parsing, not bytes.
  const Checkpoint ck2 = parse_checkpoint(again, "fuzz (re-serialised)");
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  };
  const Weights &a = ck.w, &b = ck2.w;
  if (!same(a.token_embedding, b.token_embedding) || !same(a.wq, b.wq) || !same(a.wk, b.wk) ||
      !same(a.wv, b.wv) || !same(a.wo, b.wo) || !same(a.w1, b.w1) || !same(a.w2, b.w2) ||
      !same(a.w3, b.w3) || !same(a.rms_att, b.rms_att) || !same(a.rms_ffn, b.rms_ffn) ||
      !same(a.rms_final, b.rms_final) || !same(a.wcls, b.wcls) || ck.config.dim != ck2.config.dim ||
      ck.config.shared_classifier != ck2.config.shared_classifier)
    __builtin_trap();
  return 0;
}
