// CPU executor (docs/spec/chip-format.md, "Layer math"). Reads top to bottom like the spec:
// embed, for each layer (memory block, MLP), unembed, argmax. Sparse throughout: a linear map is
// CSC and is evaluated by scattering the columns of the non-zero inputs into an accumulator that
// remembers which rows it touched; rows whose bias alone can make them non-zero are seeded.
#include "lockstep/chip/cpu_executor.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <sched.h>
#endif

namespace lockstep::chip {

namespace {

enum Act : int { kEmbed, kLogits, kMemK, kMemQ, kMemV, kMemBeta, kMemState, kMemO, kMemResid,
                 kMlpPre, kMlpU, kMlpHidden, kMlpResid, kNumActs };
const char* const kActNames[kNumActs] = {"embed", "logits", "mem.k", "mem.q", "mem.v", "mem.beta",
                                         "mem.state", "mem.o", "mem.resid", "mlp.pre", "mlp.u",
                                         "mlp.hidden", "mlp.resid"};

inline float act(Activation a, float v) { return a == Activation::Relu ? (v > 0.0f ? v : 0.0f) : v; }

// The summary of a column bitmap: (k, bits) with bit i set when word 64 k + i of `mask` is
// non-zero, in increasing k.
std::vector<std::pair<std::uint32_t, std::uint64_t>> summary_of(const std::vector<std::uint64_t>& mask) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> s;
  for (std::uint32_t w = 0; w < mask.size(); ++w) {
    if (!mask[w]) continue;
    if (s.empty() || s.back().first != w >> 6) s.emplace_back(w >> 6, 0);
    s.back().second |= std::uint64_t{1} << (w & 63);
  }
  return s;
}

// A linear map prepared for sparse evaluation.
struct PreparedMap {
  const LinearMap* m = nullptr;
  std::vector<std::uint32_t> seeds;  // rows that can be non-zero with zero input (after act)
  std::vector<std::uint32_t> cols;   // input dimensions with at least one weight
  std::vector<std::uint64_t> colmask;  // bit j: column j has a weight
  std::vector<std::uint32_t> mask_words;  // indices of the non-zero words of colmask
  // the summary of colmask: (k, bits) with bit i set when word 64 k + i of colmask is non-zero
  std::vector<std::pair<std::uint32_t, std::uint64_t>> summary;
  void prepare(const LinearMap& map) {
    m = &map;
    seeds.clear();
    cols.clear();
    colmask.assign((map.w.col_ptr.size() + 63) / 64, 0);
    for (std::uint32_t j = 0; j + 1 < map.w.col_ptr.size(); ++j)
      if (map.w.col_ptr[j + 1] > map.w.col_ptr[j]) {
        cols.push_back(j);
        colmask[j >> 6] |= std::uint64_t{1} << (j & 63);
      }
    mask_words.clear();
    for (std::uint32_t w = 0; w < colmask.size(); ++w)
      if (colmask[w]) mask_words.push_back(w);
    summary = summary_of(colmask);
    for (std::uint32_t r = 0; r < map.bias.size(); ++r) {
      const float b = map.bias[r];
      if (map.act == Activation::Relu ? b > 0.0f : b != 0.0f) seeds.push_back(r);
    }
  }
};

// Sparse accumulator: value(r) = touched ? vals(r) : bias[r] of the map last evaluated. A row's
// stamp and value share one cell (one cache line per first touch); rows is preallocated.
struct Accum {
  struct Cell {
    std::uint32_t stamp = 0;
    float v = 0.0f;
  };
  std::vector<Cell> cells;
  std::vector<std::uint32_t> row_buf;  // touched rows, in first-touch order: row_buf[0 .. n_rows)
  std::size_t n_rows = 0;
  std::uint32_t cur = 0;
  const LinearMap* m = nullptr;
  const float* bias = nullptr;

  void ensure(std::size_t n) {
    if (cells.size() < n) {
      cells.resize(n);
      row_buf.resize(n);
    }
  }
  void begin(const LinearMap& map) {
    m = &map;
    bias = map.bias.data();
    n_rows = 0;
    if (++cur == 0) {
      for (Cell& c : cells) c.stamp = 0;
      cur = 1;
    }
  }
  inline void touch(std::uint32_t r) {
    Cell& c = cells[r];
    if (c.stamp != cur) {
      c.stamp = cur;
      c.v = bias[r];
      row_buf[n_rows++] = r;
    }
  }
  // Adds w to row r (touching it first).
  inline void add(std::uint32_t r, float w) {
    Cell& c = cells[r];
    if (c.stamp != cur) {
      c.stamp = cur;
      c.v = bias[r] + w;
      row_buf[n_rows++] = r;
    } else {
      c.v += w;
    }
  }
  std::span<const std::uint32_t> rows() const { return {row_buf.data(), n_rows}; }
  // DenseGroups scratch: per group (stamp, sum of its dense columns' terms) and the groups a
  // call has summed
  std::vector<std::pair<std::uint32_t, float>> group_sum;
  std::vector<std::uint32_t> active_groups;
  std::uint32_t group_cur = 0;
  float& vals(std::uint32_t r) { return cells[r].v; }
  float vals(std::uint32_t r) const { return cells[r].v; }
  float value(std::uint32_t r) const { return cells[r].stamp == cur ? cells[r].v : m->bias[r]; }
  bool touched(std::uint32_t r) const { return cells[r].stamp == cur; }
};

// The residual's candidates in three forms: x dense, nz the list of candidate dimensions, bits
// their bitmap and sum its summary (bit i of sum[k]: word 64 k + i of bits is non-zero).
struct Candidates {
  const float* x;
  const std::uint32_t* nz;
  std::size_t n_nz;
  const std::uint64_t* bits;
  const std::uint64_t* sum;
};

// Calls column(j) for every column j that is a candidate of `c` and set in `mask` (its
// summary_of()): by walking the candidates (few of them) or by intersecting the two-level
// bitmaps (summary words, then the words both summaries mark), which costs the mask's summary
// words (at most d_model / 4096) plus the words where the mask and x meet, however many
// candidates x has. The order of the columns differs between the two walks. Always inlined: as a
// call it cost 2% of a story step's instructions (callgrind).
template <class Column>
[[gnu::always_inline]] inline void for_each_column(const std::uint64_t* mask, const std::vector<std::pair<std::uint32_t, std::uint64_t>>& summary,
                     const Candidates& c, Column&& column) {
  if (c.n_nz < 4 * summary.size()) {
    for (std::size_t i = 0; i < c.n_nz; ++i) {
      const std::uint32_t j = c.nz[i];
      if ((mask[j >> 6] >> (j & 63)) & 1) column(j);
    }
  } else {
    for (const auto& [k, sb] : summary)
      for (std::uint64_t ws = sb & c.sum[k]; ws != 0; ws &= ws - 1) {
        const std::uint32_t w = 64 * k + static_cast<std::uint32_t>(std::countr_zero(ws));
        for (std::uint64_t b = mask[w] & c.bits[w]; b != 0; b &= b - 1)
          column(64 * w + static_cast<std::uint32_t>(std::countr_zero(b)));
      }
  }
}

// Scatters the columns of `m` that are candidates of `c` and set in `mask` (its summary_of())
// into `a`.
void scatter(Accum& a, const LinearMap& m, const std::uint64_t* mask,
             const std::vector<std::pair<std::uint32_t, std::uint64_t>>& summary, const Candidates& c) {
  const float* x = c.x;
  const std::uint32_t* cp = m.w.col_ptr.data();
  const std::uint32_t* ri = m.w.row_idx.data();
  const float* wv = m.w.values.data();
  for_each_column(mask, summary, c, [&](std::uint32_t j) {
    const float xj = x[j];
    if (xj == 0.0f) return;
    for (std::uint32_t p = cp[j]; p < cp[j + 1]; ++p) a.add(ri[p], wv[p] * xj);
  });
}

// y = W x + b (before activation) for the sparse x of `c`: scatters the columns that both have
// a weight and are candidates (for_each_column). x is zero outside the candidates, so either
// walk visits the same non-zero terms (in another order; every partial sum is exact,
// chip-format.md section 1.3, so the result is the same).
void eval(Accum& a, const PreparedMap& pm, const Candidates& c) {
  a.begin(*pm.m);
  for (std::uint32_t r : pm.seeds) a.touch(r);
  scatter(a, *pm.m, pm.colmask.data(), pm.summary, c);
}

// A ReLU map's dense columns (at least `threshold` weights each: a gate or a small part that
// every unit of a table reads) evaluated by groups instead of scattered. A row's weights in the
// dense columns are its *signature*; rows with equal signatures form a group, whose dense sum
// s_g = sum over its signature of w x_j is computed once a call (from the dense columns that
// are candidates). Then a row touched by a sparse column (or a seed) gets value + s_g, and an
// untouched row of the group has the value b_r + s_g exactly, so it is touched only when that is
// positive (rows by bias descending: the walk stops at the first that is not). A row left
// untouched has value() = its bias <= 0 (not a seed) and a true value <= 0: after the ReLU both
// are 0, so every consumer that applies the ReLU sees the plain evaluation's values; and the
// touched rows' values are the plain evaluation's (sums of the same exact terms). Equal to
// eval() after the ReLU; the audit, which checks every pre-activation, uses eval().
struct DenseGroups {
  std::vector<std::uint64_t> sparse_mask;  // colmask without the dense columns
  std::vector<std::pair<std::uint32_t, std::uint64_t>> sparse_summary, dense_summary;
  std::vector<std::uint64_t> dense_mask;
  std::vector<std::uint32_t> dense_cols;                   // sorted
  std::vector<std::uint32_t> dcol_ptr;                     // (dense_cols + 1): entries of dcol
  std::vector<std::pair<std::uint32_t, float>> dcol;       // (group, weight) per dense column
  std::vector<std::uint32_t> group_of;                     // per row; kNone: no dense weights
  std::vector<std::uint32_t> group_ptr, group_rows;        // a group's rows, by bias descending
  std::vector<float> group_max_bias;
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // Builds the groups of pm's map; false (nothing built) when it has no dense column or is not ReLU.
  bool build(const PreparedMap& pm, std::uint32_t threshold) {
    const LinearMap& m = *pm.m;
    if (m.act != Activation::Relu) return false;
    const SparseMatrix& W = m.w;
    dense_cols.clear();
    for (std::uint32_t j = 0; j + 1 < W.col_ptr.size(); ++j)
      if (W.col_ptr[j + 1] - W.col_ptr[j] >= threshold) dense_cols.push_back(j);
    if (dense_cols.empty()) return false;
    const std::uint32_t R = W.rows;
    std::vector<std::vector<std::pair<std::uint32_t, float>>> sig(R);
    for (std::uint32_t j : dense_cols)
      for (std::uint32_t p = W.col_ptr[j]; p < W.col_ptr[j + 1]; ++p) sig[W.row_idx[p]].emplace_back(j, W.values[p]);
    std::map<std::vector<std::pair<std::uint32_t, float>>, std::uint32_t> ids;
    group_of.assign(R, kNone);
    std::vector<std::vector<std::uint32_t>> members;
    std::vector<const std::vector<std::pair<std::uint32_t, float>>*> sig_of;
    for (std::uint32_t r = 0; r < R; ++r) {
      if (sig[r].empty()) continue;
      auto [it, fresh] = ids.emplace(sig[r], static_cast<std::uint32_t>(members.size()));
      if (fresh) {
        members.emplace_back();
        sig_of.push_back(&it->first);
      }
      group_of[r] = it->second;
      members[it->second].push_back(r);
    }
    const std::uint32_t G = static_cast<std::uint32_t>(members.size());
    group_ptr.assign(G + 1, 0);
    group_rows.clear();
    group_max_bias.assign(G, 0.0f);
    for (std::uint32_t g = 0; g < G; ++g) {
      auto& mem = members[g];
      std::stable_sort(mem.begin(), mem.end(), [&](std::uint32_t a, std::uint32_t b) { return m.bias[a] > m.bias[b]; });
      group_rows.insert(group_rows.end(), mem.begin(), mem.end());
      group_ptr[g + 1] = static_cast<std::uint32_t>(group_rows.size());
      group_max_bias[g] = m.bias[mem.front()];
    }
    std::vector<std::vector<std::pair<std::uint32_t, float>>> by_col(dense_cols.size());
    for (std::uint32_t g = 0; g < G; ++g)
      for (const auto& [j, w] : *sig_of[g]) {
        const auto k = static_cast<std::size_t>(std::lower_bound(dense_cols.begin(), dense_cols.end(), j) - dense_cols.begin());
        by_col[k].emplace_back(g, w);
      }
    dcol_ptr.assign(dense_cols.size() + 1, 0);
    dcol.clear();
    for (std::size_t k = 0; k < by_col.size(); ++k) {
      dcol.insert(dcol.end(), by_col[k].begin(), by_col[k].end());
      dcol_ptr[k + 1] = static_cast<std::uint32_t>(dcol.size());
    }
    sparse_mask = pm.colmask;
    dense_mask.assign(pm.colmask.size(), 0);
    for (std::uint32_t j : dense_cols) {
      sparse_mask[j >> 6] &= ~(std::uint64_t{1} << (j & 63));
      dense_mask[j >> 6] |= std::uint64_t{1} << (j & 63);
    }
    sparse_summary = summary_of(sparse_mask);
    dense_summary = summary_of(dense_mask);
    return true;
  }
  std::uint32_t groups() const { return static_cast<std::uint32_t>(group_max_bias.size()); }
};

// eval() of a ReLU map with dense columns (DenseGroups): the same values after the ReLU.
void eval_grouped(Accum& a, const PreparedMap& pm, const DenseGroups& dg, const Candidates& c) {
  const LinearMap& m = *pm.m;
  a.begin(m);
  for (std::uint32_t r : pm.seeds) a.touch(r);
  scatter(a, m, dg.sparse_mask.data(), dg.sparse_summary, c);
  if (a.group_sum.size() < dg.groups()) a.group_sum.resize(dg.groups(), {0, 0.0f});
  if (++a.group_cur == 0) {
    for (auto& gs : a.group_sum) gs.first = 0;
    a.group_cur = 1;
  }
  a.active_groups.clear();
  // the groups' dense sums, from the dense columns that are candidates
  for_each_column(dg.dense_mask.data(), dg.dense_summary, c, [&](std::uint32_t j) {
    const float xj = c.x[j];
    if (xj == 0.0f) return;
    const auto i = static_cast<std::size_t>(std::lower_bound(dg.dense_cols.begin(), dg.dense_cols.end(), j) - dg.dense_cols.begin());
    for (std::uint32_t p = dg.dcol_ptr[i]; p < dg.dcol_ptr[i + 1]; ++p) {
      const auto [g, wgt] = dg.dcol[p];
      auto& gs = a.group_sum[g];
      if (gs.first != a.group_cur) {
        gs = {a.group_cur, 0.0f};
        a.active_groups.push_back(g);
      }
      gs.second += wgt * xj;
    }
  });
  if (a.active_groups.empty()) return;
  // touched rows: + their group's sum
  const std::size_t touched = a.n_rows;
  for (std::size_t i = 0; i < touched; ++i) {
    const std::uint32_t r = a.row_buf[i];
    const std::uint32_t g = dg.group_of[r];
    if (g != DenseGroups::kNone && a.group_sum[g].first == a.group_cur) a.vals(r) += a.group_sum[g].second;
  }
  // untouched rows whose value b_r + s_g is positive
  for (std::uint32_t g : a.active_groups) {
    const float s = a.group_sum[g].second;
    if (!(dg.group_max_bias[g] + s > 0.0f)) continue;
    for (std::uint32_t p = dg.group_ptr[g]; p < dg.group_ptr[g + 1]; ++p) {
      const std::uint32_t r = dg.group_rows[p];
      if (!(m.bias[r] + s > 0.0f)) break;
      if (!a.touched(r)) a.add(r, s);
    }
  }
}

// Audit helper: |b| + sum |w x| per touched row: bounds every partial sum in any order.
void eval_abs(Accum& a, const PreparedMap& pm, const float* x, const std::uint32_t* nz, std::size_t n_nz) {
  const LinearMap& m = *pm.m;
  a.begin(m);
  for (std::uint32_t r : pm.seeds) a.touch(r);
  for (std::size_t i = 0; i < n_nz; ++i) {
    const std::uint32_t j = nz[i];
    const float xj = x[j];
    if (xj == 0.0f) continue;
    for (std::uint32_t p = m.w.col_ptr[j]; p < m.w.col_ptr[j + 1]; ++p) a.touch(m.w.row_idx[p]);
  }
  for (std::uint32_t r : a.rows()) a.vals(r) = 0.0f;
  for (std::uint32_t r : a.rows()) a.vals(r) = std::fabs(m.bias[r]);
  for (std::size_t i = 0; i < n_nz; ++i) {
    const std::uint32_t j = nz[i];
    const double xj = std::fabs(x[j]);
    if (xj == 0.0) continue;
    for (std::uint32_t p = m.w.col_ptr[j]; p < m.w.col_ptr[j + 1]; ++p)
      a.vals(m.w.row_idx[p]) = static_cast<float>(a.vals(m.w.row_idx[p]) + std::fabs(m.w.values[p]) * xj);
  }
}

// Rows of a ReLU map that differ only in their bias (threshold ladders such as
// ReLU(y - 16 j), j = 0 .. n, all reading one form y) share one dot product. The map is
// evaluated as a smaller map with one *unit* row per distinct weight row, whose bias is its
// highest member bias b_0: the unit's value is v_0 = d + b_0 with d = w . x, its first
// member's value. Its member rows, sorted by bias descending, have the values d + b_r with
// d = v_0 - b_0, and only those with d + b_r > 0 are visited (the rest are zero after the
// ReLU), so a ladder of n thresholds costs one dot product and the rungs it passes, and a unit
// whose first member is not positive costs what a plain row costs. Exact: d is a partial sum
// of each member's dot product, so v_0, d = v_0 - b_0 and d + b_r are exact under
// chip-format.md section 1.3, whatever the order, and equal the plain evaluation's values.
struct SharedRows {
  LinearMap units;  // (units x cols), ReLU: a unit's weights are its members' (equal) weights, its bias b_0
  PreparedMap pm;   // prepared on `units` (seeds: units with b_0 > 0)
  std::vector<std::uint32_t> first;  // (units + 1): unit u's members are [first[u], first[u + 1])
  std::vector<std::uint32_t> row;    // member rows, by bias descending within a unit
  std::vector<float> bias;           // their biases

  // Builds the units of a ReLU map; false (and nothing built) when no two rows share weights.
  bool build(const LinearMap& m) {
    const SparseMatrix& W = m.w;
    const std::uint32_t R = W.rows;
    // the map's rows (CSR): entries by column
    std::vector<std::uint32_t> rp(R + 1, 0);
    for (std::uint32_t r : W.row_idx) ++rp[r + 1];
    for (std::uint32_t r = 0; r < R; ++r) rp[r + 1] += rp[r];
    std::vector<std::uint32_t> rc(W.row_idx.size()), fill(rp.begin(), rp.end() - 1);
    std::vector<float> rv(W.row_idx.size());
    for (std::uint32_t j = 0; j + 1 < W.col_ptr.size(); ++j)
      for (std::uint32_t p = W.col_ptr[j]; p < W.col_ptr[j + 1]; ++p) {
        const std::uint32_t q = fill[W.row_idx[p]]++;
        rc[q] = j;
        rv[q] = W.values[p];
      }
    auto same_row = [&](std::uint32_t a, std::uint32_t b) {
      const std::uint32_t n = rp[a + 1] - rp[a];
      return n == rp[b + 1] - rp[b] && std::equal(rc.begin() + rp[a], rc.begin() + rp[a] + n, rc.begin() + rp[b]) &&
             (n == 0 || std::memcmp(rv.data() + rp[a], rv.data() + rp[b], n * sizeof(float)) == 0);
    };
    // rows by (hash of their weights, row); equal weights are adjacent after a check of equality
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_hash(R);
    for (std::uint32_t r = 0; r < R; ++r) {
      const std::uint64_t hc = XXH3_64bits(rc.data() + rp[r], (rp[r + 1] - rp[r]) * sizeof(std::uint32_t));
      const std::uint64_t hv = XXH3_64bits(rv.data() + rp[r], (rp[r + 1] - rp[r]) * sizeof(float));
      by_hash[r] = {hc ^ (hv * 0x9E3779B97F4A7C15ull), r};
    }
    std::sort(by_hash.begin(), by_hash.end());
    std::vector<std::uint32_t> unit_of(R, UINT32_MAX), rep;  // rep[u]: the unit's first row
    std::vector<std::vector<std::uint32_t>> members;
    for (std::size_t i = 0; i < R;) {
      std::size_t e = i;
      while (e < R && by_hash[e].first == by_hash[i].first) ++e;
      for (std::size_t a = i; a < e; ++a) {  // split the run into classes of truly equal rows
        const std::uint32_t r = by_hash[a].second;
        if (unit_of[r] != UINT32_MAX) continue;
        const std::uint32_t u = static_cast<std::uint32_t>(rep.size());
        rep.push_back(r);
        members.push_back({r});
        unit_of[r] = u;
        for (std::size_t b = a + 1; b < e; ++b) {
          const std::uint32_t r2 = by_hash[b].second;
          if (unit_of[r2] == UINT32_MAX && same_row(r, r2)) {
            unit_of[r2] = u;
            members.back().push_back(r2);
          }
        }
      }
      i = e;
    }
    if (rep.size() == R) return false;
    // units in order of their first row (so that each column's unit indices increase)
    std::vector<std::uint32_t> order(rep.size());
    for (std::uint32_t u = 0; u < order.size(); ++u) order[u] = u;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return rep[a] < rep[b]; });
    std::vector<std::uint32_t> renum(rep.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) renum[order[i]] = i;
    const std::uint32_t U = static_cast<std::uint32_t>(rep.size());
    units = LinearMap{};
    units.act = Activation::Relu;
    units.w.rows = U;
    units.w.cols = W.cols;
    units.w.col_ptr.assign(W.col_ptr.size(), 0);
    for (std::uint32_t j = 0; j + 1 < W.col_ptr.size(); ++j) {
      for (std::uint32_t p = W.col_ptr[j]; p < W.col_ptr[j + 1]; ++p) {
        const std::uint32_t r = W.row_idx[p], u = unit_of[r];
        if (rep[u] != r) continue;
        units.w.row_idx.push_back(renum[u]);
        units.w.values.push_back(W.values[p]);
      }
      units.w.col_ptr[j + 1] = static_cast<std::uint32_t>(units.w.row_idx.size());
    }
    first.assign(U + 1, 0);
    row.clear();
    bias.clear();
    for (std::uint32_t i = 0; i < U; ++i) {
      std::vector<std::uint32_t>& mem = members[order[i]];
      std::stable_sort(mem.begin(), mem.end(), [&](std::uint32_t a, std::uint32_t b) { return m.bias[a] > m.bias[b]; });
      for (std::uint32_t r : mem) {
        row.push_back(r);
        bias.push_back(m.bias[r]);
      }
      first[i + 1] = static_cast<std::uint32_t>(row.size());
    }
    units.bias.resize(U);
    for (std::uint32_t u = 0; u < U; ++u) units.bias[u] = bias[first[u]];
    pm.prepare(units);
    return true;
  }

  // The non-zero entries (row, ReLU(value)) of the map, from the units evaluated in `a`.
  void expand(const Accum& a, std::vector<std::pair<std::uint32_t, float>>& out) const {
    for (std::uint32_t u : a.rows()) {
      const float v0 = a.vals(u);
      if (!(v0 > 0.0f)) continue;
      const std::uint32_t f = first[u], e = first[u + 1];
      out.emplace_back(row[f], v0);
      const float d = v0 - bias[f];
      for (std::uint32_t i = f + 1; i < e; ++i) {
        const float v = d + bias[i];
        if (!(v > 0.0f)) break;
        out.emplace_back(row[i], v);
      }
    }
  }
};

struct PreparedHead {
  PreparedMap k, q, v, beta, o;
  std::size_t state_offset = 0;
  std::size_t o_offset = 0;  // where this head's o starts in Stream::o (the sum of the earlier heads' value_dim)
  std::uint32_t key_dim = 0, value_dim = 0;
  // Heads of one layer all read the block's input x, so two heads whose k (q, v, beta) maps are
  // equal compute equal vectors. same_*: index of the first head of the layer with an equal map
  // (this head's own index when none is earlier); its result is computed once per step.
  std::uint32_t same_k = 0, same_q = 0, same_v = 0, same_beta = 0;
  // Index of the first head of the layer whose state always equals this head's: the same k, v
  // and beta maps, the same shape and the same initialisers, so every step writes both alike
  // (e.g. a register file read through several ports, each with its own query). When it is
  // earlier, this head's write copies that head's freshly written columns instead of computing
  // them again; the state stays this head's own (checkpoints and hashes are unchanged).
  std::uint32_t same_state = 0;
};

// Bit i set when p[i] is neither +0 nor -0, for i < n <= 64 (SSE2: four floats a compare).
inline std::uint64_t nonzero_mask(const float* p, std::uint32_t n) {
  std::uint64_t m = 0;
  std::uint32_t i = 0;
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4)
    m |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(p + i), zero))) << i;
#endif
  for (; i < n; ++i) m |= static_cast<std::uint64_t>(p[i] != 0.0f) << i;
  return m;
}

// Equality of two maps' content (activation, shape, weights, bias).
bool same_map(const LinearMap& a, const LinearMap& b) { return a.act == b.act && same_weights(a, b); }

// A run of consecutive heads [first, last) whose q, beta and o maps have no bias: when no input
// column of their q or beta maps (the union `mask`, as (word, bits) pairs) is a candidate on a
// step, all of them write nothing and read zero, and the step skips them together. A long run
// is also cut into `parts` (the same, for at most kMaxGroup heads each), checked when the whole
// run is not skipped: one active column then wakes only its own part.
struct HeadGroup {
  std::uint32_t first = 0, last = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> mask;
  std::vector<HeadGroup> parts;  // empty when the run has at most kMaxGroup heads
  // True when one of the mask's columns is a candidate (xbits: the residual's non-zero bits)
  bool woken(const std::uint64_t* xbits) const {
    return std::any_of(mask.begin(), mask.end(), [&](const std::pair<std::uint32_t, std::uint64_t>& wm) {
      return (wm.second & xbits[wm.first]) != 0;
    });
  }
};

struct PreparedLayer {
  std::vector<PreparedHead> heads;
  std::vector<HeadGroup> groups;  // covers only runs of at least kMinGroup heads
  PreparedMap w1, wu, wg, w2;
  std::unique_ptr<SharedRows> w1_shared;  // w1 by shared dot products (SharedRows); null: none share
  std::unique_ptr<DenseGroups> w1_dense;  // the dense columns of the map mlp() evaluates (w1_shared's units, else w1); null: none
  MlpKind kind = MlpKind::None;
  double limit = 0;
  std::vector<std::size_t> probes_after_mem, probes_after_mlp;  // indices into config.probes
};

struct BoundInfo {
  double bound = 0;
  double scale = 1;  // 2^frac_bits
  double limit = 0;  // 2^p of the number format
};

template <class Mark>
void apply_initialisers_marked(const Chip& chip, const GuestImage& image, std::span<float> state, Mark&& mark);

constexpr std::size_t kPageFloats = 1024;  // 4 KiB of state per dirty-tracking page

struct Stream {
  std::vector<float> state;
  // The state a pass reads and writes: `state`, or (a pipeline's back half, Pipeline below)
  // another stream's.
  float* alias = nullptr;
  float* state_data() { return alias ? alias : state.data(); }
  std::uint64_t steps = 0;
  // A free-running call stopped at a mispredicted step while its shallower layers had run ahead
  // (CpuExecutor::free_running_batch_expecting): unusable until reset() or restore().
  bool ran_ahead = false;
  // residual of the current step
  std::vector<float> x;
  std::vector<std::uint64_t> xbits;  // bit d: d is in xnz
  std::vector<std::uint64_t> xsum;   // bit i of word k: word 64 k + i of xbits is non-zero
  std::vector<std::uint32_t> xnz;
  // per-step scratch: memory outputs of every head of the current layer
  std::vector<float> o;  // concatenated value_dim of the layer's heads
  std::vector<std::vector<std::vector<float>>> probe_vals;  // [probe point][field] -> values
  bool probes_valid = false;
  std::optional<AuditViolation> violation;
  // Pages of `state` (kPageFloats floats each) that may be non-zero: written by a step or an
  // initialiser since the last reset. A reset re-zeroes only these (all of them when
  // `all_dirty`, e.g. after restore()), so resetting a stream costs what its run touched,
  // not the whole 8.5 MB state.
  std::vector<std::uint8_t> page_dirty;
  std::vector<std::uint32_t> dirty_pages;
  bool all_dirty = false;

  void mark(std::size_t first, std::size_t count) {
    if (count == 0) return;
    for (std::size_t p = first / kPageFloats, e = (first + count - 1) / kPageFloats; p <= e; ++p)
      if (!page_dirty[p]) {
        page_dirty[p] = 1;
        dirty_pages.push_back(static_cast<std::uint32_t>(p));
      }
  }

  void add(std::uint32_t d, float v) {
    std::uint64_t& w = xbits[d >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (d & 63);
    if (!(w & bit)) {
      w |= bit;
      xsum[d >> 12] |= std::uint64_t{1} << ((d >> 6) & 63);
      xnz.push_back(d);
    }
    x[d] += v;
  }
  void clear_residual() {
    for (std::uint32_t d : xnz) {
      x[d] = 0.0f;
      xbits[d >> 6] = 0;
      xsum[d >> 12] = 0;
    }
    xnz.clear();
  }
  Candidates candidates() const { return {x.data(), xnz.data(), xnz.size(), xbits.data(), xsum.data()}; }
};

// What every forward pass reads: the chip, its maps prepared for sparse evaluation, and the
// executor's modes. Read-only while streams step, except `cov`, which only a serial pass counts
// (a pipelined step runs with coverage, the audit and probes off).
struct Shared {
  std::shared_ptr<const Chip> chip;
  std::vector<PreparedLayer> layers;
  PreparedMap embed, unembed;
  std::vector<Token> bias_order;  // tokens by (unembed bias desc, id asc)
  std::vector<Token> bad_bias_tokens;  // tokens whose bias alone fails the "logits" bound
  std::uint64_t fingerprint = 0;
  std::vector<std::vector<BoundInfo>> bounds;  // [layer + 1][act]; row 0 = global (embed, logits)
  std::vector<std::size_t> probes_after_embed;
  bool record_probes = false;
  bool audit = false;
  bool coverage = false;  // decision coverage (DecisionCoverage): counted in mlp()/memory_block()
  DecisionCoverage cov;
  std::size_t max_value_dim = 0;
  std::size_t scratch_rows = 0, scratch_heads = 0, scratch_head_value_dim = 0;  // a Pass's scratch sizes
  // MLP columns with at least this many weights are evaluated by groups (DenseGroups); 0: none.
  // 256: the fewest instructions of 32, 128, 256, 512 and 1,024 on stories_vx (lower thresholds
  // take in tables' parts, whose rows' signatures differ: groups of one row; docs/performance.md).
  std::uint32_t dense_threshold = 256;

  void prepare(std::shared_ptr<const Chip> c) {
    chip = std::move(c);
    const Chip& ch = *chip;
    std::string cfg = config_json(ch);
    fingerprint = XXH3_64bits(cfg.data(), cfg.size());
    embed.prepare(ch.embed);
    unembed.prepare(ch.unembed);
    std::size_t max_rows = std::max<std::size_t>(ch.config.d_model, ch.config.vocab_size);
    std::size_t off = 0;
    layers.clear();
    layers.resize(ch.layers.size());
    max_value_dim = 0;
    std::size_t max_heads = 0, max_head_value_dim = 0;
    for (std::size_t l = 0; l < ch.layers.size(); ++l) {
      const Layer& L = ch.layers[l];
      PreparedLayer& P = layers[l];
      P.kind = L.mlp.kind;
      P.limit = exact_limit(L.format);
      std::size_t vsum = 0;
      for (const Head& h : L.heads) {
        PreparedHead ph;
        ph.k.prepare(h.k);
        ph.q.prepare(h.q);
        ph.v.prepare(h.v);
        ph.beta.prepare(h.beta);
        ph.o.prepare(h.o);
        ph.state_offset = off;
        ph.key_dim = h.key_dim;
        ph.value_dim = h.value_dim;
        ph.o_offset = vsum;
        off += static_cast<std::size_t>(h.key_dim) * h.value_dim;
        vsum += h.value_dim;
        max_rows = std::max<std::size_t>({max_rows, h.key_dim, h.value_dim});
        P.heads.push_back(std::move(ph));
      }
      max_value_dim = std::max(max_value_dim, vsum);
      // runs of bias-free heads, skipped together on steps where none of them has an input, and
      // their parts of at most kMaxGroup heads (layer 7's 300 lane and register heads: 206 head
      // visits a story step as one run, 40 with parts of 8; docs/performance.md)
      {
        constexpr std::size_t kMinGroup = 4, kMaxGroup = 8;
        auto eligible = [&](const PreparedHead& ph) {
          return ph.q.seeds.empty() && ph.beta.seeds.empty() && ph.o.seeds.empty();
        };
        auto group_of = [&](std::size_t first, std::size_t last) {
          HeadGroup g;
          g.first = static_cast<std::uint32_t>(first);
          g.last = static_cast<std::uint32_t>(last);
          std::vector<std::uint64_t> m(P.heads[first].q.colmask.size(), 0);
          for (std::size_t x = first; x < last; ++x)
            for (const PreparedMap* pm : {&P.heads[x].q, &P.heads[x].beta})
              for (std::uint32_t w : pm->mask_words) m[w] |= pm->colmask[w];
          for (std::uint32_t w = 0; w < m.size(); ++w)
            if (m[w]) g.mask.emplace_back(w, m[w]);
          return g;
        };
        for (std::size_t h = 0; h < P.heads.size();) {
          if (!eligible(P.heads[h])) {
            ++h;
            continue;
          }
          std::size_t e = h;
          while (e < P.heads.size() && eligible(P.heads[e])) ++e;
          if (e - h >= kMinGroup) {
            HeadGroup g = group_of(h, e);
            if (e - h > kMaxGroup)
              for (std::size_t f = h; f < e; f += kMaxGroup) g.parts.push_back(group_of(f, std::min(e, f + kMaxGroup)));
            P.groups.push_back(std::move(g));
          }
          h = e;
        }
      }
      // equal maps within the layer (hash, then full comparison)
      {
        std::vector<std::array<std::uint64_t, 4>> hs;
        for (std::size_t h = 0; h < L.heads.size(); ++h) {
          const Head& hd = L.heads[h];
          hs.push_back({weights_hash(hd.k), weights_hash(hd.q), weights_hash(hd.v), weights_hash(hd.beta)});
          PreparedHead& ph = P.heads[h];
          std::uint32_t* same[4] = {&ph.same_k, &ph.same_q, &ph.same_v, &ph.same_beta};
          const LinearMap* mine[4] = {&hd.k, &hd.q, &hd.v, &hd.beta};
          for (int m = 0; m < 4; ++m) {
            *same[m] = static_cast<std::uint32_t>(h);
            for (std::size_t e = 0; e < h; ++e) {
              const Head& he = L.heads[e];
              const LinearMap* theirs[4] = {&he.k, &he.q, &he.v, &he.beta};
              if (hs[e][m] == hs[h][m] && same_map(*mine[m], *theirs[m]) &&
                  (m != 2 || he.value_dim == hd.value_dim)) {
                *same[m] = static_cast<std::uint32_t>(e);
                break;
              }
            }
          }
        }
        // equal states: equal k, v, beta (same_* name the first head with the map), shape and
        // initialisers (compared field by field, in file order, with the head index left out)
        auto same_init = [](const Initialiser& a, const Initialiser& b) {
          return a.column == b.column && a.row == b.row && a.is_const == b.is_const && a.source == b.source &&
                 a.address == b.address && a.section == b.section && a.offset == b.offset && a.optional == b.optional &&
                 a.length == b.length && a.stride == b.stride && a.encoding == b.encoding &&
                 a.bytes_per_column == b.bytes_per_column && a.values == b.values && a.columns == b.columns;
        };
        std::vector<std::vector<const Initialiser*>> inits(L.heads.size());
        for (const Initialiser& in : ch.config.initialisers)
          if (in.layer == l && in.head < L.heads.size()) inits[in.head].push_back(&in);
        for (std::size_t h = 0; h < L.heads.size(); ++h) {
          PreparedHead& ph = P.heads[h];
          ph.same_state = static_cast<std::uint32_t>(h);
          for (std::size_t e = 0; e < h; ++e) {
            const PreparedHead& pe = P.heads[e];
            if (pe.same_state != e || pe.same_k != ph.same_k || pe.same_v != ph.same_v || pe.same_beta != ph.same_beta ||
                pe.key_dim != ph.key_dim || pe.value_dim != ph.value_dim || inits[e].size() != inits[h].size())
              continue;
            bool eq = true;
            for (std::size_t i = 0; i < inits[h].size() && eq; ++i) eq = same_init(*inits[e][i], *inits[h][i]);
            if (eq) {
              ph.same_state = static_cast<std::uint32_t>(e);
              break;
            }
          }
        }
        max_heads = std::max(max_heads, L.heads.size());
        for (const Head& hd : L.heads) max_head_value_dim = std::max<std::size_t>(max_head_value_dim, hd.value_dim);
      }
      if (L.mlp.kind == MlpKind::Relu) {
        P.w1.prepare(L.mlp.w1);
        auto sr = std::make_unique<SharedRows>();
        if (sr->build(L.mlp.w1)) P.w1_shared = std::move(sr);
        auto dg = std::make_unique<DenseGroups>();
        if (dense_threshold > 0 && dg->build(P.w1_shared ? P.w1_shared->pm : P.w1, dense_threshold))
          P.w1_dense = std::move(dg);
      }
      if (L.mlp.kind == MlpKind::Gated) {
        P.wu.prepare(L.mlp.wu);
        P.wg.prepare(L.mlp.wg);
      }
      if (L.mlp.kind != MlpKind::None) P.w2.prepare(L.mlp.w2);
      max_rows = std::max<std::size_t>(max_rows, L.mlp.hidden);
    }
    clear_coverage();
    scratch_rows = max_rows;
    scratch_heads = max_heads;
    scratch_head_value_dim = max_head_value_dim;
    bias_order.resize(ch.config.vocab_size);
    for (Token t = 0; t < ch.config.vocab_size; ++t) bias_order[t] = t;
    const auto& ub = ch.unembed.bias;
    std::stable_sort(bias_order.begin(), bias_order.end(), [&](Token a, Token b) { return ub[a] > ub[b]; });
    // bounds
    bounds.assign(ch.layers.size() + 1, std::vector<BoundInfo>(kNumActs));
    const double glimit = exact_limit(ch.config.number_format);
    for (std::size_t r = 0; r < bounds.size(); ++r)
      for (auto& b : bounds[r]) {
        b.limit = r == 0 ? glimit : layers[r - 1].limit;
        b.bound = b.limit;
        b.scale = 1;
      }
    for (const Bound& b : ch.config.bounds) {
      int a = 0;
      while (a < kNumActs && b.activation != kActNames[a]) ++a;
      BoundInfo& bi = bounds[static_cast<std::size_t>(b.layer + 1)][a];
      bi.bound = b.bound;
      bi.scale = std::ldexp(1.0, b.frac_bits);
    }
    bad_bias_tokens.clear();
    {
      const BoundInfo& b = bounds[0][kLogits];
      for (Token t = 0; t < ch.config.vocab_size; ++t) {
        const double v = ch.unembed.bias[t], scaled = v * b.scale;
        if (scaled != std::floor(scaled) || std::fabs(v) > b.bound || std::fabs(scaled) >= b.limit) bad_bias_tokens.push_back(t);
      }
    }
    probes_after_embed.clear();
    for (std::size_t i = 0; i < ch.config.probes.size(); ++i) {
      const ProbePoint& p = ch.config.probes[i];
      if (p.after == Sublayer::Embed) probes_after_embed.push_back(i);
      else if (p.after == Sublayer::Memory) layers[static_cast<std::size_t>(p.layer)].probes_after_mem.push_back(i);
      else layers[static_cast<std::size_t>(p.layer)].probes_after_mlp.push_back(i);
    }
  }

  void clear_coverage() {
    cov.layers.assign(chip->layers.size(), {});
    for (std::size_t l = 0; l < chip->layers.size(); ++l) {
      cov.layers[l].active.assign(chip->layers[l].mlp.hidden, 0);
      cov.layers[l].head_writes.assign(chip->layers[l].heads.size(), 0);
    }
  }
  // A zero residual and head-output scratch of the chip's sizes.
  void init_residual(Stream& s) const {
    const std::uint32_t D = chip->config.d_model;
    s.x.assign(D, 0.0f);
    s.xbits.assign((D + 63) / 64, 0);
    s.xsum.assign((D + 4095) / 4096, 0);
    s.xnz.clear();
    s.o.assign(max_value_dim, 0.0f);
  }

  void init_stream(Stream& s) const {
    const Chip& ch = *chip;
    const std::size_t pages = (ch.state_size() + kPageFloats - 1) / kPageFloats;
    if (s.state.size() != ch.state_size() || s.page_dirty.size() != pages || s.all_dirty ||
        s.dirty_pages.size() > pages / 2) {
      s.state.assign(ch.state_size(), 0.0f);
      s.page_dirty.assign(pages, 0);
      s.dirty_pages.clear();
    } else {
      for (std::uint32_t p : s.dirty_pages) {
        const std::size_t b = std::size_t{p} * kPageFloats, e = std::min(b + kPageFloats, s.state.size());
        std::fill(s.state.begin() + static_cast<std::ptrdiff_t>(b), s.state.begin() + static_cast<std::ptrdiff_t>(e),
                  0.0f);
        s.page_dirty[p] = 0;
      }
      s.dirty_pages.clear();
    }
    s.all_dirty = false;
    s.ran_ahead = false;
    s.steps = 0;
    init_residual(s);
    s.probe_vals.assign(ch.config.probes.size(), {});
    s.probes_valid = false;
    s.violation.reset();
  }
};

// One thread's forward pass over streams: the layer math of chip-format.md ("Layer math") and
// its scratch. The executor has one for step_batch and a second for the pipeline's deeper
// layers (Pipeline, below); both read one Shared.
struct Pass {
  explicit Pass(Shared& s) : sh(s) {}
  Shared& sh;
  // scratch (a pass steps its streams one at a time within a layer)
  Accum a0, a1, a2, a3, aabs;
  // memory_block scratch per head of the current layer (PreparedHead::same_*): head_beta[h] and
  // head_q[h] hold this call's values only where head_call[h] == call (a head skipped with its
  // group has beta 0 and a zero query, without a write per head)
  std::vector<float> head_beta;
  std::vector<std::uint32_t> head_call;
  std::uint32_t call = 0;
  std::vector<std::uint32_t> readers;  // the heads of this call whose query is not zero (or all, with the audit), or whose W_o has a bias, in order
  // per head of the current layer that reads: o = head_src[0 .. value_dim) * head_scale (a
  // query with one non-zero entry reads its state column in place; else head_src is its o)
  std::vector<const float*> head_src;
  std::vector<float> head_scale;
  std::vector<std::vector<std::pair<std::uint32_t, float>>> head_k, head_q;
  std::vector<std::vector<float>> head_v;
  std::vector<std::uint8_t> k_done, v_done;
  const std::vector<std::pair<std::uint32_t, float>> no_entries{};  // {}: clang-14 needs an initialiser
  std::vector<std::pair<std::uint32_t, float>> knz, qnz;
  std::vector<float> tmp, tmp_abs;
  // audit: |x_old| + sum |terms| of residual updates, per touched residual dimension
  std::vector<double> rabs;
  std::vector<std::uint8_t> rabs_mark;
  std::vector<std::uint32_t> rabs_rows;

  // Sizes the scratch for sh's chip (after Shared::prepare).
  void size() {
    for (Accum* a : {&a0, &a1, &a2, &a3, &aabs}) a->ensure(sh.scratch_rows);
    head_beta.assign(sh.scratch_heads, 0.0f);
    head_call.assign(sh.scratch_heads, 0);
    call = 0;
    readers.reserve(sh.scratch_heads);
    head_src.assign(sh.scratch_heads, nullptr);
    head_scale.assign(sh.scratch_heads, 1.0f);
    head_k.assign(sh.scratch_heads, {});
    head_q.assign(sh.scratch_heads, {});
    head_v.assign(sh.scratch_heads, std::vector<float>(sh.scratch_head_value_dim, 0.0f));
    k_done.assign(sh.scratch_heads, 0);
    v_done.assign(sh.scratch_heads, 0);
    tmp.assign(sh.scratch_rows, 0.0f);
    tmp_abs.assign(sh.scratch_rows, 0.0f);
    rabs.assign(sh.chip->config.d_model, 0.0);
    rabs_mark.assign(sh.chip->config.d_model, 0);
    rabs_rows.clear();
  }

  // A unit the sparse evaluation did not touch has pre-activation = its bias <= 0 (a positive
  // bias makes it a seed, always touched): inactive. So the touched rows decide every unit.
  void count_decisions(int l, const Accum& pre) {
    DecisionCoverage::Layer& c = sh.cov.layers[static_cast<std::size_t>(l)];
    for (std::uint32_t r : pre.rows())
      if (pre.vals(r) > 0.0f) ++c.active[r];
  }

  // ---- audit ----
  void check(Stream& s, double v, int layer, int a, int head, std::uint32_t index, bool residual) {
    if (s.violation) return;
    const BoundInfo& b = sh.bounds[static_cast<std::size_t>(layer + 1)][a];
    std::string reason;
    const double scaled = v * b.scale;
    if (!std::isfinite(v)) reason = "not finite";
    else if (scaled != std::floor(scaled))
      reason = b.scale == 1 ? "not an integer" : "not a multiple of 2^-" + std::to_string(std::ilogb(b.scale));
    else if (std::fabs(v) > b.bound) {
      std::ostringstream os;
      os << "exceeds declared bound " << b.bound;
      reason = os.str();
    }
    else if (std::fabs(scaled) >= b.limit) reason = "outside the exact range 2^" + std::to_string(std::ilogb(b.limit)) + " of its number format";
    if (reason.empty()) return;
    report(s, v, layer, a, head, index, residual, reason);
  }
  void check_abs(Stream& s, double abs_sum, int layer, int a, int head, std::uint32_t index, bool residual) {
    if (s.violation) return;
    const BoundInfo& b = sh.bounds[static_cast<std::size_t>(layer + 1)][a];
    if (abs_sum * b.scale >= b.limit)
      report(s, abs_sum, layer, a, head, index, residual,
             "a partial sum may leave the exact range 2^" + std::to_string(std::ilogb(b.limit)) +
                 " (sum of |terms| shown)");
  }
  void report(Stream& s, double v, int layer, int a, int head, std::uint32_t index, bool residual,
              const std::string& reason) {
    AuditViolation av;
    av.step = s.steps;
    av.layer = layer;
    av.activation = kActNames[a];
    av.head = head;
    av.index = index;
    if (residual)
      if (const Field* f = sh.chip->field_at(index)) av.field = f->name + "[" + std::to_string(index - f->offset) + "]";
    av.value = v;
    av.reason = reason;
    s.violation = av;
  }
  // audit a linear map evaluation in accumulator `a`: values (after act) and partial sums
  void audit_map(Stream& s, const Accum& a, const PreparedMap& pm, int layer, int act_id, int head, bool residual_rows) {
    eval_abs(aabs, pm, s.x.data(), s.xnz.data(), s.xnz.size());
    for (std::uint32_t r : aabs.rows()) check_abs(s, aabs.vals(r), layer, act_id, head, r, residual_rows);
    for (std::uint32_t r : a.rows()) check(s, a.vals(r), layer, act_id, head, r, residual_rows);
  }
  // Audit of a residual update x += W in + b: every partial sum is bounded by
  // |x_old| + |b| + sum |W in|; accumulate that per touched dimension, then check it.
  void rabs_add(const Stream& s, std::uint32_t d, double v) {
    if (!rabs_mark[d]) {
      rabs_mark[d] = 1;
      rabs_rows.push_back(d);
      rabs[d] = std::fabs(s.x[d]);
    }
    rabs[d] += v;
  }
  void rabs_scatter(const Stream& s, const PreparedMap& pm, std::uint32_t j, double in) {
    const SparseMatrix& W = pm.m->w;
    for (std::uint32_t p = W.col_ptr[j]; p < W.col_ptr[j + 1]; ++p)
      rabs_add(s, W.row_idx[p], std::fabs(static_cast<double>(W.values[p]) * in));
  }
  void rabs_bias(const Stream& s, const PreparedMap& pm) {
    for (std::uint32_t r : pm.seeds) rabs_add(s, r, std::fabs(pm.m->bias[r]));
  }
  void rabs_check(Stream& s, int layer, int act_id) {
    for (std::uint32_t d : rabs_rows) {
      check_abs(s, rabs[d], layer, act_id, -1, d, true);
      rabs_mark[d] = 0;
    }
    rabs_rows.clear();
  }
  void audit_residual(Stream& s, int layer, int act_id) {
    for (std::uint32_t d : s.xnz) check(s, s.x[d], layer, act_id, -1, d, true);
  }

  void record(Stream& s, const std::vector<std::size_t>& points) {
    const Chip& ch = *sh.chip;
    for (std::size_t pi : points) {
      const ProbePoint& p = ch.config.probes[pi];
      auto& dst = s.probe_vals[pi];
      dst.resize(p.fields.size());
      for (std::size_t fi = 0; fi < p.fields.size(); ++fi) {
        const Field* f = ch.find_field(p.fields[fi]);
        dst[fi].assign(s.x.begin() + f->offset, s.x.begin() + f->offset + f->width);
      }
    }
  }

  // ---- the forward pass ----

  // x = E[token]
  void embed_token(Stream& s, Token t) {
    s.clear_residual();
    const SparseMatrix& E = sh.chip->embed.w;
    for (std::uint32_t p = E.col_ptr[t]; p < E.col_ptr[t + 1]; ++p) s.add(E.row_idx[p], E.values[p]);
    if (sh.audit) audit_residual(s, -1, kEmbed);
    if (sh.record_probes) record(s, sh.probes_after_embed);
  }

  // x += sum_h W_o,h o_h, with S_h <- S_h + beta (v - S_h k) k^T ; o_h = S_h q, per head.
  // out = the non-zero entries (row, act(value)) of a head's key or query map on the stream's
  // residual (evaluated in a0; audited as activation act_id of head hi in layer l).
  // True when pm's map is zero this step because none of its (few) input columns is a candidate
  // and no row is non-zero without input (never with the audit on, which checks every map).
  bool idle(const Stream& s, const PreparedMap& pm) const {
    return !sh.audit && pm.seeds.empty() && pm.mask_words.size() <= 16 &&
           std::none_of(pm.mask_words.begin(), pm.mask_words.end(),
                        [&](std::uint32_t w) { return (pm.colmask[w] & s.xbits[w]) != 0; });
  }

  void eval_nonzero(Stream& s, const PreparedMap& pm, int l, int act_id, int hi,
                    std::vector<std::pair<std::uint32_t, float>>& out) {
    // A map with a few input columns and no bias is zero unless one of them is: checked first
    // (a head per lane of a wide memory reads on few steps)
    if (idle(s, pm)) {
      out.clear();
      return;
    }
    eval(a0, pm, s.candidates());
    if (sh.audit) audit_map(s, a0, pm, l, act_id, hi, false);
    out.clear();
    for (std::uint32_t r : a0.rows()) {
      const float v = act(pm.m->act, a0.vals(r));
      if (v != 0.0f) out.emplace_back(r, v);
    }
  }

  void memory_block(Stream& s, int l) {
    PreparedLayer& P = sh.layers[static_cast<std::size_t>(l)];
    if (P.heads.empty()) {  // the block adds nothing; its probe point still sees the residual
      if (sh.record_probes) record(s, P.probes_after_mem);
      return;
    }
    const std::uint64_t* xb = s.xbits.data();
    const Candidates xc = s.candidates();
    if (++call == 0) {  // wrapped: no stale stamp may equal the new call
      std::fill(head_call.begin(), head_call.end(), 0);
      call = 1;
    }
    readers.clear();
    // Results of this step's k, q, v maps per head (shared by heads with equal maps, which all
    // read the same x; with the audit on every head evaluates its own maps).
    std::fill(k_done.begin(), k_done.begin() + static_cast<std::ptrdiff_t>(P.heads.size()), 0);
    std::fill(v_done.begin(), v_done.begin() + static_cast<std::ptrdiff_t>(P.heads.size()), 0);
    std::size_t next_group = 0, next_part = 0;
    const HeadGroup* run = nullptr;  // the woken run whose parts are checked
    for (std::size_t h = 0; h < P.heads.size(); ++h) {
      // a group none of whose inputs is a candidate: beta = 0, q = 0, so nothing is written,
      // nothing read and no bias added (its heads' head_call stays stale)
      if (next_group < P.groups.size() && P.groups[next_group].first == h) {
        const HeadGroup& g = P.groups[next_group++];
        if (!sh.audit && !g.woken(xb)) {
          h = g.last - 1;
          continue;
        }
        run = &g;
        next_part = 0;
      }
      if (run && next_part < run->parts.size() && run->parts[next_part].first == h) {
        const HeadGroup& g = run->parts[next_part++];
        if (!sh.audit && !g.woken(xb)) {
          h = g.last - 1;
          continue;
        }
      }
      PreparedHead& H = P.heads[h];
      const int hi = static_cast<int>(h);
      float* S = s.state_data() + H.state_offset;  // column c: S[c * value_dim .. +value_dim)
      const std::uint32_t V = H.value_dim;
      // beta = act(w_beta . x + b_beta); with beta = 0 the update is the identity, so k and v
      // are only evaluated when beta != 0 (or the audit wants them)
      float beta;
      if (!sh.audit && H.same_beta != h) {
        beta = head_call[H.same_beta] == call ? head_beta[H.same_beta] : 0.0f;
      } else if (idle(s, H.beta)) {
        beta = 0.0f;  // no seed: act(bias) is 0
      } else {
        eval(a1, H.beta, xc);
        if (sh.audit) audit_map(s, a1, H.beta, l, kMemBeta, hi, false);
        beta = act(H.beta.m->act, a1.value(0));
      }
      head_beta[h] = beta;
      head_call[h] = call;
      if (sh.coverage && beta != 0.0f) ++sh.cov.layers[static_cast<std::size_t>(l)].head_writes[h];
      // k = act(W_k x + b_k): its non-zero entries
      const std::vector<std::pair<std::uint32_t, float>>* kp = &no_entries;
      if (beta != 0.0f || sh.audit) {
        const std::uint32_t c = sh.audit ? static_cast<std::uint32_t>(h) : H.same_k;
        auto& knz_c = head_k[c];
        if (!k_done[c]) {
          eval_nonzero(s, H.k, l, kMemK, hi, knz_c);
          k_done[c] = 1;
        }
        kp = &knz_c;
      }
      const auto& knz = *kp;
      const bool write = beta != 0.0f && !knz.empty();
      const float* vv = nullptr;
      if (write || sh.audit) {
        // v = W_v x + b_v
        const std::uint32_t c = sh.audit ? static_cast<std::uint32_t>(h) : H.same_v;
        float* vc = head_v[c].data();
        if (!v_done[c]) {
          eval(a2, H.v, xc);
          if (sh.audit) audit_map(s, a2, H.v, l, kMemV, hi, false);
          for (std::uint32_t i = 0; i < V; ++i) vc[i] = a2.value(i);
          v_done[c] = 1;
        }
        vv = vc;
      }
      if (write && !sh.audit && H.same_state != h) {
        // the head with the same state was written this step with the same beta, k and v: its
        // columns j are this head's new columns
        const float* Se = s.state_data() + P.heads[H.same_state].state_offset;
        for (const auto& [j, kj] : knz) {
          const std::size_t c = static_cast<std::size_t>(j) * V;
          s.mark(H.state_offset + c, V);
          std::copy(Se + c, Se + c + V, S + c);
        }
      } else if (write) {
        // u = beta (v - S k); S[:, j] += u k_j for every non-zero k_j
        float* Sk = tmp.data();
        std::fill(Sk, Sk + V, 0.0f);
        for (const auto& [j, kj] : knz) {
          const float* col = S + static_cast<std::size_t>(j) * V;
          for (std::uint32_t i = 0; i < V; ++i) Sk[i] += col[i] * kj;
        }
        if (sh.audit) {
          std::fill(tmp_abs.begin(), tmp_abs.begin() + V, 0.0f);
          for (const auto& [j, kj] : knz) {
            const float* col = S + static_cast<std::size_t>(j) * V;
            for (std::uint32_t i = 0; i < V; ++i) tmp_abs[i] += std::fabs(col[i] * kj);
          }
          for (std::uint32_t i = 0; i < V; ++i) check_abs(s, tmp_abs[i], l, kMemState, hi, i, false);
        }
        for (std::uint32_t i = 0; i < V; ++i) Sk[i] = beta * (vv[i] - Sk[i]);
        for (const auto& [j, kj] : knz) {
          float* col = S + static_cast<std::size_t>(j) * V;
          s.mark(H.state_offset + static_cast<std::size_t>(j) * V, V);
          for (std::uint32_t i = 0; i < V; ++i) col[i] += Sk[i] * kj;
          if (sh.audit)
            for (std::uint32_t i = 0; i < V; ++i) check(s, col[i], l, kMemState, hi, j * V + i, false);
        }
      }
      // q = act(W_q x + b_q); o = S q (q is computed after this head's update, but from x)
      const std::uint32_t cq = sh.audit ? static_cast<std::uint32_t>(h) : H.same_q;
      auto& qnz_c = head_q[cq];
      if (cq == h) eval_nonzero(s, H.q, l, kMemQ, hi, qnz_c);
      else if (head_call[cq] != call) qnz_c.clear();  // skipped with its group: a zero query
      float* o = s.o.data() + H.o_offset;
      // a zero query reads zero: such a head (most heads on most steps) adds only its output bias
      const bool reads = !qnz_c.empty() || sh.audit;
      if (reads || !H.o.seeds.empty()) readers.push_back(static_cast<std::uint32_t>(h));
      head_src[h] = reads ? o : nullptr;
      head_scale[h] = 1.0f;
      if (reads && qnz_c.size() == 1 && !sh.audit) {
        // o = S[:, r] q_r: W_o reads the column in place, times q_r (its non-zero entries are
        // those of the column; each product equals o's entry 0 + S[i, r] q_r exactly)
        head_src[h] = S + static_cast<std::size_t>(qnz_c[0].first) * V;
        head_scale[h] = qnz_c[0].second;
      } else if (reads) {
        std::fill(o, o + V, 0.0f);
        for (const auto& [r, qj] : qnz_c) {
          const float* col = S + static_cast<std::size_t>(r) * V;
          for (std::uint32_t i = 0; i < V; ++i) o[i] += col[i] * qj;
        }
      }
      if (sh.audit)
        for (std::uint32_t i = 0; i < V; ++i) check(s, o[i], l, kMemO, hi, i, false);
    }
    // x += sum_h W_o,h o_h (after every head has read the block's input x)
    if (sh.audit) {
      for (const PreparedHead& H : P.heads) {
        const float* o = s.o.data() + H.o_offset;
        for (std::uint32_t i = 0; i < H.value_dim; ++i)
          if (o[i] != 0.0f) rabs_scatter(s, H.o, i, o[i]);
        rabs_bias(s, H.o);
      }
      rabs_check(s, l, kMemResid);
    }
    for (const std::uint32_t h : readers) {
      PreparedHead& H = P.heads[h];
      const SparseMatrix& W = H.o.m->w;
      const std::uint32_t V = H.value_dim;
      if (head_src[h]) {
        const float* src = head_src[h];
        const float scale = head_scale[h];
        for (std::uint32_t i0 = 0; i0 < V; i0 += 64)  // most read-outs are sparse one-hots
          for (std::uint64_t nzm = nonzero_mask(src + i0, std::min<std::uint32_t>(64, V - i0)); nzm != 0; nzm &= nzm - 1) {
            const std::uint32_t i = i0 + static_cast<std::uint32_t>(std::countr_zero(nzm));
            const float oi = src[i] * scale;
            for (std::uint32_t p = W.col_ptr[i]; p < W.col_ptr[i + 1]; ++p) s.add(W.row_idx[p], W.values[p] * oi);
          }
      }
      for (std::uint32_t r : H.o.seeds) s.add(r, H.o.m->bias[r]);
    }
    if (sh.audit) audit_residual(s, l, kMemResid);
    if (sh.record_probes) record(s, P.probes_after_mem);
  }

  // Plain: x += W2 ReLU(W1 x + b1) + b2.  Gated: x += W2 (u (.) ReLU(g)) + b2.
  void mlp(Stream& s, int l) {
    PreparedLayer& P = sh.layers[static_cast<std::size_t>(l)];
    if (sh.coverage) ++sh.cov.layers[static_cast<std::size_t>(l)].evaluations;
    if (P.kind == MlpKind::None) {  // no MLP; its probe point still sees the residual
      if (sh.record_probes) record(s, P.probes_after_mlp);
      return;
    }
    const Candidates xc = s.candidates();
    // hidden activations h (non-zero ones) into a3.rows/tmp pairs
    knz.clear();
    if (P.kind == MlpKind::Relu && P.w1_shared && !sh.audit) {
      // rows that share weights share one dot product (SharedRows); the audit, which checks
      // every touched row's value, takes the plain path below
      if (P.w1_dense) eval_grouped(a0, P.w1_shared->pm, *P.w1_dense, xc);
      else eval(a0, P.w1_shared->pm, xc);
      P.w1_shared->expand(a0, knz);
      if (sh.coverage)  // the touched rows with a positive value: exactly knz's
        for (const auto& [r, h] : knz) ++sh.cov.layers[static_cast<std::size_t>(l)].active[r];
    } else if (P.kind == MlpKind::Relu) {
      if (P.w1_dense && !sh.audit) eval_grouped(a0, P.w1, *P.w1_dense, xc);  // the audit checks every pre-activation
      else eval(a0, P.w1, xc);
      if (sh.audit) audit_map(s, a0, P.w1, l, kMlpPre, -1, false);
      if (sh.coverage) count_decisions(l, a0);
      for (std::uint32_t r : a0.rows())
        if (a0.vals(r) > 0.0f) knz.emplace_back(r, a0.vals(r));
    } else {
      eval(a0, P.wg, xc);
      if (sh.audit) audit_map(s, a0, P.wg, l, kMlpPre, -1, false);
      if (sh.coverage) count_decisions(l, a0);
      eval(a1, P.wu, xc);
      if (sh.audit) audit_map(s, a1, P.wu, l, kMlpU, -1, false);
      for (std::uint32_t r : a0.rows()) {
        const float g = a0.vals(r);
        if (g <= 0.0f) continue;
        const float h = a1.value(r) * g;
        if (h != 0.0f) knz.emplace_back(r, h);
      }
    }
    if (sh.audit)
      for (const auto& [r, h] : knz) check(s, h, l, kMlpHidden, -1, r, false);
    if (sh.audit) {
      for (const auto& [j, h] : knz) rabs_scatter(s, P.w2, j, h);
      rabs_bias(s, P.w2);
      rabs_check(s, l, kMlpResid);
    }
    const SparseMatrix& W = P.w2.m->w;
    for (const auto& [j, h] : knz)
      for (std::uint32_t p = W.col_ptr[j]; p < W.col_ptr[j + 1]; ++p) s.add(W.row_idx[p], W.values[p] * h);
    for (std::uint32_t r : P.w2.seeds) s.add(r, P.w2.m->bias[r]);
    if (sh.audit) audit_residual(s, l, kMlpResid);
    if (sh.record_probes) record(s, P.probes_after_mlp);
  }

  // logits = W_U x + b_U ; argmax, lowest id wins a tie.
  Token unembed_argmax(Stream& s) {
    eval(a0, sh.unembed, s.candidates());
    if (sh.audit) {
      audit_map(s, a0, sh.unembed, -1, kLogits, -1, false);  // every touched logit
      for (Token t : sh.bad_bias_tokens)                      // untouched logits are their biases
        if (!a0.touched(t)) check(s, a0.value(t), -1, kLogits, -1, t, false);
    }
    bool have = false;
    float best = 0.0f;
    Token best_t = 0;
    for (std::uint32_t r : a0.rows()) {
      const float v = a0.vals(r);
      if (!have || v > best || (v == best && r < best_t)) {
        have = true;
        best = v;
        best_t = r;
      }
    }
    for (Token t : sh.bias_order) {  // best untouched token: its logit is its bias
      if (a0.touched(t)) continue;
      const float v = sh.chip->unembed.bias[t];
      if (!have || v > best || (v == best && t < best_t)) {
        best = v;
        best_t = t;
      }
      break;
    }
    return best_t;
  }
};

#if defined(__SSE2__)
inline void cpu_relax() { _mm_pause(); }
#else
inline void cpu_relax() {}
#endif

// A counter one thread bumps after each change the other may wait for; the other spins a
// little, then sleeps on it (std::atomic::wait, a futex), so a waiting thread gives its core
// back on a busy machine.
struct Signal {
  std::atomic<std::uint32_t> seq{0};
  void bump() {
    seq.fetch_add(1, std::memory_order_release);
    seq.notify_one();
  }
};

// Returns once ready(); the changes that make it true are followed by a bump() of `sig`. Spins
// for up to 200 us first (a vector step's half takes up to about 60 us; a futex sleep and wake
// costs 10 us or more in a VM, and waking late starves the other side), then sleeps.
template <class Ready>
void wait_until(Signal& sig, Ready&& ready) {
  using Clock = std::chrono::steady_clock;
  const auto spin_end = Clock::now() + std::chrono::microseconds(200);
  for (int i = 1;; ++i) {
    if (ready()) return;
    cpu_relax();
    if (i % 64 == 0 && Clock::now() >= spin_end) break;
  }
  for (;;) {
    const std::uint32_t seen = sig.seq.load(std::memory_order_acquire);
    if (ready()) return;
    sig.seq.wait(seen, std::memory_order_acquire);
  }
}

// One stream stepped by two threads through inputs known in advance. The calling thread (the
// front) embeds step j's input and runs sublayers [0, split) (sublayer 2 l: layer l's memory
// block, 2 l + 1: its MLP); the worker (the back) runs sublayers [split, 2 L) and the
// unembedding of step j while the front goes on with step j + 1. Every sublayer is run by one
// thread, in step order, and reads and writes only its own heads' state, so every value is the
// serial pass's (step_batch's): the layer math is the same Pass code, on the same state, in the
// same order per sublayer. The residual after sublayer split - 1 of each step goes from front
// to back through a ring of kRing slots (as written: values and candidate order). The back's
// marks of dirty state pages go to its own stream (`shadow`) and are merged afterwards.
//
// `split` balances the two halves: every 16th step both threads time each of their sublayers,
// and each call starts at the split that minimises the larger half of those (decaying) costs.
class Pipeline {
 public:
  explicit Pipeline(Shared& sh) : sh_(sh), back_(sh) {
    back_.size();
    const Chip& ch = *sh.chip;
    sh.init_residual(shadow_);
    shadow_.page_dirty.assign((ch.state_size() + kPageFloats - 1) / kPageFloats, 0);
    cost_.assign(2 * ch.layers.size() + 2, 0.0);  // [0]: embed, [i + 1]: sublayer i, [2 L + 1]: unembed
    worker_ = std::thread([this] { work(); });
  }
  ~Pipeline() {
    {
      std::lock_guard<std::mutex> lk(m_);
      quit_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Steps s through in[0 .. n): out[j] = the token after in[j], with `front` as the front's
  // pass. With stop_on_miss, the back stops after the first step j < n - 1 whose output is not
  // in[j + 1] (a free-running step fed in[j + 1] would have been fed out[j] instead), and the
  // front stops soon after. Returns the number of steps with their outputs in `out` (n, or
  // j + 1 after a miss); after a miss the front has run up to kRing steps further than the
  // back, so s's state is no machine's state (s.ran_ahead is set; also when either thread
  // threw, which is rethrown here). s.steps counts the completed steps.
  std::size_t run(Pass& front, Stream& s, std::span<const Token> in, std::span<Token> out, bool stop_on_miss) {
    split_ = choose_split();
    for (double& c : cost_) c *= 0.5;
    shadow_.alias = s.state_data();
    job_in_ = in;
    job_out_ = out;
    stop_on_miss_ = stop_on_miss;
    produced_.store(0, std::memory_order_relaxed);
    consumed_.store(0, std::memory_order_relaxed);
    completed_ = 0;
    miss_.store(false, std::memory_order_relaxed);
    front_end_.store(false, std::memory_order_relaxed);
    back_error_ = nullptr;
    {
      std::lock_guard<std::mutex> lk(m_);
      ++job_;
    }
    cv_.notify_all();
    std::exception_ptr front_error;
    try {
      for (std::size_t j = 0; j < in.size(); ++j) {
        wait_until(back_sig_, [&] {
          return j - consumed_.load(std::memory_order_acquire) < kRing || miss_.load(std::memory_order_acquire);
        });
        if (miss_.load(std::memory_order_acquire)) break;
        const bool timed = j % kSampleEvery == 0;
        auto t0 = Clock::now();
        front.embed_token(s, in[j]);
        if (timed) t0 = lap(0, t0);
        for (int i = 0; i < split_; ++i) {
          sublayer(front, s, i);
          if (timed) t0 = lap(static_cast<std::size_t>(i) + 1, t0);
        }
        auto& slot = ring_[j % kRing];
        slot.clear();
        for (std::uint32_t d : s.xnz) slot.emplace_back(d, s.x[d]);
        produced_.store(j + 1, std::memory_order_release);
        front_sig_.bump();
      }
    } catch (...) {
      front_error = std::current_exception();
    }
    front_end_.store(true, std::memory_order_release);
    front_sig_.bump();
    {
      std::unique_lock<std::mutex> lk(m_);
      cv_done_.wait(lk, [&] { return done_ == job_; });
    }
    // merge the back's dirty pages
    for (std::uint32_t p : shadow_.dirty_pages) {
      shadow_.page_dirty[p] = 0;
      s.mark(std::size_t{p} * kPageFloats, 1);
    }
    shadow_.dirty_pages.clear();
    shadow_.alias = nullptr;
    s.steps += completed_;
    if (miss_.load(std::memory_order_relaxed) || front_error || back_error_) s.ran_ahead = true;
    if (front_error) std::rethrow_exception(front_error);
    if (back_error_) std::rethrow_exception(back_error_);
    return completed_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  // The halves' costs swing with the instruction mix over tens of steps: with 8 slots, the first
  // 300,000 steps of stories_vx left the front waiting 2.3 s and the back 0.8 s of 9 s; with 64,
  // 1.3-1.6 s and 0.2-0.8 s.
  static constexpr std::size_t kRing = 64;
  static constexpr std::size_t kSampleEvery = 16;

  Clock::time_point lap(std::size_t i, Clock::time_point t0) {
    const auto t1 = Clock::now();
    cost_[i] += std::chrono::duration<double>(t1 - t0).count();
    return t1;
  }

  // Sublayer i of a step: layer i / 2's memory block (i even) or its MLP (i odd).
  static void sublayer(Pass& p, Stream& s, int i) {
    if (i % 2 == 0) p.memory_block(s, i / 2);
    else p.mlp(s, i / 2);
  }

  // The split in [0, 2 L] whose larger half (embedding + sublayers before it, or sublayers from
  // it + unembedding) costs least; L (the middle) before any timing.
  int choose_split() const {
    const int n = 2 * static_cast<int>(sh_.layers.size());
    double total = 0;
    for (double c : cost_) total += c;
    if (total == 0) return n / 2;
    int best = n / 2;
    double best_cost = total, front = cost_[0];
    for (int k = 0; k <= n; ++k) {
      if (k > 0) front += cost_[static_cast<std::size_t>(k)];
      const double worst = std::max(front, total - front);
      if (worst < best_cost) {
        best_cost = worst;
        best = k;
      }
    }
    return best;
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return quit_ || job_ != seen; });
        if (quit_) return;
        seen = job_;
      }
      try {
        back();
      } catch (...) {
        back_error_ = std::current_exception();
        miss_.store(true, std::memory_order_release);  // stops the front
        back_sig_.bump();
      }
      {
        std::lock_guard<std::mutex> lk(m_);
        done_ = seen;
      }
      cv_done_.notify_all();
    }
  }

  void back() {
    const int n = 2 * static_cast<int>(sh_.layers.size());
    Stream& b = shadow_;
    for (std::size_t j = 0; j < job_in_.size(); ++j) {
      wait_until(front_sig_, [&] {
        return produced_.load(std::memory_order_acquire) > j || front_end_.load(std::memory_order_acquire);
      });
      if (produced_.load(std::memory_order_acquire) <= j) return;  // the front stopped (an error)
      const bool timed = j % kSampleEvery == 0;
      b.clear_residual();
      for (const auto& [d, v] : ring_[j % kRing]) {
        b.add(d, 0.0f);
        b.x[d] = v;
      }
      consumed_.store(j + 1, std::memory_order_release);
      back_sig_.bump();
      auto t0 = Clock::now();  // the handover (copies on both sides) is left out of the costs
      for (int i = split_; i < n; ++i) {
        sublayer(back_, b, i);
        if (timed) t0 = lap(static_cast<std::size_t>(i) + 1, t0);
      }
      job_out_[j] = back_.unembed_argmax(b);
      if (timed) lap(static_cast<std::size_t>(n) + 1, t0);
      completed_ = j + 1;
      if (stop_on_miss_ && j + 1 < job_in_.size() && job_out_[j] != job_in_[j + 1]) {
        miss_.store(true, std::memory_order_release);
        back_sig_.bump();
        return;
      }
    }
  }

  Shared& sh_;
  Pass back_;
  Stream shadow_;
  std::vector<double> cost_;  // seconds, timed steps only; [0] embed, [i + 1] sublayer i, [2 L + 1] unembed
  int split_ = 0;
  std::array<std::vector<std::pair<std::uint32_t, float>>, kRing> ring_;
  // the job (written by the front before it is posted, read by the back)
  std::span<const Token> job_in_;
  std::span<Token> job_out_;
  bool stop_on_miss_ = false;
  std::size_t completed_ = 0;  // written by the back, read after it is done
  std::exception_ptr back_error_;
  std::atomic<std::size_t> produced_{0}, consumed_{0};
  std::atomic<bool> miss_{false}, front_end_{false};
  Signal front_sig_, back_sig_;  // bumped by the front (a slot filled, the end) and the back (a slot freed, a miss)
  std::mutex m_;
  std::condition_variable cv_, cv_done_;
  std::uint64_t job_ = 0, done_ = 0;
  bool quit_ = false;
  std::thread worker_;
};

}  // namespace

namespace {
// set_default_pipelining's value: -1 unset, 0 off, 1 on.
std::atomic<int> g_default_pipelining{-1};

// The CPUs this process may run on (sched_getaffinity), at least 1; hardware_concurrency() counts
// the machine's, so a pipeline was started under `taskset -c 0` (found by an outside tester: about
// 25% slower there than serial steps).
unsigned usable_cpus() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

bool CpuExecutor::default_pipelining() {
  const int d = g_default_pipelining.load();
  return d >= 0 ? d == 1 : usable_cpus() >= 2;
}

unsigned CpuExecutor::usable_cpus() { return ::lockstep::chip::usable_cpus(); }

void CpuExecutor::set_default_pipelining(std::optional<bool> on) { g_default_pipelining.store(on ? (*on ? 1 : 0) : -1); }

struct CpuExecutor::Impl : Shared {
  std::vector<Stream> streams;
  Pass pass{*this};
  // Two-thread steps of one stream through known inputs (Pipeline); on by default where the
  // process may use two or more CPUs (default_pipelining), started on first use.
  bool pipelining = default_pipelining();
  std::unique_ptr<Pipeline> pipeline;
  // Fewer steps than this in one call are stepped serially (a pipeline's fill and drain cost
  // about one step).
  static constexpr std::uint32_t kMinPipelineSteps = 8;

  void load(std::shared_ptr<const Chip> c) {
    pipeline.reset();
    prepare(std::move(c));
    pass.size();
  }

  // Whether `count` steps of one stream may go through the pipeline: the audit, probes and
  // decision coverage are per-step records of the serial pass.
  bool may_pipeline(std::size_t n_streams, std::uint32_t count) const {
    return pipelining && n_streams == 1 && count >= kMinPipelineSteps && !audit && !record_probes && !coverage;
  }
  Pipeline& pipe() {
    if (!pipeline) pipeline = std::make_unique<Pipeline>(*this);
    return *pipeline;
  }
  // The stream `id`, checked to be usable for stepping.
  const Stream& usable(StreamId id) const {
    const Stream& s = stream(id);
    if (s.ran_ahead)
      throw UsageError("stream " + std::to_string(id) +
                       ": a free-running call stopped at a mispredicted step with its state run ahead; reset or restore it");
    return s;
  }
  Stream& stepping(StreamId id) {
    usable(id);
    return stream(id);
  }
  void check_token(Token t) const {
    if (t >= chip->config.vocab_size)
      throw UsageError("step_batch: token " + std::to_string(t) + " outside vocabulary of " +
                       std::to_string(chip->config.vocab_size));
  }

  Stream& stream(StreamId id) {
    if (id >= streams.size()) throw UsageError("stream " + std::to_string(id) + " out of range");
    return streams[id];
  }
  const Stream& stream(StreamId id) const {
    if (id >= streams.size()) throw UsageError("stream " + std::to_string(id) + " out of range");
    return streams[id];
  }
};

CpuExecutor::CpuExecutor() : impl_(std::make_unique<Impl>()) {}
CpuExecutor::CpuExecutor(std::shared_ptr<const Chip> chip, std::size_t num_streams) : CpuExecutor() {
  load(std::move(chip));
  set_num_streams(num_streams);
}
CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::load(std::shared_ptr<const Chip> chip) {
  if (!chip) throw UsageError("CpuExecutor::load: null chip");
  chip->validate();
  impl_->streams.clear();
  impl_->load(std::move(chip));
}

const Chip& CpuExecutor::chip() const {
  if (!impl_->chip) throw UsageError("CpuExecutor: no chip loaded");
  return *impl_->chip;
}

void CpuExecutor::set_num_streams(std::size_t n) {
  if (!impl_->chip) throw UsageError("CpuExecutor: no chip loaded");
  const std::size_t old = impl_->streams.size();
  impl_->streams.resize(n);
  for (std::size_t i = old; i < n; ++i) impl_->init_stream(impl_->streams[i]);
}

std::size_t CpuExecutor::num_streams() const { return impl_->streams.size(); }

void CpuExecutor::reset(StreamId id, const GuestImage& image) {
  Stream& s = impl_->stream(id);
  impl_->init_stream(s);
  apply_initialisers_marked(*impl_->chip, image, s.state,
                            [&s](std::size_t first, std::size_t count) { s.mark(first, count); });
}

void CpuExecutor::step_batch(std::span<const StreamId> ids, std::span<const Token> inputs, std::span<Token> out) {
  if (ids.size() != inputs.size() || ids.size() != out.size())
    throw UsageError("step_batch: streams, inputs and outputs differ in length");
  Impl& I = *impl_;
  const Chip& ch = chip();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    I.stepping(ids[i]);
    I.check_token(inputs[i]);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) I.pass.embed_token(I.streams[ids[i]], inputs[i]);
  for (int l = 0; l < static_cast<int>(ch.layers.size()); ++l) {
    for (std::size_t i = 0; i < ids.size(); ++i) I.pass.memory_block(I.streams[ids[i]], l);
    for (std::size_t i = 0; i < ids.size(); ++i) I.pass.mlp(I.streams[ids[i]], l);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Stream& s = I.streams[ids[i]];
    out[i] = I.pass.unembed_argmax(s);
    s.probes_valid = I.record_probes;
    ++s.steps;
  }
}

void CpuExecutor::teacher_forced_batch(std::span<const StreamId> ids, std::span<const std::uint32_t> counts,
                                       std::span<const Token> inputs, std::span<Token> out) {
  Impl& I = *impl_;
  chip();
  if (ids.size() != 1 || counts.size() != 1 || !I.may_pipeline(1, counts[0]) || inputs.size() != counts[0] ||
      out.size() != counts[0]) {
    ChipBackend::teacher_forced_batch(ids, counts, inputs, out);
    return;
  }
  Stream& s = I.stepping(ids[0]);
  for (Token t : inputs) I.check_token(t);
  I.pipe().run(I.pass, s, inputs, out, false);
  s.probes_valid = false;
}

void CpuExecutor::free_running_batch_expecting(std::span<const StreamId> ids, std::span<const std::uint32_t> counts,
                                               std::span<const Token> first, std::span<const Token> expected,
                                               std::span<Token> out) {
  Impl& I = *impl_;
  const Chip& ch = chip();
  const bool in_vocab = std::all_of(expected.begin(), expected.end(), [&](Token t) { return t < ch.config.vocab_size; });
  if (ids.size() != 1 || counts.size() != 1 || first.size() != 1 || !I.may_pipeline(1, counts[0]) ||
      expected.size() != counts[0] || out.size() != counts[0] || !in_vocab) {
    ChipBackend::free_running_batch_expecting(ids, counts, first, expected, out);
    return;
  }
  Stream& s = I.stepping(ids[0]);
  I.check_token(first[0]);
  // Step j is fed out[j - 1], which equals expected[j - 1] up to the first miss: teacher-forced
  // steps fed the expected tokens are the free-running steps up to and including it.
  std::vector<Token> in(counts[0]);
  in[0] = first[0];
  std::copy(expected.begin(), expected.end() - 1, in.begin() + 1);
  I.pipe().run(I.pass, s, in, out, true);
  s.probes_valid = false;
}

std::uint32_t CpuExecutor::preferred_chunk() const { return impl_->pipelining ? 1024 : 1; }

void CpuExecutor::set_pipelining(bool on) {
  impl_->pipelining = on;
  if (!on) impl_->pipeline.reset();
}

bool CpuExecutor::pipelining() const { return impl_->pipelining; }

void CpuExecutor::set_dense_column_threshold(std::uint32_t nnz) { impl_->dense_threshold = nnz; }

std::uint64_t CpuExecutor::hash(StreamId id) const {
  const Stream& s = impl_->usable(id);
  return XXH3_64bits(s.state.data(), s.state.size() * sizeof(float));
}

std::vector<std::uint8_t> CpuExecutor::save(StreamId id) const {
  const Stream& s = impl_->usable(id);
  return encode_checkpoint(impl_->fingerprint, s.steps, s.state);
}

void CpuExecutor::restore(StreamId id, const std::vector<std::uint8_t>& bytes) {
  Stream& s = impl_->stream(id);
  DecodedCheckpoint d = decode_checkpoint(bytes, impl_->fingerprint, s.state.size());
  impl_->init_stream(s);
  s.state = std::move(d.state);
  s.all_dirty = true;
  s.steps = d.steps;
}

std::uint64_t CpuExecutor::steps(StreamId id) const { return impl_->stream(id).steps; }

void CpuExecutor::set_probe_recording(bool on) { impl_->record_probes = on; }

std::vector<float> CpuExecutor::probe(StreamId id, int layer, Sublayer after, const std::string& field) const {
  const Stream& s = impl_->stream(id);
  if (!s.probes_valid) throw UsageError("probe: recording was off during the last step (or no step yet)");
  const auto [i, f] = find_probe(chip(), layer, after, field);
  return s.probe_vals[i][f];
}

void CpuExecutor::set_audit(bool on) { impl_->audit = on; }

std::optional<AuditViolation> CpuExecutor::audit_violation(StreamId id) const { return impl_->stream(id).violation; }

void CpuExecutor::set_decision_coverage(bool on) { impl_->coverage = on; }

DecisionCoverage CpuExecutor::decision_coverage() const {
  if (!impl_->chip) throw UsageError("CpuExecutor: no chip loaded");
  return impl_->cov;
}

void CpuExecutor::clear_decision_coverage() {
  if (impl_->chip) impl_->clear_coverage();
}

std::span<const float> CpuExecutor::state(StreamId id) const { return impl_->stream(id).state; }

// ---- initialisers ----

namespace {

// The rows and columns of its head's state that an initialiser writes: [r0, r1) x [c0, c1).
struct CellRect {
  std::uint64_t r0, r1, c0, c1;
};
CellRect cells(const Initialiser& in) {
  if (in.is_const) return {in.row, in.row + in.values.size(), in.column, std::uint64_t{in.column} + in.columns};
  const std::uint64_t bpc = std::max<std::uint64_t>(in.bytes_per_column, 1);
  return {in.row, in.row + bpc * encoding_rows(in.encoding), in.column, in.column + (in.length + bpc - 1) / bpc};
}

// Whether an initialiser before initialisers[k] writes a cell that initialisers[k] writes.
bool overlaps_earlier(const Chip& chip, std::size_t k) {
  const Initialiser& in = chip.config.initialisers[k];
  const CellRect a = cells(in);
  for (std::size_t e = 0; e < k; ++e) {
    const Initialiser& o = chip.config.initialisers[e];
    if (o.layer != in.layer || o.head != in.head) continue;
    const CellRect b = cells(o);
    if (a.r0 < b.r1 && b.r0 < a.r1 && a.c0 < b.c1 && b.c0 < a.c1) return true;
  }
  return false;
}

// apply_initialisers, calling mark(first, count) for every range of state floats it writes.
template <class Mark>
void apply_initialisers_marked(const Chip& chip, const GuestImage& image, std::span<float> state, Mark&& mark) {
  if (state.size() != chip.state_size()) throw UsageError("apply_initialisers: state buffer has the wrong size");
  std::vector<std::vector<std::size_t>> offsets(chip.layers.size());
  std::size_t off = 0;
  for (std::size_t l = 0; l < chip.layers.size(); ++l)
    for (const Head& h : chip.layers[l].heads) {
      offsets[l].push_back(off);
      off += static_cast<std::size_t>(h.key_dim) * h.value_dim;
    }
  for (std::size_t k = 0; k < chip.config.initialisers.size(); ++k) {
    const Initialiser& in = chip.config.initialisers[k];
    const Head& h = chip.layers[in.layer].heads[in.head];
    const std::size_t base = offsets[in.layer][in.head];
    float* S = state.data() + base;
    auto at = [&](std::uint64_t row, std::uint64_t col) -> float& { return S[col * h.value_dim + row]; };
    if (in.is_const) {
      for (std::uint32_t c = 0; c < in.columns; ++c) {
        if (!in.values.empty()) mark(base + (in.column + c) * h.value_dim + in.row, in.values.size());
        for (std::size_t r = 0; r < in.values.size(); ++r) at(in.row + r, in.column + c) = in.values[r];
      }
      continue;
    }
    const std::uint32_t er = encoding_rows(in.encoding);
    // Byte i of the initialiser's source, encoded into its rows and column.
    auto put = [&](std::uint64_t i, std::uint8_t b) {
      const std::uint64_t col = in.column + i / in.bytes_per_column;
      const std::uint64_t row = in.row + (i % in.bytes_per_column) * er;
      mark(base + col * h.value_dim + row, er);
      switch (in.encoding) {
        case ByteEncoding::Scalar:
          at(row, col) = static_cast<float>(b);
          break;
        case ByteEncoding::Bits:
          for (int j = 0; j < 8; ++j) at(row + j, col) = static_cast<float>((b >> j) & 1);
          break;
        case ByteEncoding::OneHot:
          for (int j = 0; j < 256; ++j) at(row + j, col) = j == b ? 1.0f : 0.0f;
          break;
        case ByteEncoding::Nibbles:
          for (int j = 0; j < 16; ++j) {
            at(row + j, col) = j == (b & 15) ? 1.0f : 0.0f;
            at(row + 16 + j, col) = j == (b >> 4) ? 1.0f : 0.0f;
          }
          break;
      }
    };
    const std::uint64_t stride = in.stride;
    const bool zero_is_nothing = in.encoding == ByteEncoding::Scalar || in.encoding == ByteEncoding::Bits;
    if (in.source == ByteSourceKind::Image && zero_is_nothing && !overlaps_earlier(chip, k)) {
      // The state starts zeroed, a 0 byte encodes as zeros and no earlier initialiser wrote
      // these cells: only bytes that segments cover are written, segment by segment (a later
      // segment overwrites an earlier one, as GuestImage::read resolves overlaps), so a 1 MiB
      // RAM costs what the image holds.
      if (in.length == 0) continue;
      const std::uint64_t first = in.address, end = in.address + (in.length - 1) * stride + 1;
      for (const Segment& seg : image.segments) {
        const std::uint64_t lo = std::max<std::uint64_t>(seg.address, first);
        const std::uint64_t hi = std::min<std::uint64_t>(seg.address + seg.bytes.size(), end);
        if (lo >= hi) continue;
        for (std::uint64_t i = (lo - first + stride - 1) / stride; first + i * stride < hi; ++i)
          put(i, seg.bytes[first + i * stride - seg.address]);
      }
      continue;
    }
    std::vector<std::uint8_t> bytes;
    if (in.source == ByteSourceKind::Image) {
      if (stride == 1) {
        bytes = image.read(in.address, in.length);
      } else {
        const std::vector<std::uint8_t> span = image.read(in.address, in.length == 0 ? 0 : (in.length - 1) * stride + 1);
        bytes.resize(in.length);
        for (std::uint64_t i = 0; i < in.length; ++i) bytes[i] = span[i * stride];
      }
    } else if (in.source == ByteSourceKind::Section) {
      auto it = image.sections.find(in.section);
      bytes.assign(in.length, 0);
      if (it == image.sections.end()) {
        if (!in.optional)
          throw ImageError("initialiser '" + in.name + "': guest image has no section '" + in.section + "'");
      } else {
        for (std::uint64_t i = 0; i < in.length; ++i)
          if (in.offset + i * stride < it->second.size()) bytes[i] = it->second[in.offset + i * stride];
      }
    } else {
      bytes.resize(in.length);
      for (std::uint64_t i = 0; i < in.length; ++i) bytes[i] = static_cast<std::uint8_t>(image.entry >> (8 * i));
    }
    for (std::uint64_t i = 0; i < bytes.size(); ++i) put(i, bytes[i]);
  }
}

}  // namespace

void apply_initialisers(const Chip& chip, const GuestImage& image, std::span<float> state) {
  apply_initialisers_marked(chip, image, state, [](std::size_t, std::size_t) {});
}

}  // namespace lockstep::chip
