// DIV, DIVU, REM, REMU (isa.md section 3; trace.md section 4.3): operand signs and magnitudes,
// the trial quotient from the consumed DQ bits, and the quotient's W bytes.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// Trial quotient T (layers 6, 7, only for the division classes): the bits already consumed
// above the next index, 1 at the next index (or all bits on the W steps).
void Machine::trial_quotient() {
  for (std::uint32_t j = 0; j < 32; ++j) {
    Lin above;
    for (std::uint32_t n = 0; n < j; ++n) above += NEXTI[n];
    when(L(6), {QB[j], above + ALLQ[0], div_cls()}, {{TB.dim(j), 1.0}});
  }
  for (std::uint32_t nb = 0; nb < 8; ++nb)
    for (unsigned v = 0; v < 16; ++v) {
      std::vector<Lin> conds = {div_cls()};
      for (unsigned b = 0; b < 4; ++b) {
        const Lin t = TB[4 * nb + b] + NEXTI[4 * nb + b];
        conds.push_back((v >> b) & 1 ? t : Lin::constant(1) - t);
      }
      when(L(7), conds, {{TN.dim(16 * nb + v), 1.0}});
    }
}

// out = enable ? (neg ? -x : x) : 0 as nibble one-hots; x given by 8 nibble one-hots.
// -x = ~x + 1: nibble k is (15 - x_k + z_k) mod 16 with z_k = [x_0..x_{k-1} all 0].
void Machine::negate(const std::function<OH(std::uint32_t)>& src, const Lin& neg, const Lin& enable, const FieldRef& z,
            const FieldRef& out, std::uint32_t la, std::uint32_t lb) {
  for (std::uint32_t kk = 1; kk < 8; ++kk) {
    std::vector<Lin> conds = {enable};  // idle (untouched) unless enabled
    for (std::uint32_t j = 0; j < kk; ++j) conds.push_back(src(j)[0]);
    when(L(la), conds, {{z.dim(kk), 1.0}});
  }
  for (std::uint32_t kk = 0; kk < 8; ++kk) {
    const OH x = src(kk);
    for (unsigned v = 0; v < 16; ++v)
      if (!is_zero(x[v])) when(L(lb), {x[v], enable, Lin::constant(1) - neg}, {{out.dim(16 * kk + v), 1.0}});
    const OH zz = kk == 0 ? OH{Lin(), Lin::constant(1)} : OH{Lin::constant(1) - z[kk], z[kk]};
    table(L(lb), {x, zz}, [&, kk](const std::vector<unsigned>& v) {
      return SparseVec{{out.dim(16 * kk + ((15 - v[0] + v[1]) & 15)), 1.0}};
    }, {enable, neg});
  }
}

void Machine::divide() {
  LayerBuilder& l6 = L(6);
  NEGA = B.field("div_neg_a", 1);
  NEGB = B.field("div_neg_b", 1);
  NEGQ = B.field("div_neg_q", 1);
  BZ = B.field("div_b_zero", 1);
  const Lin a31 = any_of(nib(R1, 7), [](unsigned j) { return j >= 8; });
  const Lin b31 = any_of(nib(R2, 7), [](unsigned j) { return j >= 8; });
  const Lin sdiv = sum_cls({DIV, REM});
  when(l6, {a31, sdiv}, {{NEGA.dim(), 1.0}});
  when(l6, {b31, sdiv}, {{NEGB.dim(), 1.0}});
  {
    std::vector<Lin> conds;
    for (std::uint32_t n = 0; n < 8; ++n) conds.push_back(nib(R2, n)[0]);
    when(l6, conds, {{BZ.dim(), 1.0}});
  }
  ZA = B.field("div_zero_prefix_a", 8);
  ZB = B.field("div_zero_prefix_b", 8);
  UA = B.field("div_ua", 128);
  UB = B.field("div_ub", 128);
  negate([&](std::uint32_t n) { return nib(R1, n); }, NEGA[0], div_cls(), ZA, UA, 6, 7);
  negate([&](std::uint32_t n) { return nib(R2, n); }, NEGB[0], div_cls(), ZB, UB, 6, 7);
  // DIV quotient sign: negative when the signs differ and b != 0 (b = 0 gives -1 = all ones).
  when(L(7), {a31, Lin::constant(1) - b31, Lin::constant(1) - BZ[0], cls(DIV)}, {{NEGQ.dim(), 1.0}});
  when(L(7), {Lin::constant(1) - a31, b31, Lin::constant(1) - BZ[0], cls(DIV)}, {{NEGQ.dim(), 1.0}});
  QZ = B.field("div_zero_prefix_q", 8);
  QN = B.field("div_quotient", 128);
  trial_quotient();
  negate([&](std::uint32_t n) { return field_oh(TN, 16 * n, 16); }, NEGQ[0], sum_cls({DIV, DIVU}), QZ, QN, 8, 9);
  // W bytes of DIV / DIVU: the (signed) quotient.
  for (std::uint32_t i = 0; i < 4; ++i)
    for (std::uint32_t h = 0; h < 2; ++h) {
      const OH o = field_oh(QN, 32 * i + 16 * h, 16);
      for (std::uint32_t v = 0; v < 16; ++v) when(L(10), {o[v], DQW[i]}, {{(h ? NPH : NPL).dim(v), 1.0}});
    }
}

}  // namespace lockstep::chip::rv32::detail
