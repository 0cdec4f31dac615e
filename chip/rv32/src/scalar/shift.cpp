// Shifts (SLL SRL SRA and their immediates) and Zba's rs1 << k (isa.md section 3): the amount's
// one-hots, the step gates, windows of rs1 nibbles and the bit-field tables that join them.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// Shifts: amount one-hots SQ (shamt >> 2) and SR (shamt & 3), gated by the shift classes.
void Machine::shift_amount() {
  LayerBuilder& l5 = L(6);
  SQ = B.field("shift_q", 8);
  SR = B.field("shift_r", 4);
  const Lin imm = sum_cls({SLLI, SRLI, SRAI}), reg = sum_cls({SLL, SRL, SRA});
  for (std::uint32_t q = 0; q < 8; ++q) {
    Lin p;
    for (std::uint32_t x = 0; x < 32; ++x)
      if ((x >> 2) == q) p += RS2[x];
    when(l5, {p, imm}, {{SQ.dim(q), 1.0}});
  }
  for (std::uint32_t r = 0; r < 4; ++r) {
    Lin p;
    for (std::uint32_t x = 0; x < 32; ++x)
      if ((x & 3) == r) p += RS2[x];
    when(l5, {p, imm}, {{SR.dim(r), 1.0}});
    when(l5, {any_of(nib(R2, 0), [r](unsigned j) { return (j & 3) == r; }), reg}, {{SR.dim(r), 1.0}});
  }
  table(l5, {masked(nib(R2, 0), 0xC), masked(nib(R2, 1), 1)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{SQ.dim((v[0] >> 2) | (v[1] << 2)), 1.0}};
  }, {reg});
}

// Shift step gates G[dir][i][q] (dir 0: left, 1: right logical, 2: right arithmetic).
Lin Machine::shift_dir(std::uint32_t dir) const {
  return dir == 0 ? sum_cls({SLLI, SLL}) : dir == 1 ? sum_cls({SRLI, SRL}) : sum_cls({SRAI, SRA});
}

void Machine::shift_cases() {
  LayerBuilder& l6 = L(7);
  SHG = B.field("shift_gate", 96);
  for (std::uint32_t dir = 0; dir < 3; ++dir) {
    when(l6, {shift_dir(dir), fetch(), RD[0]}, token_out(kNop, 0));
    for (std::uint32_t i = 0; i < 4; ++i)
      for (std::uint32_t q = 0; q < 8; ++q) {
        std::vector<Lin> conds = {shift_dir(dir), SQ[q]};
        if (i == 0) {
          conds.push_back(fetch());
          conds.push_back(Lin::constant(1) - RD[0]);
        } else {
          conds.push_back(k(kW0 + i - 1));
        }
        when(l6, conds, {{sg(dir, i, q), 1.0}, {NK.dim(kW0 + i), 1.0}});
      }
  }
}

// Windows of three consecutive rs1 nibbles around result byte i (fill outside the word).
void Machine::shift_windows() {
  LayerBuilder& l7 = L(8);
  // rs1 copied for the shift classes only (layer 6), so the windows are idle on other steps
  R1S = B.field("rs1_for_shift", 128);
  const Lin shifts = shift_dir(0) + shift_dir(1) + shift_dir(2);
  for (std::uint32_t j = 0; j < 128; ++j) when(L(6), {R1[j], shifts}, {{R1S.dim(j), 1.0}});
  SHW = B.field("shift_window", 2 * 3 * 16);  // [left/right][d][v]
  for (std::uint32_t dir = 0; dir < 3; ++dir)
    for (std::uint32_t i = 0; i < 4; ++i)
      for (std::uint32_t q = 0; q < 8; ++q)
        for (std::uint32_t d = 0; d < 3; ++d) {
          const int j = dir == 0 ? static_cast<int>(2 * i) - static_cast<int>(q) - 1 + static_cast<int>(d)
                                 : static_cast<int>(2 * i + q + d);
          OH src;
          if (j >= 0 && j <= 7) src = nib(R1S, static_cast<std::uint32_t>(j));
          else if (dir == 2) src = sign_of(R1S);
          else src = const_oh(16, 0);
          const std::uint32_t side = dir == 0 ? 0 : 1;
          for (std::uint32_t v = 0; v < 16; ++v)
            if (!is_zero(src[v])) when(l7, {src[v], Lin::dim(sg(dir, i, q))}, {{SHW.dim(48 * side + 16 * d + v), 1.0}});
        }
}

OH Machine::sign_of(const FieldRef& f) const {
  OH s(16);
  s[15] = any_of(nib(f, 7), [](unsigned j) { return j >= 8; });
  s[0] = any_of(nib(f, 7), [](unsigned j) { return j < 8; });
  return s;
}

// A result nibble is two disjoint bit fields: left: ((hi << r) & 15) | (lo >> (4 - r)); right:
// (lo >> r) | ((hi << (4 - r)) & 15). Layer 9 makes each field a one-hot from (window nibble,
// r) (a nibble touches 4 units, r 16); layer 10 joins the two fields (16 + 16 touches). One
// table over (two nibbles, r) touched 256 units per r value.
void Machine::shift_tables() {
  LayerBuilder& l8 = L(9);
  LayerBuilder& l9 = L(10);
  const FieldRef SHP = B.field("shift_parts", 4 * 2 * 16);  // [result nibble][part][value]
  auto win = [&](std::uint32_t side, std::uint32_t d) { return field_oh(SHW, 48 * side + 16 * d, 16); };
  auto part = [&](std::uint32_t t, std::uint32_t which) { return field_oh(SHP, 32 * t + 16 * which, 16); };
  const OH r = field_oh(SR, 0, 4);
  struct Nib {
    std::uint32_t side, d_hi, d_lo;
    bool left, high;
  };
  // left NPL: hi win(0,1), lo win(0,0); left NPH: hi win(0,2), lo win(0,1);
  // right NPL: lo win(1,0), hi win(1,1); right NPH: lo win(1,1), hi win(1,2)
  const std::array<Nib, 4> nibs = {Nib{0, 1, 0, true, false}, Nib{0, 2, 1, true, true},
                                   Nib{1, 1, 0, false, false}, Nib{1, 2, 1, false, true}};
  for (std::uint32_t t = 0; t < 4; ++t) {
    const Nib& n = nibs[t];
    const FieldRef& out = n.high ? NPH : NPL;
    table(l8, {win(n.side, n.d_hi), r}, [&](const std::vector<unsigned>& v) {
      const unsigned f = n.left ? (v[0] << v[1]) & 15 : (v[0] << (4 - v[1])) & 15;
      return SparseVec{{SHP.dim(32 * t + f), 1.0}};
    });
    table(l8, {win(n.side, n.d_lo), r}, [&](const std::vector<unsigned>& v) {
      const unsigned f = n.left ? v[0] >> (4 - v[1]) : v[0] >> v[1];
      return SparseVec{{SHP.dim(32 * t + 16 + f), 1.0}};
    });
    table(l9, {part(t, 0), part(t, 1)}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{out.dim(v[0] | v[1]), 1.0}};
    });
  }
}

// Zba: rs1 << k (k = 1, 2, 3) as 8 nibble one-hots, from a copy of rs1 gated by the Zba classes
// (so the tables cost nothing on other steps).
void Machine::zba_shift() {
  R1Z = B.field("rs1_for_zba", 128);
  SHL = B.field("rs1_shifted", 128);
  const Lin zba = sum_cls({SH1ADD, SH2ADD, SH3ADD});
  for (std::uint32_t j = 0; j < 128; ++j) when(L(6), {R1[j], zba}, {{R1Z.dim(j), 1.0}});
  const std::array<Cls, 3> cs = {SH1ADD, SH2ADD, SH3ADD};
  for (unsigned kk = 1; kk <= 3; ++kk)
    for (std::uint32_t n = 0; n < 8; ++n) {
      const OH cur = field_oh(R1Z, 16 * n, 16);
      const OH prev = n == 0 ? const_oh(16, 0) : field_oh(R1Z, 16 * (n - 1), 16);
      table(L(7), {cur, prev}, [&, kk, n](const std::vector<unsigned>& v) {
        return SparseVec{{SHL.dim(16 * n + (((v[0] << kk) | (v[1] >> (4 - kk))) & 15)), 1.0}};
      }, {cls(cs[kk - 1])});
    }
}

}  // namespace lockstep::chip::rv32::detail
