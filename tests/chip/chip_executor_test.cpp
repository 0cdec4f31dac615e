// The CPU executor against a dense reference of the layer math written here from
// docs/spec/chip-format.md (double precision, dense matrices, no sparsity tricks), on random
// chips; plus hand-made chips for argmax ties, positive biases, the delta rule, the audit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "lockstep/chip/compiler/builder.hpp"
#include "lockstep/chip/compiler/primitives.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "test_util.hpp"

namespace lockstep::chip {
namespace {

using compiler::ChipBuilder;
using compiler::Lin;

// ---- dense reference ----
struct Dense {
  std::uint32_t rows = 0, cols = 0;
  std::vector<double> w, b;  // row-major
  Activation act = Activation::Identity;
  explicit Dense(const LinearMap& m) : rows(m.w.rows), cols(m.w.cols), w(static_cast<std::size_t>(rows) * cols, 0.0), b(m.bias.begin(), m.bias.end()), act(m.act) {
    for (std::uint32_t j = 0; j < cols; ++j)
      for (std::uint32_t p = m.w.col_ptr[j]; p < m.w.col_ptr[j + 1]; ++p) w[static_cast<std::size_t>(m.w.row_idx[p]) * cols + j] = m.w.values[p];
  }
  std::vector<double> operator()(const std::vector<double>& x) const {
    std::vector<double> y(b);
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t j = 0; j < cols; ++j) y[r] += w[static_cast<std::size_t>(r) * cols + j] * x[j];
      if (act == Activation::Relu) y[r] = std::max(y[r], 0.0);
    }
    return y;
  }
};

struct DenseChip {
  const Chip& c;
  std::vector<std::vector<std::vector<double>>> S;  // [layer][head] (value_dim x key_dim, column-major)
  explicit DenseChip(const Chip& chip) : c(chip) {
    for (const Layer& L : c.layers) {
      S.emplace_back();
      for (const Head& h : L.heads) S.back().emplace_back(static_cast<std::size_t>(h.key_dim) * h.value_dim, 0.0);
    }
    // constant initialisers (chip-format.md section 2): rows row + i of every column c in
    // [column, column + columns) are values[i]
    for (const Initialiser& in : c.config.initialisers) {
      if (!in.is_const) continue;
      const std::uint32_t V = c.layers[in.layer].heads[in.head].value_dim;
      for (std::uint32_t col = in.column; col < in.column + in.columns; ++col)
        for (std::size_t i = 0; i < in.values.size(); ++i)
          S[in.layer][in.head][static_cast<std::size_t>(col) * V + in.row + i] = in.values[i];
    }
  }
  Token step(Token t) {
    const std::uint32_t D = c.config.d_model;
    std::vector<double> x(D, 0.0);  // x = E[token]
    for (std::uint32_t p = c.embed.w.col_ptr[t]; p < c.embed.w.col_ptr[t + 1]; ++p) x[c.embed.w.row_idx[p]] = c.embed.w.values[p];
    for (std::size_t l = 0; l < c.layers.size(); ++l) {
      const Layer& L = c.layers[l];
      std::vector<double> dx(D, 0.0);
      for (std::size_t h = 0; h < L.heads.size(); ++h) {
        const Head& hd = L.heads[h];
        const std::uint32_t K = hd.key_dim, V = hd.value_dim;
        auto& s = S[l][h];
        const auto k = Dense(hd.k)(x), q = Dense(hd.q)(x), v = Dense(hd.v)(x);
        const double beta = Dense(hd.beta)(x)[0];
        // S <- S + beta (v - S k) k^T
        std::vector<double> sk(V, 0.0);
        for (std::uint32_t i = 0; i < V; ++i)
          for (std::uint32_t j = 0; j < K; ++j) sk[i] += s[j * V + i] * k[j];
        for (std::uint32_t i = 0; i < V; ++i)
          for (std::uint32_t j = 0; j < K; ++j) s[j * V + i] += beta * (v[i] - sk[i]) * k[j];
        // o = S q ; dx += W_o o
        std::vector<double> o(V, 0.0);
        for (std::uint32_t i = 0; i < V; ++i)
          for (std::uint32_t j = 0; j < K; ++j) o[i] += s[j * V + i] * q[j];
        const auto y = Dense(hd.o)(o);
        for (std::uint32_t d = 0; d < D; ++d) dx[d] += y[d];
      }
      for (std::uint32_t d = 0; d < D; ++d) x[d] += dx[d];
      if (L.mlp.kind == MlpKind::Relu) {
        const auto y = Dense(L.mlp.w2)(Dense(L.mlp.w1)(x));
        for (std::uint32_t d = 0; d < D; ++d) x[d] += y[d];
      } else if (L.mlp.kind == MlpKind::Gated) {
        auto u = Dense(L.mlp.wu)(x);
        const auto g = Dense(L.mlp.wg)(x);
        for (std::size_t i = 0; i < u.size(); ++i) u[i] *= g[i];
        const auto y = Dense(L.mlp.w2)(u);
        for (std::uint32_t d = 0; d < D; ++d) x[d] += y[d];
      }
    }
    const auto logits = Dense(c.unembed)(x);
    Token best = 0;
    for (Token i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best]) best = i;  // strict: lowest id wins a tie
    return best;
  }
};

// Random sparse integer chip. With `ladders`, some MLP units come as threshold ladders: rungs
// with equal weights and different biases (the executor's shared dot products). With `copies`,
// some heads come with a copy: the same k, v and beta maps and shape (so the same writes; the
// executor's same_state) but a query and read-out of its own, and their initial state (a
// constant initialiser) the same for half of the pairs and different for a quarter. With
// `many_heads`, the residual is wider (48 to 160 dimensions) and sparsely embedded, and a layer
// has up to 30 heads, most of them with bias-free queries and betas that read one or two
// dimensions each: the runs of such heads, and their parts of at most 8, that the executor skips
// on steps where none of their inputs is non-zero.
Chip random_chip(std::mt19937_64& rng, bool ladders = false, bool copies = false, bool many_heads = false) {
  auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)); };
  auto sparse_lin = [&](std::uint32_t D, double density) {
    Lin l;
    for (std::uint32_t d = 0; d < D; ++d)
      if (static_cast<double>(rng() % 1000) < density * 1000) l += Lin::dim(d, pick(-2, 2));
    if (rng() % 3 == 0) l.c = pick(-2, 2);
    return l;
  };
  // a bias-free form of one or two dimensions (a sparse head's query row or beta)
  auto narrow_lin = [&](std::uint32_t D) {
    Lin l = Lin::dim(static_cast<std::uint32_t>(rng() % D), pick(1, 2));
    if (rng() % 2) l += Lin::dim(static_cast<std::uint32_t>(rng() % D), pick(-1, 1));
    return l;
  };
  const std::uint32_t D = static_cast<std::uint32_t>(many_heads ? pick(48, 160) : pick(3, 16));
  const std::uint32_t vocab = static_cast<std::uint32_t>(pick(2, 12));
  ChipBuilder B("random", vocab);
  B.field("x", D);
  for (Token t = 0; t < vocab; ++t)
    for (std::uint32_t d = 0; d < D; ++d)
      if (rng() % (many_heads ? 20 : 3) == 0) B.embed(t, d, pick(-3, 3));
  const int layers = pick(1, 3);
  for (int l = 0; l < layers; ++l) {
    auto& L = B.add_layer();
    const int heads = many_heads ? pick(4, 30) : pick(0, 2);
    for (int h = 0; h < heads; ++h) {
      auto acts = [&] { return rng() % 2 ? Activation::Relu : Activation::Identity; };
      const std::uint32_t K = static_cast<std::uint32_t>(pick(1, 5)), V = static_cast<std::uint32_t>(pick(1, 4));
      auto& H = L.head(L.add_head(K, V, acts(), acts(), acts()));
      const bool narrow = many_heads && rng() % 8 != 0;
      for (auto& r : H.k) r = sparse_lin(D, many_heads ? 0.05 : 0.2);
      for (auto& r : H.q) r = narrow ? (rng() % 2 ? narrow_lin(D) : Lin{}) : sparse_lin(D, 0.2);
      for (auto& r : H.v) r = sparse_lin(D, many_heads ? 0.05 : 0.3);
      H.beta = narrow ? narrow_lin(D) : sparse_lin(D, 0.2);
      for (std::uint32_t i = 0; i < V; ++i)
        for (std::uint32_t d = 0; d < D; ++d)
          if (rng() % 4 == 0) H.out.emplace_back(i, d, pick(-1, 1));
      if (!copies || rng() % 3 == 0) continue;
      const std::uint32_t h0 = L.num_heads() - 1;
      const Activation ak = H.act_k, aq = H.act_q, ab = H.act_beta;
      auto& C = L.head(L.add_head(K, V, ak, aq, ab));
      C.k = L.head(h0).k;
      C.v = L.head(h0).v;
      C.beta = L.head(h0).beta;
      for (auto& r : C.q) r = sparse_lin(D, 0.4);
      for (std::uint32_t i = 0; i < V; ++i)
        for (std::uint32_t d = 0; d < D; ++d)
          if (rng() % 3 == 0) C.out.emplace_back(i, d, pick(-1, 1));
      const unsigned init = static_cast<unsigned>(rng() % 4);  // 0, 1: equal; 2: different; 3: none
      if (init == 3) continue;
      Initialiser in;
      in.layer = static_cast<std::uint32_t>(l);
      in.column = static_cast<std::uint32_t>(rng() % K);
      in.is_const = true;
      for (std::uint32_t i = 0; i < V; ++i) in.values.push_back(static_cast<float>(pick(-2, 2)));
      for (std::uint32_t x : {h0, h0 + 1}) {
        in.name = "copy_" + std::to_string(l) + "_" + std::to_string(x);
        in.head = x;
        if (init == 2 && x == h0 + 1) in.values[0] += 1.0f;
        B.initialiser(in);
      }
    }
    const int units = pick(0, 8);
    const bool gated = rng() % 2;
    for (int u = 0; u < units; ++u) {
      if (ladders && !gated && rng() % 2) {  // rungs ReLU(y + c_i): one form y, biases from -4 to 3, repeats allowed
        Lin y = sparse_lin(D, 0.4);
        const int rungs = pick(2, 9);
        for (int i = 0; i < rungs; ++i) {
          Lin rung = y;
          rung.c = pick(-4, 3);
          const std::uint32_t id = L.relu_unit(rung);
          for (std::uint32_t d = 0; d < D; ++d)
            if (rng() % 4 == 0) L.unit_out(id, d, pick(-2, 2));
        }
        continue;
      }
      const std::uint32_t id = gated && rng() % 2 ? L.gated_unit(sparse_lin(D, 0.3), sparse_lin(D, 0.3)) : L.relu_unit(sparse_lin(D, 0.3));
      for (std::uint32_t d = 0; d < D; ++d)
        if (rng() % 4 == 0) L.unit_out(id, d, pick(-2, 2));
    }
    if (units > 0 && rng() % 2) L.mlp_bias(static_cast<std::uint32_t>(pick(0, static_cast<int>(D) - 1)), pick(-2, 2));
  }
  for (Token t = 0; t < vocab; ++t) {
    for (std::uint32_t d = 0; d < D; ++d)
      if (rng() % 3 == 0) B.unembed(t, d, pick(-2, 2));
    if (rng() % 3 == 0) B.unembed_bias(t, pick(-3, 3));
  }
  return B.build();
}

TEST(CpuExecutor, MatchesDenseReferenceOnRandomChips) {
  const std::uint64_t seed = test::seed_for("CpuExecutor.MatchesDenseReferenceOnRandomChips", 21);
  std::mt19937_64 rng(seed);
  std::size_t compared = 0, planned = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto chip = std::make_shared<const Chip>(random_chip(rng));
    CpuExecutor ex(chip, 1);
    ex.set_audit(true);
    ex.reset(0, GuestImage{});
    DenseChip ref(*chip);
    Token in = static_cast<Token>(rng() % chip->config.vocab_size);
    for (int step = 0; step < 24; ++step) {
      ++planned;
      const Token want = ref.step(in);
      const Token got = ex.step(0, in);
      // Exactness is only promised while every activation is exact: stop at the first audit report.
      if (ex.audit_violation(0)) break;
      ++compared;
      ASSERT_EQ(got, want) << "trial " << trial << " step " << step << " seed " << seed;
      const auto st = ex.state(0);
      std::size_t off = 0;
      for (const auto& layer : ref.S)
        for (const auto& s : layer)
          for (double v : s) ASSERT_EQ(static_cast<double>(st[off++]), v) << "state, trial " << trial << " step " << step;
      in = rng() % 4 == 0 ? static_cast<Token>(rng() % chip->config.vocab_size) : got;
    }
  }
  std::printf("compared %zu of %zu planned steps exactly\n", compared, planned);
  EXPECT_GT(compared, planned / 3) << "too few exact steps: the random chips are too wild to test anything";
}

// Random chips (with threshold ladders when ladders(trial)) stepped by an executor with the
// audit off and MLP columns of at least threshold(trial) weights grouped (DenseGroups), and by
// one with the audit on (the plain path), both against the dense reference: tokens, the state
// float by float, and decision coverage, while the audit is clean (exactness is promised only
// then). Seeded by test::seed_for(name, default_seed).
void expect_fast_paths_exact(const char* name, std::uint64_t default_seed, int trials,
                             const std::function<bool(int)>& ladders, const std::function<std::uint32_t(int)>& threshold,
                             bool copies = false, bool many_heads = false) {
  const std::uint64_t seed = test::seed_for(name, default_seed);
  std::mt19937_64 rng(seed);
  std::size_t compared = 0, planned = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const auto chip = std::make_shared<const Chip>(random_chip(rng, ladders(trial), copies, many_heads));
    CpuExecutor fast, plain(chip, 1);
    fast.set_dense_column_threshold(threshold(trial));
    fast.load(chip);
    fast.set_num_streams(1);
    plain.set_audit(true);
    fast.set_decision_coverage(true);
    plain.set_decision_coverage(true);
    fast.reset(0, GuestImage{});
    plain.reset(0, GuestImage{});
    DenseChip ref(*chip);
    Token in = static_cast<Token>(rng() % chip->config.vocab_size);
    for (int step = 0; step < 24; ++step) {
      ++planned;
      const Token want = ref.step(in);
      const Token got = fast.step(0, in);
      const Token got_plain = plain.step(0, in);
      if (plain.audit_violation(0)) break;
      ++compared;
      const std::string at = "trial " + std::to_string(trial) + " step " + std::to_string(step) + " threshold " +
                             std::to_string(threshold(trial)) + " seed " + std::to_string(seed);
      ASSERT_EQ(got, want) << at;
      ASSERT_EQ(got_plain, want) << at;
      const auto st = fast.state(0);
      std::size_t off = 0;
      for (const auto& layer : ref.S)
        for (const auto& s : layer)
          for (double v : s) ASSERT_EQ(static_cast<double>(st[off++]), v) << "state, " << at;
      ASSERT_EQ(fast.hash(0), plain.hash(0)) << "state, " << at;
      const DecisionCoverage a = fast.decision_coverage(), b = plain.decision_coverage();
      for (std::size_t l = 0; l < a.layers.size(); ++l)
        ASSERT_EQ(a.layers[l].active, b.layers[l].active) << "coverage, layer " << l << ", " << at;
      in = rng() % 4 == 0 ? static_cast<Token>(rng() % chip->config.vocab_size) : got;
    }
  }
  std::printf("compared %zu of %zu planned steps exactly\n", compared, planned);
  EXPECT_GT(compared, planned / 3) << "too few exact steps: the random chips are too wild to test anything";
}

// Rows of a ReLU map with equal weights share one dot product when the audit is off
// (cpu_executor.cpp, SharedRows); the audit takes the plain path. Both against the dense
// reference, state and decision coverage included, on random chips full of threshold ladders
// (the default dense-column threshold, 256: no column of these small chips reaches it).
TEST(CpuExecutor, SharedDotProductsMatchDenseReferenceAndThePlainPath) {
  expect_fast_paths_exact("CpuExecutor.SharedDotProductsMatchDenseReferenceAndThePlainPath", 23, 400,
                          [](int) { return true; }, [](int) { return 256u; });
}

// An MLP's dense columns (cpu_executor.cpp, DenseGroups: columns with at least `threshold`
// weights, summed once per group of rows with equal weights in them) against the dense
// reference and the plain path (audit on), tokens, state and decision coverage, on random chips
// with and without threshold ladders (so on SharedRows' units too). The thresholds are small so
// that the small random chips have dense columns, and rows with several of them.
TEST(CpuExecutor, DenseColumnGroupsMatchDenseReferenceAndThePlainPath) {
  expect_fast_paths_exact("CpuExecutor.DenseColumnGroupsMatchDenseReferenceAndThePlainPath", 37, 600,
                          [](int trial) { return trial % 2 == 0; },
                          [](int trial) { return 1 + static_cast<std::uint32_t>(trial % 3); });
}

// Heads whose k, v and beta maps, shape and initialisers are equal (a register file read
// through several ports) are written alike, so the executor copies the first one's new columns
// into the others instead of computing them again (cpu_executor.cpp, same_state). Against the
// dense reference and the plain path (audit on), tokens, state and coverage, on random chips in
// which two of three heads have such a copy; a quarter of the pairs start from different
// constant initial states, which the executor must not take for equal.
TEST(CpuExecutor, HeadsWithEqualWritesMatchDenseReferenceAndThePlainPath) {
  expect_fast_paths_exact("CpuExecutor.HeadsWithEqualWritesMatchDenseReferenceAndThePlainPath", 41, 600,
                          [](int trial) { return trial % 2 == 0; }, [](int) { return 256u; }, true);
}

// Runs of at least 4 heads with bias-free queries and betas are skipped together on a step
// where none of their input columns is non-zero, and a run longer than 8 heads is also checked
// part by part, 8 heads at a time (cpu_executor.cpp, HeadGroup). Against the dense reference and
// the plain path (audit on: no skipping), tokens, state and coverage, on random chips with many
// narrow heads a layer (half of them with copies, so with shared betas and writes).
TEST(CpuExecutor, SkippedHeadGroupsAndPartsMatchDenseReferenceAndThePlainPath) {
  expect_fast_paths_exact("CpuExecutor.SkippedHeadGroupsAndPartsMatchDenseReferenceAndThePlainPath", 43, 300,
                          [](int) { return false; }, [](int) { return 256u; }, false, true);
  expect_fast_paths_exact("CpuExecutor.SkippedHeadGroupsAndPartsMatchDenseReferenceAndThePlainPath", 47, 300,
                          [](int) { return false; }, [](int) { return 256u; }, true, true);
}

// A gated table by hand (compiler::table: two one-hot parts of 4 values and a gate, 16 units
// each adding a distinct amount): with the gate's and the parts' columns grouped (threshold 2),
// every combination gives the table's value when the gate is 1 and nothing when it is 0.
TEST(CpuExecutor, DenseColumnGroupsEvaluateAGatedTable) {
  ChipBuilder B("gated-table", 33);
  const auto p0 = B.field("p0", 4), p1 = B.field("p1", 4), gate = B.field("gate", 1), out = B.field("out", 1);
  auto& L = B.add_layer();
  compiler::table(L, {{p0[0], p0[1], p0[2], p0[3]}, {p1[0], p1[1], p1[2], p1[3]}},
                  [&](const std::vector<unsigned>& v) { return compiler::SparseVec{{out.dim(), 1.0 + v[0] + 4.0 * v[1]}}; },
                  {gate[0]});
  // token 2 (4 a + b) + g: p0 = a, p1 = b, gate = g; token 32: nothing
  for (Token t = 0; t < 32; ++t) {
    B.embed(t, p0.dim((t / 2) / 4), 1);
    B.embed(t, p1.dim((t / 2) % 4), 1);
    if (t % 2) B.embed(t, gate.dim(), 1);
  }
  B.probe(0, Sublayer::Mlp, {"out"});
  const auto chip = std::make_shared<const Chip>(B.build());
  for (const std::uint32_t threshold : {0u, 2u}) {
    CpuExecutor ex;
    ex.set_dense_column_threshold(threshold);
    ex.load(chip);
    ex.set_num_streams(1);
    ex.set_probe_recording(true);
    for (Token t = 0; t <= 32; ++t) {
      ex.step(0, t);
      const float want = t < 32 && t % 2 ? 1.0f + static_cast<float>((t / 2) / 4) + 4.0f * static_cast<float>((t / 2) % 4) : 0.0f;
      EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "out"), std::vector<float>{want}) << "token " << t << " threshold " << threshold;
    }
  }
}

// A ladder by hand: y = 3 f; rungs ReLU(y - j) for j = 0..9 (one of them twice), each adding 1
// to g, and a rung with a positive bias (fires with y = 0). g = number of rungs below y + its
// excess: sum_j max(y - j, 0) + max(y + 2, 0).
TEST(CpuExecutor, ThresholdLadderSharesOneDotProduct) {
  ChipBuilder B("ladder", 12);
  const auto f = B.field("f", 1), g = B.field("g", 1);
  auto& L = B.add_layer();
  std::vector<int> js{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4};
  for (int j : js) L.unit_out(L.relu_unit(f[0] * 3.0 - static_cast<double>(j)), g.dim(), 1);
  L.unit_out(L.relu_unit(f[0] * 3.0 + 2.0), g.dim(), 1);
  for (Token t = 0; t < 12; ++t)
    if (t) B.embed(t, f.dim(), static_cast<double>(t % 4));
  B.probe(0, Sublayer::Mlp, {"g"});
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.set_probe_recording(true);
  for (Token t = 0; t < 4; ++t) {
    ex.step(0, t);
    const int y = 3 * static_cast<int>(t);
    int want = std::max(y + 2, 0);
    for (int j : js) want += std::max(y - j, 0);
    EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "g"), std::vector<float>{static_cast<float>(want)}) << "f = " << t;
  }
}

TEST(CpuExecutor, ArgmaxLowestIdWinsTiesIncludingUntouchedTokens) {
  ChipBuilder B("ties", 5);
  const auto f = B.field("f", 2);
  B.embed(0, f.dim(0), 1);  // token 0: f0 = 1
  B.embed(1, f.dim(1), 1);  // token 1: f1 = 1
  // logits: bias [0, 3, 3, 1, 0]; token 4 += 3 f0 ; token 0 += 3 f1
  B.unembed_bias(1, 3);
  B.unembed_bias(2, 3);
  B.unembed_bias(3, 1);
  B.unembed(4, f.dim(0), 3);
  B.unembed(0, f.dim(1), 3);
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  EXPECT_EQ(ex.step(0, 2), 1u);  // untouched tie 1 vs 2 -> 1
  EXPECT_EQ(ex.step(0, 0), 1u);  // token 4 scores 3, ties with 1 and 2 -> 1
  EXPECT_EQ(ex.step(0, 1), 0u);  // token 0 scores 3 -> ties with 1, 2 -> 0
}

TEST(CpuExecutor, PositiveBiasUnitsFireWithoutInput) {
  ChipBuilder B("bias", 3);
  const auto f = B.field("f", 1), g = B.field("g", 1);
  auto& L = B.add_layer();
  L.unit_out(L.relu_unit(Lin::constant(2)), g.dim(), 1);       // fires always: g += 2
  L.unit_out(L.relu_unit(f[0] - 5.0), g.dim(), 100);           // negative bias: fires only when f > 5
  L.unit_out(L.gated_unit(Lin::constant(3), Lin::constant(1)), g.dim(), 1);  // 3 * ReLU(1): g += 3
  B.embed(1, f.dim(), 1);
  B.embed(2, f.dim(), 6);
  B.unembed(2, g.dim(), 1);  // token 2 wins when g > 0
  B.probe(0, Sublayer::Mlp, {"g"});
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.set_probe_recording(true);
  EXPECT_EQ(ex.step(0, 0), 2u);
  EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "g"), std::vector<float>{5.0f});
  ex.step(0, 2);
  EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "g"), std::vector<float>{105.0f});
}

// A probe after a memory block with no heads (and after a layer with no MLP) reads the residual
// as it stands there; it used to index an empty record and crash.
TEST(CpuExecutor, ProbesAfterEmptySublayersSeeTheResidual) {
  ChipBuilder B("empty sublayers", 3);
  const auto f = B.field("f", 1);
  B.add_layer();  // layer 0: no heads, no MLP
  B.embed(1, f.dim(), 7);
  B.unembed(2, f.dim(), 1);
  B.probe(0, Sublayer::Memory, {"f"});
  B.probe(0, Sublayer::Mlp, {"f"});
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.set_probe_recording(true);
  EXPECT_EQ(ex.step(0, 1), 2u);
  EXPECT_EQ(ex.probe(0, 0, Sublayer::Memory, "f"), std::vector<float>{7.0f});
  EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "f"), std::vector<float>{7.0f});
}

TEST(CpuExecutor, DeltaRuleOneHotWriteReplacesOneColumnAndBetaZeroKeeps) {
  // tokens 0..3 write value 10+t into column t (beta 1); token 4 writes nothing (beta 0)
  ChipBuilder B("delta", 5);
  const auto oh = B.field("oh", 5), val = B.field("val", 1), beta = B.field("beta", 1);
  for (Token t = 0; t < 5; ++t) {
    B.embed(t, oh.dim(t), 1);
    B.embed(t, val.dim(), 10 + t);
    if (t < 4) B.embed(t, beta.dim(), 1);
  }
  auto& L = B.add_layer();
  auto& H = L.head(L.add_head(4, 2));
  for (std::uint32_t c = 0; c < 4; ++c) H.k[c] = oh[c];
  H.beta = beta[0];
  H.v[0] = val[0];
  H.v[1] = val[0] * 2.0;
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.reset(0, GuestImage{});
  ex.step(0, 2);
  auto S = ex.state(0);
  EXPECT_EQ(std::vector<float>(S.begin(), S.end()), (std::vector<float>{0, 0, 0, 0, 12, 24, 0, 0}));
  ex.step(0, 0);
  ex.step(0, 2);  // rewrite: replaces, does not add
  ex.step(0, 4);  // beta 0: no change
  S = ex.state(0);
  EXPECT_EQ(std::vector<float>(S.begin(), S.end()), (std::vector<float>{10, 20, 0, 0, 12, 24, 0, 0}));
}

TEST(CpuExecutor, AuditReportsFirstViolationWithLayerAndField) {
  ChipBuilder B("audit", 4);
  const auto f = B.field("f", 1), g = B.field("g", 1);
  B.add_layer();
  auto& L = B.add_layer(NumberFormat::Bf16);
  L.unit_out(L.relu_unit(f[0] * 0.5), g.dim(), 1);  // half of f: not an integer for odd f
  B.embed(1, f.dim(), 2);
  B.embed(2, f.dim(), 3);
  B.embed(3, f.dim(), 200);
  B.bound("mlp.resid", 1, 150);
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.set_audit(true);
  ex.step(0, 1);
  EXPECT_FALSE(ex.audit_violation(0).has_value());
  ex.step(0, 2);
  auto v = ex.audit_violation(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->step, 1u);
  EXPECT_EQ(v->layer, 1);
  EXPECT_EQ(v->activation, "mlp.pre");
  EXPECT_EQ(v->value, 1.5);
  EXPECT_EQ(v->reason, "not an integer");
  std::printf("%s\n", v->to_string().c_str());
  ex.reset(0, GuestImage{});
  EXPECT_FALSE(ex.audit_violation(0).has_value());
  ex.step(0, 3);  // mlp.resid f = 200 > declared 150
  v = ex.audit_violation(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->activation, "mlp.resid");
  EXPECT_EQ(v->field, "f[0]");
  EXPECT_NE(v->reason.find("exceeds declared bound"), std::string::npos) << v->reason;
  std::printf("%s\n", v->to_string().c_str());
  // bf16 range: 2^8
  ChipBuilder B2("bf16", 2);
  const auto a = B2.field("a", 1), b = B2.field("b", 1);
  auto& L2 = B2.add_layer(NumberFormat::Bf16);
  L2.unit_out(L2.relu_unit(a[0]), b.dim(), 1);
  B2.embed(1, a.dim(), 256);
  CpuExecutor ex2(std::make_shared<const Chip>(B2.build()), 1);
  ex2.set_audit(true);
  ex2.step(0, 1);
  v = ex2.audit_violation(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->reason.find("2^8"), std::string::npos) << v->to_string();
}

TEST(CpuExecutor, AuditChecksUntouchedLogitsThroughTheirBias) {
  ChipBuilder B("bias audit", 3);
  const auto f = B.field("f", 1);
  B.embed(1, f.dim(), 1);
  B.unembed(1, f.dim(), 1);
  B.unembed_bias(2, 0.5);  // never touched by any input: its logit is 0.5, not an integer
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 1);
  ex.set_audit(true);
  EXPECT_EQ(ex.step(0, 1), 1u);
  const auto v = ex.audit_violation(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->activation, "logits");
  EXPECT_EQ(v->index, 2u);
  EXPECT_EQ(v->reason, "not an integer");
}

// Decision coverage: units whose side is known from the input by hand. Layer 0 (plain):
// a = ReLU(f - 5) (active only for f > 5), b = ReLU(2) (always active, a seed), c = ReLU(f - 100)
// (never active); a head whose beta = ReLU(f - 5) writes only for f > 5. Layer 1 (gated):
// d = 1 (.) ReLU(f - 1) (active for f > 1), e = f (.) ReLU(-f) (never active: g <= 0).
TEST(CpuExecutor, DecisionCoverageCountsEachUnitsSideExactly) {
  ChipBuilder B("coverage", 3);
  const auto f = B.field("f", 1), g = B.field("g", 1), s = B.field("s", 1);
  auto& L0 = B.add_layer();
  const std::uint32_t a = L0.relu_unit(f[0] - 5.0), b = L0.relu_unit(Lin::constant(2)), c = L0.relu_unit(f[0] - 100.0);
  for (std::uint32_t u : {a, b, c}) L0.unit_out(u, g.dim(), 1);
  auto& H = L0.head(L0.add_head(1, 1));
  H.k = {Lin::constant(1)};
  H.q = {Lin::constant(1)};
  H.v = {f[0] * 1.0};
  H.beta = f[0] - 5.0;
  H.out.emplace_back(0, s.dim(), 1);
  auto& L1 = B.add_layer();
  const std::uint32_t d = L1.gated_unit(Lin::constant(1), f[0] - 1.0), e = L1.gated_unit(f[0] * 1.0, f[0] * -1.0);
  for (std::uint32_t u : {d, e}) L1.unit_out(u, g.dim(), 1);
  B.embed(1, f.dim(), 1);  // token 0: f = 0; token 1: f = 1; token 2: f = 6
  B.embed(2, f.dim(), 6);
  B.unembed(1, g.dim(), 1);
  auto chip = std::make_shared<const Chip>(B.build());
  CpuExecutor ex(chip, 2);
  // Off: nothing is counted.
  ex.step(0, 2);
  DecisionCoverage cv = ex.decision_coverage();
  ASSERT_EQ(cv.layers.size(), 2u);
  ASSERT_EQ(cv.layers[0].active.size(), 3u);
  ASSERT_EQ(cv.layers[1].active.size(), 2u);
  EXPECT_EQ(cv.layers[0].evaluations, 0u);
  EXPECT_EQ(cv.layers[0].active[b], 0u);
  EXPECT_EQ(cv.units(), 5u);
  EXPECT_EQ(cv.both_sides(), 0u);

  ex.set_decision_coverage(true);
  ex.step(0, 0);  // f = 0: only b active
  cv = ex.decision_coverage();
  EXPECT_EQ(cv.layers[0].evaluations, 1u);
  EXPECT_EQ(cv.layers[0].active, (std::vector<std::uint64_t>{0, 1, 0}));
  EXPECT_EQ(cv.layers[1].active, (std::vector<std::uint64_t>{0, 0}));
  EXPECT_EQ(cv.layers[0].head_writes, std::vector<std::uint64_t>{0});
  EXPECT_EQ(cv.both_sides(), 0u);  // b seen active only, the others inactive only
  // Summed over streams: stream 0 f = 6, stream 1 f = 1.
  const std::vector<StreamId> ids{0, 1};
  const std::vector<Token> in{2, 1};
  std::vector<Token> out(2);
  ex.step_batch(ids, in, out);
  cv = ex.decision_coverage();
  EXPECT_EQ(cv.layers[0].evaluations, 3u);
  EXPECT_EQ(cv.layers[1].evaluations, 3u);
  EXPECT_EQ(cv.layers[0].active, (std::vector<std::uint64_t>{1, 3, 0}));  // a only at f = 6
  EXPECT_EQ(cv.layers[1].active, (std::vector<std::uint64_t>{1, 0}));     // d only at f = 6 (f = 1: g = 0)
  EXPECT_EQ(cv.layers[0].head_writes, std::vector<std::uint64_t>{1});
  EXPECT_TRUE(cv.seen_active(0, a) && cv.seen_inactive(0, a));
  EXPECT_TRUE(cv.seen_active(0, b) && !cv.seen_inactive(0, b));
  EXPECT_TRUE(!cv.seen_active(0, c) && cv.seen_inactive(0, c));
  EXPECT_EQ(cv.both_sides(), 2u);  // a and d
  // merge adds counts; clear zeroes; off stops counting.
  DecisionCoverage twice = cv;
  twice.merge(cv);
  EXPECT_EQ(twice.layers[0].active, (std::vector<std::uint64_t>{2, 6, 0}));
  EXPECT_EQ(twice.layers[0].evaluations, 6u);
  ex.clear_decision_coverage();
  ex.set_decision_coverage(false);
  ex.step(0, 2);
  EXPECT_EQ(ex.decision_coverage().layers[0].evaluations, 0u);
  EXPECT_EQ(ex.decision_coverage().layers[0].active, (std::vector<std::uint64_t>{0, 0, 0}));
  DecisionCoverage other;
  other.layers.resize(1);
  EXPECT_THROW(twice.merge(other), UsageError);
}

// The two-thread pipeline (cpu_executor.cpp, Pipeline) runs each layer's math as the serial
// pass does, in the same order, so its tokens and state are bit-identical to serial steps on any
// chip, exact or not. Several calls per executor, so the split between the threads moves.
TEST(CpuExecutor, PipelinedTeacherForcedStepsEqualSerialSteps) {
  const std::uint64_t seed = test::seed_for("CpuExecutor.PipelinedTeacherForcedStepsEqualSerialSteps", 29);
  std::mt19937_64 rng(seed);
  std::size_t steps = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const auto chip = std::make_shared<const Chip>(random_chip(rng, trial % 2 == 1));
    CpuExecutor piped(chip, 1), serial(chip, 1);
    piped.set_pipelining(true);
    serial.set_pipelining(false);
    piped.reset(0, GuestImage{});
    serial.reset(0, GuestImage{});
    for (int call = 0; call < 4; ++call) {
      const std::uint32_t n = 8 + static_cast<std::uint32_t>(rng() % 57);
      std::vector<Token> in(n), out(n), want(n);
      for (Token& t : in) t = static_cast<Token>(rng() % chip->config.vocab_size);
      const StreamId id = 0;
      piped.teacher_forced_batch({&id, 1}, {&n, 1}, in, out);
      for (std::uint32_t j = 0; j < n; ++j) want[j] = serial.step(0, in[j]);
      steps += n;
      ASSERT_EQ(out, want) << "trial " << trial << " call " << call << " seed " << seed;
      ASSERT_EQ(piped.hash(0), serial.hash(0)) << "state, trial " << trial << " call " << call << " seed " << seed;
      ASSERT_EQ(piped.steps(0), serial.steps(0));
    }
  }
  std::printf("compared %zu pipelined steps\n", steps);
}

// free_running_batch_expecting: with every expectation right, the free-running tokens and
// state; with one wrong at entry m, the free-running tokens through m, then a stream that
// refuses every use but reset() or restore().
TEST(CpuExecutor, FreeRunningExpectingIsFreeRunningThroughTheFirstMiss) {
  const std::uint64_t seed = test::seed_for("CpuExecutor.FreeRunningExpectingIsFreeRunningThroughTheFirstMiss", 31);
  std::mt19937_64 rng(seed);
  int misses = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const auto chip = std::make_shared<const Chip>(random_chip(rng));
    const std::uint32_t vocab = chip->config.vocab_size;
    CpuExecutor piped(chip, 1), serial(chip, 1);
    piped.set_pipelining(true);
    serial.set_pipelining(false);
    piped.reset(0, GuestImage{});
    serial.reset(0, GuestImage{});
    const std::uint32_t n = 8 + static_cast<std::uint32_t>(rng() % 57);
    const Token first = static_cast<Token>(rng() % vocab);
    const std::vector<Token> free = serial.free_running(0, first, n);
    std::vector<Token> expected = free, out(n);
    const bool miss = vocab > 1 && rng() % 2 == 0;
    const std::uint32_t m = static_cast<std::uint32_t>(rng() % n);
    if (miss) expected[m] = (expected[m] + 1 + static_cast<Token>(rng() % (vocab - 1))) % vocab;
    const StreamId id = 0;
    piped.free_running_batch_expecting({&id, 1}, {&n, 1}, {&first, 1}, expected, out);
    const std::uint32_t valid = miss ? m + 1 : n;
    for (std::uint32_t j = 0; j < valid; ++j)
      ASSERT_EQ(out[j], free[j]) << "trial " << trial << " entry " << j << " miss at " << m << " seed " << seed;
    if (!miss || m + 1 == n) {
      ASSERT_EQ(piped.hash(0), serial.hash(0)) << "trial " << trial << " seed " << seed;
      ASSERT_EQ(piped.steps(0), n);
      continue;
    }
    ++misses;
    EXPECT_THROW(piped.step(0, first), UsageError) << "trial " << trial;
    EXPECT_THROW(piped.hash(0), UsageError);
    EXPECT_THROW(piped.save(0), UsageError);
    piped.reset(0, GuestImage{});
    serial.reset(0, GuestImage{});
    ASSERT_EQ(piped.step(0, first), serial.step(0, first));
    ASSERT_EQ(piped.hash(0), serial.hash(0));
  }
  EXPECT_GT(misses, 40) << "seed " << seed;
}

TEST(CpuExecutor, UsageErrors) {
  ChipBuilder B("u", 2);
  B.field("f", 1);
  CpuExecutor ex(std::make_shared<const Chip>(B.build()), 1);
  EXPECT_THROW(ex.step(0, 2), UsageError);
  EXPECT_THROW(ex.step(1, 0), UsageError);
  EXPECT_THROW(ex.probe(0, -1, Sublayer::Embed, "f"), UsageError);
  CpuExecutor empty;
  EXPECT_THROW(empty.set_num_streams(1), UsageError);
}

}  // namespace
}  // namespace lockstep::chip
