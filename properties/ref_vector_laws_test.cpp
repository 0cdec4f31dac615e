// Algebraic laws of the reference's vector ops (docs/spec/vector.md §4), as RapidCheck
// properties over ref::execute_vector. Every expected value is computed here from the spec's
// formulas (exact integers), never taken from the reference.
//
//   VMAT   a one-hot activation returns the hot column of the chunks, scaled exactly as vmat.md §1
//          (WSCALE = 1 and ASH = 16: the int4 weights themselves), also with the weights loaded
//          from packed `.lockstep.wmem` bytes (vector.md §2.1, nibbles decoded here); argmax mode
//          returns the lowest index of the maximum of y (ties made on purpose; y by the formula)
//   VQ     quantise then dequantise: |x - q·2^e| <= 2^(e-1) (q = x when e = 0), |q| <= 127,
//          e is the smallest such shift (vq.md §1), padding zeros; K/V rows likewise, nothing
//          but the row and its shift changes
//   VEW    ADD commutes and is sat32(x + y); MUL, MULS (group 2^GS) and ROT (any position, COS
//          and SIN of vector.md §3 computed here) equal vew.md §1's formulas on random operands
//   VRED   SUM = sat32(rnd(Σx, SH)), SUMSQ = sat32(rnd(Σx², 16 + SH)), MAX = max (sums here);
//          the rest of the state is the state before the op
//   VEXP   p = EXP[min(1023, rnd(m - s, 10))] (EXP of vector.md §3 computed here), S_g = Σ p,
//          nothing else changes
//   VLD    sat32(sext8(b) · M) for any multiplier M (INT32_MIN, INT32_MAX, -1, 0, 1, ...)
//   tokens (trace-v3, §5) each op emits the count of its page's count column
//          (vector/<op>.md §2), every id is in the vocabulary (format::is_valid_token),
//          and the values on the bus, decoded here from §5's layouts (word streams, int8
//          streams, VMAT row bytes, VEXP maxima), are exactly what the op wrote (read back
//          from the reference's state) or, for VMAT argmax and
//          VEXP's maxima, what §4 computes from the inputs
//
// Values (int4 weights, int8 activations, shifts, words) are drawn over their whole range at
// every size (rc_full_range.h); counts (n, R, T, G) still grow with RapidCheck's size.
// RapidCheck prints its seed ("Using configuration: seed=...") and on failure a reproduce
// string: RC_PARAMS="reproduce=..." (properties/README.md).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"
#include "rc_full_range.h"

namespace lockstep::ref {
namespace {

using u32 = std::uint32_t;
using i64 = std::int64_t;
using i128 = __int128;

// Op indices (the f3 field, vector.md §4.0).
constexpr unsigned kVmat = 0, kVmatr = 1, kVq = 2, kVexp = 3, kVew = 4, kVfn = 5, kVred = 6, kVld = 7;

u32 ab(u32 lo, u32 hi) { return hi << 16 | lo; }  // (B << 16) | A, (N << 16) | C

/// rnd(x, s) of vector.md §1.2: floor((x + 2^(s-1)) / 2^s), round half up.
template <class T>
T rnd(T x, unsigned s) {
  if (s == 0) return x;
  const T half = T{1} << (s - 1);
  const T y = x + half;
  // floor division by 2^s (an arithmetic shift, written out for clarity)
  const T q = y / (T{1} << s);
  return (y < 0 && q * (T{1} << s) != y) ? q - 1 : q;
}
template <class T>
std::int32_t sat32(T x) {
  if (x > T{std::numeric_limits<std::int32_t>::max()}) return std::numeric_limits<std::int32_t>::max();
  if (x < T{std::numeric_limits<std::int32_t>::min()}) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(x);
}
/// The R row results y_r of a VMAT over chunks c0.. and ACT blocks b0.. (K chunks a row), by
/// vmat.md §1's formula from `in`'s ACT, ASH, WMEM and WSCALE:
/// y_r = sat32(rnd(Σ_j (Σ_i act·w) · WSCALE[c] · 2^ASH[b0 + j], 16)), c = c0 + rK + j.
std::vector<std::int32_t> vmat_rows(const VectorState& in, unsigned c0, unsigned b0, unsigned R, unsigned K) {
  std::vector<std::int32_t> y(R);
  for (unsigned r = 0; r < R; ++r) {
    i128 sum = 0;
    for (unsigned j = 0; j < K; ++j) {
      const unsigned c = c0 + r * K + j;
      i64 acc = 0;
      for (unsigned i = 0; i < 64; ++i) acc += i64{in.act[64 * (b0 + j) + i]} * in.wmem[64 * c + i];
      sum += i128{acc} * in.wscale[c] * (i128{1} << in.ash[b0 + j]);
    }
    y[r] = sat32(rnd(sum, 16));
  }
  return y;
}
/// The fixed tables of vector.md §3 that the laws need, computed here from their formulas: EXP[i]
/// = nearest integer to 2^16·e^(−i/64), COS[p][j] / SIN[p][j] = nearest integers to
/// 2^16·cos(p·10^(−j)) and 2^16·sin(p·10^(−j)). §3: IEEE double with exp/cos/sin and llround
/// gives the exact tables; VectorLawHelpers.TablesAsVectorMd3 checks them against checksums
/// computed separately (Python, from the same formulas; they match §3's SHA-256).
struct Tables {
  std::array<i64, 1024> exp{};
  std::array<std::array<i64, 4>, 64> cos{}, sin{};
};
const Tables& tables() {
  static const Tables t = [] {
    Tables out;
    for (int i = 0; i < 1024; ++i) out.exp[i] = std::llround(65536.0 * std::exp(-i / 64.0));
    for (int p = 0; p < 64; ++p)
      for (int j = 0; j < 4; ++j) {
        const double angle = p * std::pow(10.0, -j);
        out.cos[p][j] = std::llround(65536.0 * std::cos(angle));
        out.sin[p][j] = std::llround(65536.0 * std::sin(angle));
      }
    return out;
  }();
  return t;
}
unsigned groups(unsigned n) { return (n + 63) / 64; }
unsigned quads(unsigned n) { return (n + 3) / 4; }

struct Exec {
  u32 code = 0;
  std::vector<u32> tokens;
  bool writes_rd = false;
  u32 rd_value = 0;
};
Exec run(VectorState& s, unsigned op, u32 f7, unsigned rd, u32 x1, u32 x2, std::span<const std::uint8_t> ram = {}) {
  Exec e;
  e.code = execute_vector(s, op, f7, rd, x1, x2, ram, e.tokens, e.writes_rd, e.rd_value);
  return e;
}

/// RC_ASSERTs got == want (the whole vector state), logging the first difference: which memory,
/// which index, both values.
void assert_same_state(const VectorState& got, const VectorState& want) {
  if (got == want) return;
  const auto first = [](const char* name, const auto& g, const auto& w) {
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] != w[i]) {
        RC_LOG() << "first difference: " << name << "[" << i << "] is " << i64{g[i]} << ", expected " << i64{w[i]} << "\n";
        return true;
      }
    return false;
  };
  first("VR", got.vr, want.vr) || first("ACT", got.act, want.act) || first("ASH", got.ash, want.ash) ||
      first("WMEM", got.wmem, want.wmem) || first("WSCALE", got.wscale, want.wscale) || first("KC", got.kc, want.kc) ||
      first("VC", got.vc, want.vc) || first("KSH", got.ksh, want.ksh) || first("VSH", got.vsh, want.vsh);
  RC_FAIL("the vector state differs from the expected one (only the op's destination may change)");
}

// ------------------------------------------------------------------ §5 tokens, decoded here
// The layouts of vector.md §5, read back independently of the reference: a reader RC_ASSERTs
// every layout rule while it decodes, so a property can compare the values on the bus with the
// state the op left.
constexpr u32 kind_of(u32 id) { return id >> 8; }
constexpr u32 payload(u32 id) { return id & 0xff; }
constexpr u32 K(format::Kind k) { return static_cast<u32>(k); }

/// Every id is in the vocabulary (trace.md §2).
bool all_valid(const std::vector<u32>& tokens) {
  return std::all_of(tokens.begin(), tokens.end(), [](u32 id) { return format::is_valid_token(id); });
}

/// Reads 4 consecutive byte kinds k0..k0+3 as a little-endian int32.
std::int32_t read4(const std::vector<u32>& t, std::size_t& i, u32 k0) {
  RC_ASSERT(i + 4 <= t.size());
  u32 z = 0;
  for (u32 m = 0; m < 4; ++m) {
    RC_ASSERT(kind_of(t[i + m]) == k0 + m);
    z |= payload(t[i + m]) << (8 * m);
  }
  i += 4;
  return static_cast<std::int32_t>(z);
}

/// §5 word stream: element e is VWG(e >> 2) when e is the stream's first element or e & 3 = 0,
/// then VW_{q0} .. VW_{q3} (q = e & 3) carrying bytes 0..3 of the 32-bit value; indices increase.
struct WordReader {
  const std::vector<u32>& t;
  std::size_t i = 0;
  bool first = true;
  i64 last_e = -1;
  std::pair<i64, std::int32_t> next() {
    RC_ASSERT(i < t.size());
    const bool vwg = kind_of(t[i]) == K(format::Kind::VWG);
    const i64 g = vwg ? i64{payload(t[i])} : (last_e >> 2);
    if (vwg) ++i;
    RC_ASSERT(i + 4 <= t.size());
    const u32 k0 = kind_of(t[i]);
    RC_ASSERT(k0 >= K(format::Kind::VW00) && k0 <= K(format::Kind::VW33) && (k0 - K(format::Kind::VW00)) % 4 == 0u);
    const i64 e = 4 * g + (k0 - K(format::Kind::VW00)) / 4;
    RC_ASSERT(e > last_e);
    RC_ASSERT(vwg == (first || (e & 3) == 0));  // VWG exactly where §5 puts it
    const std::int32_t z = read4(t, i, k0);
    first = false;
    last_e = e;
    return {e, z};
  }
};

/// §5 int8 stream: element j (consecutive from 0) is VLG(j >> 2) when j & 3 = 0, then
/// VLB_{j & 3}(lo8(v)).
struct Int8Reader {
  const std::vector<u32>& t;
  std::size_t i = 0;
  u32 j = 0;
  std::int8_t next() {
    if ((j & 3) == 0) {
      RC_ASSERT(i < t.size());
      RC_ASSERT(t[i] == format::token_id(format::Kind::VLG, j >> 2));
      ++i;
    }
    RC_ASSERT(i < t.size());
    RC_ASSERT(kind_of(t[i]) == K(format::Kind::VLB0) + (j & 3));
    const auto v = static_cast<std::int8_t>(payload(t[i]));
    ++i;
    ++j;
    return v;
  }
};

/// §5 VMAT rows: per row r, VMH(r >> 8) when r > 0 and r & 0xFF = 0, VMC_j(r & 0xFF) for
/// j < K, then VY0 VY1 VY2 and VY3 or VYN3.  Returns (y_r, byte 3 was VYN3) per row; the rows
/// must be all the tokens.
std::vector<std::pair<std::int32_t, bool>> read_vmat_rows(const std::vector<u32>& t, unsigned R, unsigned Kc) {
  std::vector<std::pair<std::int32_t, bool>> rows;
  std::size_t i = 0;
  for (u32 r = 0; r < R; ++r) {
    if (r > 0 && (r & 0xff) == 0) {
      RC_ASSERT(i < t.size());
      RC_ASSERT(t[i++] == format::token_id(format::Kind::VMH, r >> 8));
    }
    for (u32 j = 0; j < Kc; ++j) {
      RC_ASSERT(i < t.size());
      RC_ASSERT(t[i++] == format::token_id(K(format::Kind::VMC0) + j, r & 0xff));
    }
    RC_ASSERT(i + 4 <= t.size());
    u32 y = 0;
    for (u32 m = 0; m < 3; ++m) {
      RC_ASSERT(kind_of(t[i]) == K(format::Kind::VY0) + m);
      y |= payload(t[i++]) << (8 * m);
    }
    const bool yn = kind_of(t[i]) == K(format::Kind::VYN3);
    RC_ASSERT(yn || kind_of(t[i]) == K(format::Kind::VY3));
    y |= payload(t[i++]) << 24;
    rows.emplace_back(static_cast<std::int32_t>(y), yn);
  }
  RC_ASSERT(i == t.size());
  return rows;
}

/// An int32 of any magnitude: uniform, shifted right by a random amount, or an edge value.
rc::Gen<std::int32_t> word() {
  static const auto gen = rc::gen::weightedOneOf<std::int32_t>({
      {4, rc::gen::map(rc::gen::pair(rcfull::any<std::int32_t>(), rcfull::in_range(0, 32)),
                       [](std::pair<std::int32_t, int> p) { return p.first >> p.second; })},
      {1, rc::gen::element<std::int32_t>(0, 1, -1, std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int32_t>::max(), 65536, -65536)},
  });
  return gen;
}
/// An int4 weight (−8..7), an int8 value (−128..127), a scale shift (0..25): uniform at every
/// size (rc_full_range.h), built once (drawn in loops of thousands).
rc::Gen<int> int4() {
  static const auto gen = rcfull::in_range(-8, 8);
  return gen;
}
rc::Gen<int> int8() {
  static const auto gen = rcfull::in_range(-128, 128);
  return gen;
}
rc::Gen<int> shift25() {
  static const auto gen = rcfull::in_range(0, 26);
  return gen;
}
std::vector<std::int32_t> words(unsigned n) { return *rc::gen::container<std::vector<std::int32_t>>(n, word()); }

// ------------------------------------------------------------------ VMAT

// vmat.md §1 with ACT zero except ACT[64(b0+jh) + ih] = a: acc_{r,j} = a·W[c_{r,jh}][ih] for j = jh,
// 0 otherwise, so y_r = sat32(rnd(a·W[c0 + rK + jh][ih]·WSCALE·2^ASH[b0+jh], 16)).
RC_GTEST_PROP(VmatLaws, OneHotActivationReturnsTheChunkColumn, ()) {
  VectorState s;
  const unsigned K = *rcfull::in_range(1u, 7u);
  const unsigned b0 = *rcfull::in_range(0u, 7u - K);
  const unsigned R = *rc::gen::inRange(1u, 65u);
  const unsigned c0 = *rcfull::in_range(0u, kWChunks - R * K + 1);
  const unsigned jh = *rcfull::in_range(0u, K), ih = *rcfull::in_range(0u, 64u);
  const bool plain = *rcfull::any<bool>();  // WSCALE = 1, ASH = 16, a = 1: the weights
  const int a = plain ? 1 : *rc::gen::element(1, -1, 127, -128, *int8());
  for (unsigned c = c0; c < c0 + R * K; ++c) {
    for (unsigned i = 0; i < 64; ++i) s.wmem[64 * c + i] = static_cast<std::int8_t>(*int4());
    s.wscale[c] = plain ? 1 : *rcfull::any<std::uint16_t>();
  }
  for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = plain ? 16 : static_cast<std::uint8_t>(*shift25());
  s.act[64 * (b0 + jh) + ih] = static_cast<std::int8_t>(a);
  const unsigned dst = *rcfull::in_range(0u, kVrWords - R + 1);
  const Exec e = run(s, kVmat, K, 0, ab(dst, b0), ab(c0, R));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == std::size_t{R} * (K + 4) + (R - 1) / 256);  // §5: R(K + 4) + floor((R-1)/256)
  RC_ASSERT(all_valid(e.tokens));
  const auto rows = read_vmat_rows(e.tokens, R, K);
  for (unsigned r = 0; r < R; ++r) {
    RC_ASSERT(rows[r].first == s.vr[dst + r]);  // the row's bytes are the word written
    RC_ASSERT(!rows[r].second);                 // VYN3 is argmax mode only
  }
  for (unsigned r = 0; r < R; ++r) {
    const unsigned c = c0 + r * K + jh;
    const i64 w = s.wmem[64 * c + ih];
    const i64 y = rnd(a * w * i64{s.wscale[c]} * (i64{1} << s.ash[b0 + jh]), 16);
    RC_ASSERT(s.vr[dst + r] == sat32(y));
    if (plain) RC_ASSERT(s.vr[dst + r] == w);  // the chunk's element itself
  }
}

// vector.md §2.1: `.lockstep.wmem` byte 32c + k holds W[c][2k] in bits 3..0 and W[c][2k+1] in
// bits 7..4, each 4-bit two's complement; a section shorter than the memory leaves the rest
// zero. The memories are loaded from random packed bytes (ref::load_vector_sections, any
// length) and checked against the nibbles decoded here; then a one-hot VMAT over the loaded
// state (WSCALE, ACT and ASH from their sections too) returns a·W·WSCALE·2^ASH rounded (vmat.md §1).
RC_GTEST_PROP(VmatLaws, PackedWeightsUnpackAsSignedNibbles, ()) {
  const unsigned len = *rc::gen::inRange(1u, 32u * kWChunks + 1);  // a count: grows with the size
  std::mt19937 g(*rcfull::any<unsigned>());
  format::GuestImage image;
  auto& wm = image.sections[".lockstep.wmem"];
  wm.resize(len);
  for (auto& b : wm) b = static_cast<std::uint8_t>(g());
  const auto nibble = [&](unsigned c, unsigned i) -> i64 {  // W[c][i] from the packed bytes
    const std::size_t at = std::size_t{32} * c + i / 2;
    if (at >= wm.size()) return 0;
    const unsigned v = i % 2 == 0 ? (wm[at] & 0xfu) : (wm[at] >> 4);
    return v >= 8 ? i64{v} - 16 : i64{v};
  };
  const unsigned K = *rcfull::in_range(1u, 7u);
  const unsigned b0 = *rcfull::in_range(0u, 7u - K);
  const unsigned R = *rc::gen::inRange(1u, 65u);
  // Rows inside the section most of the time (c0 below len / 32 when possible).
  const unsigned loaded = std::max(1u, std::min(kWChunks - R * K + 1, len / 32));
  const unsigned c0 = *rc::gen::weightedOneOf<unsigned>({{4, rcfull::in_range(0u, loaded)}, {1, rcfull::in_range(0u, kWChunks - R * K + 1)}});
  const unsigned jh = *rcfull::in_range(0u, K), ih = *rcfull::in_range(0u, 64u);
  const int a = *rc::gen::element(1, -1, 127, -128, *int8());
  const std::uint8_t ash = *rcfull::in_range<std::uint8_t>(0, 26);
  auto& ws = image.sections[".lockstep.wscale"];
  ws.resize(2 * kWChunks);
  for (auto& b : ws) b = static_cast<std::uint8_t>(g());
  auto& act = image.sections[".lockstep.act"];
  act.assign(kActBytes, 0);
  act[64 * (b0 + jh) + ih] = static_cast<std::uint8_t>(a);
  image.sections[".lockstep.ash"].assign(kActBlocks, ash);
  VectorState s;
  load_vector_sections(image, s);
  for (unsigned c = 0; c < kWChunks; ++c)
    for (unsigned i = 0; i < 64; ++i)
      if (s.wmem[64 * c + i] != nibble(c, i)) {
        RC_LOG() << "section of " << len << " bytes: W[" << c << "][" << i << "] = " << int{s.wmem[64 * c + i]} << ", byte "
                 << (32 * c + i / 2 < len ? int{wm[32 * c + i / 2]} : -1) << " gives " << nibble(c, i) << "\n";
        RC_FAIL("a weight is not its packed nibble");
      }
  const unsigned dst = *rcfull::in_range(0u, kVrWords - R + 1);
  const Exec e = run(s, kVmat, K, 0, ab(dst, b0), ab(c0, R));
  RC_ASSERT(e.code == 0u);
  for (unsigned r = 0; r < R; ++r) {
    const unsigned c = c0 + r * K + jh;
    const i64 wscale = ws[2 * c] | ws[2 * c + 1] << 8;  // uint16 little-endian at byte 2c
    const i64 y = rnd(a * nibble(c, ih) * wscale * (i64{1} << ash), 16);
    RC_ASSERT(s.vr[dst + r] == sat32(y));
  }
}

// Argmax mode writes X(rd) = the smallest r with y_r = max y (ties: lowest index), where y is
// what write mode writes; rows copied from the maximal row make ties.
RC_GTEST_PROP(VmatLaws, ArgmaxIsTheLowestIndexOfTheMaximum, ()) {
  VectorState s;
  const unsigned K = *rcfull::in_range(1u, 7u);
  const unsigned b0 = *rcfull::in_range(0u, 7u - K);
  const unsigned R = *rc::gen::inRange(1u, 40u);
  const unsigned c0 = *rcfull::in_range(0u, kWChunks - R * K + 1);
  for (unsigned i = 0; i < kActBytes; ++i) s.act[i] = static_cast<std::int8_t>(*int8());
  for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = static_cast<std::uint8_t>(*shift25());
  for (unsigned c = c0; c < c0 + R * K; ++c) {
    for (unsigned i = 0; i < 64; ++i) s.wmem[64 * c + i] = static_cast<std::int8_t>(*int4());
    s.wscale[c] = *rcfull::any<std::uint16_t>();
  }
  // Ties: copy row `from` over a few other rows.
  const unsigned from = *rcfull::in_range(0u, R), copies = *rcfull::in_range(0u, 4u);
  for (unsigned k = 0; k < copies; ++k) {
    const unsigned to = *rcfull::in_range(0u, R);
    for (unsigned j = 0; j < K; ++j) {
      std::copy_n(s.wmem.begin() + 64 * (c0 + from * K + j), 64, s.wmem.begin() + 64 * (c0 + to * K + j));
      s.wscale[c0 + to * K + j] = s.wscale[c0 + from * K + j];
    }
  }
  VectorState w = s;
  const Exec ew = run(w, kVmat, K, 0, ab(0, b0), ab(c0, R));
  RC_ASSERT(ew.code == 0u);
  const unsigned rd = *rcfull::in_range(1u, 32u);
  VectorState m = s;
  const Exec em = run(m, kVmat, 8 | K, rd, ab(0, b0), ab(c0, R));
  RC_ASSERT(em.code == 0u);
  RC_ASSERT(em.writes_rd);
  // §5: the same row tokens (execute_vector leaves the final W(r*) to the machine).
  RC_ASSERT(em.tokens.size() == std::size_t{R} * (K + 4) + (R - 1) / 256);
  RC_ASSERT(all_valid(em.tokens) && all_valid(ew.tokens));
  const auto wrows = read_vmat_rows(ew.tokens, R, K), mrows = read_vmat_rows(em.tokens, R, K);
  RC_ASSERT(m.vr == s.vr);  // argmax mode writes no register word
  const auto best = std::max_element(w.vr.begin(), w.vr.begin() + R);  // the first maximum
  RC_ASSERT(em.rd_value == static_cast<u32>(best - w.vr.begin()));
  // Independently of write mode: the formula of vmat.md §1.
  const std::vector<std::int32_t> y = vmat_rows(s, c0, b0, R, K);
  for (unsigned r = 0; r < R; ++r) {
    RC_ASSERT(w.vr[r] == y[r]);
    RC_ASSERT(wrows[r].first == y[r] && !wrows[r].second);
    RC_ASSERT(mrows[r].first == y[r]);
    // VYN3 exactly when y_r > y_r' for every r' < r (always for r = 0).
    bool new_max = true;
    for (unsigned r2 = 0; r2 < r; ++r2) new_max = new_max && y[r] > y[r2];
    RC_ASSERT(mrows[r].second == new_max);
  }
  unsigned first = 0;
  for (unsigned r = 1; r < R; ++r)
    if (y[r] > y[first]) first = r;
  RC_ASSERT(em.rd_value == first);
}

// ------------------------------------------------------------------ VQ

RC_GTEST_PROP(VqLaws, QuantiseThenDequantiseIsWithinHalfAStep, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 385u);
  const unsigned nb = groups(n);
  const unsigned b0 = *rcfull::in_range(0u, 7u - nb);
  const unsigned src = *rcfull::in_range(0u, kVrWords - n + 1);
  // Each group with its own magnitude.
  for (unsigned k = 0; k < nb; ++k) {
    const int shift = *rcfull::in_range(0, 32);
    for (unsigned i = 64 * k; i < std::min(n, 64 * k + 64); ++i) s.vr[src + i] = *word() >> shift;
  }
  std::fill(s.act.begin(), s.act.end(), std::int8_t{99});  // padding must be overwritten with 0
  const Exec e = run(s, kVq, 0, 0, ab(b0, src), ab(0, n));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == 81u * nb);  // §5: 81 ceil(n/64)
  RC_ASSERT(all_valid(e.tokens));
  {  // per group VQE((k << 5) | e_k), then block b0 + k's 64 values (padding included) on one int8 stream
    Int8Reader r{e.tokens};
    for (unsigned k = 0; k < nb; ++k) {
      RC_ASSERT(r.i < e.tokens.size());
      RC_ASSERT(e.tokens[r.i++] == format::token_id(format::Kind::VQE, k << 5 | s.ash[b0 + k]));
      for (unsigned i = 0; i < 64; ++i) RC_ASSERT(r.next() == s.act[64 * (b0 + k) + i]);
    }
    RC_ASSERT(r.i == e.tokens.size());
  }
  for (unsigned k = 0; k < nb; ++k) {
    const unsigned e_k = s.ash[b0 + k];
    RC_ASSERT(e_k <= 25u);
    i64 amax = 0;
    for (unsigned i = 64 * k; i < std::min(n, 64 * k + 64); ++i) {
      const i64 x = s.vr[src + i];
      const i64 q = s.act[64 * (b0 + k) + (i - 64 * k)];
      amax = std::max(amax, x < 0 ? -x : x);
      RC_ASSERT(q >= -127 && q <= 127);
      const i64 err = x - q * (i64{1} << e_k);
      if (e_k == 0) {
        RC_ASSERT(err == 0);
      } else {
        RC_ASSERT(err <= (i64{1} << (e_k - 1)) && -err <= (i64{1} << (e_k - 1)));
        RC_ASSERT(q == rnd(x, e_k));
      }
    }
    // E(amax): the smallest e with rnd(amax, e) <= 127.
    RC_ASSERT(rnd(amax, e_k) <= 127);
    if (e_k > 0) RC_ASSERT(rnd(amax, e_k - 1) > 127);
    for (unsigned i = n; i < 64 * k + 64; ++i) RC_ASSERT(s.act[64 * (b0 + k) + (i - 64 * k)] == 0);
  }
}

RC_GTEST_PROP(VqLaws, CacheRowsQuantiseWithinHalfAStep, ()) {
  VectorState s;
  const bool v = *rcfull::any<bool>();
  const unsigned row = *rcfull::in_range(0u, kCacheRows);
  const unsigned src = *rcfull::in_range(0u, kVrWords - 32 + 1);
  const int shift = *rcfull::in_range(0, 32);
  for (unsigned i = 0; i < 32; ++i) s.vr[src + i] = *word() >> shift;
  // Other rows hold junk that must stay: the op writes only its row and that row's shift.
  for (unsigned i = 0; i < kCacheRows * kCacheRowLen; ++i) {
    s.kc[i] = static_cast<std::int8_t>(i * 7 + 3);
    s.vc[i] = static_cast<std::int8_t>(i * 5 + 1);
  }
  for (unsigned r = 0; r < kCacheRows; ++r) s.ksh[r] = s.vsh[r] = static_cast<std::uint8_t>(r % 26);
  const VectorState before = s;
  const Exec e = run(s, kVq, v ? 2 : 1, 0, ab(row, src), ab(0, 32));
  RC_ASSERT(e.code == 0u);
  const auto& cache = v ? s.vc : s.kc;
  const unsigned e0 = (v ? s.vsh : s.ksh)[row];
  RC_ASSERT(e.tokens.size() == 41u);  // §5: VQE, then the row's 32 values on an int8 stream
  RC_ASSERT(all_valid(e.tokens));
  RC_ASSERT(e.tokens[0] == format::token_id(format::Kind::VQE, e0));
  Int8Reader r{e.tokens, 1};
  for (unsigned i = 0; i < 32; ++i) RC_ASSERT(r.next() == cache[32 * row + i]);
  RC_ASSERT(r.i == e.tokens.size());
  i64 amax = 0;
  for (unsigned i = 0; i < 32; ++i) {
    const i64 x = s.vr[src + i], q = cache[32 * row + i];
    amax = std::max(amax, x < 0 ? -x : x);
    RC_ASSERT(q >= -127 && q <= 127);
    RC_ASSERT(q == rnd(x, e0));
    const i64 err = x - q * (i64{1} << e0);
    const bool within = e0 == 0u ? err == 0 : (err <= (i64{1} << (e0 - 1)) && -err <= (i64{1} << (e0 - 1)));
    RC_ASSERT(within);
  }
  // e0 = E(amax) (vq.md §1): the smallest e with rnd(amax, e) <= 127, as for ACT blocks.
  RC_LOG() << "row " << row << (v ? " V" : " K") << ": amax " << amax << ", shift " << e0 << "\n";
  RC_ASSERT(e0 <= 25u);
  RC_ASSERT(rnd(amax, e0) <= 127);
  if (e0 > 0) RC_ASSERT(rnd(amax, e0 - 1) > 127);
  // Nothing else changes: the other cache, the other rows and their shifts.
  VectorState expect = before;
  std::copy_n(cache.begin() + 32 * row, 32, (v ? expect.vc : expect.kc).begin() + 32 * row);
  (v ? expect.vsh : expect.ksh)[row] = static_cast<std::uint8_t>(e0);
  assert_same_state(s, expect);
}

// ------------------------------------------------------------------ VEW

RC_GTEST_PROP(VewLaws, AddCommutesAndSaturates, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 257u);
  const unsigned a = *rcfull::in_range(0u, 45u), b = *rcfull::in_range(300u, 345u), dst = *rcfull::in_range(600u, 645u);
  for (unsigned i = 0; i < n; ++i) {
    s.vr[a + i] = *word();
    s.vr[b + i] = *word();
  }
  VectorState t = s;
  const Exec e1 = run(s, kVew, 0, 0, ab(dst, a), ab(b, n));
  const Exec e2 = run(t, kVew, 0, 0, ab(dst, b), ab(a, n));
  RC_ASSERT(e1.code == 0u);
  RC_ASSERT(e2.code == 0u);
  RC_ASSERT(e1.tokens.size() == quads(n) + 4u * n);  // §5: ceil(n/4) + 4n
  RC_ASSERT(s.vr == t.vr);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == sat32(i64{s.vr[a + i]} + s.vr[b + i]));
}

// VEW MUL, MULS (one scalar per group of 2^GS elements) and ROT at any position p (vew.md §1)
// against the formulas with random operands: z = sat32(rnd(x·y, 16)); ROT pairs with the
// COS/SIN entries of vector.md §3, computed here; out of place and in place (dst = a).
RC_GTEST_PROP(VewLaws, MulMulsAndRotMatchTheirDefinitions, ()) {
  VectorState s;
  const unsigned mode = *rc::gen::element(1u, 2u, 3u);  // MUL, MULS, ROT
  const unsigned gs = mode == 2 ? *rcfull::in_range(0u, 7u) : 0u;
  const unsigned n = 2 * *rc::gen::inRange(1u, 129u);  // even (ROT)
  const unsigned a = *rcfull::in_range(0u, 45u), b = *rcfull::in_range(300u, 345u), dst = *rcfull::in_range(600u, 645u);
  const unsigned pos = mode == 3 ? *rcfull::in_range(0u, 64u) : 0u;
  const auto x = words(n), y = words(n);  // MULS reads y[0 .. (n-1) >> GS]
  std::copy(x.begin(), x.end(), s.vr.begin() + a);
  std::copy(y.begin(), y.end(), s.vr.begin() + b);
  RC_LOG() << "mode " << mode << " GS " << gs << " n " << n << " position " << pos << "\n";
  std::vector<std::int32_t> z(n);
  for (unsigned i = 0; i < n; ++i) {
    if (mode == 1) z[i] = sat32(rnd(i64{x[i]} * y[i], 16));
    if (mode == 2) z[i] = sat32(rnd(i64{x[i]} * y[i >> gs], 16));
  }
  if (mode == 3) {
    for (unsigned k = 0; k < n / 2; ++k) {
      const i64 c = tables().cos[pos][k % 4], sn = tables().sin[pos][k % 4], u = x[2 * k], v = x[2 * k + 1];
      z[2 * k] = sat32(rnd(u * c - v * sn, 16));
      z[2 * k + 1] = sat32(rnd(u * sn + v * c, 16));
    }
  }
  const u32 f7 = mode | gs << 2;
  const u32 c_field = mode == 3 ? pos : b;
  VectorState in_place = s, expect = s;
  std::copy(z.begin(), z.end(), expect.vr.begin() + dst);
  const Exec e = run(s, kVew, f7, 0, ab(dst, a), ab(c_field, n));
  RC_ASSERT(e.code == 0u);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == z[i]);
  assert_same_state(s, expect);  // nothing but the destination span changes
  // In place (identical spans) is allowed and gives the same.
  const Exec ip = run(in_place, kVew, f7, 0, ab(a, a), ab(c_field, n));
  RC_ASSERT(ip.code == 0u);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(in_place.vr[a + i] == z[i]);
}

// ------------------------------------------------------------------ VRED

RC_GTEST_PROP(VredLaws, SumSumsqAndMaxMatchTheirDefinitions, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 1025u);
  const unsigned src = *rcfull::in_range(0u, kVrWords - n + 1);
  const unsigned dst = *rcfull::in_range(0u, kVrWords);
  const unsigned sh = *rcfull::in_range(0u, 32u);
  const auto x = words(n);
  // Every other word holds a distinct value that must survive the op.
  for (unsigned i = 0; i < kVrWords; ++i) s.vr[i] = static_cast<std::int32_t>(2654435761u * (i + 1));
  std::copy(x.begin(), x.end(), s.vr.begin() + src);
  i64 sum = 0;
  i128 sumsq = 0;
  std::int32_t mx = std::numeric_limits<std::int32_t>::min();
  for (std::int32_t v : x) {
    sum += v;
    sumsq += i128{v} * v;
    mx = std::max(mx, v);
  }
  const VectorState before = s;
  VectorState t = s, u = s;
  const Exec e1 = run(s, kVred, 1 | sh << 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e1.code == 0u);
  RC_ASSERT(e1.tokens.size() == groups(n) + 5u);  // §5: ceil(n/64) + 5
  RC_ASSERT(s.vr[dst] == sat32(rnd(sum, sh)));
  const Exec e0 = run(t, kVred, 0 | sh << 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e0.code == 0u);
  RC_ASSERT(t.vr[dst] == sat32(rnd(sumsq, 16 + sh)));
  const Exec e2 = run(u, kVred, 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e2.code == 0u);
  RC_ASSERT(u.vr[dst] == mx);
  // Only the destination word changes: each result against the state before the op.
  for (const VectorState* after : {&s, &t, &u}) {
    VectorState expect = before;
    expect.vr[dst] = after->vr[dst];  // checked above
    assert_same_state(*after, expect);
  }
}

// ------------------------------------------------------------------ VEXP

RC_GTEST_PROP(VexpLaws, NumeratorsAreTheExpTableEntries, ()) {
  VectorState s;
  const unsigned T = *rc::gen::inRange(1u, 65u);
  const bool in_place = *rcfull::any<bool>();
  const unsigned G = *rc::gen::inRange(1u, in_place ? 9u : 8u);
  const unsigned src = 0, dst = in_place ? 0u : 512u, sums = 1016;
  // Per group: scores of any magnitude, or a maximum near which the others lie within 2^20
  // (m − s up to 16 in Q16.16: every table index 0..1023 and the cap reachable).
  for (unsigned g = 0; g < G; ++g) {
    if (*rcfull::any<bool>()) {
      const int shift = *rcfull::in_range(0, 32);
      for (unsigned t = 0; t < T; ++t) s.vr[src + 64 * g + t] = *word() >> shift;
    } else {
      const std::int32_t top = *rcfull::in_range(std::numeric_limits<std::int32_t>::min() + (1 << 20),
                                                  std::numeric_limits<std::int32_t>::max());
      for (unsigned t = 0; t < T; ++t) s.vr[src + 64 * g + t] = top - *rcfull::in_range(0, 1 << 20);
    }
  }
  const VectorState before = s;
  const Exec e = run(s, kVexp, G - 1, 0, ab(dst, src), ab(sums, T));
  RC_ASSERT(e.code == 0u);
  // §5: G(4 + ceil(T/4) + 4T) + ceil(G/4) + 4G
  RC_ASSERT(e.tokens.size() == G * (4 + quads(T) + 4 * T) + quads(G) + 4 * G);
  RC_ASSERT(all_valid(e.tokens));
  {  // one word stream: per group VXM0..3 (m_g), elements 64g + t (p); then elements 512 + g (S_g)
    WordReader r{e.tokens};
    for (unsigned g = 0; g < G; ++g) {
      std::int32_t m = std::numeric_limits<std::int32_t>::min();
      for (unsigned t = 0; t < T; ++t) m = std::max(m, before.vr[src + 64 * g + t]);
      RC_ASSERT(read4(e.tokens, r.i, K(format::Kind::VXM0)) == m);
      for (unsigned t = 0; t < T; ++t) {
        const auto [el, z] = r.next();
        RC_ASSERT(el == i64{64 * g + t});
        RC_ASSERT(z == s.vr[dst + 64 * g + t]);
      }
    }
    for (unsigned g = 0; g < G; ++g) {
      const auto [el, z] = r.next();
      RC_ASSERT(el == i64{512 + g});
      RC_ASSERT(z == s.vr[sums + g]);
    }
    RC_ASSERT(r.i == e.tokens.size());
  }
  // vexp.md §1: i = min(1023, rnd(m − s, 10)), p = EXP[i] (vector.md §3, computed here),
  // S_g = Σ p; nothing else changes.
  VectorState expect = before;
  for (unsigned g = 0; g < G; ++g) {
    i64 m = std::numeric_limits<i64>::min(), total = 0;
    for (unsigned t = 0; t < T; ++t) m = std::max<i64>(m, before.vr[src + 64 * g + t]);
    for (unsigned t = 0; t < T; ++t) {
      const i64 score = before.vr[src + 64 * g + t];
      const i64 i = std::min<i64>(1023, rnd(m - score, 10));
      const i64 p = tables().exp[i];
      if (s.vr[dst + 64 * g + t] != p)
        RC_LOG() << "group " << g << " t " << t << ": s " << score << ", m - s " << m - score << ", i " << i << ", EXP[i] " << p
                 << ", got " << s.vr[dst + 64 * g + t] << "\n";
      RC_ASSERT(s.vr[dst + 64 * g + t] == p);
      expect.vr[dst + 64 * g + t] = static_cast<std::int32_t>(p);
      total += p;
    }
    RC_ASSERT(s.vr[sums + g] == total);
    RC_ASSERT(total >= 65536 && total <= 64 * 65536);
    expect.vr[sums + g] = static_cast<std::int32_t>(total);
  }
  assert_same_state(s, expect);
}

// ------------------------------------------------------------------ §5 values on the bus

/// Reads a word stream from t[from..] with exactly the elements `elements` (in order) and
/// checks each value against `word(e)`; the stream must end the tokens.
template <class F>
void expect_word_stream(const std::vector<u32>& t, std::size_t from, const std::vector<i64>& elements, F word) {
  WordReader r{t, from};
  for (i64 e : elements) {
    const auto [el, z] = r.next();
    RC_ASSERT(el == e);
    RC_ASSERT(z == word(e));
  }
  RC_ASSERT(r.i == t.size());
}
std::vector<i64> first_elements(unsigned n) {
  std::vector<i64> e(n);
  for (unsigned i = 0; i < n; ++i) e[i] = i;
  return e;
}

// VEW (every mode), VFN (every function), VMATR (K and V modes) and VRED: the word stream on
// the bus is, element by element, the VR words the op left (§5: VEW/VFN e = i -> VR[dst + i];
// VMATR K e = 8t + h -> VR[dst + 64h + t]; VMATR V e = 8h + d -> VR[dst + e]; VRED e = 0 ->
// VR[dst]), after the op's position tokens (VMV(t), VRD(k)); every id is in the vocabulary.
RC_GTEST_PROP(TokenLaws, WordStreamsAreTheWordsWritten, ()) {
  VectorState s;
  const auto init = words(kVrWords);
  std::copy(init.begin(), init.end(), s.vr.begin());
  const unsigned op = *rc::gen::element(kVew, kVfn, kVmatr, kVred);
  if (op == kVew) {
    // Regions: a in [0, 341), b in [341, 682), dst in [682, 1024) or in place (dst = a).
    const unsigned mode = *rcfull::in_range(0u, 4u);
    const unsigned gs = mode == 2 ? *rcfull::in_range(0u, 7u) : 0u;
    const unsigned n = mode == 3 ? 2 * *rc::gen::inRange(1u, 171u) : *rc::gen::inRange(1u, 341u);
    const unsigned a = *rcfull::in_range(0u, 341u - n + 1);
    const unsigned b = mode == 3 ? *rcfull::in_range(0u, 64u) : 341u + *rcfull::in_range(0u, 341u - n + 1);
    const unsigned dst = *rcfull::any<bool>() ? a : 682u + *rcfull::in_range(0u, 342u - n + 1);
    const Exec e = run(s, kVew, mode | gs << 2, 0, ab(dst, a), ab(b, n));
    RC_ASSERT(e.code == 0u);
    RC_ASSERT(e.tokens.size() == quads(n) + 4u * n);
    RC_ASSERT(all_valid(e.tokens));
    expect_word_stream(e.tokens, 0, first_elements(n), [&](i64 i) { return s.vr[dst + i]; });
  } else if (op == kVfn) {
    const unsigned fn = *rcfull::in_range(0u, 3u);
    const unsigned n = *rc::gen::inRange(1u, 513u);
    const unsigned src = *rcfull::in_range(0u, 512u - n + 1);
    const unsigned dst = *rcfull::any<bool>() ? src : 512u + *rcfull::in_range(0u, 512u - n + 1);
    const Exec e = run(s, kVfn, fn, 0, ab(dst, src), ab(0, n));
    RC_ASSERT(e.code == 0u);
    RC_ASSERT(e.tokens.size() == quads(n) + 4u * n);
    RC_ASSERT(all_valid(e.tokens));
    expect_word_stream(e.tokens, 0, first_elements(n), [&](i64 i) { return s.vr[dst + i]; });
  } else if (op == kVmatr) {
    const bool vmode = *rcfull::any<bool>();
    const unsigned T = *rc::gen::inRange(1u, 65u);
    const unsigned r0 = *rcfull::in_range(0u, kCacheRows - T + 1);
    auto& cache = vmode ? s.vc : s.kc;
    auto& shifts = vmode ? s.vsh : s.ksh;
    for (unsigned r = r0; r < r0 + T; ++r) {
      for (unsigned i = 0; i < kCacheRowLen; ++i) cache[32 * r + i] = static_cast<std::int8_t>(*int8());
      shifts[r] = static_cast<std::uint8_t>(*shift25());
    }
    if (!vmode) {
      for (unsigned i = 0; i < kActBytes; ++i) s.act[i] = static_cast<std::int8_t>(*int8());
      for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = static_cast<std::uint8_t>(*shift25());
      const unsigned src = *rcfull::in_range(0u, 6u);
      const unsigned dst = *rcfull::in_range(0u, kVrWords - (448 + T) + 1);
      const Exec e = run(s, kVmatr, 0, 0, ab(dst, src), ab(r0, T));
      RC_ASSERT(e.code == 0u);
      RC_ASSERT(e.tokens.size() == 34u * T);
      RC_ASSERT(all_valid(e.tokens));
      std::vector<i64> elements;
      for (unsigned t = 0; t < T; ++t)
        for (unsigned h = 0; h < 8; ++h) elements.push_back(8 * t + h);
      expect_word_stream(e.tokens, 0, elements, [&](i64 el) { return s.vr[dst + 64 * (el % 8) + el / 8]; });
    } else {
      // The 64 destination words lie wholly before or after the 8 probability groups.
      const bool after = *rcfull::any<bool>();
      const unsigned src = after ? *rcfull::in_range(0u, 512u - T + 1) : *rcfull::in_range(64u, 576u - T + 1);
      const unsigned dst = after ? *rcfull::in_range(src + 448 + T, 961u) : *rcfull::in_range(0u, src - 64 + 1);
      const Exec e = run(s, kVmatr, 1, 0, ab(dst, src), ab(r0, T));
      RC_ASSERT(e.code == 0u);
      RC_ASSERT(e.tokens.size() == T + 272u);
      RC_ASSERT(all_valid(e.tokens));
      for (unsigned t = 0; t < T; ++t) RC_ASSERT(e.tokens[t] == format::token_id(format::Kind::VMV, t));
      expect_word_stream(e.tokens, T, first_elements(64), [&](i64 el) { return s.vr[dst + el]; });
    }
  } else {
    const unsigned mode = *rcfull::in_range(0u, 3u);
    const unsigned sh = mode == 2 ? 0u : *rcfull::in_range(0u, 32u);
    const unsigned n = *rc::gen::inRange(1u, 1025u);
    const unsigned src = *rcfull::in_range(0u, kVrWords - n + 1);
    const unsigned dst = *rcfull::in_range(0u, kVrWords);
    const Exec e = run(s, kVred, mode | sh << 2, 0, ab(dst, src), ab(0, n));
    RC_ASSERT(e.code == 0u);
    RC_ASSERT(e.tokens.size() == groups(n) + 5u);
    RC_ASSERT(all_valid(e.tokens));
    for (unsigned k = 0; k < groups(n); ++k) RC_ASSERT(e.tokens[k] == format::token_id(format::Kind::VRD, k));
    expect_word_stream(e.tokens, groups(n), {0}, [&](i64) { return s.vr[dst]; });
  }
}

// VMAT for any row count: R(K + 4) + floor((R-1)/256) tokens, VMH(r >> 8) before rows 256,
// 512, ..., each row's bytes the word written (write mode); argmax mode the same rows with VYN3
// exactly at the strict running maxima.  Weights and activations from a drawn mt19937 seed.
RC_GTEST_PROP(VmatLaws, RowTokensForAnyRowCount, ()) {
  VectorState s;
  const unsigned K = *rcfull::in_range(1u, 7u);
  const unsigned b0 = *rcfull::in_range(0u, 7u - K);
  // Row counts around the VMH boundaries (256, 512, 768) half the time.
  const unsigned rmax = std::min(kVrWords, kWChunks / K);
  const unsigned R = std::min(rmax, *rc::gen::weightedOneOf<unsigned>({
                                        {1, rc::gen::inRange(1u, rmax + 1)},
                                        {1, rc::gen::element(1u, 255u, 256u, 257u, 511u, 512u, 513u, 768u, 769u, rmax)},
                                    }));
  const unsigned c0 = *rcfull::in_range(0u, kWChunks - R * K + 1);
  const unsigned seed = *rcfull::any<unsigned>();
  std::mt19937 g(seed);
  for (auto& a : s.act) a = static_cast<std::int8_t>(static_cast<int>(g() % 256) - 128);
  for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = static_cast<std::uint8_t>(g() % 26);
  const bool small_ints = *rcfull::any<bool>();  // few distinct y values: ties
  for (unsigned c = c0; c < c0 + R * K; ++c) {
    for (unsigned i = 0; i < 64; ++i) s.wmem[64 * c + i] = static_cast<std::int8_t>(small_ints ? (i == 0 ? g() % 3 : 0) : g() % 16 - 8);
    s.wscale[c] = static_cast<std::uint16_t>(small_ints ? 1 : g());
  }
  const unsigned dst = *rcfull::in_range(0u, kVrWords - R + 1);
  const VectorState in = s;
  VectorState m = s;
  const Exec e = run(s, kVmat, K, 0, ab(dst, b0), ab(c0, R));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == std::size_t{R} * (K + 4) + (R - 1) / 256);
  RC_ASSERT(all_valid(e.tokens));
  const auto rows = read_vmat_rows(e.tokens, R, K);
  for (unsigned r = 0; r < R; ++r) RC_ASSERT(rows[r].first == s.vr[dst + r] && !rows[r].second);
  const Exec a = run(m, kVmat, 8 | K, 1, ab(0, b0), ab(c0, R));
  RC_ASSERT(a.code == 0u);
  RC_ASSERT(a.tokens.size() == std::size_t{R} * (K + 4) + (R - 1) / 256);
  const auto arows = read_vmat_rows(a.tokens, R, K);
  std::int32_t best = 0;
  for (unsigned r = 0; r < R; ++r) {
    RC_ASSERT(arows[r].first == s.vr[dst + r]);
    RC_ASSERT(arows[r].second == (r == 0 || arows[r].first > best));
    if (r == 0 || arows[r].first > best) best = arows[r].first;
  }
  // y_r by vmat.md §1's formula, from the inputs.
  const std::vector<std::int32_t> y = vmat_rows(in, c0, b0, R, K);
  for (unsigned r = 0; r < R; ++r) RC_ASSERT(s.vr[dst + r] == y[r]);
  // vmat.md §1: X(rd) is the smallest r with y_r = max y (ties: the lowest index wins).
  const auto lowest = static_cast<unsigned>(std::max_element(y.begin(), y.end()) - y.begin());  // the first maximum
  RC_ASSERT(y[lowest] == best);
  RC_LOG() << "R " << R << ": max y " << best << " first at row " << lowest << ", X(rd) " << a.rd_value << "\n";
  RC_ASSERT(a.rd_value == lowest);
}

// ------------------------------------------------------------------ VLD

// vld.md §1: VR[dst + i] = sat32(sext8(b_i) · M) for any multiplier M (edges INT32_MIN,
// INT32_MAX, −1, 0, 1, 65536 or any int32); the rest of VR unchanged; §5's token count, and the
// bus carries M's bytes then the n bytes.
RC_GTEST_PROP(VldLaws, LoadsTheBytesTimesTheMultiplierSaturated, ()) {
  VectorState s;
  for (unsigned i = 0; i < kVrWords; ++i) s.vr[i] = static_cast<std::int32_t>(2654435761u * (i + 1));
  const unsigned n = *rc::gen::inRange(1u, 1025u);
  const unsigned dst = *rcfull::in_range(0u, kVrWords - n + 1);
  const auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(n, rcfull::any<std::uint8_t>());
  const std::int32_t M = *rc::gen::weightedOneOf<std::int32_t>({
      {2, rc::gen::element<std::int32_t>(std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), -1,
                                         0, 1, 65536)},
      {1, rcfull::in_range(-300, 301)},
      {2, rcfull::any<std::int32_t>()},
  });
  std::vector<std::uint8_t> ram(4096, 0);
  const unsigned at = 4 * *rcfull::in_range(0u, 256u);
  for (unsigned m = 0; m < 4; ++m) ram[at + m] = static_cast<std::uint8_t>(static_cast<u32>(M) >> (8 * m));  // little-endian
  std::copy(bytes.begin(), bytes.end(), ram.begin() + at + 4);
  RC_LOG() << "M = " << M << ", n = " << n << ", dst = " << dst << "\n";
  VectorState expect = s;
  for (unsigned i = 0; i < n; ++i) {
    const i64 b = bytes[i] >= 128 ? i64{bytes[i]} - 256 : i64{bytes[i]};  // sext8
    expect.vr[dst + i] = sat32(b * M);
  }
  const Exec e = run(s, kVld, 0, 0, kRamBase + at, ab(dst, n), ram);
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == 4u + n + (n + 3) / 4);  // §5: 4 + n + ceil(n/4)
  RC_ASSERT(all_valid(e.tokens));
  for (unsigned m = 0; m < 4; ++m)
    RC_ASSERT(e.tokens[m] == format::token_id(K(format::Kind::VLB0) + m, ram[at + m]));
  Int8Reader r{e.tokens, 4};
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(static_cast<std::uint8_t>(r.next()) == bytes[i]);
  RC_ASSERT(r.i == e.tokens.size());
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == expect.vr[dst + i]);
  assert_same_state(s, expect);
}

// The tables computed above against checksums of vector.md §3's formulas computed separately
// (Python: round-half-away of 65536·exp(−i/64) etc.; those tables hash to §3's SHA-256 values):
// Σ entry and Σ index·entry in index order (COS and SIN in the order p, then j).
TEST(VectorLawHelpers, TablesAsVectorMd3) {
  i64 e0 = 0, e1 = 0, c0 = 0, c1 = 0, s0 = 0, s1 = 0;
  for (int i = 0; i < 1024; ++i) {
    e0 += tables().exp[i];
    e1 += i * tables().exp[i];
  }
  for (int p = 0; p < 64; ++p)
    for (int j = 0; j < 4; ++j) {
      const int k = 4 * p + j;
      c0 += tables().cos[p][j];
      c1 += k * tables().cos[p][j];
      s0 += tables().sin[p][j];
      s1 += k * tables().sin[p][j];
    }
  EXPECT_EQ(e0, 4227144);
  EXPECT_EQ(e1, 268415847);
  EXPECT_EQ(c0, 8263401);
  EXPECT_EQ(c1, 1046528054);
  EXPECT_EQ(s0, 1416457);
  EXPECT_EQ(s1, 62266384);
  EXPECT_EQ(tables().exp[0], 65536);  // §3 and vexp.md: EXP[0] = 65536, EXP[i] = 0 from 755
  EXPECT_EQ(tables().exp[754], 1);
  EXPECT_EQ(tables().exp[755], 0);
  EXPECT_EQ(tables().cos[0][3], 65536);
  EXPECT_EQ(tables().sin[0][3], 0);
}

// rcfull (rc_full_range.h) reaches both ends of a range at size 0, where rc::gen::inRange
// returns its minimum and rc::gen::arbitrary 0.
TEST(VectorLawHelpers, FullRangeGeneratorsIgnoreTheSize) {
  int lo = 100, hi = -100;
  unsigned byte_max = 0;
  std::uint32_t word_max = 0;
  for (int seed = 0; seed < 2000; ++seed) {
    const rc::Random r(static_cast<std::uint64_t>(seed));
    const int v = rcfull::in_range(-8, 8)(r, 0).value();
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    byte_max = std::max<unsigned>(byte_max, rcfull::any<std::uint8_t>()(r, 0).value());
    word_max = std::max(word_max, rcfull::any<std::uint32_t>()(r, 0).value());
  }
  EXPECT_EQ(lo, -8);
  EXPECT_EQ(hi, 7);
  EXPECT_EQ(byte_max, 255u);
  EXPECT_GE(word_max, 0xf0000000u);
  EXPECT_EQ(rc::gen::inRange(-8, 8)(rc::Random(1), 0).value(), -8);  // what rcfull avoids
}

// The helpers above follow vector.md §1.2's examples (so the laws use the spec's rnd).
TEST(VectorLawHelpers, RndAndSat32AsVectorMd12) {
  EXPECT_EQ(rnd<i64>(3, 1), 2);
  EXPECT_EQ(rnd<i64>(-3, 1), -1);
  EXPECT_EQ(rnd<i64>(-5, 2), -1);
  EXPECT_EQ(rnd<i64>(6, 2), 2);
  EXPECT_EQ(rnd<i64>(-6, 2), -1);
  EXPECT_EQ(rnd<i128>(-6, 2), -1);
  EXPECT_EQ(sat32<i64>(i64{1} << 40), 2147483647);
  EXPECT_EQ(sat32<i64>(-(i64{1} << 40)), -2147483647 - 1);
}

}  // namespace
}  // namespace lockstep::ref
