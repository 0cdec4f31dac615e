// fuzz_model_converter: bytes -> the llama2.c checkpoint reader of the model converter
// (guests/host/llama2c.h: parse_checkpoint), and, when the first byte says so, the tokenizer
// reader (parse_tokenizer).  Expected rejections: host::ModelError (one line).  A checkpoint
// that parses is serialised and parsed again; it must round-trip exactly.
//
// Allocations stay bounded by the input: parse_checkpoint compares the file size with the size
// the header implies before allocating any tensor, and parse_tokenizer checks every length
// against the bytes left.  Inputs are still capped (kMaxInput) so a campaign stays fast.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "llama2c.h"

namespace {
constexpr std::size_t kMaxInput = 1u << 20;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::host;
  if (size > kMaxInput || size == 0) return 0;
  // First byte: bit 0 selects the tokenizer reader; the rest is the file.
  const bool tokenizer = data[0] & 1;
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
