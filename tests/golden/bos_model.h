// A synthetic checkpoint whose classifier prefers BOS at a known position (issue 28, class 4).
#pragma once

#include <cmath>
#include <vector>

#include "story.h"

namespace lockstep::host {

/// Position (0-based, after BOS) where bos_preferring_checkpoint() generates BOS greedily.
inline constexpr int kBosAt = 3;

/// synthetic_checkpoint() with a separate classifier: the token embedding, except row BOS =
/// `scale` times the unit vector of g * n, where n is the final normalised hidden state (before
/// the RMSNorm gain g) at position kBosAt of the model's own greedy sequence, and `scale` is
/// chosen so that BOS's logit there is 1.5 times the largest other logit's magnitude above it.
/// Rows other than BOS keep their values, so earlier positions decode as the synthetic model.
inline Checkpoint bos_preferring_checkpoint() {
  Checkpoint ck = synthetic_checkpoint();
  const int D = ck.config.dim;
  std::vector<float> at;  // final normalised state at position kBosAt
  {
    FloatModel m(ck);
    m.tap = [&](TapSite site, int, const float* x, int n) {
      if (site == TapSite::kFinalNorm) at.assign(x, x + n);
    };
    int token = kBosToken;
    for (int pos = 0; pos <= kBosAt; ++pos) {
      const std::vector<float>& logits = m.forward(token, pos);
      token = argmax(logits);
    }
  }
  std::vector<float> dir(static_cast<std::size_t>(D));
  double norm = 0;
  for (int i = 0; i < D; ++i) {
    dir[static_cast<std::size_t>(i)] = ck.w.rms_final[static_cast<std::size_t>(i)] * at[static_cast<std::size_t>(i)];
    norm += double(dir[static_cast<std::size_t>(i)]) * dir[static_cast<std::size_t>(i)];
  }
  norm = std::sqrt(norm);
  // The largest other logit at kBosAt (row BOS excluded).
  double best = -1e30;
  for (int v = 0; v < ck.config.vocab_size; ++v) {
    if (v == kBosToken) continue;
    double s = 0;
    for (int i = 0; i < D; ++i) s += double(ck.w.wcls[static_cast<std::size_t>(v) * D + i]) * dir[static_cast<std::size_t>(i)];
    best = std::max(best, s);
  }
  const double scale = 1.5 * std::abs(best) / norm;  // logit_BOS = scale * norm = 1.5 |best|
  ck.config.shared_classifier = false;
  for (int i = 0; i < D; ++i)
    ck.w.wcls[static_cast<std::size_t>(kBosToken) * D + i] = static_cast<float>(scale * dir[static_cast<std::size_t>(i)] / norm);
  return ck;
}

}  // namespace lockstep::host
