// ChipImage: a chip's maps stacked into the phase matrices of step_math.hpp, in one arena.
#include "lockstep/chip/gpu/chip_image.hpp"


#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <unordered_map>

namespace lockstep::chip::gpu {

namespace {

constexpr std::size_t kAlign = 16;

std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

class Arena {
 public:
  template <class T>
  const T* put(const T* p, std::size_t n) {
    const std::size_t off = align_up(data.size());
    data.resize(off + n * sizeof(T));
    if (n) std::memcpy(data.data() + off, p, n * sizeof(T));
    return reinterpret_cast<const T*>(static_cast<std::uintptr_t>(off));
  }
  template <class T>
  const T* put(const std::vector<T>& v) {
    return put(v.data(), v.size());
  }
  std::vector<std::uint8_t> data;
};

template <class T>
void rel(const T*& p, std::uintptr_t base) {
  p = reinterpret_cast<const T*>(reinterpret_cast<std::uintptr_t>(p) + base);
}
void rel(Csc& m, std::uintptr_t base) {
  rel(m.col_ptr, base);
  rel(m.row_idx, base);
  rel(m.values, base);
}
void rel(PhaseMap& m, std::uintptr_t base) {
  rel(m.w, base);
  rel(m.bias, base);
  rel(m.seeds, base);
}
void rel(GatedMap& m, std::uintptr_t base) {
  rel(m.w, base);
  rel(m.bias, base);
  rel(m.unit_base, base);
  rel(m.seeds, base);
  rel(m.seed_ptr, base);
}
void rel(ResidualMap& m, std::uintptr_t base) {
  rel(m.w, base);
  rel(m.seed_rows, base);
  rel(m.seed_vals, base);
}

Csc put_csc(Arena& a, const SparseMatrix& m) {
  Csc c;
  c.col_ptr = a.put(m.col_ptr);
  c.row_idx = a.put(m.row_idx);
  c.values = a.put(m.values);
  c.rows = m.rows;
  c.cols = m.cols;
  return c;
}

// A map stacked into a larger one (cols = d): its rows start at row0.
struct Part {
  const LinearMap* m = nullptr;
  bool relu = false;
  std::uint32_t row0 = 0;
};

// Parts placed one after another from row 0 (row0 set); returns the rows in all.
std::uint32_t place_consecutive(std::vector<Part>& parts) {
  std::uint32_t rows = 0;
  for (Part& p : parts) {
    p.row0 = rows;
    rows += p.m->w.rows;
  }
  return rows;
}

// Whether row r of part p is touched on every evaluation (the CPU executor's seeds): its bias
// alone makes it non-zero after the activation.
bool is_seed(const Part& p, std::uint32_t r) {
  const float b = p.m->bias[r];
  return p.relu ? b > 0.0f : b != 0.0f;
}

// The parts' weights as one CSC over d columns (parts by row0 increasing, rows not overlapping,
// so each column's rows stay increasing).
Csc put_stacked(Arena& a, const std::vector<Part>& parts, std::uint32_t d, std::uint32_t rows) {
  std::vector<std::uint32_t> cp(d + 1, 0);
  for (const Part& p : parts)
    for (std::uint32_t j = 0; j < d; ++j) cp[j + 1] += p.m->w.col_ptr[j + 1] - p.m->w.col_ptr[j];
  std::partial_sum(cp.begin(), cp.end(), cp.begin());
  std::vector<std::uint32_t> ri(cp.back());
  std::vector<float> vals(cp.back());
  std::vector<std::uint32_t> fill(cp.begin(), cp.end() - 1);
  for (const Part& part : parts) {  // parts in row order: rows stay increasing
    const SparseMatrix& w = part.m->w;
    for (std::uint32_t j = 0; j < d; ++j)
      for (std::uint32_t p = w.col_ptr[j]; p < w.col_ptr[j + 1]; ++p) {
        ri[fill[j]] = w.row_idx[p] + part.row0;
        vals[fill[j]++] = w.values[p];
      }
  }
  Csc c;
  c.col_ptr = a.put(cp);
  c.row_idx = a.put(ri);
  c.values = a.put(vals);
  c.rows = rows;
  c.cols = d;
  return c;
}

// The parts' biases as one dense vector of `rows` (rows no part covers: 0).
std::vector<float> stacked_bias(const std::vector<Part>& parts, std::uint32_t rows) {
  std::vector<float> bias(rows, 0.0f);
  for (const Part& p : parts)
    for (std::uint32_t r = 0; r < p.m->bias.size(); ++r) bias[p.row0 + r] = p.m->bias[r];
  return bias;
}

// Maps reading the same input (cols = d), stacked by rows at their row0 (rows in all), with
// `bias` (an arena pointer to the dense bias of all rows; null: the parts' own, built here).
PhaseMap put_phase(Arena& a, const std::vector<Part>& parts, std::uint32_t d, std::uint32_t rows,
                   const float* bias = nullptr) {
  std::vector<std::uint32_t> seeds;
  for (const Part& p : parts)
    for (std::uint32_t r = 0; r < p.m->bias.size(); ++r)
      if (is_seed(p, r)) seeds.push_back(p.row0 + r);
  PhaseMap pm;
  pm.w = put_stacked(a, parts, d, rows);
  pm.bias = bias ? bias : a.put(stacked_bias(parts, rows));
  pm.seeds = a.put(seeds);
  pm.n_seeds = static_cast<std::uint32_t>(seeds.size());
  return pm;
}

// Maps placed one after another.
PhaseMap put_phase(Arena& a, std::vector<Part> parts, std::uint32_t d) {
  const std::uint32_t rows = place_consecutive(parts);
  return put_phase(a, parts, d, rows);
}

// Maps of which a step evaluates some units (GatedMap): parts by row0 increasing; unit u owns
// the rows [unit_base[u], unit_base[u + 1]) and every part inside them.
GatedMap put_gated(Arena& a, const std::vector<Part>& parts, std::uint32_t d, std::uint32_t rows,
                   const float* bias, const std::vector<std::uint32_t>& unit_base) {
  std::vector<std::uint32_t> seeds, seed_ptr{0};
  std::size_t i = 0;
  for (std::size_t u = 0; u + 1 < unit_base.size(); ++u) {
    for (; i < parts.size() && parts[i].row0 < unit_base[u + 1]; ++i)
      for (std::uint32_t r = 0; r < parts[i].m->bias.size(); ++r)
        if (is_seed(parts[i], r)) seeds.push_back(parts[i].row0 + r);
    seed_ptr.push_back(static_cast<std::uint32_t>(seeds.size()));
  }
  GatedMap gm;
  gm.w = put_stacked(a, parts, d, rows);
  gm.bias = bias;
  gm.unit_base = a.put(unit_base);
  gm.seeds = a.put(seeds);
  gm.seed_ptr = a.put(seed_ptr);
  gm.n_units = static_cast<std::uint32_t>(unit_base.size() - 1);
  return gm;
}

// Maps whose inputs are concatenated (rows = d each): columns side by side.
ResidualMap put_residual(Arena& a, const std::vector<const LinearMap*>& maps, std::uint32_t d) {
  std::vector<std::uint32_t> cp{0}, ri, seed_rows;
  std::vector<float> vals, seed_vals;
  std::uint32_t cols = 0;
  for (const LinearMap* m : maps) {
    const SparseMatrix& w = m->w;
    for (std::uint32_t j = 0; j < w.cols; ++j) {
      for (std::uint32_t p = w.col_ptr[j]; p < w.col_ptr[j + 1]; ++p) {
        ri.push_back(w.row_idx[p]);
        vals.push_back(w.values[p]);
      }
      cp.push_back(static_cast<std::uint32_t>(ri.size()));
    }
    cols += w.cols;
    for (std::uint32_t r = 0; r < m->bias.size(); ++r)
      if (m->bias[r] != 0.0f) {  // identity maps: every non-zero bias is added (CPU seeds)
        seed_rows.push_back(r);
        seed_vals.push_back(m->bias[r]);
      }
  }
  ResidualMap rm;
  rm.w.col_ptr = a.put(cp);
  rm.w.row_idx = a.put(ri);
  rm.w.values = a.put(vals);
  rm.w.rows = d;
  rm.w.cols = cols;
  rm.seed_rows = a.put(seed_rows);
  rm.seed_vals = a.put(seed_vals);
  rm.n_seeds = static_cast<std::uint32_t>(seed_rows.size());
  return rm;
}

// One distinct map of a memory layer (step_math.hpp's slots) and the heads that use it.
struct Slot {
  const LinearMap* m = nullptr;
  std::uint8_t kind = kSlotBeta;
  std::vector<std::uint32_t> users;
  std::uint32_t row0 = 0;
};

// Equality of two maps' content: activation, shape and the bits of every weight and bias.
bool same_map(const LinearMap& a, const LinearMap& b) { return a.act == b.act && same_weights(a, b); }

using SlotIndex = std::unordered_multimap<std::uint64_t, std::uint32_t>;  // (hash, slot)

// The slot of map m (of `kind`) used by head h: an earlier slot with an equal map, else a new one.
std::uint32_t slot_for(std::vector<Slot>& slots, SlotIndex& index, const LinearMap& m, std::uint8_t kind,
                       std::uint32_t h) {
  const std::uint64_t key = weights_hash(m);  // the kind and activation are compared below
  for (auto [it, end] = index.equal_range(key); it != end; ++it) {
    Slot& sl = slots[it->second];
    if (sl.kind == kind && same_map(*sl.m, m)) {
      sl.users.push_back(h);
      return it->second;
    }
  }
  const std::uint32_t i = static_cast<std::uint32_t>(slots.size());
  slots.push_back({&m, kind, {h}, 0});
  index.emplace(key, i);
  return i;
}

}  // namespace

ChipImage::ChipImage(const Chip& chip) {
  Arena a;
  const std::uint32_t D = chip.config.d_model, T = chip.config.vocab_size;
  ChipView& R = root_;
  R.d_model = D;
  R.vocab = T;
  R.n_layers = static_cast<std::uint32_t>(chip.layers.size());
  R.embed = put_csc(a, chip.embed.w);
  R.unembed = put_phase(a, {{&chip.unembed, false}}, D);
  {
    std::vector<std::uint32_t> order(T);
    std::iota(order.begin(), order.end(), 0u);
    const auto& ub = chip.unembed.bias;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return ub[x] > ub[y]; });
    R.bias_order = a.put(order);
  }
  R.state_size = chip.state_size();
  R.acc_rows = std::max<std::uint32_t>(T, 1);
  R.o_rows = 1;
  R.max_heads = 1;
  R.max_units = 1;

  // probe buffer: every (point, field), in order
  const auto& probes = chip.config.probes;
  probe_off_.resize(probes.size());
  std::vector<ProbeCopy> pe;
  std::vector<std::vector<ProbeCopy>> pmem(chip.layers.size()), pmlp(chip.layers.size());
  std::uint32_t pf = 0;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const ProbePoint& p = probes[i];
    for (const std::string& name : p.fields) {
      const Field* f = chip.find_field(name);
      const ProbeCopy pc{f->offset, f->width, pf};
      probe_off_[i].push_back(pf);
      pf += f->width;
      if (p.after == Sublayer::Embed) pe.push_back(pc);
      else if (p.after == Sublayer::Memory) pmem[static_cast<std::size_t>(p.layer)].push_back(pc);
      else pmlp[static_cast<std::size_t>(p.layer)].push_back(pc);
    }
  }
  R.probe_embed = a.put(pe);
  R.n_probe_embed = static_cast<std::uint32_t>(pe.size());
  R.probe_floats = pf;

  std::vector<LayerView> layers(chip.layers.size());
  std::uint64_t state_off = 0;
  for (std::size_t l = 0; l < chip.layers.size(); ++l) {
    const Layer& L = chip.layers[l];
    LayerView& V = layers[l];
    V.n_heads = static_cast<std::uint32_t>(L.heads.size());
    // The layer's distinct maps (slots): beta and q slots (the phase matrix), then k and v
    // slots (the gated map's units); a map equal to an earlier one of its kind is shared.
    std::vector<Slot> bq, kv;
    SlotIndex bq_index, kv_index;
    std::vector<HeadView> hv;
    std::vector<std::array<std::uint32_t, 4>> head_slot;  // beta, k, q, v slot of each head
    std::vector<const LinearMap*> wo;
    std::uint32_t o = 0, pair_rows = 0;
    for (std::uint32_t h = 0; h < L.heads.size(); ++h) {
      const Head& hd = L.heads[h];
      HeadView H;
      H.key_dim = hd.key_dim;
      H.value_dim = hd.value_dim;
      H.o_off = o;
      H.state_offset = state_off;
      H.relu_k = hd.k.act == Activation::Relu;
      H.relu_q = hd.q.act == Activation::Relu;
      H.relu_beta = hd.beta.act == Activation::Relu;
      hv.push_back(H);
      head_slot.push_back({slot_for(bq, bq_index, hd.beta, kSlotBeta, h), slot_for(kv, kv_index, hd.k, kSlotK, h),
                           slot_for(bq, bq_index, hd.q, kSlotQ, h), slot_for(kv, kv_index, hd.v, kSlotV, h)});
      wo.push_back(&hd.o);
      o += hd.value_dim;
      pair_rows += 2 * hd.key_dim;
      state_off += static_cast<std::uint64_t>(hd.key_dim) * hd.value_dim;
    }
    // rows: the bq slots, then the kv slots
    std::vector<Part> bq_parts, kv_parts, all;
    std::vector<std::uint32_t> slot_base, slot_user_ptr{0}, slot_users, unit_base;
    std::vector<std::uint8_t> slot_kind;
    std::uint32_t rows = 0;
    for (std::vector<Slot>* slots : {&bq, &kv})
      for (Slot& sl : *slots) {
        sl.row0 = rows;
        // v is used without its activation (as the CPU executor does): seeded wherever its bias is non-zero
        const bool relu = sl.kind != kSlotV && sl.m->act == Activation::Relu;
        (slots == &bq ? bq_parts : kv_parts).push_back({sl.m, relu, rows});
        if (slots == &kv) unit_base.push_back(rows);
        slot_base.push_back(rows);
        slot_kind.push_back(sl.kind);
        slot_users.insert(slot_users.end(), sl.users.begin(), sl.users.end());
        slot_user_ptr.push_back(static_cast<std::uint32_t>(slot_users.size()));
        rows += sl.m->w.rows;
      }
    slot_base.push_back(rows);
    unit_base.push_back(rows);
    for (std::uint32_t h = 0; h < hv.size(); ++h) {
      HeadView& H = hv[h];
      H.beta_row = bq[head_slot[h][0]].row0;
      H.k_row = kv[head_slot[h][1]].row0;
      H.q_row = bq[head_slot[h][2]].row0;
      H.v_row = kv[head_slot[h][3]].row0;
      H.k_unit = head_slot[h][1];
      H.v_unit = head_slot[h][3];
    }
    V.heads = a.put(hv);
    V.o_total = o;
    V.n_slots = static_cast<std::uint32_t>(slot_kind.size());
    V.slot_base = a.put(slot_base);
    V.slot_kind = a.put(slot_kind);
    V.slot_user_ptr = a.put(slot_user_ptr);
    V.slot_users = a.put(slot_users);
    V.pair_rows = pair_rows;
    if (!L.heads.empty()) {
      all = bq_parts;
      all.insert(all.end(), kv_parts.begin(), kv_parts.end());
      const float* bias = a.put(stacked_bias(all, rows));  // one dense bias for both
      V.mem = put_phase(a, bq_parts, D, rows, bias);
      V.kv = put_gated(a, kv_parts, D, rows, bias, unit_base);
      V.wo = put_residual(a, wo, D);
    }
    R.acc_rows = std::max(R.acc_rows, rows);
    R.sel_rows = std::max(R.sel_rows, pair_rows);
    R.max_units = std::max(R.max_units, static_cast<std::uint32_t>(kv.size()));
    R.o_rows = std::max(R.o_rows, o);
    R.max_heads = std::max(R.max_heads, V.n_heads);
    V.hidden = L.mlp.hidden;
    if (L.mlp.kind == MlpKind::Relu) {
      V.mlp_kind = kMlpRelu;
      V.mlp_in = put_phase(a, {{&L.mlp.w1, true}}, D);
    } else if (L.mlp.kind == MlpKind::Gated) {
      V.mlp_kind = kMlpGated;
      V.mlp_in = put_phase(a, {{&L.mlp.wg, true}, {&L.mlp.wu, false}}, D);
    }
    if (L.mlp.kind != MlpKind::None) {
      V.w2 = put_residual(a, {&L.mlp.w2}, D);
      R.acc_rows = std::max(R.acc_rows, V.mlp_in.w.rows);
    }
    V.probe_mem = a.put(pmem[l]);
    V.n_probe_mem = static_cast<std::uint32_t>(pmem[l].size());
    V.probe_mlp = a.put(pmlp[l]);
    V.n_probe_mlp = static_cast<std::uint32_t>(pmlp[l].size());
  }
  R.sel_rows = std::max(R.sel_rows, R.acc_rows);
  R.layers = a.put(layers);
  layers_off_ = reinterpret_cast<std::uintptr_t>(R.layers);
  arena_ = std::move(a.data);
  arena_.resize(align_up(arena_.size()));
}

std::vector<std::uint8_t> ChipImage::relocated(std::uintptr_t base, ChipView& root) const {
  std::vector<std::uint8_t> out = arena_;
  root = root_;
  rel(root.layers, base);
  rel(root.embed, base);
  rel(root.unembed, base);
  rel(root.bias_order, base);
  rel(root.probe_embed, base);
  for (std::uint32_t l = 0; l < root_.n_layers; ++l) {
    LayerView V;
    std::memcpy(&V, out.data() + layers_off_ + l * sizeof(LayerView), sizeof(LayerView));
    rel(V.heads, base);
    rel(V.slot_base, base);
    rel(V.slot_kind, base);
    rel(V.slot_user_ptr, base);
    rel(V.slot_users, base);
    rel(V.mem, base);
    rel(V.kv, base);
    rel(V.wo, base);
    rel(V.mlp_in, base);
    rel(V.w2, base);
    rel(V.probe_mem, base);
    rel(V.probe_mlp, base);
    std::memcpy(out.data() + layers_off_ + l * sizeof(LayerView), &V, sizeof(LayerView));
  }
  return out;
}

StreamLayout::StreamLayout(const ChipView& c) {
  std::size_t off = 0;
  auto take = [&](std::size_t& at, std::size_t n, std::size_t elem) {
    at = off;
    off = align_up(off + n * elem);
  };
  take(state, c.state_size, 4);
  take(x, c.d_model, 4);
  take(x_bits, c.d_model / 32 + 1, 4);
  take(x_list, c.d_model, 4);
  take(acc, c.acc_rows, 4);
  take(acc_bits, c.acc_rows / 32 + 1, 4);
  take(acc_list, c.acc_rows, 4);
  take(sel, c.sel_rows, 4);
  take(sel_h, c.sel_rows, 4);
  take(nz, c.acc_rows, 4);
  take(units, c.max_units, 4);
  take(unit_mark, c.max_units, 4);
  take(o, c.o_rows, 4);
  take(sk, c.o_rows, 4);
  take(beta, c.max_heads, 4);
  take(heads, c.max_heads, 4);
  take(readers, c.max_heads, 4);
  take(head_reads, c.max_heads, 4);
  take(o_cols, c.o_rows, 4);
  take(probes, c.probe_floats, 4);
  bytes = off;
}

StreamView StreamLayout::at(std::uintptr_t base) const {
  StreamView v;
  v.state = reinterpret_cast<float*>(base + state);
  v.x = reinterpret_cast<float*>(base + x);
  v.x_bits = reinterpret_cast<std::uint32_t*>(base + x_bits);
  v.x_list = reinterpret_cast<std::uint32_t*>(base + x_list);
  v.acc = reinterpret_cast<float*>(base + acc);
  v.acc_bits = reinterpret_cast<std::uint32_t*>(base + acc_bits);
  v.acc_list = reinterpret_cast<std::uint32_t*>(base + acc_list);
  v.sel = reinterpret_cast<std::uint32_t*>(base + sel);
  v.sel_h = reinterpret_cast<std::uint32_t*>(base + sel_h);
  v.nz = reinterpret_cast<std::uint32_t*>(base + nz);
  v.units = reinterpret_cast<std::uint32_t*>(base + units);
  v.unit_mark = reinterpret_cast<std::uint32_t*>(base + unit_mark);
  v.o = reinterpret_cast<float*>(base + o);
  v.sk = reinterpret_cast<float*>(base + sk);
  v.beta = reinterpret_cast<float*>(base + beta);
  v.heads = reinterpret_cast<std::uint32_t*>(base + heads);
  v.readers = reinterpret_cast<std::uint32_t*>(base + readers);
  v.head_reads = reinterpret_cast<std::uint32_t*>(base + head_reads);
  v.o_cols = reinterpret_cast<std::uint32_t*>(base + o_cols);
  v.probes = reinterpret_cast<float*>(base + probes);
  return v;
}

HostStream::HostStream(const ChipView& shape) {
  const StreamLayout layout(shape);
  storage.assign(layout.bytes / 8 + 2, 0);
  view = layout.at(align_up(reinterpret_cast<std::uintptr_t>(storage.data())));
}

}  // namespace lockstep::chip::gpu
