// The vector unit's exact digit arithmetic (docs/chip-design.md section 3.6): sums of signed
// nibble products and column sums as digit one-hots (product_digits(), column_digits(),
// presplit()), overflow flags of a two's complement digit value, and the rounded value byte of
// a word stream (emit_rounded()).
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

FieldRef VectorUnit::product_digits(const std::string& name, std::uint32_t l, const std::vector<Term>& terms, std::uint32_t cols,
                        std::uint64_t add, const Lin& gate, std::uint32_t* done) {
  const std::uint64_t mask = cols >= 16 ? ~0ULL : (1ULL << (4 * cols)) - 1;
  const FieldRef CS = B.field(name + "_col_sums", cols);
  std::vector<unsigned> max_cs(cols, 0);
  std::uint64_t konst = add;
  for (const auto& [xs, ys] : terms)
    for (std::uint32_t i = 0; i < xs.size(); ++i)
      for (std::uint32_t j = 0; j < ys.size(); ++j) {
        const bool sx = i + 1 == xs.size(), sy = j + 1 == ys.size(), sgn = sx || sy;
        if (i + j >= cols) continue;
        if (sgn) konst -= 128ULL << (4 * (i + j));
        max_cs[i + j] += 15;
        if (i + j + 1 < cols) max_cs[i + j + 1] += 15;
        table(L(l), {xs[i], ys[j]}, [&, i, j, sx, sy, sgn](const std::vector<unsigned>& v) {
          const int xi = (sx && v[0] >= 8) ? static_cast<int>(v[0]) - 16 : static_cast<int>(v[0]);
          const int yj = (sy && v[1] >= 8) ? static_cast<int>(v[1]) - 16 : static_cast<int>(v[1]);
          const int p = xi * yj + (sgn ? 128 : 0);
          SparseVec out;
          if ((p & 15) != 0) out.push_back({CS.dim(i + j), static_cast<double>(p & 15)});
          if ((p >> 4) != 0 && i + j + 1 < cols) out.push_back({CS.dim(i + j + 1), static_cast<double>(p >> 4)});
          return out;
        }, {gate});
      }
  konst &= mask;
  for (std::uint32_t c = 0; c < cols; ++c) {
    const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
    max_cs[c] += kc;
    if (kc != 0) pass(L(l), gate, CS.dim(c), kc);
  }
  std::vector<Lin> sums;
  for (std::uint32_t c = 0; c < cols; ++c) sums.push_back(CS[c]);
  return column_digits(name, l + 1, sums, max_cs, gate, done);
}

FieldRef VectorUnit::column_digits(const std::string& name, std::uint32_t l, const std::vector<Lin>& X, std::vector<unsigned> max_cs,
                       const Lin& gate, std::uint32_t* done) {
  const std::uint32_t cols = static_cast<std::uint32_t>(X.size());
  std::vector<Lin> cur = X;
  std::uint32_t layer = l;
  for (unsigned round = 0;; ++round) {
    const FieldRef S2 = B.field(name + "_cols_split" + std::to_string(round), cols);
    LayerBuilder& ls = L(layer++);
    std::vector<unsigned> next(cols, 0);
    for (std::uint32_t c = 0; c < cols; ++c) {
      pass(ls, cur[c], S2.dim(c));
      for (unsigned t = 1; 16 * t <= max_cs[c]; ++t) {
        threshold(ls, cur[c], 16.0 * t, S2.dim(c), -16);
        if (c + 1 < cols) threshold(ls, cur[c], 16.0 * t, S2.dim(c + 1), 1);
      }
      next[c] = std::min(max_cs[c], 15u) + (c > 0 ? max_cs[c - 1] / 16 : 0);
    }
    for (std::uint32_t c = 0; c < cols; ++c) cur[c] = S2[c];
    max_cs = next;
    if (*std::max_element(max_cs.begin(), max_cs.end()) <= 30) break;
    if (round == 2) throw std::logic_error("product_digits: column sums do not settle");
  }
  const std::uint32_t width = *std::max_element(max_cs.begin(), max_cs.end()) + 1;
  const FieldRef S2H = B.field(name + "_cols_onehot", width * cols);
  const FieldRef GEN = B.field(name + "_cols_generate", cols);  // [S_c >= 16] = u(15) - u(16)
  LayerBuilder& l3 = L(layer++);
  for (std::uint32_t c = 0; c < cols; ++c)
    for (int t = -1; t <= static_cast<int>(width); ++t) {
      const std::uint32_t u = l3.relu_unit(cur[c] - static_cast<double>(t) + gate * 64.0 - 64.0);
      for (int s2 = t - 1; s2 <= t + 1; ++s2)
        if (s2 >= 0 && s2 < static_cast<int>(width))
          l3.unit_out(u, S2H.dim(width * c + static_cast<std::uint32_t>(s2)), s2 == t ? -2.0 : 1.0);
      if (width > 16 && (t == 15 || t == 16)) l3.unit_out(u, GEN.dim(c), t == 15 ? 1.0 : -1.0);
    }
  auto s2h = [&](std::uint32_t c) { return field_oh(S2H, width * c, width); };
  auto gen = [&](std::uint32_t c) { return width > 16 ? GEN[c] : Lin(); };
  const FieldRef DG = B.field(name + "_digits", 16 * cols);
  LayerBuilder& l4 = L(layer);
  for (std::uint32_t c = 0; c < cols; ++c) {
    const OH h = s2h(c);
    for (std::uint32_t v = 0; v < width; ++v) {
      pass(l4, h[v], DG.dim(16 * c + (v & 15)));
      for (std::uint32_t kk = 0; kk < c && width > 16; ++kk) {
        std::vector<Lin> conds = {h[v], gen(kk)};
        for (std::uint32_t j = kk + 1; j < c; ++j) conds.push_back(s2h(j)[15]);
        when(l4, conds, {{DG.dim(16 * c + (v & 15)), -1.0}, {DG.dim(16 * c + ((v + 1) & 15)), 1.0}});
      }
    }
  }
  if (done) *done = layer;
  return DG;
}

void VectorUnit::overflow_flags(LayerBuilder& L_, const FieldRef& DG, std::uint32_t lo, std::uint32_t cols, const FieldRef& OV,
                    const Lin& gate) {
  auto dg = [&](std::uint32_t c) { return field_oh(DG, 16 * c, 16); };
  const Lin top_lo = any_of(dg(cols - 1), [](unsigned v) { return v < 8; }), top_hi = any_of(dg(cols - 1), [](unsigned v) { return v >= 8; });
  std::vector<Lin> zero = {any_of(dg(lo), [](unsigned v) { return v < 8; }), gate};
  std::vector<Lin> ones = {any_of(dg(lo), [](unsigned v) { return v >= 8; }), gate};
  for (std::uint32_t c = lo + 1; c < cols; ++c) {
    zero.push_back(dg(c)[0]);
    ones.push_back(dg(c)[15]);
  }
  when(L_, {top_lo, gate}, {{OV.dim(0), 1.0}});
  when(L_, zero, {{OV.dim(0), -1.0}});
  when(L_, {top_hi, gate}, {{OV.dim(1), 1.0}});
  when(L_, ones, {{OV.dim(1), -1.0}});
}

std::pair<std::vector<Lin>, std::vector<unsigned>> VectorUnit::presplit(const std::string& name, std::uint32_t l, const std::vector<Lin>& X,
                                                             const std::vector<unsigned>& max_cs) {
  const std::uint32_t cols = static_cast<std::uint32_t>(X.size());
  std::vector<unsigned> next(cols, 0);
  const FieldRef S1 = B.field(name + "_cols_presplit", cols);
  LayerBuilder& la = L(l);
  LayerBuilder& lb = L(l + 1);
  for (std::uint32_t c = 0; c < cols; ++c) {
    const unsigned nh = max_cs[c] / 256;
    Lin R = X[c];
    if (nh > 0) {
      const FieldRef TH = B.field(name + "_col" + std::to_string(c) + "_thermometer", nh);
      Lin H;
      for (unsigned t = 1; t <= nh; ++t) {
        threshold(la, X[c], 256.0 * t, TH.dim(t - 1));
        H += TH[t - 1];
      }
      R -= H * 256.0;
      if (c + 2 < cols) {
        pass(lb, H, S1.dim(c + 2));
        next[c + 2] += nh;
      }
    }
    const unsigned rmax = std::min(max_cs[c], 255u);
    pass(lb, R, S1.dim(c));
    for (unsigned t = 1; 16 * t <= rmax; ++t) {
      threshold(lb, R, 16.0 * t, S1.dim(c), -16);
      if (c + 1 < cols) threshold(lb, R, 16.0 * t, S1.dim(c + 1), 1);
    }
    next[c] += std::min(rmax, 15u);
    if (c + 1 < cols) next[c + 1] += rmax / 16;
  }
  std::vector<Lin> out;
  for (std::uint32_t c = 0; c < cols; ++c) out.push_back(S1[c]);
  return {out, next};
}

void VectorUnit::hold_digits(LayerBuilder& l, const FieldRef& DG, std::uint32_t lo, std::uint32_t cols, const Lin& first,
                             const Lin& later) {
  hold_rows(l, DG, 16 * lo, 16 * (cols - lo), first, later);
}

void VectorUnit::hold_rows(LayerBuilder& l, const FieldRef& f, std::uint32_t from, std::uint32_t rows, const Lin& first,
                           const Lin& later) {
  // one slot (key 1: S = v where `first` is 1), read where `later` is 1 (after the write, so
  // never on the step that writes), into the very rows it holds
  const FieldRef held{f.name, f.offset + from, rows};
  slot_head(l, 1, [&](std::uint32_t) { return first; }, [&](std::uint32_t r) { return held[r]; }, held, later);
}

void VectorUnit::emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF) { emit_rounded(l, DG, OVF, TM_, LASTW_[0]); }

void VectorUnit::emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF, const OH& tm, const Lin& stop) {
  const Lin more = Lin::constant(1) - stop;
  for (std::uint32_t m = 0; m < 4; ++m) {
    for (unsigned v = 0; v < 16; ++v) {
      const Lin off = tm[m] - OVF[0] - OVF[1] - stop - 1.0;
      l.unit_out(l.relu_unit(DG[16 * (4 + 2 * m) + v] + off), NPL.dim(v), 1.0);
      l.unit_out(l.relu_unit(DG[16 * (5 + 2 * m) + v] + off), NPH.dim(v), 1.0);
    }
    const unsigned hi = m < 3 ? 0xFF : 0x7F, lo = m < 3 ? 0x00 : 0x80;
    when(l, {OVF[0], tm[m], more}, {{NPL.dim(hi & 15), 1.0}, {NPH.dim(hi >> 4), 1.0}});
    when(l, {OVF[1], tm[m], more}, {{NPL.dim(lo & 15), 1.0}, {NPH.dim(lo >> 4), 1.0}});
  }
}

}  // namespace lockstep::chip::rv32::detail
