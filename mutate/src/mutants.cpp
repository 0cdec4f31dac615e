// Mutants of a compiled chip (mutants.h): the fault kinds (moved here from
// tests/engine/planted_faults_test.cpp, unchanged in their choices) and the mutation score.
#include "lockstep/mutate/mutants.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/engine/guest.h"
#include "lockstep/format/tokens.h"

namespace lockstep::mutate {

namespace {

using chip::Chip;
using chip::LinearMap;
using chip::SparseMatrix;

struct Pos {
  int layer = -1;
  int sub = 0;
};

// ------------------------------------------------------------ sparse edits

struct Entry {
  std::uint32_t row, col;
  float v;
};

std::vector<Entry> entries(const SparseMatrix& m) {
  std::vector<Entry> e;
  for (std::uint32_t c = 0; c < m.cols; ++c)
    for (std::uint32_t i = m.col_ptr[c]; i < m.col_ptr[c + 1]; ++i) e.push_back({m.row_idx[i], c, m.values[i]});
  return e;
}

void rebuild(SparseMatrix& m, std::vector<Entry> e) {
  std::erase_if(e, [](const Entry& x) { return x.v == 0.0f; });
  std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) { return a.col != b.col ? a.col < b.col : a.row < b.row; });
  m.col_ptr.assign(m.cols + 1, 0);
  m.row_idx.clear();
  m.values.clear();
  for (const Entry& x : e) {
    ++m.col_ptr[x.col + 1];
    m.row_idx.push_back(x.row);
    m.values.push_back(x.v);
  }
  for (std::uint32_t c = 0; c < m.cols; ++c) m.col_ptr[c + 1] += m.col_ptr[c];
}

void edit(SparseMatrix& m, const std::function<void(std::vector<Entry>&)>& f) {
  auto e = entries(m);
  f(e);
  rebuild(m, std::move(e));
}

// ------------------------------------------------------------ faults

int pick_layer(const std::map<int, std::set<std::uint32_t>>& m, SplitMix64& r) {
  std::vector<int> ls;
  for (const auto& [l, s] : m)
    if (!s.empty()) ls.push_back(l);
  if (ls.empty()) throw std::runtime_error("no candidate layer in the profile");
  return r.pick(ls);
}

Mutant start(const Chip& c, std::string kind, Pos site) {
  Mutant m;
  m.kind = std::move(kind);
  m.layer = site.layer;
  m.sublayer = site.sub;
  m.chip = std::make_shared<Chip>(c);
  return m;
}

std::string unit_text(int l, std::uint32_t j) { return "layer " + std::to_string(l) + " MLP unit " + std::to_string(j); }

// A live MLP unit: (layer, unit).
std::pair<int, std::uint32_t> live_unit(const ActivityProfile& p, SplitMix64& r) {
  const int l = pick_layer(p.live_units, r);
  return {l, r.pick(p.live_units.at(l))};
}

std::pair<int, std::uint32_t> live_head(const ActivityProfile& p, SplitMix64& r) {
  const int l = pick_layer(p.live_heads, r);
  return {l, r.pick(p.live_heads.at(l))};
}

// A live head whose map (chosen by `which`) is ReLU, so that ReLU -> identity
// can matter; any live head when there is none.
std::pair<int, std::uint32_t> live_relu_head(const Chip& c, const ActivityProfile& p, SplitMix64& r,
                                             const std::function<const LinearMap&(const chip::Head&)>& which) {
  std::vector<std::pair<int, std::uint32_t>> cand;
  for (const auto& [l, hs] : p.live_heads)
    for (std::uint32_t h : hs)
      if (which(c.layers[l].heads[h]).act == chip::Activation::Relu) cand.emplace_back(l, h);
  if (cand.empty()) return live_head(p, r);
  return cand[r.below(cand.size())];
}

// A nonzero entry of a map, chosen at random among those `keep` accepts.
std::optional<std::size_t> pick_entry(const std::vector<Entry>& e, SplitMix64& r, const std::function<bool(const Entry&)>& keep) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < e.size(); ++i)
    if (keep(e[i])) idx.push_back(i);
  if (idx.empty()) return std::nullopt;
  return idx[r.below(idx.size())];
}

std::string entry_text(const Entry& e) {
  std::ostringstream os;
  os << "(" << e.row << ", " << e.col << ") = " << e.v;
  return os.str();
}

std::vector<MutantKind> make_kinds() {
  std::vector<MutantKind> k;
  // --- embedding
  k.push_back({"embed.flip_sign", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "embed.flip_sign", {-1, 0});
                 const std::uint32_t t = r.pick(p.consumed);
                 edit(f.chip->embed.w, [&](auto& e) {
                   auto i = pick_entry(e, r, [&](const Entry& x) { return x.col == t; });
                   if (!i) throw std::runtime_error("empty embedding column");
                   f.target = "E" + entry_text(e[*i]) + " (token " + format::token_name(t) + ") negated";
                   e[*i].v = -e[*i].v;
                 });
                 return f;
               }});
  k.push_back({"embed.zero_column", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "embed.zero_column", {-1, 0});
                 const std::uint32_t t = r.pick(p.consumed);
                 f.target = "embedding column of token " + format::token_name(t) + " zeroed";
                 edit(f.chip->embed.w, [&](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.col == t; }); });
                 return f;
               }});
  k.push_back({"embed.zero_row", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "embed.zero_row", {-1, 0});
                 std::set<std::uint32_t> rows;
                 for (const Entry& x : entries(c.embed.w))
                   if (p.consumed.count(x.col)) rows.insert(x.row);
                 const std::uint32_t d = r.pick(rows);
                 const chip::Field* fld = c.field_at(d);
                 f.target = "embedding row " + std::to_string(d) + " (field " + (fld ? fld->name : "?") + ") zeroed";
                 edit(f.chip->embed.w, [&](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == d; }); });
                 return f;
               }});
  k.push_back({"embed.scale", [](const Chip& c, const ActivityProfile&, SplitMix64&) {
                 Mutant f = start(c, "embed.scale", {-1, 0});
                 f.target = "the whole embedding scaled by 2";
                 for (float& v : f.chip->embed.w.values) v *= 2;
                 return f;
               }});
  // --- unembedding
  k.push_back({"unembed.zero_weight", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "unembed.zero_weight", {-1, 3});
                 const std::uint32_t t = r.pick(p.produced);
                 edit(f.chip->unembed.w, [&](auto& e) {
                   auto i = pick_entry(e, r, [&](const Entry& x) { return x.row == t; });
                   if (!i) throw std::runtime_error("empty unembedding row");
                   f.target = "U" + entry_text(e[*i]) + " (token " + format::token_name(t) + ") zeroed";
                   e[*i].v = 0;
                 });
                 return f;
               }});
  k.push_back({"unembed.flip_sign", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "unembed.flip_sign", {-1, 3});
                 const std::uint32_t t = r.pick(p.produced);
                 edit(f.chip->unembed.w, [&](auto& e) {
                   auto i = pick_entry(e, r, [&](const Entry& x) { return x.row == t; });
                   if (!i) throw std::runtime_error("empty unembedding row");
                   f.target = "U" + entry_text(e[*i]) + " (token " + format::token_name(t) + ") negated";
                   e[*i].v = -e[*i].v;
                 });
                 return f;
               }});
  k.push_back({"unembed.bias", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 Mutant f = start(c, "unembed.bias", {-1, 3});
                 const std::uint32_t t = r.pick(p.produced);
                 f.chip->unembed.bias[t] -= 3.0f;
                 f.target = "unembedding bias of token " + format::token_name(t) + " - 3";
                 return f;
               }});
  // --- MLPs
  k.push_back({"mlp.flip_sign_w1", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, j] = live_unit(p, r);
                 Mutant f = start(c, "mlp.flip_sign_w1", {l, 2});
                 edit(f.chip->layers[l].mlp.w1.w, [&, l = l, j = j](auto& e) {
                   auto i = pick_entry(e, r, [&](const Entry& x) { return x.row == j; });
                   if (!i) throw std::runtime_error("unit without inputs");
                   f.target = unit_text(l, j) + ": W1" + entry_text(e[*i]) + " negated";
                   e[*i].v = -e[*i].v;
                 });
                 return f;
               }});
  k.push_back({"mlp.zero_w1_row", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, j] = live_unit(p, r);
                 Mutant f = start(c, "mlp.zero_w1_row", {l, 2});
                 f.target = unit_text(l, j) + ": W1 row zeroed (bias kept)";
                 edit(f.chip->layers[l].mlp.w1.w, [j = j](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == j; }); });
                 return f;
               }});
  k.push_back({"mlp.drop_unit", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, j] = live_unit(p, r);
                 Mutant f = start(c, "mlp.drop_unit", {l, 2});
                 f.target = unit_text(l, j) + " dropped (W1 row, b1 and W2 column zeroed)";
                 chip::Mlp& m = f.chip->layers[l].mlp;
                 edit(m.w1.w, [j = j](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == j; }); });
                 m.w1.bias[j] = 0;
                 edit(m.w2.w, [j = j](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.col == j; }); });
                 return f;
               }});
  k.push_back({"mlp.dead_unit", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 // A unit that never fires in the profiled workload: changes nothing there (a
                 // mutation score counts it only where the oracle shows a change).
                 const int l = pick_layer(p.dead_units, r);
                 const std::uint32_t j = r.pick(p.dead_units.at(l));
                 Mutant f = start(c, "mlp.dead_unit", {l, 2});
                 f.target = unit_text(l, j) + " (never fires in the profiled workload) dropped";
                 chip::Mlp& m = f.chip->layers[l].mlp;
                 edit(m.w1.w, [j](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == j; }); });
                 m.w1.bias[j] = 0;
                 edit(m.w2.w, [j](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.col == j; }); });
                 return f;
               }});
  k.push_back({"mlp.perturb_b1", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, j] = live_unit(p, r);
                 Mutant f = start(c, "mlp.perturb_b1", {l, 2});
                 f.chip->layers[l].mlp.w1.bias[j] -= 1.0f;
                 f.target = unit_text(l, j) + ": b1 - 1";
                 return f;
               }});
  k.push_back({"mlp.perturb_b2", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const int l = pick_layer(p.written_dims, r);
                 const std::uint32_t d = r.pick(p.written_dims.at(l));
                 Mutant f = start(c, "mlp.perturb_b2", {l, 2});
                 f.chip->layers[l].mlp.w2.bias[d] += 1.0f;
                 const chip::Field* fld = c.field_at(d);
                 f.target = "layer " + std::to_string(l) + " MLP output bias at dim " + std::to_string(d) + " (field " +
                            (fld ? fld->name : "?") + ") + 1";
                 return f;
               }});
  k.push_back({"mlp.zero_w2_row", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const int l = pick_layer(p.written_dims, r);
                 const std::uint32_t d = r.pick(p.written_dims.at(l));
                 Mutant f = start(c, "mlp.zero_w2_row", {l, 2});
                 const chip::Field* fld = c.field_at(d);
                 f.target = "layer " + std::to_string(l) + " W2 row " + std::to_string(d) + " (field " + (fld ? fld->name : "?") +
                            ") zeroed";
                 edit(f.chip->layers[l].mlp.w2.w, [d](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == d; }); });
                 return f;
               }});
  k.push_back({"mlp.scale_w2", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const int l = pick_layer(p.live_units, r);
                 Mutant f = start(c, "mlp.scale_w2", {l, 2});
                 for (float& v : f.chip->layers[l].mlp.w2.w.values) v *= 2;
                 for (float& v : f.chip->layers[l].mlp.w2.bias) v *= 2;
                 f.target = "layer " + std::to_string(l) + " W2 and b2 scaled by 2";
                 return f;
               }});
  k.push_back({"mlp.swap_fields", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 // Two residual fields of the same width written by one layer's MLP swap their outputs.
                 std::vector<std::tuple<int, std::string, std::string>> cand;
                 for (const auto& [l, dims] : p.written_dims) {
                   std::set<std::string> names;
                   for (std::uint32_t d : dims)
                     if (const chip::Field* fl = c.field_at(d)) names.insert(fl->name);
                   for (const auto& a : names)
                     for (const auto& b : names)
                       if (a < b && c.find_field(a)->width == c.find_field(b)->width) cand.emplace_back(l, a, b);
                 }
                 if (cand.empty()) throw std::runtime_error("no two same-width fields written by one MLP");
                 const auto [l, a, b] = cand[r.below(cand.size())];
                 Mutant f = start(c, "mlp.swap_fields", {l, 2});
                 const chip::Field& A = *c.find_field(a);
                 const chip::Field& B = *c.find_field(b);
                 f.target = "layer " + std::to_string(l) + " MLP outputs of fields " + a + " and " + b + " swapped";
                 auto remap = [&](std::uint32_t d) {
                   if (d >= A.offset && d < A.offset + A.width) return d - A.offset + B.offset;
                   if (d >= B.offset && d < B.offset + B.width) return d - B.offset + A.offset;
                   return d;
                 };
                 chip::LinearMap& w2 = f.chip->layers[l].mlp.w2;
                 edit(w2.w, [&](auto& e) {
                   for (Entry& x : e) x.row = remap(x.row);
                 });
                 std::vector<float> bias = w2.bias;
                 for (std::uint32_t d = 0; d < bias.size(); ++d) w2.bias[remap(d)] = bias[d];
                 return f;
               }});
  // --- memory heads
  k.push_back({"head.beta_zero", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_head(p, r);
                 Mutant f = start(c, "head.beta_zero", {l, 1});
                 chip::LinearMap& b = f.chip->layers[l].heads[h].beta;
                 edit(b.w, [](auto& e) { e.clear(); });
                 std::fill(b.bias.begin(), b.bias.end(), 0.0f);
                 f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": beta forced to 0";
                 return f;
               }});
  k.push_back({"head.swap", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 // Two heads of one layer swap places (their initialised states stay where they were).
                 std::vector<std::tuple<int, std::uint32_t, std::uint32_t>> cand;
                 for (const auto& [l, hs] : p.live_heads) {
                   const auto& H = c.layers[l].heads;
                   for (std::uint32_t a : hs)
                     for (std::uint32_t b = 0; b < H.size(); ++b)
                       if (b != a && H[a].key_dim == H[b].key_dim && H[a].value_dim == H[b].value_dim) cand.emplace_back(l, std::min(a, b), std::max(a, b));
                 }
                 if (cand.empty()) throw std::runtime_error("no layer with two heads of one shape");
                 const auto [l, a, b] = cand[r.below(cand.size())];
                 Mutant f = start(c, "head.swap", {l, 1});
                 std::swap(f.chip->layers[l].heads[a], f.chip->layers[l].heads[b]);
                 f.target = "layer " + std::to_string(l) + " heads " + std::to_string(a) + " and " + std::to_string(b) + " swapped";
                 return f;
               }});
  k.push_back({"head.k_activation", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_relu_head(c, p, r, [](const chip::Head& hd) -> const LinearMap& { return hd.k; });
                 Mutant f = start(c, "head.k_activation", {l, 1});
                 auto& act = f.chip->layers[l].heads[h].k.act;
                 act = act == chip::Activation::Relu ? chip::Activation::Identity : chip::Activation::Relu;
                 f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": k activation " +
                            (act == chip::Activation::Relu ? "identity -> ReLU" : "ReLU -> identity");
                 return f;
               }});
  // (An MLP's activation is fixed by the format: w1 of a plain MLP must be ReLU, so the
  // activation faults change the heads' declared activations.)
  k.push_back({"head.q_activation", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_relu_head(c, p, r, [](const chip::Head& hd) -> const LinearMap& { return hd.q; });
                 Mutant f = start(c, "head.q_activation", {l, 1});
                 auto& act = f.chip->layers[l].heads[h].q.act;
                 act = act == chip::Activation::Relu ? chip::Activation::Identity : chip::Activation::Relu;
                 f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": q activation " +
                            (act == chip::Activation::Relu ? "identity -> ReLU" : "ReLU -> identity");
                 return f;
               }});
  k.push_back({"head.beta_activation", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_relu_head(c, p, r, [](const chip::Head& hd) -> const LinearMap& { return hd.beta; });
                 Mutant f = start(c, "head.beta_activation", {l, 1});
                 auto& act = f.chip->layers[l].heads[h].beta.act;
                 act = act == chip::Activation::Relu ? chip::Activation::Identity : chip::Activation::Relu;
                 f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": beta activation " +
                            (act == chip::Activation::Relu ? "identity -> ReLU" : "ReLU -> identity");
                 return f;
               }});
  k.push_back({"head.flip_sign_o", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_head(p, r);
                 Mutant f = start(c, "head.flip_sign_o", {l, 1});
                 edit(f.chip->layers[l].heads[h].o.w, [&, l = l, h = h](auto& e) {
                   auto i = pick_entry(e, r, [](const Entry&) { return true; });
                   if (!i) throw std::runtime_error("head without output");
                   f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": W_o" + entry_text(e[*i]) + " negated";
                   e[*i].v = -e[*i].v;
                 });
                 return f;
               }});
  k.push_back({"head.zero_v_row", [](const Chip& c, const ActivityProfile& p, SplitMix64& r) {
                 const auto [l, h] = live_head(p, r);
                 Mutant f = start(c, "head.zero_v_row", {l, 1});
                 std::set<std::uint32_t> rows;
                 for (const Entry& x : entries(c.layers[l].heads[h].v.w)) rows.insert(x.row);
                 if (rows.empty()) throw std::runtime_error("head without value map");
                 const std::uint32_t v = r.pick(rows);
                 edit(f.chip->layers[l].heads[h].v.w, [v](auto& e) { std::erase_if(e, [&](const Entry& x) { return x.row == v; }); });
                 f.target = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": W_v row " + std::to_string(v) + " zeroed";
                 return f;
               }});
  // --- state initialisers (they write the state the memory block of their layer reads)
  auto bytes_init = [](const Chip& c, SplitMix64& r, bool image_only) {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < c.config.initialisers.size(); ++i) {
      const chip::Initialiser& in = c.config.initialisers[i];
      if (!in.is_const && (!image_only || in.source == chip::ByteSourceKind::Image)) idx.push_back(i);
    }
    return idx[r.below(idx.size())];
  };
  k.push_back({"init.wrong_address", [bytes_init](const Chip& c, const ActivityProfile&, SplitMix64& r) {
                 const std::size_t i = bytes_init(c, r, true);
                 const chip::Initialiser& in = c.config.initialisers[i];
                 Mutant f = start(c, "init.wrong_address", {static_cast<int>(in.layer), 1});
                 f.chip->config.initialisers[i].address += 4;
                 f.target = "initialiser " + in.name + ": address + 4";
                 return f;
               }});
  k.push_back({"init.off_by_one_byte", [bytes_init](const Chip& c, const ActivityProfile&, SplitMix64& r) {
                 const std::size_t i = bytes_init(c, r, false);
                 const chip::Initialiser& in = c.config.initialisers[i];
                 Mutant f = start(c, "init.off_by_one_byte", {static_cast<int>(in.layer), 1});
                 chip::Initialiser& m = f.chip->config.initialisers[i];
                 if (m.source == chip::ByteSourceKind::Section) m.offset += 1;
                 else if (m.source == chip::ByteSourceKind::Image) m.address += 1;
                 else m.length -= 1;  // entry: the top byte is lost
                 f.target = "initialiser " + in.name + ": " +
                            (m.source == chip::ByteSourceKind::Entry ? "one byte short" : "source one byte off");
                 return f;
               }});
  k.push_back({"init.const_value", [](const Chip& c, const ActivityProfile&, SplitMix64& r) {
                 std::vector<std::size_t> idx;
                 for (std::size_t i = 0; i < c.config.initialisers.size(); ++i)
                   if (c.config.initialisers[i].is_const && !c.config.initialisers[i].values.empty()) idx.push_back(i);
                 if (idx.empty()) throw std::runtime_error("no const initialiser");
                 const std::size_t i = idx[r.below(idx.size())];
                 const chip::Initialiser& in = c.config.initialisers[i];
                 Mutant f = start(c, "init.const_value", {static_cast<int>(in.layer), 1});
                 auto& vals = f.chip->config.initialisers[i].values;
                 const std::size_t e = r.below(vals.size());
                 vals[e] = vals[e] == 0.0f ? 1.0f : 0.0f;
                 f.target = "const initialiser " + in.name + ": value " + std::to_string(e) + " flipped 0 <-> 1";
                 return f;
               }});
  return k;
}

}  // namespace

// ------------------------------------------------------------------ public

void ActivityProfile::add_decisions(const Chip& c, const chip::DecisionCoverage& cov) {
  for (std::size_t l = 0; l < cov.layers.size() && l < c.layers.size(); ++l) {
    const int li = static_cast<int>(l);
    const chip::Mlp& m = c.layers[l].mlp;
    for (std::size_t h = 0; h < cov.layers[l].head_writes.size(); ++h)
      if (cov.layers[l].head_writes[h] > 0) live_heads[li].insert(static_cast<std::uint32_t>(h));
    if (m.kind != chip::MlpKind::Relu) continue;
    for (std::uint32_t j = 0; j < m.hidden && j < cov.layers[l].active.size(); ++j) {
      if (cov.layers[l].active[j] > 0) {
        if (m.w2.w.col_ptr[j + 1] > m.w2.w.col_ptr[j]) live_units[li].insert(j);
        for (std::uint32_t i = m.w2.w.col_ptr[j]; i < m.w2.w.col_ptr[j + 1]; ++i) written_dims[li].insert(m.w2.w.row_idx[i]);
      } else {
        dead_units[li].insert(j);
      }
    }
  }
}

const std::vector<MutantKind>& mutant_kinds() {
  static const std::vector<MutantKind> kinds = make_kinds();
  return kinds;
}

std::uint64_t mutant_seed(std::uint64_t seed, std::uint64_t index) {
  SplitMix64 r{seed ^ (0x6D75'7461'6E74ull * (index + 1))};  // "mutant"
  r.next();
  return r.next();
}

std::size_t Workload::guests() const {
  std::size_t n = 0;
  for (const Part& p : parts) n += p.guests.size();
  return n;
}

nlohmann::json MutantResult::to_json() const {
  nlohmann::json j = {{"index", index}, {"seed", seed}, {"kind", kind}, {"target", target}, {"planted", planted}};
  if (!planted) {
    j["error"] = error;
    return j;
  }
  j["caught"] = caught;
  j["non_equivalent"] = non_equivalent;
  if (caught) j["caught_by"] = caught_by;
  if (non_equivalent) {
    j["changed_in"] = changed_in;
    j["changed_at_step"] = changed_at;
  }
  if (!timed_out.empty()) j["timed_out"] = timed_out;
  if (!saved.empty()) j["saved_chip"] = saved;
  if (!save_error.empty()) j["save_error"] = save_error;
  return j;
}

double MutationReport::score() const {
  return non_equivalent ? static_cast<double>(caught) / static_cast<double>(non_equivalent) : 1.0;
}

nlohmann::json MutationReport::to_json() const {
  nlohmann::json ms = nlohmann::json::array();
  for (const MutantResult& m : mutants) ms.push_back(m.to_json());
  return {{"mutants", mutants.size()}, {"planted", planted}, {"non_equivalent", non_equivalent},
          {"caught", caught}, {"timed_out", timed_out}, {"score", score()}, {"seconds", seconds},
          {"unmodified_corpus_seconds", corpus_seconds}, {"unmodified_oracle_seconds", oracle_seconds},
          {"interrupted", interrupted}, {"results", ms}};
}

namespace {

// Where a workload first shows a fault: the guest and the step of its first divergence.
struct Hit {
  std::string guest;  // "error: ..." for an engine error
  std::uint64_t step = 0;
  bool timed_out = false;  // the run went past its deadline (guest: the one running then)
  bool interrupted = false;  // `outer_stop` ended the run: nothing is known
};

using Clock = std::chrono::steady_clock;

// Runs the guests of a workload teacher-forced on `be`; the first guest with a mismatch (or
// an engine error), or nullopt. `on_result` sees every stream result. With a deadline, a batch
// that would start after it, or is still running at it (stopping at its next round), gives a
// Hit with timed_out set.
std::optional<Hit> first_mismatch(chip::ChipBackend& be, const Workload& w, unsigned batch,
                                  const std::function<void(const engine::Guest&, const engine::StreamResult&)>& on_result = {},
                                  std::optional<Clock::time_point> deadline = std::nullopt,
                                  const std::atomic<bool>* outer_stop = nullptr) {
  std::atomic<bool> stop{false};
  auto stopped = [&] { return outer_stop && outer_stop->load(); };
  for (const Workload::Part& part : w.parts) {
    for (std::size_t first = 0; first < part.guests.size(); first += batch) {
      std::vector<engine::Guest> guests(part.guests.begin() + static_cast<std::ptrdiff_t>(first),
                                        part.guests.begin() + static_cast<std::ptrdiff_t>(std::min(part.guests.size(), first + batch)));
      if (stopped()) return Hit{guests.front().name, 0, false, true};
      if (deadline && Clock::now() >= *deadline) return Hit{guests.front().name, 0, true};
      engine::Options opt;
      opt.mode = engine::Mode::kForced;
      opt.max_steps = part.max_steps;
      opt.classify_window = 0;
      if (deadline) {
        opt.stop = &stop;
        opt.progress_interval = 0.05;
        opt.on_progress = [&](const engine::Progress&) {
          if (Clock::now() >= *deadline || stopped()) stop = true;
        };
      } else if (outer_stop) {
        opt.stop = outer_stop;
      }
      engine::RunResult r;
      try {
        engine::Engine e(be, guests, opt);
        r = e.run();
      } catch (const std::exception& ex) {
        if (stopped()) return Hit{guests.front().name, 0, false, true};
        return Hit{"error: " + std::string(ex.what()), 0};
      }
      if (stopped()) return Hit{guests.front().name, 0, false, true};  // a mismatch in a cut run is not trusted
      for (std::size_t i = 0; i < r.streams.size(); ++i) {
        if (on_result) on_result(guests[i], r.streams[i]);
        if (r.streams[i].mismatches > 0)
          return Hit{guests[i].name, r.streams[i].divergence ? r.streams[i].divergence->step : 0};
      }
      if (r.interrupted)
        for (std::size_t i = 0; i < r.streams.size(); ++i)
          if (r.streams[i].end == "interrupted") return Hit{guests[i].name, 0, true};
    }
  }
  return std::nullopt;
}

// The one-line error for an unmodified chip that mismatches on guest `hit.guest` of the
// `workload` ("corpus" or "oracle").
[[noreturn]] void inexact_chip(const std::string& workload, const Hit& hit) {
  throw std::runtime_error("the unmodified chip mismatches on " + workload + " guest " + hit.guest +
                           (hit.step ? " at step " + std::to_string(hit.step) : std::string()) +
                           ": a mutation score needs a chip that is exact on its corpus and its oracle workload");
}

}  // namespace

ActivityProfile profile_workload(const std::shared_ptr<const Chip>& c, const Workload& corpus) {
  ActivityProfile p;
  chip::CpuExecutor be(c, 1);
  std::map<std::string, std::uint64_t> steps;
  if (auto bad = first_mismatch(be, corpus, 32, [&](const engine::Guest& g, const engine::StreamResult& r) {
        steps[g.name] = std::max(steps[g.name], r.steps);
      }))
    inexact_chip("corpus", *bad);
  // Teacher-forced equals free-running on an exact chip: feed the chip its own predictions.
  chip::CpuExecutor ex(c, 1);
  ex.set_decision_coverage(true);
  for (const Workload::Part& part : corpus.parts)
    for (const engine::Guest& g : part.guests) {
      ex.reset(0, engine::to_chip_image(g.image));
      std::uint32_t in = format::kStartToken;
      for (std::uint64_t i = 0; i < steps[g.name]; ++i) {
        p.consumed.insert(in);
        in = ex.step(0, in);
        p.produced.insert(in);
      }
    }
  p.add_decisions(*c, ex.decision_coverage());
  return p;
}

std::vector<std::size_t> distill_corpus(const std::shared_ptr<const Chip>& c, const Workload& base,
                                        const std::vector<engine::Guest>& pool, std::uint64_t max_steps,
                                        unsigned batch, const std::atomic<bool>* stop) {
  chip::CpuExecutor be(c, 1);
  be.set_decision_coverage(true);
  std::vector<std::vector<char>> fired(c->layers.size());
  for (std::size_t l = 0; l < c->layers.size(); ++l) fired[l].assign(c->layers[l].mlp.hidden, 0);
  // Marks the units the executor saw active since its last clear; true when one is new.
  auto absorb = [&] {
    const chip::DecisionCoverage cov = be.decision_coverage();
    bool added = false;
    for (std::size_t l = 0; l < cov.layers.size(); ++l)
      for (std::size_t u = 0; u < cov.layers[l].active.size(); ++u)
        if (cov.layers[l].active[u] > 0 && !fired[l][u]) fired[l][u] = added = true;
    return added;
  };
  if (auto bad = first_mismatch(be, base, batch))
    inexact_chip("corpus", *bad);
  absorb();
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    be.clear_decision_coverage();
    Workload one;
    one.parts.push_back({{pool[i]}, max_steps});
    if (auto bad = first_mismatch(be, one, 1)) inexact_chip("corpus pool", *bad);
    if (absorb()) kept.push_back(i);
    if (stop && stop->load()) break;  // the caller sees the stop
  }
  return kept;
}

MutationReport run_mutants(const std::shared_ptr<const Chip>& original, const ActivityProfile& profile,
                           const Workload& corpus, const Workload& oracle, const MutationOptions& o,
                           const std::function<void(const MutantResult&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  // The kinds in the order given (found by an outside tester: --kinds head.swap,embed.scale
  // planted embed.scale first), or every kind in mutant_kinds() order.
  std::vector<const MutantKind*> kinds;
  if (o.kinds.empty())
    for (const MutantKind& k : mutant_kinds()) kinds.push_back(&k);
  for (const std::string& name : o.kinds) {
    const auto& all = mutant_kinds();
    const auto it = std::find_if(all.begin(), all.end(), [&](const MutantKind& k) { return k.name == name; });
    if (it == all.end()) throw std::invalid_argument("unknown mutant kind '" + name + "'");
    kinds.push_back(&*it);
  }
  if (kinds.empty()) throw std::invalid_argument("no mutant kind selected");
  MutationReport rep;
  // The unmodified chip runs the corpus and the oracle first, timed (the budgets are a multiple
  // of its times) and checked exact: a chip that is wrong on the oracle would have its own fault
  // counted as every harmless mutant's "survival" (found by an outside tester: with
  // --timeout-factor 0 the oracle was never checked, and by default only before the first oracle
  // run, blamed on the corpus). A stop here leaves no mutant scored.
  auto timed_run = [&](const Workload& w, const char* name) -> std::optional<double> {
    chip::CpuExecutor be(original, 1);
    const auto start = Clock::now();
    if (auto bad = first_mismatch(be, w, o.batch, {}, std::nullopt, o.stop)) {
      if (bad->interrupted) return std::nullopt;
      inexact_chip(name, *bad);
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  auto budget = [&](double base) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(o.timeout_factor * base, o.min_timeout_seconds)));
  };
  {
    const std::optional<double> c = timed_run(corpus, "corpus");
    const std::optional<double> r = c ? timed_run(oracle, "oracle") : std::nullopt;
    if (!c || !r) {
      rep.interrupted = true;
      rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return rep;
    }
    rep.corpus_seconds = *c;
    rep.oracle_seconds = *r;
  }
  for (std::uint64_t i = o.first; i < o.first + o.count; ++i) {
    if (o.stop && o.stop->load()) {
      rep.interrupted = true;
      break;
    }
    MutantResult res;
    res.index = i;
    res.seed = mutant_seed(o.seed, i);
    const MutantKind& k = *kinds[i % kinds.size()];
    res.kind = k.name;
    SplitMix64 rng{res.seed};
    std::shared_ptr<Chip> mutated;
    try {
      Mutant m = k.make(*original, profile, rng);
      m.chip->validate();
      res.target = m.target;
      mutated = m.chip;
      res.planted = true;
    } catch (const std::exception& e) {
      res.error = e.what();
    }
    if (res.planted) {
      ++rep.planted;
      chip::CpuExecutor be(mutated, 1);
      std::optional<Clock::time_point> deadline;
      if (o.timeout_factor > 0) deadline = Clock::now() + budget(rep.corpus_seconds);
      std::optional<Hit> in;
      std::optional<Hit> by = first_mismatch(be, corpus, o.batch, {}, deadline, o.stop);
      if (by && by->interrupted) {
        rep.interrupted = true;  // this mutant is not counted
        --rep.planted;
        break;
      }
      if (by) {
        res.caught = res.non_equivalent = true;
        res.caught_by = res.changed_in = by->guest;
        res.changed_at = by->step;
        if (by->timed_out) res.timed_out = "corpus";
      } else {
        if (o.timeout_factor > 0) deadline = Clock::now() + budget(rep.oracle_seconds);
        in = first_mismatch(be, oracle, o.batch, {}, deadline, o.stop);
        if (in && in->interrupted) {
          rep.interrupted = true;  // this mutant is not counted
          --rep.planted;
          break;
        }
      }
      if (in) {
        res.non_equivalent = true;
        res.changed_in = in->guest;
        res.changed_at = in->step;
        if (in->timed_out) res.timed_out = "oracle";
        if (!o.save_survivors.empty()) {
          const std::filesystem::path f =
              std::filesystem::path(o.save_survivors) / ("mutant-" + std::to_string(i) + ".chip");
          // A survivor whose chip cannot be written (a full disk, a folder of its name) is still
          // scored; the failure is its note, and no partial file is left to be taken for its chip
          // (found by an outside tester: the run ended there and every result was lost).
          try {
            std::filesystem::create_directories(o.save_survivors);  // made and checked by the caller too
            chip::save_chip(*mutated, f.string());
            res.saved = f.string();
          } catch (const std::exception& e) {
            std::error_code ec;
            if (std::filesystem::is_regular_file(f, ec)) std::filesystem::remove(f, ec);
            res.save_error = e.what();
          }
        }
      }
      rep.caught += res.caught;
      rep.non_equivalent += res.non_equivalent;
      rep.timed_out += !res.timed_out.empty();
    }
    if (progress) progress(res);
    rep.mutants.push_back(std::move(res));
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace lockstep::mutate
