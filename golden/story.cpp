// Synthetic model and float32 forward pass (see story.h).
#include "story.h"

#include <cmath>

namespace lockstep::host {

Checkpoint synthetic_checkpoint(std::uint64_t seed) {
  Checkpoint ck;
  Config& c = ck.config;
  c.dim = 64; c.hidden_dim = 172; c.n_layers = 5; c.n_heads = 8; c.n_kv_heads = 4;
  c.vocab_size = 512; c.seq_len = 512; c.shared_classifier = true;
  SplitMix64 rng{seed};
  const std::size_t D = 64, H = 172, L = 5, V = 512, KV = 32;
  auto fill = [&](std::vector<float>& t, std::size_t n, float scale) {
    t.resize(n);
    for (auto& v : t) v = scale * rng.symmetric();
  };
  auto fill_norm = [&](std::vector<float>& t, std::size_t n) {
    t.resize(n);
    for (auto& v : t) v = 1.0f + 0.25f * rng.symmetric();
  };
  Weights& w = ck.w;
  fill(w.token_embedding, V * D, 1.0f);
  fill_norm(w.rms_att, L * D);
  fill(w.wq, L * D * D, 0.25f);
  fill(w.wk, L * KV * D, 0.25f);
  fill(w.wv, L * KV * D, 0.25f);
  fill(w.wo, L * D * D, 1.0f);
  fill_norm(w.rms_ffn, L * D);
  fill(w.w1, L * H * D, 0.25f);
  fill(w.w2, L * D * H, 1.0f);
  fill(w.w3, L * H * D, 0.25f);
  fill_norm(w.rms_final, D);
  w.wcls = w.token_embedding;
  return ck;
}

namespace {

void rmsnorm(float* o, const float* x, const float* weight, int size) {
  float ss = 0.0f;
  for (int j = 0; j < size; j++) ss += x[j] * x[j];
  ss /= static_cast<float>(size);
  ss += 1e-5f;
  ss = 1.0f / std::sqrt(ss);
  for (int j = 0; j < size; j++) o[j] = weight[j] * (ss * x[j]);
}

void softmax(float* x, int size) {
  float max_val = x[0];
  for (int i = 1; i < size; i++)
    if (x[i] > max_val) max_val = x[i];
  float sum = 0.0f;
  for (int i = 0; i < size; i++) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (int i = 0; i < size; i++) x[i] /= sum;
}

// W (d,n) @ x (n,) -> xout (d,)
void matmul(float* xout, const float* x, const float* w, int n, int d) {
  for (int i = 0; i < d; i++) {
    float val = 0.0f;
    for (int j = 0; j < n; j++) val += w[static_cast<std::size_t>(i) * n + j] * x[j];
    xout[i] = val;
  }
}

}  // namespace

FloatModel::FloatModel(const Checkpoint& ck) : ck_(ck), c_(ck.config) {
  const std::size_t D = c_.dim, H = c_.hidden_dim, KV = c_.kv_dim();
  x_.resize(D); xb_.resize(D); xb2_.resize(D); hb_.resize(H); hb2_.resize(H); q_.resize(D);
  att_.resize(static_cast<std::size_t>(c_.n_heads) * c_.seq_len);
  logits_.resize(c_.vocab_size);
  key_cache_.resize(static_cast<std::size_t>(c_.n_layers) * c_.seq_len * KV);
  value_cache_.resize(key_cache_.size());
}

const std::vector<float>& FloatModel::forward(int token, int pos) {
  // The KV cache holds seq_len positions and the embedding vocab_size rows: a caller past either
  // is refused, never a write past the cache (found by an outside tester: heap corruption).
  if (pos < 0 || pos >= c_.seq_len)
    throw ModelError("the float model: position " + std::to_string(pos) + " is outside the checkpoint's seq_len " +
                     std::to_string(c_.seq_len));
  if (token < 0 || token >= c_.vocab_size)
    throw ModelError("the float model: token " + std::to_string(token) + " is outside the checkpoint's vocab_size " +
                     std::to_string(c_.vocab_size));
  const Weights& w = ck_.w;
  const int dim = c_.dim, kv_dim = c_.kv_dim(), kv_mul = c_.n_heads / c_.n_kv_heads;
  const int hidden_dim = c_.hidden_dim, head_size = c_.head_size();
  float* x = x_.data();
  const float* content_row = w.token_embedding.data() + static_cast<std::size_t>(token) * dim;
  for (int i = 0; i < dim; ++i) x[i] = content_row[i];

  auto observe_norm = [&](TapSite site, int layer, const float* v) {
    if (!tap) return;
    float ss = 0.0f;
    for (int j = 0; j < dim; j++) ss += v[j] * v[j];
    ss = 1.0f / std::sqrt(ss / static_cast<float>(dim) + 1e-5f);
    std::vector<float> n(static_cast<std::size_t>(dim));
    for (int j = 0; j < dim; j++) n[static_cast<std::size_t>(j)] = ss * v[j];
    tap(site, layer, n.data(), dim);
  };
  for (int l = 0; l < c_.n_layers; l++) {
    observe_norm(TapSite::kAttnNorm, l, x);
    rmsnorm(xb_.data(), x, w.rms_att.data() + l * dim, dim);
    const std::size_t loff = static_cast<std::size_t>(l) * c_.seq_len * kv_dim;
    float* k = key_cache_.data() + loff + static_cast<std::size_t>(pos) * kv_dim;
    float* v = value_cache_.data() + loff + static_cast<std::size_t>(pos) * kv_dim;
    matmul(q_.data(), xb_.data(), w.wq.data() + static_cast<std::size_t>(l) * dim * dim, dim, dim);
    matmul(k, xb_.data(), w.wk.data() + static_cast<std::size_t>(l) * dim * kv_dim, dim, kv_dim);
    matmul(v, xb_.data(), w.wv.data() + static_cast<std::size_t>(l) * dim * kv_dim, dim, kv_dim);
    // RoPE relative positional encoding: complex-valued rotate q and k in each head
    for (int i = 0; i < dim; i += 2) {
      int head_dim = i % head_size;
      float freq = 1.0f / std::pow(10000.0f, static_cast<float>(head_dim) / static_cast<float>(head_size));
      float val = static_cast<float>(pos) * freq;
      float fcr = std::cos(val), fci = std::sin(val);
      int rotn = i < kv_dim ? 2 : 1;
      for (int vi = 0; vi < rotn; vi++) {
        float* vec = vi == 0 ? q_.data() : k;
        float v0 = vec[i], v1 = vec[i + 1];
        vec[i] = v0 * fcr - v1 * fci;
        vec[i + 1] = v0 * fci + v1 * fcr;
      }
    }
    // multihead attention
    for (int h = 0; h < c_.n_heads; h++) {
      const float* q = q_.data() + h * head_size;
      float* att = att_.data() + static_cast<std::size_t>(h) * c_.seq_len;
      for (int t = 0; t <= pos; t++) {
        const float* kt = key_cache_.data() + loff + static_cast<std::size_t>(t) * kv_dim +
                          (h / kv_mul) * head_size;
        float score = 0.0f;
        for (int i = 0; i < head_size; i++) score += q[i] * kt[i];
        score /= std::sqrt(static_cast<float>(head_size));
        att[t] = score;
      }
      softmax(att, pos + 1);
      float* xb = xb_.data() + h * head_size;
      for (int i = 0; i < head_size; ++i) xb[i] = 0.0f;
      for (int t = 0; t <= pos; t++) {
        const float* vt = value_cache_.data() + loff + static_cast<std::size_t>(t) * kv_dim +
                          (h / kv_mul) * head_size;
        for (int i = 0; i < head_size; i++) xb[i] += att[t] * vt[i];
      }
    }
    if (tap) tap(TapSite::kAttnOut, l, xb_.data(), dim);
    matmul(xb2_.data(), xb_.data(), w.wo.data() + static_cast<std::size_t>(l) * dim * dim, dim, dim);
    for (int i = 0; i < dim; i++) x[i] += xb2_[i];
    observe_norm(TapSite::kFfnNorm, l, x);
    rmsnorm(xb_.data(), x, w.rms_ffn.data() + l * dim, dim);
    matmul(hb_.data(), xb_.data(), w.w1.data() + static_cast<std::size_t>(l) * dim * hidden_dim, dim, hidden_dim);
    matmul(hb2_.data(), xb_.data(), w.w3.data() + static_cast<std::size_t>(l) * dim * hidden_dim, dim, hidden_dim);
    for (int i = 0; i < hidden_dim; i++) {
      float val = hb_[i];
      val *= (1.0f / (1.0f + std::exp(-val)));
      val *= hb2_[i];
      hb_[i] = val;
    }
    if (tap) tap(TapSite::kFfnHidden, l, hb_.data(), hidden_dim);
    matmul(xb_.data(), hb_.data(), w.w2.data() + static_cast<std::size_t>(l) * dim * hidden_dim, hidden_dim, dim);
    for (int i = 0; i < dim; i++) x[i] += xb_[i];
  }
  observe_norm(TapSite::kFinalNorm, -1, x);
  rmsnorm(x, x, w.rms_final.data(), dim);
  matmul(logits_.data(), x, w.wcls.data(), dim, c_.vocab_size);
  return logits_;
}

int argmax(const std::vector<float>& v) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(v.size()); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

std::vector<int> greedy_float(const Checkpoint& ck, int n, AtBos at_bos) {
  FloatModel m(ck);
  std::vector<int> out;
  int token = kBosToken;
  for (int pos = 0; pos < n && pos < ck.config.seq_len; ++pos) {
    token = argmax(m.forward(token, pos));
    if (token == kBosToken && at_bos == AtBos::kStop) break;  // BOS delimits stories (llama2.c)
    out.push_back(token);
  }
  return out;
}

}  // namespace lockstep::host
