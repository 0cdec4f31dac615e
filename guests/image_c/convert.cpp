// Implementation of convert.h (numerics: guests/stories_c/image_c.h, docs/guests.md).
#include "convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

extern "C" {
#include "image_c.h"
}

namespace lockstep::image_c {
namespace {

class ImageWriter {
 public:
  ImageWriter() : bytes_(sizeof(imgc_header), 0) {}

  /// Appends raw bytes at a 4-byte aligned offset; returns the offset.
  std::uint32_t append(const void* data, std::size_t n) {
    while (bytes_.size() % 4 != 0) bytes_.push_back(0);
    auto off = static_cast<std::uint32_t>(bytes_.size());
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return off;
  }
  template <typename T>
  std::uint32_t append_vec(const std::vector<T>& v) {
    return append(v.data(), v.size() * sizeof(T));
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

/// Quantizes a (rows x cols) float matrix to int8 rows with int32 scales.
imgc_mat quantize(ImageWriter& out, const float* w, int rows, int cols,
                  const std::vector<double>& col_gain, double row_gain, int interleave = 4) {
  if (rows % interleave != 0) throw std::runtime_error("image_c: rows not a multiple of the interleave");
  std::vector<double> scaled(static_cast<std::size_t>(rows) * cols);
  std::vector<double> scale(rows);
  double max_scale = 0;
  for (int r = 0; r < rows; r++) {
    double maxabs = 0;
    for (int c = 0; c < cols; c++) {
      double v = static_cast<double>(w[static_cast<std::size_t>(r) * cols + c]) * row_gain *
                 (col_gain.empty() ? 1.0 : col_gain[c]);
      scaled[static_cast<std::size_t>(r) * cols + c] = v;
      maxabs = std::max(maxabs, std::fabs(v));
    }
    scale[r] = maxabs / 127.0;
    max_scale = std::max(max_scale, scale[r]);
  }
  // Largest exponent (<= 46) with every scale * 2^exp below 2^31.
  int exp = 46;
  while (exp > 0 && max_scale * std::ldexp(1.0, exp) >= 2147483647.0) exp--;
  if (exp < 24) throw std::runtime_error("image_c: weights too large for the int32 row scales");
  std::vector<std::int8_t> q(scaled.size());
  std::vector<std::int32_t> s(rows);
  for (int r = 0; r < rows; r++) {
    s[r] = static_cast<std::int32_t>(std::llround(scale[r] * std::ldexp(1.0, exp)));
    for (int c = 0; c < cols; c++) {
      std::size_t i = static_cast<std::size_t>(r) * cols + c;
      double v = scale[r] > 0 ? scaled[i] / scale[r] : 0.0;
      q[i] = static_cast<std::int8_t>(std::clamp<long long>(std::llround(v), -127, 127));
    }
  }
  std::vector<std::int8_t> stored(q.size());
  for (int r = 0; r < rows; r++)
    for (int col = 0; col < cols; col++) {
      std::size_t b = static_cast<std::size_t>(r / interleave), i = static_cast<std::size_t>(r % interleave);
      stored[(b * cols + col) * interleave + i] = q[static_cast<std::size_t>(r) * cols + col];
    }
  imgc_mat m{};
  m.interleave = interleave;
  m.q_off = out.append_vec(stored);
  m.s_off = out.append_vec(s);
  m.exp = exp;
  m.rows = rows;
  m.cols = cols;
  return m;
}

std::vector<double> slice(const std::vector<float>& v, int layer, int n) {
  return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(layer) * n,
                             v.begin() + static_cast<std::ptrdiff_t>(layer + 1) * n);
}

}  // namespace

std::vector<std::uint8_t> build_image(const host::Checkpoint& ck, const host::Tokenizer& tok,
                                      const ImageOptions& opt) {
  const host::Config& c = ck.config;
  const int dim = c.dim, hidden = c.hidden_dim, hs = c.head_size(), kv_dim = c.kv_dim();
  if (dim > IMGC_MAX_DIM || hidden > IMGC_MAX_HIDDEN || c.n_layers > IMGC_MAX_LAYERS ||
      c.n_heads > IMGC_MAX_HEADS || c.vocab_size > IMGC_MAX_VOCAB || opt.kv_len > IMGC_MAX_KV ||
      dim % 4 != 0 || hidden % 4 != 0 || opt.n_steps < 0 || opt.n_steps >= opt.kv_len)
    throw std::runtime_error("image_c: model shape or options exceed the guest's buffers");
  if (static_cast<int>(tok.pieces.size()) != c.vocab_size)
    throw std::runtime_error("image_c: tokenizer size differs from the vocabulary");

  ImageWriter out;
  imgc_header h{};
  h.magic = IMGC_MAGIC;
  h.version = IMGC_VERSION;
  h.dim = dim;
  h.hidden_dim = hidden;
  h.n_layers = c.n_layers;
  h.n_heads = c.n_heads;
  h.n_kv_heads = c.n_kv_heads;
  h.vocab_size = c.vocab_size;
  h.kv_len = opt.kv_len;
  h.n_steps = opt.n_steps;
  h.bos = 1;
  h.real_model = opt.real_model ? 1 : 0;

  const std::size_t dd = static_cast<std::size_t>(dim) * dim, kd = static_cast<std::size_t>(kv_dim) * dim,
                    hd = static_cast<std::size_t>(hidden) * dim;
  h.emb = quantize(out, ck.w.token_embedding.data(), c.vocab_size, dim, {}, 1.0, 1);
  h.cls = quantize(out, ck.w.wcls.data(), c.vocab_size, dim,
                   std::vector<double>(ck.w.rms_final.begin(), ck.w.rms_final.end()), 1.0);
  const double inv_sqrt_hs = 1.0 / std::sqrt(static_cast<double>(hs));
  for (int l = 0; l < c.n_layers; l++) {
    std::vector<double> g_att = slice(ck.w.rms_att, l, dim), g_ffn = slice(ck.w.rms_ffn, l, dim);
    imgc_mat* m = h.layer[l];
    m[IMGC_WQ] = quantize(out, ck.w.wq.data() + l * dd, dim, dim, g_att, inv_sqrt_hs);
    m[IMGC_WK] = quantize(out, ck.w.wk.data() + l * kd, kv_dim, dim, g_att, 1.0);
    m[IMGC_WV] = quantize(out, ck.w.wv.data() + l * kd, kv_dim, dim, g_att, 1.0);
    m[IMGC_WO] = quantize(out, ck.w.wo.data() + l * dd, dim, dim, {}, 1.0);
    m[IMGC_W1] = quantize(out, ck.w.w1.data() + l * hd, hidden, dim, g_ffn, 1.0);
    m[IMGC_W2] = quantize(out, ck.w.w2.data() + l * hd, dim, hidden, {}, 1.0);
    m[IMGC_W3] = quantize(out, ck.w.w3.data() + l * hd, hidden, dim, g_ffn, 1.0);
  }

  std::vector<std::int32_t> rope;
  for (int pos = 0; pos < opt.kv_len; pos++)
    for (int j = 0; j < hs; j += 2) {
      double freq = 1.0 / std::pow(10000.0, static_cast<double>(j) / hs);
      double a = pos * freq;
      rope.push_back(static_cast<std::int32_t>(std::llround(std::cos(a) * 1073741824.0)));
      rope.push_back(static_cast<std::int32_t>(std::llround(std::sin(a) * 1073741824.0)));
    }
  h.rope_off = out.append_vec(rope);
  std::vector<std::int32_t> e0, e1, sg;
  for (int n = 0; n < IMGC_EXP0_N; n++) e0.push_back(static_cast<std::int32_t>(std::llround(std::exp(-n) * 1073741824.0)));
  for (int i = 0; i < IMGC_EXP1_N; i++)
    e1.push_back(static_cast<std::int32_t>(std::llround(std::exp(-i / 256.0) * 1073741824.0)));
  for (int i = 0; i < IMGC_SIGMOID_N; i++)
    sg.push_back(static_cast<std::int32_t>(std::llround(65536.0 / (1.0 + std::exp(16.0 - i / 32.0)))));
  h.exp0_off = out.append_vec(e0);
  h.exp1_off = out.append_vec(e1);
  h.sigmoid_off = out.append_vec(sg);

  std::vector<std::uint32_t> offs;
  std::string blob;
  for (const std::string& p : tok.pieces) {
    offs.push_back(static_cast<std::uint32_t>(blob.size()));
    blob += p;
  }
  offs.push_back(static_cast<std::uint32_t>(blob.size()));
  h.tok_off = out.append_vec(offs);
  h.tok_bytes_off = out.append(blob.data(), blob.size());

  auto& bytes = out.bytes();
  while (bytes.size() % 16 != 0) bytes.push_back(0);
  h.total_size = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(bytes.data(), &h, sizeof h);
  return bytes;
}

}  // namespace lockstep::image_c
