// The vector unit's traps (vector.md sections 4.0, 6): every op's trap conditions on its first
// step, TRAP(code) with the lowest applicable code, else each op's first token.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// ---- the vector unit's traps (vector.md sections 4.0, 6) --------------------------------
// Every vector op checks every trap condition of section 6 on its first step and emits
// TRAP(code) with the lowest applicable code. Without a trap, each op starts its tokens (compile_vld(),
// compile_vew(), compile_vfn(), compile_vred(), compile_vq(), compile_vexp(), compile_vmat(), compile_vmatr(), compile_vmatr_v()).
// Operands: A = X(rs1) & 0xFFFF, B = X(rs1) >> 16, C = X(rs2) & 0xFFFF, N = X(rs2) >> 16.
// Layers: 4 gated f7 nibbles; 5 the f7 one-hot; 6 the f7 field checks and operand-range
// enables; 7 the operand checks (thresholds of linear forms, |x| < 2^23); 8 the ANDs of
// interval tests (and VLD's RAM check, compile_vld()); 9 one flag per code; 10 the decision.
void VectorUnit::vector_traps() {
  const std::array<Cls, 8> ops = {VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED, VLD};
  const Lin one = Lin::constant(1), f = fetch();
  Lin anyv;  // any vector op
  for (Cls c : ops) anyv += cls(c);
  // The operands on the fetch step of a vector op only (zero on every other step): every RAW
  // reason below is read under f alone (layers 9, 10), so no check is evaluated on the op's later
  // steps (docs/chip-design.md section 3.6, "Operand ports").
  Lin vpre;
  for (Cls c : ops) vpre += PRE[c];
  const FieldRef F1 = operand_port(1, "vec_fetch", f + vpre - 1.0), F2 = operand_port(2, "vec_fetch", f + vpre - 1.0);
  // f7 = inst[31:25] as a one-hot, only on custom-1 words (gated nibble copies, layer 4)
  VIN = B.field("vec_f7_nibbles", 32);
  const Lin custom1 = nib(IN, 0)[0xB] + masked(nib(IN, 1), 7)[2] - 2.0;  // with a nibble: ReLU(a + b + c - 2)
  for (unsigned j = 0; j < 16; ++j) {
    pass(L(4), nib(IN, 6)[j] + custom1, VIN.dim(j));
    pass(L(4), nib(IN, 7)[j] + custom1, VIN.dim(16 + j));
  }
  F7X_ = B.field("vec_f7", 128);
  const FieldRef& F7X = F7X_;
  table(L(5), {masked(field_oh(VIN, 0, 16), 0xE), field_oh(VIN, 16, 16)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{F7X.dim((v[0] >> 1) | (v[1] << 3)), 1.0}}; });
  auto f7is = [&](const std::function<bool(unsigned)>& pred) {  // [pred(f7)], linear in the one-hot
    Lin l;
    for (unsigned x = 0; x < 128; ++x)
      if (pred(x)) l += F7X[x];
    return l;
  };
  // raw(c): sum of this step's reasons for code c (4, 5, 16..23; normalised to 0/1 in layer 9)
  const std::array<unsigned, 10> codes = {4, 5, 16, 17, 18, 19, 20, 21, 22, 23};
  const FieldRef RAW = B.field("vec_trap_reasons", static_cast<std::uint32_t>(codes.size()));
  auto slot = [&](unsigned code) {
    return static_cast<std::uint32_t>(std::find(codes.begin(), codes.end(), code) - codes.begin());
  };
  auto raw = [&](unsigned code) { return RAW.dim(slot(code)); };
  // 16 VEC_FIELD: invalid or nonzero f7 fields; rd != x0 except VMAT argmax mode
  const std::array<std::function<bool(unsigned)>, 8> bad = {
      [](unsigned x) { return (x & 7) == 0 || (x & 7) == 7 || (x >> 4) != 0; },                    // VMAT
      [](unsigned x) { return (x >> 1) != 0; },                                                    // VMATR
      [](unsigned x) { return (x & 3) == 3 || (x >> 2) != 0; },                                    // VQ
      [](unsigned x) { return (x >> 3) != 0; },                                                    // VEXP
      [](unsigned x) {                                                                             // VEW
        const unsigned mode = x & 3, gs = (x >> 2) & 7;
        return (x >> 5) != 0 || gs == 7 || (mode != 2 && gs != 0);
      },
      [](unsigned x) { return x >= 3; },                                                           // VFN
      [](unsigned x) { return (x & 3) == 3 || ((x & 3) == 2 && (x >> 2) != 0); },                // VRED
      [](unsigned x) { return x != 0; },                                                           // VLD
  };
  const Lin argmax = f7is([](unsigned x) { return (x & 8) != 0; });
  for (std::size_t i = 0; i < ops.size(); ++i) {
    when(L(6), {cls(ops[i]), f7is(bad[i])}, {{raw(16), 1.0}});
    if (ops[i] == VMAT) when(L(6), {cls(VMAT), one - RD[0], one - argmax}, {{raw(16), 1.0}});
    else when(L(6), {cls(ops[i]), one - RD[0]}, {{raw(16), 1.0}});
  }
  // VLD (section 4.8): 4 a mod 4 != 0; 5 the record outside RAM (sums: compile_vld()); 17 [dst, dst + n) outside
  // VR (layer 7 below)
  when(L(6), {cls(VLD), any_of(nib(F1, 0), [](unsigned j) { return (j & 3) != 0; })}, {{raw(4), 1.0}});
  // the record is in RAM iff a >= RAM_BASE and (s_hi <= 16 or s = 17 * 2^16): raw(5) = VLD - that
  pass(L(8), cls(VLD), raw(5));
  when(L(8), {VOK[0], VSH[0]}, {{raw(5), -1.0}});  // VSH[0] is 0 on other classes
  when(L(8), {cls(VLD), VOK[0], VSH[1] - VSH[2], VZ[0]}, {{raw(5), -1.0}});
  // 18 VEC_LEN for every op: the count (R, T, n) is 0
  const OH n4 = nib(F2, 4);
  when(L(6), {anyv, n4[0], nib(F2, 5)[0], nib(F2, 6)[0], nib(F2, 7)[0]}, {{raw(18), 1.0}});
  // VEW ROT: n odd
  when(L(6), {cls(VEW), f7is([](unsigned x) { return (x & 3) == 3; }), any_of(n4, [](unsigned j) { return (j & 1) != 0; })},
       {{raw(18), 1.0}});
  // Operand-range enables (layer 6): class and f7 sub-field, each 0/1.
  struct En {
    Cls c;
    std::function<bool(unsigned)> pred;
  };
  std::vector<En> ens;
  auto en = [&](Cls c, std::function<bool(unsigned)> pred) {
    ens.push_back({c, std::move(pred)});
    return static_cast<std::uint32_t>(ens.size() - 1);
  };
  const std::uint32_t mat_w = en(VMAT, [](unsigned x) { return (x & 8) == 0; });
  std::array<std::uint32_t, 7> mat_k{};
  for (unsigned kk = 1; kk <= 6; ++kk) mat_k[kk] = en(VMAT, [kk](unsigned x) { return (x & 7) == kk; });
  const std::uint32_t r_k = en(VMATR, [](unsigned x) { return (x & 1) == 0; });
  const std::uint32_t r_v = en(VMATR, [](unsigned x) { return (x & 1) == 1; });
  std::array<std::uint32_t, 3> fn_e{};
  for (unsigned fn = 0; fn < 3; ++fn) fn_e[fn] = en(VFN, [fn](unsigned x) { return x == fn; });
  const std::uint32_t q_act = en(VQ, [](unsigned x) { return (x & 3) == 0; });
  const std::uint32_t q_kv = en(VQ, [](unsigned x) { return (x & 3) == 1 || (x & 3) == 2; });
  std::array<std::uint32_t, 9> x_g{};
  for (unsigned g = 1; g <= 8; ++g) x_g[g] = en(VEXP, [g](unsigned x) { return (x & 7) + 1 == g; });
  std::array<std::uint32_t, 4> w_m{};
  for (unsigned m = 0; m < 4; ++m) w_m[m] = en(VEW, [m](unsigned x) { return (x & 3) == m; });
  std::array<std::uint32_t, 7> w_gs{};
  for (unsigned gs = 0; gs <= 6; ++gs) w_gs[gs] = en(VEW, [gs](unsigned x) { return (x & 3) == 2 && ((x >> 2) & 7) == gs; });
  const std::uint32_t red_sum = en(VRED, [](unsigned x) { return (x & 3) == 1; });
  const std::uint32_t red_sq = en(VRED, [](unsigned x) { return (x & 3) == 0; });
  const std::uint32_t red_max = en(VRED, [](unsigned x) { return (x & 3) == 2; });
  const FieldRef EN = B.field("vec_enables", static_cast<std::uint32_t>(ens.size()));
  for (std::uint32_t i = 0; i < ens.size(); ++i) when(L(6), {cls(ens[i].c), f7is(ens[i].pred)}, {{EN.dim(i), 1.0}});
  auto E = [&](std::uint32_t i) { return EN[i]; };
  // Operand checks (layer 7): [x >= t] when the enable is 1, into raw[code] or an AND input.
  const Lin A = half(F1, 0), Bv = half(F1, 1), C = half(F2, 0), N = half(F2, 1);
  constexpr double kHi = 4194304.0 + 131072.0;  // 2^22 + 2^17 > every x below (64 * 65,535 + 65,535)
  LayerBuilder& l7 = L(7);
  auto ge = [&](const Lin& x, double t, const Lin& e, std::uint32_t out) { threshold_if(l7, x, t, kHi, e, out); };
  struct AndG {
    unsigned code;
    std::vector<std::pair<Lin, double>> parts;  // [x >= t] each
    Lin e;                                       // enable (0/1)
    Lin extra;                                   // one more 0/1 condition (or zero: none)
  };
  std::vector<AndG> ands;
  // VMAT
  ge(A + N, 1025, E(mat_w), raw(17));                                 // [dst, dst + R) in VR
  for (unsigned kk = 1; kk <= 6; ++kk) {
    ge(Bv, 7.0 - kk, E(mat_k[kk]), raw(19));                          // b0 + K > 6
    ge(C + N * static_cast<double>(kk), 4153, E(mat_k[kk]), raw(21));  // c0 + R K > 4152
  }
  // VMATR
  ge(A + N, 577, E(r_k), raw(17));  // dst + 448 + T > 1024
  ge(Bv + N, 577, E(r_v), raw(17));
  ge(A, 961, E(r_v), raw(17));      // dst + 64 > 1024
  ge(N, 65, cls(VMATR), raw(18));
  ge(Bv, 6, E(r_k), raw(19));       // src > 5
  // V mode: [dst, dst + 64) meets some [src + 64h, src + 64h + T), h < 8 (T <= 64: the union
  // over h is contiguous): -63 <= dst - src <= 447 + T
  ands.push_back({20, {{A - Bv, -63}, {Bv + N - A, -447}}, E(r_v), Lin()});
  ge(C + N, 321, cls(VMATR), raw(22));  // r0 + T > 320
  // VQ
  ge(Bv + N, 1025, cls(VQ), raw(17));
  ge(N, 385, E(q_act), raw(18));
  ge(N, 33, E(q_kv), raw(18));
  ge(Lin::constant(31) - N, 0, E(q_kv), raw(18));  // n != 32
  ge(N + A * 64.0, 385, E(q_act), raw(19));          // b0 + ceil(n / 64) > 6
  ge(A, 320, E(q_kv), raw(22));                      // row >= 320
  // VEXP (G from f7): spans, T, overlaps
  Lin Gv, egd[8];  // G as a linear form; egd[j] = [G > j] (VEXP)
  for (unsigned g = 1; g <= 8; ++g) {
    Gv += E(x_g[g]) * static_cast<double>(g);
    const double span = 64.0 * (g - 1);
    ge(Bv + N + span, 1025, E(x_g[g]), raw(17));
    ge(A + N + span, 1025, E(x_g[g]), raw(17));
    ge(C + static_cast<double>(g), 1025, E(x_g[g]), raw(17));
    for (unsigned j = 0; j < g; ++j) egd[j] += E(x_g[g]);
  }
  ge(N, 65, cls(VEXP), raw(18));
  const FieldRef EQAB = B.field("vec_dst_is_src", 1);  // [A = B] on VEXP
  threshold_if(l7, A - Bv, 0, kHi, cls(VEXP), EQAB.dim());
  threshold_if(l7, A - Bv, 1, kHi, cls(VEXP), EQAB.dim(), -1);
  for (int d = -7; d <= 7; ++d) {  // group g of dst meets group g - d of src: |A - B + 64 d| < T
    const double sh = 64.0 * d;
    ands.push_back({20, {{A - Bv + N + sh, 1}, {N - A + Bv - sh, 1}}, egd[static_cast<unsigned>(std::abs(d))],
                    one - EQAB[0]});
  }
  for (const Lin* X : {&A, &Bv})  // the sums [C, C + G) meet group g of src or dst
    for (unsigned g = 0; g < 8; ++g) {
      const double sh = 64.0 * g;
      ands.push_back({20, {{C - *X - sh + Gv, 1}, {*X + N + sh - C, 1}}, egd[g], Lin()});
    }
  // VEW
  ge(Bv + N, 1025, cls(VEW), raw(17));
  ge(A + N, 1025, cls(VEW), raw(17));
  ge(C + N, 1025, E(w_m[0]) + E(w_m[1]), raw(17));
  for (unsigned gs = 0; gs <= 6; ++gs) {  // MULS: b + ((n - 1) >> GS) + 1 > 1024
    const double p = std::ldexp(1.0, static_cast<int>(gs));
    ge(N + C * p, 1 + 1024 * p, E(w_gs[gs]), raw(17));
  }
  ge(N, 1025, cls(VEW), raw(18));
  // conflicts: spans [x, x + n) and [y, y + n) share a word and differ: 1 <= |x - y| <= n - 1
  auto conflict = [&](const Lin& x, const Lin& y, const Lin& e) {
    ands.push_back({20, {{x - y, 1}, {y - x + N, 1}}, e, Lin()});
    ands.push_back({20, {{y - x, 1}, {x - y + N, 1}}, e, Lin()});
  };
  conflict(A, Bv, cls(VEW));
  conflict(A, C, E(w_m[0]) + E(w_m[1]));
  for (unsigned gs = 0; gs <= 6; ++gs) {  // MULS: [b, b + s) meets [dst, dst + n): b - dst <= n - 1, 2^GS (dst - b) <= n - 1
    const double p = std::ldexp(1.0, static_cast<int>(gs));
    ands.push_back({20, {{A - C + N, 1}, {N - (A - C) * p, 1}}, E(w_gs[gs]), Lin()});
  }
  ge(C, 64, E(w_m[3]), raw(23));  // ROT position >= 64
  // VFN
  ge(Bv + N, 1025, cls(VFN), raw(17));
  ge(A + N, 1025, cls(VFN), raw(17));
  ge(N, 1025, cls(VFN), raw(18));
  conflict(A, Bv, cls(VFN));
  // VLD: dst = C, n = N
  ge(C + N, 1025, cls(VLD), raw(17));
  // VRED
  ge(Bv + N, 1025, cls(VRED), raw(17));
  ge(A, 1024, cls(VRED), raw(17));
  ge(N, 1025, cls(VRED), raw(18));
  // the ANDs (layer 8)
  std::uint32_t nparts = 0;
  for (const AndG& g : ands) nparts += static_cast<std::uint32_t>(g.parts.size());
  const FieldRef AP = B.field("vec_and_parts", nparts);
  std::uint32_t at = 0;
  for (const AndG& g : ands) {
    std::vector<Lin> conds;
    for (const auto& [x, t] : g.parts) {
      ge(x, t, g.e, AP.dim(at));
      conds.push_back(AP[at++]);
    }
    if (!is_zero(g.extra)) conds.push_back(g.extra);
    when(L(8), conds, {{raw(g.code), 1.0}});
  }
  // one flag per code (layer 9), then the lowest code wins (layer 10). No trap: VLD's first
  // byte (VLB0 of M, read at a); VEW, VFN: VWG(0); VRED: VRD(0); VQ: VQE; VEXP: VXM0; VMAT:
  // VMC0(0); VMATR K: VWG(0); VMATR V: VMV(0).
  const FieldRef VT = B.field("vec_trap", static_cast<std::uint32_t>(codes.size()));
  for (std::uint32_t i = 0; i < codes.size(); ++i) threshold(L(9), RAW[i], 1, VT.dim(i));
  std::vector<Lin> none = {f};
  for (std::uint32_t i = 0; i < codes.size(); ++i) {
    std::vector<Lin> conds = none;
    conds.push_back(anyv);
    conds.push_back(VT[i]);
    when(L(10), conds, token_out(kTrap, codes[i]));
    none.push_back(one - VT[i]);
  }
  std::vector<Lin> run = none;
  run.push_back(cls(VLD));
  when(L(10), run, {{NK.dim(kVlb0), 1.0}, {LANEX.dim(0), 1.0}, {RDM.dim(), 1.0}});
  EADD = E(w_m[0]);
  for (unsigned fn = 0; fn < 3; ++fn) EFN[fn] = E(fn_e[fn]);
  run.back() = cls(VEW) + cls(VFN);  // VEW, VFN: the word stream starts with VWG(0) (compile_vew(), compile_vfn())
  when(L(10), run, token_out(kVwg, 0));
  run.back() = E(red_sum) + E(red_sq) + E(red_max);  // VRED: VRD(0) (compile_vred())
  when(L(10), run, token_out(kVrd, 0));
  VQF_ = B.field("vq_next_is_vqe", 1);
  run.back() = E(q_act) + E(q_kv);  // VQ: VQE(0 | e_0), its payload from compile_vq() (layer 11)
  when(L(10), run, {{NK.dim(kVqe), 1.0}, {VQF_.dim(), 1.0}});
  XFN_ = B.field("vexp_next_is_vxm0", 1);
  run.back() = cls(VEXP);  // VEXP: VXM0 (byte 0 of m_0), its payload from compile_vexp() (layer 13)
  when(L(10), run, {{NK.dim(kVxm0), 1.0}, {XFN_.dim(), 1.0}});
  run.back() = cls(VMAT);  // VMAT: VMC0(0), the first chunk of row 0 (compile_vmat())
  when(L(10), run, token_out(kVmc0, 0));
  run.back() = E(r_k);  // VMATR K mode: VWG(0) (compile_vmatr())
  when(L(10), run, token_out(kVwg, 0));
  run.back() = E(r_v);  // VMATR V mode: VMV(0) (compile_vmatr_v())
  when(L(10), run, token_out(kVmv, 0));
}

}  // namespace lockstep::chip::rv32::detail
