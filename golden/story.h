// stories260K on the host: the synthetic model, the float32 forward pass (llama2.c run.c
// semantics) and greedy decoding.  The vector-unit (vx) integer build is in vx.h.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "llama2c.h"

namespace lockstep::host {

/// Seed of the synthetic model used when the real checkpoint is absent ("LOCKSTEP" in ASCII).
inline constexpr std::uint64_t kSyntheticSeed = 0x4C4F434B53544550ull;

/// SplitMix64 (Steele, Lea, Flood 2014): the synthetic model's only source of randomness.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1): ((next() >> 40) - 2^23) / 2^23, exact in float32.
  float symmetric() { return static_cast<float>(static_cast<std::int64_t>(next() >> 40) - (1 << 23)) / 8388608.0f; }
};

/// A deterministic model with stories260K's shapes (dim 64, hidden 172, 5 layers, 8 heads,
/// 4 KV heads, vocab 512, seq_len 512, shared classifier).  Tensors are filled in checkpoint
/// order from one SplitMix64(seed) stream: each value is `scale * symmetric()`, with scale 1.0
/// for the token embedding, 0.25 for wq/wk/wv/w1/w3 and 1.0 for wo/w2 (so the next token
/// depends on the context, not only on the current token); each RMSNorm weight
/// is `1 + 0.25 * symmetric()`.  See docs/quality.md.
Checkpoint synthetic_checkpoint(std::uint64_t seed = kSyntheticSeed);

/// Where FloatModel::tap sees a matrix input (RMSNorm outputs before the gain `g` is applied).
enum class TapSite { kAttnNorm, kAttnOut, kFfnNorm, kFfnHidden, kFinalNorm };

/// Float32 transformer with a KV cache of `seq_len` positions (llama2.c run.c forward()).
class FloatModel {
 public:
  explicit FloatModel(const Checkpoint& ck);
  /// Optional observer of matrix inputs (calibration for the vx converter); layer -1 = final.
  std::function<void(TapSite, int layer, const float* x, int n)> tap;
  /// Logits (vocab) for `token` at position `pos` (positions must be fed in order from 0).
  /// Throws ModelError for a `pos` outside 0..seq_len-1 or a `token` outside 0..vocab_size-1.
  const std::vector<float>& forward(int token, int pos);
  const Config& config() const { return c_; }

 private:
  const Checkpoint& ck_;
  Config c_;
  std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_, att_, logits_, key_cache_, value_cache_;
};

/// Index of the largest value; ties: the lowest index.
int argmax(const std::vector<float>& v);

/// Greedy decoding from BOS (id 1): at most `n` tokens following BOS (and at most seq_len).
/// With AtBos::kStop (llama2.c) a generated BOS ends the story and is not returned, so fewer
/// than `n` tokens may come back; with kContinue exactly min(n, seq_len).  EOS does not stop.
std::vector<int> greedy_float(const Checkpoint& ck, int n, AtBos at_bos = AtBos::kStop);

}  // namespace lockstep::host
