// Vector-unit build of stories260K: converter and exact integer golden model (see vx.h and
// docs/spec/vector.md).  Every formula below is the one of vector.md, section by section.
#include "vx.h"

#include "story.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lockstep::host {
namespace {

using i64 = std::int64_t;
using i128 = __int128;

// vector.md §1.2: rnd(x, s) = floor((x + 2^(s-1)) / 2^s) for s >= 1, x for s = 0.
i64 rnd(i64 x, int s) { return s == 0 ? x : (x + (i64{1} << (s - 1))) >> s; }
i128 rnd128(i128 x, int s) { return s == 0 ? x : (x + (i128{1} << (s - 1))) >> s; }
std::int32_t sat32(i64 x) {
  return static_cast<std::int32_t>(std::clamp<i64>(x, INT32_MIN, INT32_MAX));
}
std::int32_t sat32(i128 x) {
  if (x > INT32_MAX) return INT32_MAX;
  if (x < INT32_MIN) return INT32_MIN;
  return static_cast<std::int32_t>(x);
}
int floor_log2(std::uint64_t v) { return 63 - __builtin_clzll(v); }

// vector.md §4.3: smallest e >= 0 with rnd(amax, e) <= 127.
int vq_exponent(i64 amax) {
  int e = 0;
  while (rnd(amax, e) > 127) ++e;
  return e;
}

}  // namespace

VxTables::VxTables(int positions) {
  for (int i = 0; i < 1024; ++i) exp[i] = static_cast<std::int32_t>(std::llround(65536.0 * std::exp(-i / 64.0)));
  for (int i = 64; i < 256; ++i) {
    // nearest integer y to 2^27 / sqrt(i + 1/2): (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1)
    i64 y = static_cast<i64>(std::floor(134217728.0 / std::sqrt(i + 0.5)));
    auto below = [&](i64 yy) { return static_cast<i128>(2 * yy + 1) * (2 * yy + 1) * (2 * i + 1) <= (i128{1} << 57); };
    while (below(y)) ++y;
    while (y > 0 && !below(y - 1)) --y;
    rsq[i] = static_cast<std::int32_t>(y);
  }
  for (int i = 128; i < 256; ++i) {
    const i64 d = 2 * i + 1;  // nearest integer to 2^38 / (2i+1)
    rcp[i] = static_cast<std::int32_t>(((i64{1} << 39) + d) / (2 * d));
  }
  for (int i = 0; i < 1024; ++i)
    sig[i] = static_cast<std::int32_t>(std::llround(65536.0 / (1.0 + std::exp(-(i - 512) / 64.0))));
  cos.resize(static_cast<std::size_t>(positions) * 4);
  sin.resize(cos.size());
  const double freq[4] = {1.0, 0.1, 0.01, 0.001};
  for (int p = 0; p < positions; ++p)
    for (int j = 0; j < 4; ++j) {
      cos[static_cast<std::size_t>(p) * 4 + j] = static_cast<std::int32_t>(std::llround(65536.0 * std::cos(p * freq[j])));
      sin[static_cast<std::size_t>(p) * 4 + j] = static_cast<std::int32_t>(std::llround(65536.0 * std::sin(p * freq[j])));
    }
}

// ---- image ---------------------------------------------------------------------------------

std::vector<std::uint8_t> VxImage::wmem_section() const {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(kChunks) * 32);
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<std::uint8_t>((wmem[2 * k] & 15) | ((wmem[2 * k + 1] & 15) << 4));
  return out;
}

std::vector<std::uint8_t> VxImage::wscale_section() const {
  std::vector<std::uint8_t> out;
  for (auto s : wscale) {
    out.push_back(static_cast<std::uint8_t>(s & 0xFF));
    out.push_back(static_cast<std::uint8_t>(s >> 8));
  }
  return out;
}

namespace {

// int4 quantisation of one 64-weight chunk: the scale S (weight = q * S / 2^16) with the
// smallest squared error among S = round(amax * 65536 / d), d = 6.00, 6.05, ..., 9.00,
// q = clamp(round(w * 65536 / S), -8, 7) (ties of the error: the first d).
template <typename F>
void quantize_span(const F* w, int len, std::int8_t* q, std::uint16_t* scale) {
  double amax = 0;
  for (int i = 0; i < len; ++i) amax = std::max(amax, std::fabs(static_cast<double>(w[i])));
  std::fill(q, q + 64, 0);
  if (amax == 0) {
    *scale = 1;
    return;
  }
  double best_err = -1;
  for (int step = 0; step <= 60; ++step) {
    const double d = 6.0 + 0.05 * step;
    const i64 s = std::clamp<i64>(std::llround(amax * 65536.0 / d), 1, 65535);
    double err = 0;
    std::int8_t cand[64] = {};
    for (int i = 0; i < len; ++i) {
      const i64 v = std::clamp<i64>(std::llround(w[i] * 65536.0 / static_cast<double>(s)), -8, 7);
      cand[i] = static_cast<std::int8_t>(v);
      const double r = w[i] - static_cast<double>(v * s) / 65536.0;
      err += r * r;
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      *scale = static_cast<std::uint16_t>(s);
      std::copy(cand, cand + 64, q);
    }
  }
}

// ---- calibration and GPTQ (converter only; the spec fixes the bytes' meaning, not how
// they are chosen) ------------------------------------------------------------------------

// Adds x x^T to the upper triangle of h (mirrored by symmetrize()).
void add_outer(std::vector<double>& h, const float* x, int n) {
  for (int i = 0; i < n; ++i) {
    const double xi = x[i];
    double* row = &h[static_cast<std::size_t>(i * n)];
    for (int j = i; j < n; ++j) row[j] += xi * x[j];
  }
}

void symmetrize(std::vector<double>& h, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) h[static_cast<std::size_t>(i * n + j)] = h[static_cast<std::size_t>(j * n + i)];
}

// Calibration token sequences: sampled from the float32 model at temperature 1 from BOS.
std::vector<std::vector<int>> calibration_tokens(const Checkpoint& ck) {
  SplitMix64 rng{kCalibrationSeed};
  std::vector<std::vector<int>> seqs;
  for (int seq = 0; seq < kCalibrationSequences; ++seq) {
    FloatModel fm(ck);
    std::vector<int> toks{1};
    for (int pos = 0; pos + 1 < kCalibrationLength; ++pos) {
      const std::vector<float>& logits = fm.forward(toks.back(), pos);
      float mx = logits[0];
      for (float v : logits) mx = std::max(mx, v);
      std::vector<double> p(logits.size());
      double sum = 0;
      for (std::size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(double{logits[i]} - mx);
      const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * sum;
      double cum = 0;
      int token = static_cast<int>(p.size()) - 1;
      for (std::size_t i = 0; i < p.size(); ++i) {
        cum += p[i];
        if (u < cum) { token = static_cast<int>(i); break; }
      }
      toks.push_back(token);
    }
    seqs.push_back(std::move(toks));
  }
  return seqs;
}

// Second moments H = sum x x^T of every matrix input while `ck` reads the calibration
// sequences: index 4*layer + site for the per-layer sites, 20 for the final norm.
std::vector<std::vector<double>> calibrate(const Checkpoint& ck, const std::vector<std::vector<int>>& seqs) {
  std::vector<std::vector<double>> h(21);
  for (int l = 0; l < 5; ++l)
    for (int site = 0; site < 4; ++site)
      h[static_cast<std::size_t>(4 * l + site)].assign(site == 3 ? 172 * 172 : 64 * 64, 0.0);
  h[20].assign(64 * 64, 0.0);
  for (const auto& toks : seqs) {
    FloatModel fm(ck);
    fm.tap = [&](TapSite site, int l, const float* x, int len) {
      const int idx = site == TapSite::kFinalNorm ? 20 : 4 * l + static_cast<int>(site);
      add_outer(h[static_cast<std::size_t>(idx)], x, len);
    };
    for (std::size_t pos = 0; pos < toks.size(); ++pos) fm.forward(toks[pos], static_cast<int>(pos));
  }
  for (auto& m : h) symmetrize(m, m.size() == 172 * 172 ? 172 : 64);
  return h;
}

// The rotation Q = H64 · diag(sign) / 8 (H64 the Sylvester-Hadamard matrix, H[i][j] =
// (-1)^popcount(i & j); sign[j] = -1 when bit 63 of the j-th SplitMix64(kRotationSeed) output
// is set, else +1), applied to the residual stream: Q is orthogonal, so RMSNorm (gains folded)
// commutes with it and the rotated model computes the same function.
std::vector<double> rotation_matrix() {
  SplitMix64 rng{kRotationSeed};
  double sign[64];
  for (double& sg : sign) sg = (rng.next() >> 63) ? -1.0 : 1.0;
  std::vector<double> q(64 * 64);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j)
      q[static_cast<std::size_t>(i * 64 + j)] = ((__builtin_popcount(static_cast<unsigned>(i & j)) & 1) ? -1.0 : 1.0) / 8.0 * sign[j];
  return q;
}

// Rotates the residual stream of a gain-folded model: readers W -> W Q^T, writers W -> Q W,
// embedding rows e -> Q e.
void rotate_residual(Weights& w) {
  const auto q = rotation_matrix();
  auto readers = [&](std::vector<float>& m, std::size_t rows) {
    for (std::size_t r = 0; r < rows; ++r) {
      double t[64];
      for (int i = 0; i < 64; ++i) {
        double acc = 0;
        for (int k = 0; k < 64; ++k) acc += double{m[r * 64 + static_cast<std::size_t>(k)]} * q[static_cast<std::size_t>(i * 64 + k)];
        t[i] = acc;
      }
      for (int i = 0; i < 64; ++i) m[r * 64 + static_cast<std::size_t>(i)] = static_cast<float>(t[i]);
    }
  };
  auto writers = [&](std::vector<float>& m, std::size_t offset, int n) {  // (64 x n) block
    std::vector<double> t(static_cast<std::size_t>(64 * n));
    for (int i = 0; i < 64; ++i)
      for (int c = 0; c < n; ++c) {
        double acc = 0;
        for (int k = 0; k < 64; ++k) acc += q[static_cast<std::size_t>(i * 64 + k)] * m[offset + static_cast<std::size_t>(k * n + c)];
        t[static_cast<std::size_t>(i * n + c)] = acc;
      }
    for (std::size_t i = 0; i < t.size(); ++i) m[offset + i] = static_cast<float>(t[i]);
  };
  readers(w.wq, 5 * 64);
  readers(w.wk, 5 * 32);
  readers(w.wv, 5 * 32);
  readers(w.w1, 5 * 172);
  readers(w.w3, 5 * 172);
  readers(w.wcls, 512);
  for (std::size_t l = 0; l < 5; ++l) {
    writers(w.wo, l * 64 * 64, 64);
    writers(w.w2, l * 64 * 172, 172);
  }
  // embedding rows are column vectors of the residual: e -> Q e == row * Q^T
  readers(w.token_embedding, 512);
}

// Lower Cholesky factor of a symmetric positive definite n x n matrix (row-major).
std::vector<double> cholesky(const std::vector<double>& a, int n) {
  std::vector<double> l(static_cast<std::size_t>(n * n), 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = a[static_cast<std::size_t>(i * n + j)];
      for (int k = 0; k < j; ++k) s -= l[static_cast<std::size_t>(i * n + k)] * l[static_cast<std::size_t>(j * n + k)];
      if (i == j) l[static_cast<std::size_t>(i * n + i)] = std::sqrt(std::max(s, 1e-12));
      else l[static_cast<std::size_t>(i * n + j)] = s / l[static_cast<std::size_t>(j * n + j)];
    }
  return l;
}

// Inverse of a symmetric positive definite matrix through its Cholesky factor.
std::vector<double> spd_inverse(const std::vector<double>& a, int n) {
  const auto l = cholesky(a, n);
  std::vector<double> inv(static_cast<std::size_t>(n * n), 0.0);
  for (int c = 0; c < n; ++c) {
    std::vector<double> y(static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {  // L y = e_c
      double s = i == c ? 1.0 : 0.0;
      for (int k = 0; k < i; ++k) s -= l[static_cast<std::size_t>(i * n + k)] * y[static_cast<std::size_t>(k)];
      y[static_cast<std::size_t>(i)] = s / l[static_cast<std::size_t>(i * n + i)];
    }
    for (int i = n - 1; i >= 0; --i) {  // L^T x = y
      double s = y[static_cast<std::size_t>(i)];
      for (int k = i + 1; k < n; ++k) s -= l[static_cast<std::size_t>(k * n + i)] * inv[static_cast<std::size_t>(k * n + c)];
      inv[static_cast<std::size_t>(i * n + c)] = s / l[static_cast<std::size_t>(i * n + i)];
    }
  }
  return inv;
}

// GPTQ (Frantar et al. 2022) of a rows x n matrix `w` (row-major, doubles) with input second
// moments `h`: columns are quantised in order, each chunk's scale chosen (quantize_span) when
// its first column is reached, and each column's rounding error is spread over the columns
// not yet quantised through the upper Cholesky factor of H^-1.  Writes q (rows x n) and
// scales (rows x ceil(n/64)).
void gptq_in_order(std::vector<double> w, std::vector<double> h, int rows, int n,
                   std::vector<std::int8_t>& q, std::vector<std::uint16_t>& scales) {
  const int groups = (n + 63) / 64;
  q.assign(static_cast<std::size_t>(rows * n), 0);
  scales.assign(static_cast<std::size_t>(rows * groups), 1);
  double mean_diag = 0;
  for (int i = 0; i < n; ++i) mean_diag += h[static_cast<std::size_t>(i * n + i)];
  mean_diag /= n;
  for (int i = 0; i < n; ++i) {
    if (h[static_cast<std::size_t>(i * n + i)] == 0) {  // a dead input: its weights do not matter
      h[static_cast<std::size_t>(i * n + i)] = 1;
      for (int r = 0; r < rows; ++r) w[static_cast<std::size_t>(r * n + i)] = 0;
    }
    h[static_cast<std::size_t>(i * n + i)] += kGptqDamp * mean_diag;
  }
  const auto hinv = spd_inverse(h, n);
  const auto l = cholesky(hinv, n);  // hinv = L L^T, U = L^T
  auto u = [&](int i, int j) { return l[static_cast<std::size_t>(j * n + i)]; };
  for (int j = 0; j < n; ++j) {
    const int g = j / 64;
    if (j % 64 == 0)
      for (int r = 0; r < rows; ++r) {
        const int len = std::min(64, n - j);
        std::int8_t tmp[64];
        quantize_span(&w[static_cast<std::size_t>(r * n + j)], len, tmp, &scales[static_cast<std::size_t>(r * groups + g)]);
      }
    for (int r = 0; r < rows; ++r) {
      const double s = scales[static_cast<std::size_t>(r * groups + g)];
      double& x = w[static_cast<std::size_t>(r * n + j)];
      const i64 qv = std::clamp<i64>(std::llround(x * 65536.0 / s), -8, 7);
      q[static_cast<std::size_t>(r * n + j)] = static_cast<std::int8_t>(qv);
      const double err = (x - static_cast<double>(qv) * s / 65536.0) / u(j, j);
      for (int k = j + 1; k < n; ++k) w[static_cast<std::size_t>(r * n + k)] -= err * u(j, k);
    }
  }
}

// GPTQ with "act-order" inside each chunk: the columns of every 64-column group are
// processed by decreasing H diagonal (the most active inputs first), so later, less important
// columns absorb the rounding error.  Groups stay the chunks of vector.md §7.1.
void gptq(const std::vector<double>& w, const std::vector<double>& h, int rows, int n,
          std::vector<std::int8_t>& q, std::vector<std::uint16_t>& scales) {
  std::vector<int> perm(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
  for (int g = 0; g < n; g += 64)
    std::stable_sort(perm.begin() + g, perm.begin() + std::min(n, g + 64), [&](int a, int b) {
      return h[static_cast<std::size_t>(a * n + a)] > h[static_cast<std::size_t>(b * n + b)];
    });
  auto P = [&](int i) { return perm[static_cast<std::size_t>(i)]; };
  std::vector<double> wp(w.size()), hp(h.size());
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) wp[static_cast<std::size_t>(r * n + i)] = w[static_cast<std::size_t>(r * n + P(i))];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) hp[static_cast<std::size_t>(i * n + j)] = h[static_cast<std::size_t>(P(i) * n + P(j))];
  std::vector<std::int8_t> qp;
  gptq_in_order(std::move(wp), std::move(hp), rows, n, qp, scales);
  q.assign(qp.size(), 0);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) q[static_cast<std::size_t>(r * n + P(i))] = qp[static_cast<std::size_t>(r * n + i)];
}

}  // namespace

VxImage convert_vx(const Checkpoint& ck, VxQuant method) {
  const Config& c = ck.config;
  static_assert(kCalibrationLength <= kVectorBuildMinSeqLen);
  // (found by an outside tester: a seq_len below the calibration's 256 positions corrupted the heap)
  if (const std::string why = vector_build_refusal(c); !why.empty())
    throw ModelError("convert_vx: the vector build needs stories260K's shapes (dim 64, hidden_dim 172, n_layers 5, "
                     "n_heads 8, n_kv_heads 4, vocab_size 512, seq_len >= " +
                     std::to_string(kVectorBuildMinSeqLen) + "); this checkpoint has " + why);
  VxImage img;
  img.wmem.assign(static_cast<std::size_t>(kChunks) * 64, 0);
  img.wscale.assign(kChunks, 1);
  // The working model: RMSNorm gains folded into the matrices that read the norms (gains 1),
  // the same function as `ck`.  Each matrix is replaced by its dequantised image as soon as it
  // is quantised, so GPTQ's calibration inputs for later matrices include earlier errors.
  Checkpoint work = ck;
  Weights& w = work.w;
  work.config.shared_classifier = false;
  auto fold = [](std::vector<float>& m, std::size_t offset, int rows, const float* g) {
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < 64; ++i) m[offset + static_cast<std::size_t>(r * 64 + i)] *= g[i];
  };
  for (int l = 0; l < 5; ++l) {
    const std::size_t L = static_cast<std::size_t>(l);
    fold(w.wq, L * 64 * 64, 64, ck.w.rms_att.data() + l * 64);
    fold(w.wk, L * 32 * 64, 32, ck.w.rms_att.data() + l * 64);
    fold(w.wv, L * 32 * 64, 32, ck.w.rms_att.data() + l * 64);
    fold(w.w1, L * 172 * 64, 172, ck.w.rms_ffn.data() + l * 64);
    fold(w.w3, L * 172 * 64, 172, ck.w.rms_ffn.data() + l * 64);
  }
  fold(w.wcls, 0, 512, ck.w.rms_final.data());
  std::fill(w.rms_att.begin(), w.rms_att.end(), 1.0f);
  std::fill(w.rms_ffn.begin(), w.rms_ffn.end(), 1.0f);
  std::fill(w.rms_final.begin(), w.rms_final.end(), 1.0f);
  rotate_residual(w);
  std::vector<std::vector<double>> hs;
  if (method == VxQuant::kGptq) hs = calibrate(work, calibration_tokens(ck));

  // One matrix: `rows` rows of `n` inputs taken from (tensor, offset, row stride n) pieces,
  // row r multiplied by mul[r] in the image; chunk (r, j) goes to `first + r*groups + j`.
  struct Piece {
    std::vector<float>* t;
    std::size_t offset;
    int rows;
    double mul;
  };
  auto quantize = [&](int first, std::vector<Piece> pieces, int n, TapSite site, int layer) {
    int rows = 0;
    for (const auto& p : pieces) rows += p.rows;
    const int groups = (n + 63) / 64;
    std::vector<double> m(static_cast<std::size_t>(rows * n));
    {
      int r0 = 0;
      for (const auto& p : pieces) {
        for (int r = 0; r < p.rows; ++r)
          for (int i = 0; i < n; ++i)
            m[static_cast<std::size_t>((r0 + r) * n + i)] = double{(*p.t)[p.offset + static_cast<std::size_t>(r * n + i)]} * p.mul;
        r0 += p.rows;
      }
    }
    std::vector<std::int8_t> q;
    std::vector<std::uint16_t> sc;
    if (method == VxQuant::kGptq) {
      gptq(m, hs[static_cast<std::size_t>(site == TapSite::kFinalNorm ? 20 : 4 * layer + static_cast<int>(site))], rows, n, q, sc);
    } else {
      q.assign(static_cast<std::size_t>(rows * n), 0);
      sc.assign(static_cast<std::size_t>(rows * groups), 1);
      for (int r = 0; r < rows; ++r)
        for (int g = 0; g < groups; ++g) {
          std::int8_t tmp[64];
          const int len = std::min(64, n - 64 * g);
          quantize_span(&m[static_cast<std::size_t>(r * n + 64 * g)], len, tmp, &sc[static_cast<std::size_t>(r * groups + g)]);
          std::copy(tmp, tmp + len, &q[static_cast<std::size_t>(r * n + 64 * g)]);
        }
    }
    int r0 = 0;
    for (const auto& p : pieces) {
      for (int r = 0; r < p.rows; ++r)
        for (int g = 0; g < groups; ++g) {
          const int rr = r0 + r;
          const std::size_t chunk = static_cast<std::size_t>(first + rr * groups + g);
          const std::uint16_t s = sc[static_cast<std::size_t>(rr * groups + g)];
          img.wscale[chunk] = s;
          for (int i = 0; i < 64 && 64 * g + i < n; ++i) {
            const std::int8_t v = q[static_cast<std::size_t>(rr * n + 64 * g + i)];
            img.wmem[chunk * 64 + static_cast<std::size_t>(i)] = v;
            (*p.t)[p.offset + static_cast<std::size_t>(r * n + 64 * g + i)] =
                static_cast<float>(v * static_cast<double>(s) / 65536.0 / p.mul);
          }
        }
      r0 += p.rows;
    }
  };
  const double inv_sqrt_hs = 1.0 / std::sqrt(8.0);
  for (int l = 0; l < 5; ++l) {
    const int base = l * kChunksPerLayer;
    const std::size_t L = static_cast<std::size_t>(l);
    quantize(base, {{&w.wq, L * 4096, 64, inv_sqrt_hs}, {&w.wk, L * 2048, 32, 1.0}, {&w.wv, L * 2048, 32, 1.0}},
             64, TapSite::kAttnNorm, l);
    quantize(base + 128, {{&w.wo, L * 4096, 64, 1.0}}, 64, TapSite::kAttnOut, l);
    quantize(base + 192, {{&w.w1, L * 172 * 64, 172, 1.0}, {&w.w3, L * 172 * 64, 172, 1.0}}, 64,
             TapSite::kFfnNorm, l);
    quantize(base + 536, {{&w.w2, L * 64 * 172, 64, 1.0}}, 172, TapSite::kFfnHidden, l);
  }
  quantize(kClassifierChunk, {{&w.wcls, 0, 512, 1.0}}, 64, TapSite::kFinalNorm, -1);
  // Embedding records for VLD: M = max(1, round(amax * 65536 / 127)), b = clamp(round(e*65536/M)).
  img.emb.assign(static_cast<std::size_t>(512) * kEmbRecord, 0);
  for (int r = 0; r < 512; ++r) {
    const float* e = work.w.token_embedding.data() + static_cast<std::size_t>(r) * 64;
    double amax = 0;
    for (int i = 0; i < 64; ++i) amax = std::max(amax, std::fabs(static_cast<double>(e[i])));
    const i64 m = std::max<i64>(1, std::llround(amax * 65536.0 / 127.0));
    std::uint8_t* rec = &img.emb[static_cast<std::size_t>(r) * kEmbRecord];
    for (int k = 0; k < 4; ++k) rec[k] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(m) >> (8 * k));
    for (int i = 0; i < 64; ++i) {
      const i64 b = std::clamp<i64>(std::llround(e[i] * 65536.0 / static_cast<double>(m)), -127, 127);
      rec[4 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(b));
    }
  }
  return img;
}

// ---- the unit ------------------------------------------------------------------------------

VxUnit::VxUnit(const VxImage& img, int positions)
    : hstride(std::max(64, positions)), img_(img), tab_(positions) {
  vreg.assign(static_cast<std::size_t>(512 + 8 * hstride), 0);
  const std::size_t rows = static_cast<std::size_t>(kLayers) * static_cast<std::size_t>(positions);
  kc.assign(rows * kKvDim, 0);
  vc.assign(rows * kKvDim, 0);
  ke.assign(rows, 0);
  ve.assign(rows, 0);
}

void VxUnit::emit(int kind, i64 payload) {
  ++tokens;
  if (record) trace.push_back({kind, static_cast<int>(payload & 0xFF)});
}

// vector.md §5, word stream: element e with value z is VWG(e >> 2) when e is the stream's first
// element or e & 3 = 0, then VW_{q0}..VW_{q3} (kinds 61 + 4q + m, q = e & 3) with byte m of z's
// 32-bit two's complement.
void VxUnit::emit_word(int e, std::int32_t z, bool first) {
  if (first || (e & 3) == 0) emit(43, e >> 2);  // VWG
  const std::uint32_t u = static_cast<std::uint32_t>(z);
  const int q = e & 3;
  for (int m = 0; m < 4; ++m) emit(61 + 4 * q + m, (u >> (8 * m)) & 0xFF);
}

// vector.md §5, int8 stream: element j with value v is VLG(j >> 2) when j & 3 = 0, then
// VLB_{j & 3}(lo8(v)).
void VxUnit::emit_int8(int j, int v) {
  if ((j & 3) == 0) emit(56, j >> 2);  // VLG
  emit(57 + (j & 3), v & 0xFF);       // VLB_{j & 3}: lo8 of the two's complement
}

// §4.1 VMAT; tokens §5: per row VMH (when r > 0 and r & 0xFF = 0), VMC_j(r & 0xFF) per chunk,
// then VY0..VY3 of y_r; argmax mode: VYN3 instead of VY3 when y_r is above every earlier row
// (always row 0), then W(r*).
int VxUnit::vmat(int dst, int b0, int c0, int rows, int k, bool argmax_mode) {
  int best = 0;
  std::int32_t best_val = 0;
  for (int r = 0; r < rows; ++r) {
    i64 total = 0;
    if (r > 0 && r % 256 == 0) emit(39, r / 256);  // VMH(r >> 8)
    for (int j = 0; j < k; ++j) {
      const int c = c0 + r * k + j, b = b0 + j;
      i64 acc = 0;
      for (int i = 0; i < 64; ++i)
        acc += i64{act[static_cast<std::size_t>(64 * b + i)]} * img_.wmem[static_cast<std::size_t>(64 * c + i)];
      emit(33 + j, r % 256);  // VMC_j(r & 0xFF)
      total += (acc * img_.wscale[static_cast<std::size_t>(c)]) * (i64{1} << aexp[static_cast<std::size_t>(b)]);
    }
    const std::int32_t y = sat32(rnd(total, 16));
    const std::uint32_t yu = static_cast<std::uint32_t>(y);
    for (int m = 0; m < 3; ++m) emit(51 + m, (yu >> (8 * m)) & 0xFF);  // VY0..VY2
    bool new_max = false;
    if (argmax_mode) {
      new_max = r == 0 || y > best_val;  // ties: the lowest index stays the maximum
      if (new_max) { best = r; best_val = y; }
    } else {
      vreg[static_cast<std::size_t>(dst + r)] = y;
    }
    emit(new_max ? 55 : 54, yu >> 24);  // VYN3 or VY3
  }
  if (argmax_mode)
    for (int k2 = 0; k2 < 4; ++k2) emit(1 + k2, best >> (8 * k2));  // W(rd), rd != 0
  return best;
}

// §4.2 VMATR; tokens §5: K mode, the word stream of e = 8t + h with the score of head h at
// position t (the spec's VR[dst + 64h + t]; here at dst + hstride*h + t); V mode, VMV(t) per
// position, then the word stream of the 64 sums e = 8h + d.
void VxUnit::vmatr(bool v_mode, int dst, int src, int r0, int t_count) {
  if (!v_mode) {
    const int eq = aexp[static_cast<std::size_t>(src)];
    for (int t = 0; t < t_count; ++t) {
      const std::size_t row = static_cast<std::size_t>(r0 + t);
      for (int h = 0; h < 8; ++h) {
        i64 raw = 0;
        for (int d = 0; d < 8; ++d)
          raw += i64{act[static_cast<std::size_t>(64 * src + 8 * h + d)]} * kc[row * 32 + static_cast<std::size_t>(8 * (h / 2) + d)];
        const int sh = eq + ke[row];
        const i64 val = sh >= 16 ? raw * (i64{1} << (sh - 16)) : rnd(raw, 16 - sh);
        vreg[static_cast<std::size_t>(dst + hstride * h + t)] = sat32(val);
      }
    }
    for (int t = 0; t < t_count; ++t)
      for (int h = 0; h < 8; ++h)
        emit_word(8 * t + h, vreg[static_cast<std::size_t>(dst + hstride * h + t)], t == 0 && h == 0);
    return;
  }
  i64 acc[64] = {};
  for (int t = 0; t < t_count; ++t) {
    const std::size_t row = static_cast<std::size_t>(r0 + t);
    for (int h = 0; h < 8; ++h) {
      const i64 p = std::clamp<i64>(vreg[static_cast<std::size_t>(src + hstride * h + t)], 0, 65536);
      for (int d = 0; d < 8; ++d)
        acc[8 * h + d] += p * vc[row * 32 + static_cast<std::size_t>(8 * (h / 2) + d)] * (i64{1} << ve[row]);
    }
    emit(40, t);  // VMV(t)
  }
  for (int i = 0; i < 64; ++i) vreg[static_cast<std::size_t>(dst + i)] = sat32(rnd(acc[i], 16));
  for (int e = 0; e < 64; ++e) emit_word(e, vreg[static_cast<std::size_t>(dst + e)], e == 0);
}

// §4.3 VQ; tokens §5: per group k, VQE((k << 5) | e_k), then the values the group writes (ACT:
// the whole block, padding zeros included; K/V: the 32 row values) as elements j = 64k + i of
// one int8 stream over the instruction.
void VxUnit::vq(int mode, int dst, int src, int n) {
  const int groups = (n + 63) / 64;
  for (int g = 0; g < groups; ++g) {
    i64 amax = 0;
    for (int i = 64 * g; i < std::min(n, 64 * g + 64); ++i)
      amax = std::max(amax, std::abs(i64{vreg[static_cast<std::size_t>(src + i)]}));
    const int e = vq_exponent(amax);
    emit(42, 32 * g + e);  // VQE
    const int width = mode == 0 ? 64 : 32;
    for (int i = 64 * g; i < 64 * g + width; ++i) {
      const i64 q = i < n ? rnd(vreg[static_cast<std::size_t>(src + i)], e) : 0;
      if (mode == 0) act[static_cast<std::size_t>(64 * dst + i)] = static_cast<std::int8_t>(q);
      else (mode == 1 ? kc : vc)[static_cast<std::size_t>(dst) * 32 + static_cast<std::size_t>(i)] = static_cast<std::int8_t>(q);
      emit_int8(i, static_cast<int>(q));
    }
    if (mode == 0) aexp[static_cast<std::size_t>(dst + g)] = static_cast<std::uint8_t>(e);
    else (mode == 1 ? ke : ve)[static_cast<std::size_t>(dst)] = static_cast<std::uint8_t>(e);
  }
}

// §4.4 VEXP; tokens §5: one word stream; per group g, VXM0..VXM3 (bytes of m_g), then the
// elements e = 64g + t (p_{g,t}); then the elements e = 512 + g (S_g).
void VxUnit::vexp(int groups, int dst, int src, int sums, int t_count) {
  std::vector<std::int32_t> s(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    const std::size_t s0 = static_cast<std::size_t>(src + hstride * g), d0 = static_cast<std::size_t>(dst + hstride * g);
    i64 m = vreg[s0];
    for (int t = 1; t < t_count; ++t) m = std::max<i64>(m, vreg[s0 + static_cast<std::size_t>(t)]);
    const std::uint32_t mu = static_cast<std::uint32_t>(static_cast<std::int32_t>(m));
    for (int b = 0; b < 4; ++b) emit(77 + b, (mu >> (8 * b)) & 0xFF);  // VXM0..VXM3
    i64 sum = 0;
    for (int t = 0; t < t_count; ++t) {
      const i64 d = m - vreg[s0 + static_cast<std::size_t>(t)];
      const i64 idx = std::min<i64>(1023, rnd(d, 10));
      const std::int32_t p = tab_.exp[static_cast<std::size_t>(idx)];
      vreg[d0 + static_cast<std::size_t>(t)] = p;
      sum += p;
      emit_word(64 * g + t, p, g == 0 && t == 0);
    }
    s[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(sum);
  }
  for (int g = 0; g < groups; ++g) {
    vreg[static_cast<std::size_t>(sums + g)] = s[static_cast<std::size_t>(g)];
    emit_word(512 + g, s[static_cast<std::size_t>(g)], false);
  }
}

// §4.5 VEW; tokens §5: the word stream of the n results e = i.
void VxUnit::vew(int mode, int gs, int dst, int a, int b, int n) {
  std::vector<std::int32_t> z(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const i64 x = vreg[static_cast<std::size_t>(a + i)];
    switch (mode) {
      case 0: z[static_cast<std::size_t>(i)] = sat32(x + vreg[static_cast<std::size_t>(b + i)]); break;
      case 1: z[static_cast<std::size_t>(i)] = sat32(rnd(x * vreg[static_cast<std::size_t>(b + i)], 16)); break;
      case 2: z[static_cast<std::size_t>(i)] = sat32(rnd(x * vreg[static_cast<std::size_t>(b + (i >> gs))], 16)); break;
      default: {
        const std::size_t j = static_cast<std::size_t>(b) * 4 + static_cast<std::size_t>((i / 2) % 4);
        const i64 c = tab_.cos[j], s = tab_.sin[j];
        if (i % 2 == 0) {
          const i64 y = vreg[static_cast<std::size_t>(a + i + 1)];
          z[static_cast<std::size_t>(i)] = sat32(rnd(x * c - y * s, 16));
        } else {
          const i64 w0 = vreg[static_cast<std::size_t>(a + i - 1)];
          z[static_cast<std::size_t>(i)] = sat32(rnd(w0 * s + x * c, 16));
        }
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    vreg[static_cast<std::size_t>(dst + i)] = z[static_cast<std::size_t>(i)];
    emit_word(i, z[static_cast<std::size_t>(i)], i == 0);
  }
}

// §4.6 VFN; tokens §5: the word stream of the n results e = i.
void VxUnit::vfn(int mode, int dst, int src, int n) {
  std::vector<std::int32_t> z(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const i64 x = vreg[static_cast<std::size_t>(src + i)];
    std::int32_t r = 0;
    if (mode == 0) {  // RSQRT
      const i64 u = std::max<i64>(x, 1);
      const int k = floor_log2(static_cast<std::uint64_t>(u)), k2 = k & ~1;
      const i64 idx = k2 >= 6 ? u >> (k2 - 6) : u << (6 - k2);
      r = sat32(rnd(tab_.rsq[static_cast<std::size_t>(idx)], k2 / 2));
    } else if (mode == 1) {  // RECIP
      const i64 u = std::max<i64>(x, 1);
      const int k = floor_log2(static_cast<std::uint64_t>(u));
      const i64 idx = k >= 7 ? u >> (k - 7) : u << (7 - k);
      const i64 t = tab_.rcp[static_cast<std::size_t>(idx)];
      r = k <= 2 ? sat32(t * (i64{1} << (2 - k))) : sat32(rnd(t, k - 2));
    } else {  // SILU
      const i64 idx = std::clamp<i64>(rnd(x, 10) + 512, 0, 1023);
      r = sat32(rnd(x * tab_.sig[static_cast<std::size_t>(idx)], 16));
    }
    z[static_cast<std::size_t>(i)] = r;
  }
  for (int i = 0; i < n; ++i) {
    vreg[static_cast<std::size_t>(dst + i)] = z[static_cast<std::size_t>(i)];
    emit_word(i, z[static_cast<std::size_t>(i)], i == 0);
  }
}

// §4.7 VRED; tokens §5: VRD(k) per source group k, then the one-element word stream e = 0 (z).
void VxUnit::vred(int mode, int sh, int dst, int src, int n) {
  i128 acc = mode == 2 ? i128{vreg[static_cast<std::size_t>(src)]} : 0;
  for (int g = 0; g < (n + 63) / 64; ++g) {
    for (int i = 64 * g; i < std::min(n, 64 * g + 64); ++i) {
      const i128 x = vreg[static_cast<std::size_t>(src + i)];
      if (mode == 0) acc += x * x;
      else if (mode == 1) acc += x;
      else acc = std::max(acc, x);
    }
    emit(41, g);  // VRD(k)
  }
  std::int32_t r;
  if (mode == 0) r = sat32(rnd128(acc, 16 + sh));
  else if (mode == 1) r = sat32(rnd128(acc, sh));
  else r = static_cast<std::int32_t>(acc);
  vreg[static_cast<std::size_t>(dst)] = r;
  emit_word(0, r, true);
}

// §4.8 VLD
void VxUnit::vld(const std::uint8_t* rec, int dst, int n) {
  std::uint32_t mu = 0;
  for (int k = 0; k < 4; ++k) {
    mu |= std::uint32_t{rec[k]} << (8 * k);
    emit(57 + k, rec[k]);  // VLB_k: the record is 4-byte aligned, byte k is on lane k
  }
  const i64 m = static_cast<std::int32_t>(mu);
  for (int i = 0; i < n; ++i) {
    if (i % 4 == 0) emit(56, i / 4);  // VLG(g), elements 4g .. 4g+3
    emit(57 + i % 4, rec[4 + i]);
    vreg[static_cast<std::size_t>(dst + i)] = sat32(i64{static_cast<std::int8_t>(rec[4 + i])} * m);
  }
}

// ---- the forward pass (vector.md §7) ---------------------------------------------------------

VxModel::VxModel(const VxImage& img, int positions) : unit(img, positions), img_(img), positions_(positions) {}

int VxModel::forward(int token, int pos) {
  constexpr int X = 0, XB = 64, QKV = 128, K = 192, V = 224, W3 = 300, MS = 480, R = 481,
                SUMS = 488, RCP = 496, S = 512;
  VxUnit& u = unit;
  const int T = pos + 1;
  u.vld(&img_.emb[static_cast<std::size_t>(token) * kEmbRecord], X, 64);
  for (int l = 0; l < kLayers; ++l) {
    const int c0 = l * kChunksPerLayer, r0 = l * positions_, row = r0 + pos;
    u.vred(0, 6, MS, X, 64);          // mean square of x
    u.vfn(0, R, MS, 1);               // 1/rms
    u.vew(2, 6, XB, X, R, 64);        // x * (1/rms)
    u.vq(0, 0, XB, 64);               // -> ACT block 0
    u.vmat(QKV, 0, c0, 128, 1, false);  // q | k | v
    u.vew(3, 0, QKV, QKV, pos, 96);   // RoPE on q and k
    u.vq(1, row, K, 32);              // K cache row
    u.vq(2, row, V, 32);              // V cache row
    u.vq(0, 1, QKV, 64);              // q -> ACT block 1
    u.vmatr(false, S, 1, r0, T);      // scores, head-major
    u.vexp(8, S, S, SUMS, T);         // softmax numerators + sums
    u.vmatr(true, XB, S, r0, T);      // weighted V sums
    u.vfn(1, RCP, SUMS, 8);           // 1/sum per head
    u.vew(2, 3, XB, XB, RCP, 64);     // normalise per head
    u.vq(0, 0, XB, 64);
    u.vmat(QKV, 0, c0 + 128, 64, 1, false);  // wo
    u.vew(0, 0, X, X, QKV, 64);       // residual
    u.vred(0, 6, MS, X, 64);
    u.vfn(0, R, MS, 1);
    u.vew(2, 6, XB, X, R, 64);
    u.vq(0, 0, XB, 64);
    u.vmat(QKV, 0, c0 + 192, 344, 1, false);  // w1 | w3
    u.vfn(2, QKV, QKV, 172);          // silu(w1 x)
    u.vew(1, 0, QKV, QKV, W3, 172);   // * (w3 x)
    u.vq(0, 0, QKV, 172);             // -> ACT blocks 0..2 (zero padded to 192)
    u.vmat(XB, 0, c0 + 536, 64, 3, false);  // w2
    u.vew(0, 0, X, X, XB, 64);        // residual
  }
  u.vq(0, 0, X, 64);
  return u.vmat(0, 0, kClassifierChunk, 512, 1, true);
}

std::vector<int> greedy_vx(const VxImage& img, int n, int positions, AtBos at_bos) {
  VxModel m(img, positions);
  std::vector<int> out;
  int token = kBosToken;
  for (int pos = 0; pos < n && pos < positions; ++pos) {
    token = m.forward(token, pos);
    if (token == kBosToken && at_bos == AtBos::kStop) break;  // BOS delimits stories (llama2.c)
    out.push_back(token);
  }
  return out;
}

}  // namespace lockstep::host
