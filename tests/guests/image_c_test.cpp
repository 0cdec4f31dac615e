// lockstep-image-c's converter (guests/image_c): the image layout of
// guests/stories_c/image_c.h, checked against the synthetic checkpoint it was
// built from (quantization error within half a step, gain folding, row
// interleaving, tables, tokenizer pieces).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "convert.h"
#include "quality.h"
#include "story.h"

extern "C" {
#include "image_c.h"
}

namespace lockstep::guests_test {
namespace {

class ImageC : public ::testing::Test {
 protected:
  void SetUp() override {
    ck_ = host::synthetic_checkpoint();
    tok_ = host::synthetic_tokenizer();
    image_ = image_c::build_image(ck_, tok_, {});
    ASSERT_GE(image_.size(), sizeof(imgc_header));
    std::memcpy(&h_, image_.data(), sizeof h_);
  }
  template <typename T>
  T at(std::uint32_t off, std::size_t i) const {
    T v;
    std::memcpy(&v, image_.data() + off + i * sizeof(T), sizeof(T));
    return v;
  }
  /// Dequantized weight (r, c) of matrix m.
  double weight(const imgc_mat& m, int r, int c) const {
    std::size_t idx = m.interleave == 1
                          ? static_cast<std::size_t>(r) * m.cols + c
                          : (static_cast<std::size_t>(r / 4) * m.cols + c) * 4 + r % 4;
    return at<std::int8_t>(m.q_off, idx) * static_cast<double>(at<std::int32_t>(m.s_off, r)) /
           std::ldexp(1.0, m.exp);
  }
  /// Largest |error| / (row scale) over the matrix against `want(r, c)`.
  template <typename F>
  double max_error_in_steps(const imgc_mat& m, F want) const {
    double worst = 0;
    for (int r = 0; r < m.rows; r++) {
      double step = at<std::int32_t>(m.s_off, r) / std::ldexp(1.0, m.exp);
      for (int c = 0; c < m.cols; c++) worst = std::max(worst, std::fabs(weight(m, r, c) - want(r, c)) / step);
    }
    return worst;
  }

  host::Checkpoint ck_;
  host::Tokenizer tok_;
  std::vector<std::uint8_t> image_;
  imgc_header h_{};
};

TEST_F(ImageC, HeaderDescribesTheModel) {
  EXPECT_EQ(h_.magic, IMGC_MAGIC);
  EXPECT_EQ(h_.version, IMGC_VERSION);
  EXPECT_EQ(h_.total_size, image_.size());
  EXPECT_EQ(h_.dim, ck_.config.dim);
  EXPECT_EQ(h_.hidden_dim, ck_.config.hidden_dim);
  EXPECT_EQ(h_.n_layers, ck_.config.n_layers);
  EXPECT_EQ(h_.n_heads, ck_.config.n_heads);
  EXPECT_EQ(h_.n_kv_heads, ck_.config.n_kv_heads);
  EXPECT_EQ(h_.vocab_size, ck_.config.vocab_size);
  EXPECT_EQ(h_.kv_len, 64);
  EXPECT_EQ(h_.n_steps, 63);
  EXPECT_EQ(h_.bos, 1);
  EXPECT_EQ(h_.real_model, 0u);
}

TEST_F(ImageC, EmbeddingIsRowMajorWithinHalfAStep) {
  const int dim = ck_.config.dim;
  EXPECT_EQ(h_.emb.interleave, 1);
  double err = max_error_in_steps(h_.emb, [&](int r, int c) {
    return static_cast<double>(ck_.w.token_embedding[static_cast<std::size_t>(r) * dim + c]);
  });
  EXPECT_LE(err, 0.5 + 1e-6);
}

TEST_F(ImageC, GainsAreFoldedAndRowsInterleaved) {
  const host::Config& c = ck_.config;
  const int dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim();
  const double inv_sqrt_hs = 1.0 / std::sqrt(static_cast<double>(c.head_size()));
  for (int l = 0; l < c.n_layers; l++) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const imgc_mat* m = h_.layer[l];
    auto g_att = [&](int col) { return static_cast<double>(ck_.w.rms_att[static_cast<std::size_t>(l) * dim + col]); };
    auto g_ffn = [&](int col) { return static_cast<double>(ck_.w.rms_ffn[static_cast<std::size_t>(l) * dim + col]); };
    auto w = [](const std::vector<float>& t, std::size_t base, int cols, int r, int col) {
      return static_cast<double>(t[base + static_cast<std::size_t>(r) * cols + col]);
    };
    const std::size_t dd = static_cast<std::size_t>(l) * dim * dim, kd = static_cast<std::size_t>(l) * kv * dim,
                      hd = static_cast<std::size_t>(l) * hidden * dim;
    EXPECT_LE(max_error_in_steps(m[IMGC_WQ], [&](int r, int col) { return w(ck_.w.wq, dd, dim, r, col) * g_att(col) * inv_sqrt_hs; }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_WK], [&](int r, int col) { return w(ck_.w.wk, kd, dim, r, col) * g_att(col); }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_WV], [&](int r, int col) { return w(ck_.w.wv, kd, dim, r, col) * g_att(col); }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_WO], [&](int r, int col) { return w(ck_.w.wo, dd, dim, r, col); }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_W1], [&](int r, int col) { return w(ck_.w.w1, hd, dim, r, col) * g_ffn(col); }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_W2], [&](int r, int col) { return w(ck_.w.w2, hd, hidden, r, col); }), 0.5 + 1e-6);
    EXPECT_LE(max_error_in_steps(m[IMGC_W3], [&](int r, int col) { return w(ck_.w.w3, hd, dim, r, col) * g_ffn(col); }), 0.5 + 1e-6);
    for (int i = 0; i < IMGC_NMATS; i++) {
      EXPECT_EQ(m[i].interleave, 4);
      EXPECT_GE(m[i].exp, 24);
      EXPECT_LE(m[i].exp, 46);
    }
  }
  EXPECT_LE(max_error_in_steps(h_.cls, [&](int r, int col) {
              return static_cast<double>(ck_.w.wcls[static_cast<std::size_t>(r) * dim + col]) *
                     static_cast<double>(ck_.w.rms_final[static_cast<std::size_t>(col)]);
            }),
            0.5 + 1e-6);
}

TEST_F(ImageC, TablesHaveTheirDefiningValues) {
  EXPECT_EQ(at<std::int32_t>(h_.exp0_off, 0), 1 << 30);
  EXPECT_EQ(at<std::int32_t>(h_.exp0_off, 1), static_cast<std::int32_t>(std::llround(std::exp(-1.0) * (1 << 30))));
  EXPECT_EQ(at<std::int32_t>(h_.exp1_off, 0), 1 << 30);
  EXPECT_EQ(at<std::int32_t>(h_.sigmoid_off, 512), 32768);  // sigmoid(0)
  EXPECT_EQ(at<std::int32_t>(h_.sigmoid_off, 0), 0);        // sigmoid(-16) * 2^16 = 7e-3
  EXPECT_EQ(at<std::int32_t>(h_.sigmoid_off, 1024), 65536);
  const int half = ck_.config.head_size() / 2;
  for (int j = 0; j < half; j++) {  // position 0: angle 0
    EXPECT_EQ(at<std::int32_t>(h_.rope_off, 2 * j), 1 << 30);
    EXPECT_EQ(at<std::int32_t>(h_.rope_off, 2 * j + 1), 0);
  }
  // position 1, pair 0: angle 1 radian
  EXPECT_EQ(at<std::int32_t>(h_.rope_off, 2 * half), static_cast<std::int32_t>(std::llround(std::cos(1.0) * (1 << 30))));
}

TEST_F(ImageC, TokenizerPiecesAreStoredVerbatim) {
  for (int i = 0; i < h_.vocab_size; i++) {
    std::uint32_t a = at<std::uint32_t>(h_.tok_off, i), b = at<std::uint32_t>(h_.tok_off, i + 1);
    std::string piece(reinterpret_cast<const char*>(image_.data() + h_.tok_bytes_off + a), b - a);
    ASSERT_EQ(piece, tok_.pieces[static_cast<std::size_t>(i)]) << "token " << i;
  }
}

TEST(ImageCOptions, RejectsMoreStepsThanCachePositions) {
  host::Checkpoint ck = host::synthetic_checkpoint();
  image_c::ImageOptions opt;
  opt.n_steps = 64;
  EXPECT_THROW(image_c::build_image(ck, host::synthetic_tokenizer(), opt), std::runtime_error);
}

}  // namespace
}  // namespace lockstep::guests_test
