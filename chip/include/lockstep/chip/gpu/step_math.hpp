// The CUDA executor's step, written once for host and device (docs/cuda.md).
//
// Every function here is `__host__ __device__` under nvcc and plain C++ otherwise, and is
// templated on a *group* G: the threads that cooperate on one stream's step. On the device G is
// one thread block (rank = threadIdx.x, sync = __syncthreads, atomics); on the host
// (HostGroup below) it is one thread, so the host unit test runs exactly this code against the
// CPU executor (tests/chip_cuda/cuda_math_host_test.cpp). It implements the layer math of
// docs/spec/chip-format.md section 1.2 on the prepared chip of chip_image.hpp:
//
//   * a "phase matrix" stacks every map that reads the same residual x (the beta and q maps of
//     a layer's heads; w1, or wg and wu, of its MLP; the unembedding) so one sparse scatter
//     over the residual's touched dimensions evaluates them all;
//   * a layer's k and v maps are stacked too, but evaluated (a "gated" scatter) only for the
//     heads whose beta is non-zero, as the CPU executor does: with beta = 0 the update is the
//     identity and k, v are never read;
//   * a layer's equal maps (map aliases: the RAM lane heads' keys and queries, shared register
//     keys, ...) are stacked once; the heads using one share its rows, so it is evaluated once
//     a step, and the selection pairs each of its non-zero rows with those heads;
//   * only the heads that write (beta != 0) or read (a non-zero query) are scanned after the
//     scatters: their value rows, their entries of o and W_o's columns;
//   * accumulators are dense arrays that are zero between uses, with a bitmap and a list of
//     the rows touched; a row's bias is added when the row is first touched (or always, for
//     rows whose bias alone can make them non-zero: the CPU executor's "seeds");
//   * sums are taken in whatever order the threads' atomics land. That is exact, hence equal
//     to the CPU executor's order, because chip-format.md section 1.3 (and the audit of
//     section 4) guarantee that every product and every partial sum, in any order, is an
//     integer (or declared dyadic fraction) below 2^24 in magnitude: exactly representable.
//     Everything else (activations, the delta-rule update u = beta (v - S k), S += u k^T, the
//     argmax tie rule) is computed with the same operations, in the same association, as
//     chip/src/cpu_executor.cpp, so zero signs and non-integer inputs agree as well.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define LOCKSTEP_HD __host__ __device__
#define LOCKSTEP_HD_INLINE __host__ __device__ __forceinline__
#else
#define LOCKSTEP_HD
#define LOCKSTEP_HD_INLINE inline
#endif

namespace lockstep::chip::gpu {

/// A sparse matrix in CSC form (chip-format.md section 3.2): column j's entries are
/// row_idx/values[col_ptr[j] .. col_ptr[j + 1]), rows strictly increasing.
struct Csc {
  const std::uint32_t* col_ptr = nullptr;  ///< (cols + 1)
  const std::uint32_t* row_idx = nullptr;  ///< (nnz), each < rows
  const float* values = nullptr;           ///< (nnz)
  std::uint32_t rows = 0, cols = 0;
};

/// Maps reading the same input, stacked: rows concatenated, columns = d_model.
/// bias: dense (rows), added to a row when it is first touched. seeds: rows touched on every
/// evaluation (their bias alone can make them non-zero after the activation).
struct PhaseMap {
  Csc w;
  const float* bias = nullptr;           ///< (w.rows)
  const std::uint32_t* seeds = nullptr;  ///< (n_seeds), each < w.rows
  std::uint32_t n_seeds = 0;
};

/// Maps of which a step evaluates only some *units* (a layer's distinct k and v maps, one unit
/// each, of the heads that write): CSC over d_model columns, stacked by rows; unit u owns the rows
/// [unit_base[u], unit_base[u + 1]) and, since each column's rows increase, one contiguous run of
/// every column's entries. bias: dense (w.rows), added on a row's first touch; seeds[seed_ptr[u]
/// .. seed_ptr[u + 1]): unit u's rows touched whenever u is evaluated (as PhaseMap::seeds).
struct GatedMap {
  Csc w;
  const float* bias = nullptr;               ///< (w.rows)
  const std::uint32_t* unit_base = nullptr;  ///< (n_units + 1), non-decreasing
  const std::uint32_t* seeds = nullptr;      ///< (seed_ptr[n_units]), grouped by unit
  const std::uint32_t* seed_ptr = nullptr;   ///< (n_units + 1)
  std::uint32_t n_units = 0;
};

/// A residual update x += W in + sum of biases: W is d_model x (inputs); the bias entries
/// (row, value) are every non-zero bias of the maps stacked into W (one entry per map and row).
struct ResidualMap {
  Csc w;
  const std::uint32_t* seed_rows = nullptr;
  const float* seed_vals = nullptr;
  std::uint32_t n_seeds = 0;
};

/// One memory head. Its maps are rows of its layer's accumulator: beta (1 row) and q (key_dim
/// rows) of the layer's phase matrix (LayerView::mem), k (key_dim) and v (value_dim) of its gated
/// map (LayerView::kv, units k_unit and v_unit). Heads whose maps are equal (map aliases,
/// chip-format.md section 3.2, or equal content) share those rows: the map is evaluated once.
struct HeadView {
  std::uint32_t beta_row = 0, k_row = 0, q_row = 0, v_row = 0;  ///< first row of each map
  std::uint32_t k_unit = 0, v_unit = 0;  ///< units of k and v in LayerView::kv
  std::uint32_t key_dim = 0, value_dim = 0;
  std::uint32_t o_off = 0;         ///< offset of o_h in the layer's concatenated o (and Sk)
  std::uint64_t state_offset = 0;  ///< first float of S_h in the stream's state
  std::uint8_t relu_k = 0, relu_q = 0, relu_beta = 0;
};

enum : std::uint8_t { kSlotBeta = 0, kSlotK = 1, kSlotQ = 2, kSlotV = 3 };

/// Copy residual x[src .. src + width) to the stream's probe buffer at dst.
struct ProbeCopy {
  std::uint32_t src = 0, width = 0, dst = 0;
};

enum : std::uint8_t { kMlpNone = 0, kMlpRelu = 1, kMlpGated = 2 };

struct LayerView {
  std::uint32_t n_heads = 0;
  const HeadView* heads = nullptr;        ///< (n_heads)
  std::uint32_t o_total = 0;              ///< sum of value_dim
  /// The layer's distinct maps ("slots"), each stored once: slot i owns the accumulator rows
  /// [slot_base[i], slot_base[i + 1]) (the beta and q slots first, then the k and v slots, which
  /// are kv's units in order), is of kind slot_kind[i] (kSlotBeta ...), and is used by the heads
  /// slot_users[slot_user_ptr[i] .. slot_user_ptr[i + 1]).
  std::uint32_t n_slots = 0;
  const std::uint32_t* slot_base = nullptr;      ///< (n_slots + 1); the last is mem.w.rows
  const std::uint8_t* slot_kind = nullptr;       ///< (n_slots)
  const std::uint32_t* slot_user_ptr = nullptr;  ///< (n_slots + 1)
  const std::uint32_t* slot_users = nullptr;     ///< (slot_user_ptr[n_slots])
  std::uint32_t pair_rows = 0;            ///< sum of 2 key_dim: bound on (head, k or q row) pairs
  PhaseMap mem;                           ///< the beta and q slots (all the layer's rows; k, v rows empty)
  GatedMap kv;                            ///< the k and v slots (same rows), one unit each
  ResidualMap wo;                         ///< every head's W_o side by side (d_model x o_total)
  std::uint8_t mlp_kind = kMlpNone;
  std::uint32_t hidden = 0;
  PhaseMap mlp_in;                        ///< plain: w1 (hidden rows); gated: wg then wu
  ResidualMap w2;                         ///< d_model x hidden
  const ProbeCopy* probe_mem = nullptr;
  std::uint32_t n_probe_mem = 0;
  const ProbeCopy* probe_mlp = nullptr;
  std::uint32_t n_probe_mlp = 0;
};

/// The whole prepared chip (chip_image.hpp builds it; pointers are host or device addresses).
struct ChipView {
  std::uint32_t d_model = 0, vocab = 0, n_layers = 0;
  const LayerView* layers = nullptr;
  Csc embed;
  PhaseMap unembed;
  const std::uint32_t* bias_order = nullptr;  ///< tokens by (unembed bias desc, id asc)
  const ProbeCopy* probe_embed = nullptr;
  std::uint32_t n_probe_embed = 0;
  std::uint32_t probe_floats = 0;  ///< size of a stream's probe buffer
  std::uint32_t acc_rows = 0;      ///< rows of the largest phase matrix (accumulator size)
  std::uint32_t o_rows = 0;        ///< largest o_total (at least 1)
  std::uint32_t max_heads = 0;     ///< largest n_heads (at least 1)
  std::uint32_t max_units = 0;     ///< largest kv.n_units (at least 1)
  std::uint32_t sel_rows = 0;      ///< max(acc_rows, largest pair_rows): StreamView::sel's size
  std::uint64_t state_size = 0;    ///< floats of one stream's state
};

/// One stream's buffers. Between steps x, acc, o, head_reads and both bitmaps are all zero.
struct StreamView {
  float* state = nullptr;          ///< (state_size), chip-format.md layout
  float* x = nullptr;              ///< (d_model) residual
  std::uint32_t* x_bits = nullptr; ///< (d_model / 32 + 1) touched dims of x
  std::uint32_t* x_list = nullptr; ///< (d_model)
  float* acc = nullptr;            ///< (acc_rows)
  std::uint32_t* acc_bits = nullptr;  ///< (acc_rows / 32 + 1)
  std::uint32_t* acc_list = nullptr;  ///< (acc_rows)
  std::uint32_t* sel = nullptr;    ///< (sel_rows): rows of (head, k row) pairs from the front, q from the back
  std::uint32_t* sel_h = nullptr;  ///< (sel_rows): the pairs' heads
  std::uint32_t* nz = nullptr;     ///< (acc_rows): non-zero k rows from the front, q rows from the back
  std::uint32_t* units = nullptr;       ///< (max_units): kv units of the heads that write
  std::uint32_t* unit_mark = nullptr;   ///< (max_units): per unit, heads listing it; 0 between uses
  float* o = nullptr;              ///< (o_rows), zero between steps
  float* sk = nullptr;             ///< (o_rows): S k, then u = beta (v - S k)
  float* beta = nullptr;           ///< (max_heads)
  std::uint32_t* heads = nullptr;  ///< (max_heads): this layer's heads with beta != 0 (any order)
  std::uint32_t* readers = nullptr;     ///< (max_heads): this layer's heads with a non-zero query
  std::uint32_t* head_reads = nullptr;  ///< (max_heads): per head, its non-zero query rows; 0 between uses
  std::uint32_t* o_cols = nullptr;      ///< (o_rows): the entries of o the readers own
  float* probes = nullptr;         ///< (probe_floats)
};

/// Per-step counters shared by the group (device: shared memory). Trivial (no initialisers, so
/// it can live in __shared__); value-initialise it (Counters{}) before each step.
struct Counters {
  std::uint32_t n_x, n_acc, n_k, n_q, n_h;
  std::uint32_t n_w;            ///< heads that write (StreamView::heads)
  std::uint32_t n_r, n_o;       ///< heads that read (StreamView::readers), their o entries (o_cols)
  std::uint32_t n_u;            ///< units to evaluate (StreamView::units)
  std::uint32_t n_kr, n_qr;     ///< non-zero k rows, q rows (StreamView::nz)
  std::uint32_t first;          ///< first untouched position in bias_order
  unsigned long long best;      ///< argmax key over touched logits
  std::uint32_t result;         ///< the step's output token
};

/// The group of one thread, for the host (tests and reference runs).
struct HostGroup {
  std::uint32_t off_[1] = {0}, aux_[1] = {0};
  std::uint32_t rank() const { return 0; }
  std::uint32_t size() const { return 1; }
  void sync() {}
  static void add(float* p, float v) { *p += v; }
  static std::uint32_t fetch_or(std::uint32_t* p, std::uint32_t v) {
    const std::uint32_t o = *p;
    *p = o | v;
    return o;
  }
  static std::uint32_t fetch_inc(std::uint32_t* p) { return (*p)++; }
  static void max_u64(unsigned long long* p, unsigned long long v) {
    if (v > *p) *p = v;
  }
  static void min_u32(std::uint32_t* p, std::uint32_t v) {
    if (v < *p) *p = v;
  }
  /// Exclusive prefix sum of v over the group's ranks; total = sum over all ranks.
  std::uint32_t exclusive_scan(std::uint32_t v, std::uint32_t& total) {
    total = v;
    return 0;
  }
  std::uint32_t* scan_off() { return off_; }  ///< (size()) shared scratch
  std::uint32_t* scan_aux() { return aux_; }  ///< (size()) shared scratch
};

LOCKSTEP_HD_INLINE float act(bool relu, float v) { return relu ? (v > 0.0f ? v : 0.0f) : v; }

/// Largest i in [0, n) with a[i] <= key (a non-decreasing, a[0] <= key).
LOCKSTEP_HD_INLINE std::uint32_t upper_index(const std::uint32_t* a, std::uint32_t n, std::uint32_t key) {
  std::uint32_t lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= key) lo = mid;
    else hi = mid;
  }
  return lo;
}

struct LenAux {
  std::uint32_t len = 0, aux = 0;
};

/// For every item i < n and every k < len(i).len: fn(i, len(i).aux, k), the pairs spread evenly
/// over the group (items of very different lengths cost the same per pair). Ends synchronised.
/// Every rank must call it with the same n.
template <class G, class Len, class Fn>
LOCKSTEP_HD void balanced_for(G& g, std::uint32_t n, Len len, Fn fn) {
  std::uint32_t* off = g.scan_off();
  std::uint32_t* aux = g.scan_aux();
  const std::uint32_t size = g.size(), rank = g.rank();
  for (std::uint32_t base = 0; base < n; base += size) {
    const std::uint32_t i = base + rank;
    LenAux la;
    if (i < n) la = len(i);
    std::uint32_t total = 0;
    const std::uint32_t o = g.exclusive_scan(la.len, total);  // synchronises
    off[rank] = o;
    aux[rank] = la.aux;
    g.sync();
    const std::uint32_t cnt = n - base < size ? n - base : size;
    for (std::uint32_t e = rank; e < total; e += size) {
      const std::uint32_t t = upper_index(off, cnt, e);
      fn(base + t, aux[t], e - off[t]);
    }
    g.sync();
  }
}

/// vals[r] += v; on the row's first touch also appends r to list and adds bias[r].
template <class G>
LOCKSTEP_HD_INLINE void touch_add(G& g, float* vals, std::uint32_t* bits, std::uint32_t* list,
                                  std::uint32_t* count, const float* bias, std::uint32_t r, float v) {
  const std::uint32_t m = 1u << (r & 31u);
  if (!(g.fetch_or(&bits[r >> 5], m) & m)) {
    list[g.fetch_inc(count)] = r;
    if (bias && bias[r] != 0.0f) g.add(&vals[r], bias[r]);
  }
  if (v != 0.0f) g.add(&vals[r], v);
}

/// acc <- M x over the touched dims of x (seeds and first-touched rows get their bias).
/// Requires acc clear and c.n_acc == 0. Ends synchronised.
template <class G>
LOCKSTEP_HD void eval_phase(G& g, const PhaseMap& M, const StreamView& s, Counters& c) {
  for (std::uint32_t i = g.rank(); i < M.n_seeds; i += g.size())
    touch_add(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc, M.bias, M.seeds[i], 0.0f);
  const std::uint32_t n_x = c.n_x;
  const std::uint32_t* cp = M.w.col_ptr;
  balanced_for(
      g, n_x,
      [&](std::uint32_t i) {
        const std::uint32_t j = s.x_list[i];
        LenAux la;
        if (s.x[j] != 0.0f) {
          la.len = cp[j + 1] - cp[j];
          la.aux = cp[j];
        }
        return la;
      },
      [&](std::uint32_t i, std::uint32_t begin, std::uint32_t k) {
        const std::uint32_t p = begin + k;
        touch_add(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc, M.bias, M.w.row_idx[p],
                  M.w.values[p] * s.x[s.x_list[i]]);
      });
  g.sync();  // n_x == 0 skips balanced_for's synchronisation
}

/// First i in [lo, hi) with a[i] >= key (a increasing), else hi.
LOCKSTEP_HD_INLINE std::uint32_t lower_index(const std::uint32_t* a, std::uint32_t lo, std::uint32_t hi,
                                             std::uint32_t key) {
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// acc += M x restricted to the rows of units[0 .. n_units), over the touched dims of x (the
/// units' seeds and first-touched rows get their bias): one balanced scatter over (unit, x dim)
/// pairs, each pair's entries found by two binary searches in the column. The rows are disjoint
/// from any other map evaluated into acc before the next clear. Ends synchronised.
template <class G>
LOCKSTEP_HD void eval_gated(G& g, const GatedMap& M, const std::uint32_t* units, std::uint32_t n_units,
                            const StreamView& s, Counters& c) {
  for (std::uint32_t a = 0; a < n_units; ++a) {
    const std::uint32_t u = units[a];
    for (std::uint32_t i = M.seed_ptr[u] + g.rank(); i < M.seed_ptr[u + 1]; i += g.size())
      touch_add(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc, M.bias, M.seeds[i], 0.0f);
  }
  const std::uint32_t n_x = c.n_x;
  const std::uint32_t* cp = M.w.col_ptr;
  balanced_for(
      g, n_units * n_x,
      [&](std::uint32_t i) {
        const std::uint32_t u = units[i / n_x], j = s.x_list[i % n_x];
        LenAux la;
        if (s.x[j] != 0.0f) {
          const std::uint32_t lo = lower_index(M.w.row_idx, cp[j], cp[j + 1], M.unit_base[u]);
          la.len = lower_index(M.w.row_idx, lo, cp[j + 1], M.unit_base[u + 1]) - lo;
          la.aux = lo;
        }
        return la;
      },
      [&](std::uint32_t i, std::uint32_t begin, std::uint32_t k) {
        const std::uint32_t p = begin + k;
        touch_add(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc, M.bias, M.w.row_idx[p],
                  M.w.values[p] * s.x[s.x_list[i % n_x]]);
      });
  g.sync();  // n_units * n_x == 0 skips balanced_for's synchronisation
}

/// x += W in + biases, for the inputs in[0 .. n_in) (zero inputs skipped). Ends synchronised.
template <class G>
LOCKSTEP_HD void residual_update(G& g, const ResidualMap& R, const float* in, std::uint32_t n_in,
                                 const std::uint32_t* in_list, const StreamView& s, Counters& c) {
  // in_list: when non-null, the inputs are in[in_list[i]] for i < n_in (a list of columns)
  const std::uint32_t* cp = R.w.col_ptr;
  balanced_for(
      g, n_in,
      [&](std::uint32_t i) {
        const std::uint32_t j = in_list ? in_list[i] : i;
        LenAux la;
        if (in[j] != 0.0f) {
          la.len = cp[j + 1] - cp[j];
          la.aux = j;
        }
        return la;
      },
      [&](std::uint32_t, std::uint32_t j, std::uint32_t k) {
        const std::uint32_t p = cp[j] + k;
        touch_add(g, s.x, s.x_bits, s.x_list, &c.n_x, static_cast<const float*>(nullptr),
                  R.w.row_idx[p], R.w.values[p] * in[j]);
      });
  for (std::uint32_t i = g.rank(); i < R.n_seeds; i += g.size())
    touch_add(g, s.x, s.x_bits, s.x_list, &c.n_x, static_cast<const float*>(nullptr), R.seed_rows[i],
              R.seed_vals[i]);
  g.sync();
}

/// Zeroes the accumulator rows listed (values and bitmap words), then resets the count.
/// Ends synchronised.
template <class G>
LOCKSTEP_HD void clear_acc(G& g, float* vals, std::uint32_t* bits, const std::uint32_t* list,
                           std::uint32_t* count) {
  const std::uint32_t n = *count;
  for (std::uint32_t i = g.rank(); i < n; i += g.size()) {
    const std::uint32_t r = list[i];
    vals[r] = 0.0f;
    bits[r >> 5] = 0u;
  }
  g.sync();
  if (g.rank() == 0) *count = 0;
  g.sync();
}

template <class G>
LOCKSTEP_HD void record_probes(G& g, const ProbeCopy* p, std::uint32_t n, const StreamView& s) {
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t k = g.rank(); k < p[i].width; k += g.size()) s.probes[p[i].dst + k] = s.x[p[i].src + k];
}

/// The memory block of one layer (chip-format.md 1.2): every head reads the same x; S update
/// first, then the read; x += sum_h W_o o_h + b_o. Ends synchronised.
template <class G>
LOCKSTEP_HD void memory_block(G& g, const LayerView& L, const StreamView& s, Counters& c) {
  if (g.rank() == 0) c.n_w = c.n_r = c.n_o = c.n_u = c.n_kr = c.n_qr = c.n_k = c.n_q = 0;
  eval_phase(g, L.mem, s, c);  // beta and q slots (synchronises first: the counts are seen zeroed)
  // beta per head (untouched row: its bias is 0, or negative under ReLU: beta 0 either way);
  // the heads with beta != 0 are the ones that write: their k and v units are listed once
  for (std::uint32_t h = g.rank(); h < L.n_heads; h += g.size()) {
    const HeadView& H = L.heads[h];
    const float b = act(H.relu_beta, s.acc[H.beta_row]);
    s.beta[h] = b;
    if (b != 0.0f) {
      s.heads[g.fetch_inc(&c.n_w)] = h;
      if (g.fetch_inc(&s.unit_mark[H.k_unit]) == 0) s.units[g.fetch_inc(&c.n_u)] = H.k_unit;
      if (g.fetch_inc(&s.unit_mark[H.v_unit]) == 0) s.units[g.fetch_inc(&c.n_u)] = H.v_unit;
    }
  }
  g.sync();
  // k and v of the heads that write only (the others' k and v are never read), each slot once
  eval_gated(g, L.kv, s.units, c.n_u, s, c);
  for (std::uint32_t i = g.rank(); i < c.n_u; i += g.size()) s.unit_mark[s.units[i]] = 0;
  // non-zero rows of the k and q slots
  auto slot_of = [&](std::uint32_t r) { return upper_index(L.slot_base, L.n_slots + 1, r); };
  auto slot_act = [&](std::uint32_t slot, std::uint32_t r) {
    const HeadView& H = L.heads[L.slot_users[L.slot_user_ptr[slot]]];  // users share the map, act included
    return act(L.slot_kind[slot] == kSlotK ? H.relu_k : H.relu_q, s.acc[r]);
  };
  {
    const std::uint32_t n = c.n_acc;
    for (std::uint32_t i = g.rank(); i < n; i += g.size()) {
      const std::uint32_t r = s.acc_list[i];
      const std::uint32_t slot = slot_of(r);
      const std::uint8_t kind = L.slot_kind[slot];
      if (kind == kSlotK) {
        if (slot_act(slot, r) != 0.0f) s.nz[g.fetch_inc(&c.n_kr)] = r;
      } else if (kind == kSlotQ) {
        if (slot_act(slot, r) != 0.0f) s.nz[L.mem.w.rows - 1 - g.fetch_inc(&c.n_qr)] = r;
      }
    }
  }
  g.sync();
  // (head, row) pairs: a non-zero k row with each of its slot's heads that write; a non-zero q
  // row with each of its slot's heads (which then read: listed once)
  auto users = [&](std::uint32_t r) {
    LenAux la;
    la.aux = slot_of(r);
    la.len = L.slot_user_ptr[la.aux + 1] - L.slot_user_ptr[la.aux];
    return la;
  };
  balanced_for(
      g, c.n_kr, [&](std::uint32_t i) { return users(s.nz[i]); },
      [&](std::uint32_t i, std::uint32_t slot, std::uint32_t k) {
        const std::uint32_t h = L.slot_users[L.slot_user_ptr[slot] + k];
        if (s.beta[h] != 0.0f) {
          const std::uint32_t p = g.fetch_inc(&c.n_k);
          s.sel[p] = s.nz[i];
          s.sel_h[p] = h;
        }
      });
  balanced_for(
      g, c.n_qr, [&](std::uint32_t i) { return users(s.nz[L.mem.w.rows - 1 - i]); },
      [&](std::uint32_t i, std::uint32_t slot, std::uint32_t k) {
        const std::uint32_t h = L.slot_users[L.slot_user_ptr[slot] + k];
        const std::uint32_t p = L.pair_rows - 1 - g.fetch_inc(&c.n_q);
        s.sel[p] = s.nz[L.mem.w.rows - 1 - i];
        s.sel_h[p] = h;
        if (g.fetch_inc(&s.head_reads[h]) == 0) s.readers[g.fetch_inc(&c.n_r)] = h;
      });
  g.sync();  // balanced_for does not synchronise when it has no items
  const std::uint32_t n_k = c.n_k, n_q = c.n_q, n_w = c.n_w, n_r = c.n_r;
  auto value_rows = [&](std::uint32_t h) {
    LenAux la;
    la.len = L.heads[h].value_dim;
    la.aux = h;
    return la;
  };
  // Sk zeroed for the heads that write (only they use it)
  balanced_for(
      g, n_w, [&](std::uint32_t i) { return value_rows(s.heads[i]); },
      [&](std::uint32_t, std::uint32_t h, std::uint32_t k) { s.sk[L.heads[h].o_off + k] = 0.0f; });
  // per (head, k row j, i): Sk_h[i] += S_h[j, i] k_j
  balanced_for(
      g, n_k, [&](std::uint32_t i) { return value_rows(s.sel_h[i]); },
      [&](std::uint32_t i, std::uint32_t h, std::uint32_t k) {
        const HeadView& H = L.heads[h];
        const std::uint32_t r = s.sel[i];
        const std::uint32_t j = r - H.k_row;
        const float kj = act(H.relu_k, s.acc[r]);
        g.add(&s.sk[H.o_off + k], s.state[H.state_offset + static_cast<std::uint64_t>(j) * H.value_dim + k] * kj);
      });
  // u_i = beta (v_i - Sk_i) for the heads that write
  balanced_for(
      g, n_w, [&](std::uint32_t i) { return value_rows(s.heads[i]); },
      [&](std::uint32_t, std::uint32_t h, std::uint32_t k) {
        const HeadView& H = L.heads[h];
        const std::uint32_t i = H.o_off + k;
        s.sk[i] = s.beta[h] * (s.acc[H.v_row + k] - s.sk[i]);
      });
  // S_h[j, i] += u_i k_j
  balanced_for(
      g, n_k, [&](std::uint32_t i) { return value_rows(s.sel_h[i]); },
      [&](std::uint32_t i, std::uint32_t h, std::uint32_t k) {
        const HeadView& H = L.heads[h];
        const std::uint32_t r = s.sel[i];
        const std::uint32_t j = r - H.k_row;
        const float kj = act(H.relu_k, s.acc[r]);
        s.state[H.state_offset + static_cast<std::uint64_t>(j) * H.value_dim + k] += s.sk[H.o_off + k] * kj;
      });
  // o_h[i] += S_h[j, i] q_j (after the update: the read sees this step's write). o is zero
  // between steps, so only the heads that read need their entries of o (and W_o's columns)
  balanced_for(
      g, n_q, [&](std::uint32_t i) { return value_rows(s.sel_h[L.pair_rows - 1 - i]); },
      [&](std::uint32_t i, std::uint32_t h, std::uint32_t k) {
        const HeadView& H = L.heads[h];
        const std::uint32_t r = s.sel[L.pair_rows - 1 - i];
        const std::uint32_t j = r - H.q_row;
        const float qj = act(H.relu_q, s.acc[r]);
        g.add(&s.o[H.o_off + k], s.state[H.state_offset + static_cast<std::uint64_t>(j) * H.value_dim + k] * qj);
      });
  g.sync();
  clear_acc(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc);
  // the entries of o of the heads that read, as a list of W_o's columns
  balanced_for(
      g, n_r, [&](std::uint32_t i) { return value_rows(s.readers[i]); },
      [&](std::uint32_t, std::uint32_t h, std::uint32_t k) { s.o_cols[g.fetch_inc(&c.n_o)] = L.heads[h].o_off + k; });
  residual_update(g, L.wo, s.o, c.n_o, s.o_cols, s, c);
  // o and the read marks back to zero
  for (std::uint32_t i = g.rank(); i < c.n_o; i += g.size()) s.o[s.o_cols[i]] = 0.0f;
  for (std::uint32_t i = g.rank(); i < n_r; i += g.size()) s.head_reads[s.readers[i]] = 0;
  g.sync();
}

/// The MLP of one layer (plain: x += W2 ReLU(W1 x + b1) + b2; gated: x += W2 (u (.) ReLU(g)) + b2).
/// Ends synchronised.
template <class G>
LOCKSTEP_HD void mlp_block(G& g, const LayerView& L, const StreamView& s, Counters& c) {
  if (g.rank() == 0) c.n_h = 0;
  eval_phase(g, L.mlp_in, s, c);
  {
    const std::uint32_t n = c.n_acc, F = L.hidden;
    const bool gated = L.mlp_kind == kMlpGated;
    for (std::uint32_t i = g.rank(); i < n; i += g.size()) {
      const std::uint32_t r = s.acc_list[i];
      if (r >= F) continue;  // u rows (gated)
      const float pre = s.acc[r];
      if (!(pre > 0.0f)) continue;
      if (gated) {
        const float h = s.acc[F + r] * pre;
        if (h == 0.0f) continue;
        s.acc[r] = h;  // only this thread reads rows r and F + r
      }
      s.sel[g.fetch_inc(&c.n_h)] = r;
    }
  }
  g.sync();
  residual_update(g, L.w2, s.acc, c.n_h, s.sel, s, c);
  clear_acc(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc);
}

/// Order-preserving key of a logit and token: larger logit first, then lower token id.
LOCKSTEP_HD_INLINE unsigned long long argmax_key(float v, std::uint32_t t) {
  if (v == 0.0f) v = 0.0f;  // -0 == +0
#if defined(__CUDA_ARCH__)
  std::uint32_t u = __float_as_uint(v);
#else
  std::uint32_t u;
  static_assert(sizeof(u) == sizeof(v), "fp32");
  std::memcpy(&u, &v, 4);
#endif
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xFFFFFFFFu - t);
}

/// One step of one stream: feeds `token` (< vocab), returns the next token. Requires the stream's
/// x and acc clear (they are again on return) and c zeroed. Records probes when `record`.
template <class G>
LOCKSTEP_HD std::uint32_t step_stream(G& g, const ChipView& C, const StreamView& s, Counters& c,
                                      std::uint32_t token, bool record) {
  {  // x <- E[:, token]
    const std::uint32_t b = C.embed.col_ptr[token], e = C.embed.col_ptr[token + 1];
    for (std::uint32_t p = b + g.rank(); p < e; p += g.size())
      touch_add(g, s.x, s.x_bits, s.x_list, &c.n_x, static_cast<const float*>(nullptr), C.embed.row_idx[p],
                C.embed.values[p]);
  }
  g.sync();
  if (record) {
    record_probes(g, C.probe_embed, C.n_probe_embed, s);
    g.sync();
  }
  for (std::uint32_t l = 0; l < C.n_layers; ++l) {
    const LayerView& L = C.layers[l];
    if (L.n_heads) memory_block(g, L, s, c);
    if (record) {
      record_probes(g, L.probe_mem, L.n_probe_mem, s);
      g.sync();
    }
    if (L.mlp_kind != kMlpNone) mlp_block(g, L, s, c);
    if (record) {
      record_probes(g, L.probe_mlp, L.n_probe_mlp, s);
      g.sync();
    }
  }
  // logits = U x + b_U; argmax, lowest id on a tie
  if (g.rank() == 0) {
    c.best = 0;
    c.first = 0xFFFFFFFFu;
  }
  eval_phase(g, C.unembed, s, c);
  {
    const std::uint32_t n = c.n_acc;
    for (std::uint32_t i = g.rank(); i < n; i += g.size()) {
      const std::uint32_t r = s.acc_list[i];
      g.max_u64(&c.best, argmax_key(s.acc[r], r));
    }
  }
  // best untouched token: its logit is its bias; the first untouched one in bias order
  for (std::uint32_t base = 0; base < C.vocab; base += g.size()) {
    const std::uint32_t i = base + g.rank();
    if (i < C.vocab) {
      const std::uint32_t t = C.bias_order[i];
      if (!((s.acc_bits[t >> 5] >> (t & 31u)) & 1u)) g.min_u32(&c.first, i);
    }
    g.sync();
    const bool found = c.first != 0xFFFFFFFFu;
    g.sync();
    if (found) break;
  }
  if (g.rank() == 0) {
    const bool have = c.n_acc != 0;
    std::uint32_t best_t = have ? 0xFFFFFFFFu - static_cast<std::uint32_t>(c.best & 0xFFFFFFFFull) : 0;
    float best = have ? s.acc[best_t] : 0.0f;
    if (c.first != 0xFFFFFFFFu) {
      const std::uint32_t t = C.bias_order[c.first];
      const float v = C.unembed.bias[t];
      if (!have || v > best || (v == best && t < best_t)) best_t = t;
    }
    c.result = best_t;
  }
  g.sync();
  clear_acc(g, s.acc, s.acc_bits, s.acc_list, &c.n_acc);
  clear_acc(g, s.x, s.x_bits, s.x_list, &c.n_x);
  return c.result;
}

}  // namespace lockstep::chip::gpu
