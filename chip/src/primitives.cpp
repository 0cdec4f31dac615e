#include "lockstep/chip/compiler/primitives.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

namespace lockstep::chip::compiler {

bool is_zero(const Lin& l) { return l.terms.empty() && l.c == 0; }

void when(LayerBuilder& L, const std::vector<Lin>& conds, const SparseVec& outs) {
  Lin s;
  for (const Lin& c : conds) s += c;
  const std::uint32_t u = L.relu_unit(s - static_cast<double>(conds.size() - 1));
  for (const auto& [d, v] : outs) L.unit_out(u, d, v);
}

void table(LayerBuilder& L, const std::vector<OneHot>& parts,
           const std::function<SparseVec(const std::vector<unsigned>&)>& fn, const std::vector<Lin>& gates) {
  std::vector<unsigned> vals(parts.size(), 0);
  const double n = static_cast<double>(parts.size() + gates.size());
  std::function<void(std::size_t, Lin)> rec = [&](std::size_t p, Lin acc) {
    if (p == parts.size()) {
      const SparseVec out = fn(vals);
      if (out.empty()) return;
      Lin pre = acc;
      for (const Lin& g : gates) pre += g;
      pre = pre - (n - 1);
      const std::uint32_t u = L.relu_unit(pre);
      for (const auto& [d, v] : out) L.unit_out(u, d, v);
      return;
    }
    for (unsigned v = 0; v < parts[p].size(); ++v) {
      if (is_zero(parts[p][v])) continue;
      vals[p] = v;
      rec(p + 1, acc + parts[p][v]);
    }
  };
  rec(0, Lin());
}

void decode_lookup(LayerBuilder& L, const Lin& x, const std::vector<SparseVec>& table) {
  const int n = static_cast<int>(table.size());
  auto T = [&](int i) -> const SparseVec* { return i >= 0 && i < n ? &table[static_cast<std::size_t>(i)] : nullptr; };
  for (int j = -1; j <= n; ++j) {
    // coefficient of r_j = ReLU(x - j):  T[j+1] - 2 T[j] + T[j-1]
    std::map<std::uint32_t, double> c;
    if (const SparseVec* t = T(j + 1)) for (const auto& [d, v] : *t) c[d] += v;
    if (const SparseVec* t = T(j)) for (const auto& [d, v] : *t) c[d] -= 2 * v;
    if (const SparseVec* t = T(j - 1)) for (const auto& [d, v] : *t) c[d] += v;
    bool any = false;
    for (const auto& [d, v] : c) any = any || v != 0;
    if (!any) continue;
    const std::uint32_t u = L.relu_unit(x - static_cast<double>(j));
    for (const auto& [d, v] : c)
      if (v != 0) L.unit_out(u, d, v);
  }
}

void onehot_decode(LayerBuilder& L, const Lin& x, const FieldRef& out) {
  std::vector<SparseVec> table(out.width);
  for (std::uint32_t i = 0; i < out.width; ++i) table[i] = {{out.dim(i), 1.0}};
  decode_lookup(L, x, table);
}

void lookup(LayerBuilder& L, const FieldRef& onehot, const std::vector<SparseVec>& table) {
  if (table.size() > onehot.width) throw std::logic_error("lookup: table longer than the one-hot field");
  for (std::uint32_t i = 0; i < table.size(); ++i) {
    if (table[i].empty()) continue;
    const std::uint32_t u = L.relu_unit(onehot[i]);
    for (const auto& [d, v] : table[i]) L.unit_out(u, d, v);
  }
}

void threshold(LayerBuilder& L, const Lin& x, double t, std::uint32_t out, double coef) {
  const std::uint32_t a = L.relu_unit(x - (t - 1));
  const std::uint32_t b = L.relu_unit(x - t);
  L.unit_out(a, out, coef);
  L.unit_out(b, out, -coef);
}

void threshold_if(LayerBuilder& L, const Lin& x, double t, double hi, const Lin& enable, std::uint32_t out,
                  double coef) {
  const double M = hi - t + 1;
  const Lin off = enable * M - M;  // 0 when enabled, -M when not
  const std::uint32_t a = L.relu_unit(x - (t - 1) + off);
  const std::uint32_t b = L.relu_unit(x - t + off);
  L.unit_out(a, out, coef);
  L.unit_out(b, out, -coef);
}

void compare_ge(LayerBuilder& L, const Lin& a, const Lin& b, std::uint32_t out) { threshold(L, a - b, 0, out); }

namespace {
// sum = r0 - base r1 + base r2 has partial sums up to base^2: keep them inside fp32's 2^24.
void check_base(double base) {
  if (!(base >= 2 && base * base < 16777216.0 && base == static_cast<double>(static_cast<long long>(base))))
    throw std::logic_error("add_with_carry: base " + std::to_string(base) + " must be an integer in [2, 4096) (base^2 < 2^24)");
}
}  // namespace

void add_with_carry(LayerBuilder& L, const Lin& a, const Lin& b, const Lin& cin, std::uint32_t sum,
                    std::uint32_t carry, double base) {
  check_base(base);
  const Lin s = a + b + cin;
  const std::uint32_t r0 = L.relu_unit(s);
  const std::uint32_t r1 = L.relu_unit(s - (base - 1));
  const std::uint32_t r2 = L.relu_unit(s - base);
  L.unit_out(r0, sum, 1);
  L.unit_out(r1, sum, -base);
  L.unit_out(r2, sum, base);
  L.unit_out(r1, carry, 1);
  L.unit_out(r2, carry, -1);
}

void add_with_carry_if(LayerBuilder& L, const Lin& a, const Lin& b, const Lin& cin, const Lin& enable,
                       std::uint32_t sum, std::uint32_t carry, double base) {
  check_base(base);
  const Lin s = a + b + cin;
  const double M = base;  // max s - base + 1 with s <= 2 base - 1
  const Lin off = enable * M - M;
  const std::uint32_t r0 = L.gated_unit(s, enable);
  const std::uint32_t r1 = L.relu_unit(s - (base - 1) + off);
  const std::uint32_t r2 = L.relu_unit(s - base + off);
  L.unit_out(r0, sum, 1);
  L.unit_out(r1, sum, -base);
  L.unit_out(r2, sum, base);
  L.unit_out(r1, carry, 1);
  L.unit_out(r2, carry, -1);
}

void gated_product(LayerBuilder& L, const Lin& u, const Lin& g, std::uint32_t out, double coef) {
  L.unit_out(L.gated_unit(u, g), out, coef);
}

void and_bits(LayerBuilder& L, const std::vector<Lin>& bits, std::uint32_t out, double coef) {
  Lin s;
  for (const Lin& b : bits) s += b;
  L.unit_out(L.relu_unit(s - static_cast<double>(bits.size() - 1)), out, coef);
}

void pass(LayerBuilder& L, const Lin& v, std::uint32_t out, double coef) { L.unit_out(L.relu_unit(v), out, coef); }

// ---- memory ----

Memory add_memory(ChipBuilder& B, std::uint32_t layer, const std::string& name, std::uint32_t slots,
                  std::uint32_t width, std::uint32_t max_key_dim) {
  if (slots == 0 || width == 0 || max_key_dim == 0) throw std::logic_error("add_memory: empty memory '" + name + "'");
  Memory m;
  m.name = name;
  m.layer = layer;
  m.slots = slots;
  m.width = width;
  m.key_dim = std::min(slots, max_key_dim);
  LayerBuilder& L = B.layer(layer);
  for (std::uint32_t s = 0; s < slots; s += m.key_dim) m.heads.push_back(L.add_head(m.key_dim, width));
  return m;
}

void memory_write(ChipBuilder& B, const Memory& m, const FieldRef& addr, const std::vector<Lin>& value,
                  const Lin& enable) {
  if (value.size() != m.width) throw std::logic_error("memory_write: value width mismatch for '" + m.name + "'");
  LayerBuilder& L = B.layer(m.layer);
  for (std::uint32_t hi = 0; hi < m.heads.size(); ++hi) {
    HeadBuilder& H = L.head(m.heads[hi]);
    Lin sel;
    for (std::uint32_t c = 0; c < m.key_dim; ++c) {
      const std::uint32_t s = hi * m.key_dim + c;
      if (s >= m.slots || s >= addr.width) break;
      H.k[c] += addr[s];
      sel += addr[s];
    }
    H.beta += enable + sel - 1.0;
    for (std::uint32_t i = 0; i < m.width; ++i) H.v[i] += value[i];
  }
}

void memory_write_slot(ChipBuilder& B, const Memory& m, std::uint32_t slot, const std::vector<Lin>& value,
                       const Lin& enable) {
  if (value.size() != m.width || slot >= m.slots) throw std::logic_error("memory_write_slot: bad slot or width for '" + m.name + "'");
  HeadBuilder& H = B.layer(m.layer).head(m.heads[slot / m.key_dim]);
  H.k[slot % m.key_dim] += Lin::constant(1);
  H.beta += enable;
  for (std::uint32_t i = 0; i < m.width; ++i) H.v[i] += value[i];
}

void memory_read(ChipBuilder& B, const Memory& m, const FieldRef& addr, const FieldRef& out) {
  if (out.width != m.width) throw std::logic_error("memory_read: output width mismatch for '" + m.name + "'");
  LayerBuilder& L = B.layer(m.layer);
  for (std::uint32_t hi = 0; hi < m.heads.size(); ++hi) {
    HeadBuilder& H = L.head(m.heads[hi]);
    for (std::uint32_t c = 0; c < m.key_dim; ++c) {
      const std::uint32_t s = hi * m.key_dim + c;
      if (s >= m.slots || s >= addr.width) break;
      H.q[c] += addr[s];
    }
    for (std::uint32_t i = 0; i < m.width; ++i) H.out.emplace_back(i, out.dim(i), 1.0);
  }
}

void memory_read_slot(ChipBuilder& B, const Memory& m, std::uint32_t slot, const FieldRef& out) {
  if (out.width != m.width || slot >= m.slots) throw std::logic_error("memory_read_slot: bad slot or width for '" + m.name + "'");
  HeadBuilder& H = B.layer(m.layer).head(m.heads[slot / m.key_dim]);
  H.q[slot % m.key_dim] += Lin::constant(1);
  for (std::uint32_t i = 0; i < m.width; ++i) H.out.emplace_back(i, out.dim(i), 1.0);
}

// An initialiser's name: `name`, with "#<head>" when the memory spans several heads. Appended
// piecewise: GCC 12 at -O3 reports a false -Werror=restrict inside std::string's operator+ for
// `name + (cond ? "#" + std::to_string(hi) : "")` (GCC bug 105329).
static std::string head_name(const std::string& name, const Memory& m, std::uint32_t hi) {
  std::string out = name;
  if (m.heads.size() > 1) {
    out += '#';
    out += std::to_string(hi);
  }
  return out;
}

void memory_init_bytes(ChipBuilder& B, const Memory& m, std::uint32_t first_slot, Initialiser proto) {
  const std::uint64_t bpc = proto.bytes_per_column;
  if (bpc == 0) throw std::logic_error("memory_init_bytes: bytes_per_column is 0");
  const std::uint64_t n_slots = (proto.length + bpc - 1) / bpc;
  if (first_slot + n_slots > m.slots) throw std::logic_error("memory_init_bytes: '" + proto.name + "' exceeds memory '" + m.name + "'");
  std::uint64_t slot = first_slot;
  std::uint64_t byte = 0;
  while (byte < proto.length) {
    const std::uint32_t hi = static_cast<std::uint32_t>(slot / m.key_dim);
    const std::uint64_t head_end = static_cast<std::uint64_t>(hi + 1) * m.key_dim;
    const std::uint64_t bytes_here = std::min(proto.length - byte, (head_end - slot) * bpc);
    Initialiser in = proto;
    in.name = head_name(proto.name, m, hi);
    in.layer = m.layer;
    in.head = m.heads[hi];
    in.column = static_cast<std::uint32_t>(slot % m.key_dim);
    in.row = 0;
    in.is_const = false;
    in.length = bytes_here;
    if (proto.source == ByteSourceKind::Image) in.address = proto.address + byte;
    else if (proto.source == ByteSourceKind::Section) in.offset = proto.offset + byte;
    else if (byte != 0) throw std::logic_error("memory_init_bytes: entry source spans heads");
    B.initialiser(in);
    byte += bytes_here;
    slot = head_end;
  }
}

void memory_init_const(ChipBuilder& B, const Memory& m, const std::string& name, std::uint32_t first_slot,
                       std::uint32_t count, const std::vector<float>& values) {
  if (first_slot + count > m.slots || values.size() > m.width) throw std::logic_error("memory_init_const: out of range");
  std::uint32_t slot = first_slot;
  const std::uint32_t end = first_slot + count;
  while (slot < end) {
    const std::uint32_t hi = slot / m.key_dim;
    const std::uint32_t head_end = std::min((hi + 1) * m.key_dim, end);
    Initialiser in;
    in.name = head_name(name, m, hi);
    in.layer = m.layer;
    in.head = m.heads[hi];
    in.column = slot % m.key_dim;
    in.row = 0;
    in.is_const = true;
    in.values = values;
    in.columns = head_end - slot;
    B.initialiser(in);
    slot = head_end;
  }
}

// ---- tokens and emission ----

std::uint32_t TokenSpace::add_kind(const std::string& name, std::uint32_t count) {
  if (count == 0) throw std::logic_error("TokenSpace: kind '" + name + "' has no tokens");
  kinds_.push_back({name, next_, count});
  next_ += count;
  return static_cast<std::uint32_t>(kinds_.size() - 1);
}

Token TokenSpace::token(std::uint32_t kind, std::uint32_t payload) const {
  const Kind& k = kinds_.at(kind);
  if (payload >= k.count) throw std::out_of_range("TokenSpace: payload " + std::to_string(payload) + " out of range for " + k.name);
  return k.base + payload;
}

std::pair<std::uint32_t, std::uint32_t> TokenSpace::decode(Token t) const {
  for (std::uint32_t i = 0; i < kinds_.size(); ++i)
    if (t >= kinds_[i].base && t - kinds_[i].base < kinds_[i].count) return {i, t - kinds_[i].base};
  throw std::out_of_range("TokenSpace: token " + std::to_string(t) + " outside the vocabulary");
}

std::string TokenSpace::name(Token t) const {
  const auto [k, p] = decode(t);
  return kinds_[k].count == 1 ? kinds_[k].name : kinds_[k].name + " " + std::to_string(p);
}

void emit_onehot(ChipBuilder& B, const TokenSpace& ts, const FieldRef& kind_onehot, const FieldRef& payload_onehot,
                 double margin) {
  for (std::uint32_t k = 0; k < ts.kinds().size(); ++k) {
    const TokenSpace::Kind& K = ts.kinds()[k];
    for (std::uint32_t p = 0; p < K.count; ++p) {
      const Token t = K.base + p;
      if (K.count == 1) {
        B.unembed(t, kind_onehot.dim(k), 2 * margin);
      } else {
        B.unembed(t, kind_onehot.dim(k), margin);
        B.unembed(t, payload_onehot.dim(p), margin);
      }
      B.token_name(t, ts.name(t));
    }
  }
}

}  // namespace lockstep::chip::compiler
