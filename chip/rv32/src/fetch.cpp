// Fetch and the RAM (docs/chip-design.md sections 3.1, 3.2; trace.md section 4.0): the slots of
// consumed tokens (layer 0), the current pc and the RAM word keys (fetch, load, store), the RAM
// itself (layer 1: four byte-lane heads), the latched instruction and data words (layer 2) and
// their nibble one-hots (layers 2, 3).
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

void Machine::key_pieces(LayerBuilder& l, const FieldRef& f, const FieldRef& wl, const FieldRef& wh, const Lin& gate) {
  table(l, {masked(nib(f, 0), 0xC), nib(f, 1), masked(nib(f, 2), 0x7)}, [&](const std::vector<unsigned>& v) {
    const unsigned w = (v[0] >> 2) | (v[1] << 2) | (v[2] << 6);
    return SparseVec{{wl.dim(w), 1.0}};
  }, {gate});
  table(l, {masked(nib(f, 2), 0x8), nib(f, 3), nib(f, 4)}, [&](const std::vector<unsigned>& v) {
    const unsigned w = (v[0] >> 3) | (v[1] << 1) | (((v[2] + 15) & 15) << 5);
    return SparseVec{{wh.dim(w), 1.0}};
  }, {gate});
}

void Machine::in_ram(LayerBuilder& l, const FieldRef& f, std::uint32_t out) {
  const Lin b3zero = nib(f, 6)[0] + nib(f, 7)[0];
  const OH b2lo = nib(f, 4), b2hi = nib(f, 5);
  when(l, {b3zero - 1.0, b2hi[0], any_of(b2lo, [](unsigned j) { return j >= 1; })}, {{out, 1.0}});
  when(l, {b3zero - 1.0, b2hi[1], b2lo[0]}, {{out, 1.0}});
}

std::uint32_t Machine::slot_head(LayerBuilder& l, std::uint32_t rows, const std::function<Lin(std::uint32_t)>& krow,
                        const std::function<Lin(std::uint32_t)>& v, const FieldRef& out,
                        const Lin& read) {
  const std::uint32_t bw = out.width / rows;
  if (bw * rows != out.width) throw std::logic_error("slot_head: width not a multiple of rows");
  std::uint32_t first = 0;
  for (std::uint32_t i = 0; i < rows; ++i) {
    const std::uint32_t h = l.add_head(1, bw);
    if (i == 0) first = h;
    HeadBuilder& H = l.head(h);
    H.k[0] = Lin::constant(1);
    H.beta = krow(i);
    H.q[0] = read;
    for (std::uint32_t r = 0; r < bw; ++r) {
      H.v[r] = v(bw * i + r);
      H.out.emplace_back(r, out.dim(bw * i + r), 1.0);
    }
  }
  return first;
}

void Machine::block_slots(LayerBuilder& l, const std::string& name, std::uint32_t rows,
                 const std::function<std::vector<std::uint32_t>(std::uint32_t)>& kinds, const Lin& beta, const Lin& read,
                 const FieldRef& out) {
  const FieldRef EB = B.field(name + "_payload_blocks", 32 * rows);
  const std::uint32_t h = l.add_head(rows, 32 * rows);
  HeadBuilder& H = l.head(h);
  for (std::uint32_t i = 0; i < rows; ++i) {
    Lin kr;
    for (std::uint32_t kd : kinds(i)) {
      kr += k(kd);
      for (std::uint32_t p = 0; p < 256; ++p) {
        B.embed(256 * kd + p, EB.dim(32 * i + (p & 15)), 1);
        B.embed(256 * kd + p, EB.dim(32 * i + 16 + (p >> 4)), 1);
      }
    }
    H.k[i] = kr;
    H.q[i] = read;
  }
  for (std::uint32_t r = 0; r < 32 * rows; ++r) {
    H.v[r] = EB[r];
    H.out.emplace_back(r, out.dim(r), 1.0);
  }
  H.beta = beta;
}

// Nibble one-hots of the current instruction's word index w (trace.md section 4.0), from the slots.
OH Machine::wnib(std::uint32_t n) const {
  switch (n) {
    case 0: return field_oh(PCLS, 0, 16);
    case 1: return field_oh(PCLS, 16, 16);
    case 2: return field_oh(PCHS, 4, 16);
    case 3: return field_oh(PCHS, 20, 16);
    default: return field_oh(PCHS, 0, 4);
  }
}

void Machine::slots_and_keys() {
  LayerBuilder& l0 = L(0);
  PCN = B.field("pc_nibbles", 128);
  ADDR = B.field("addr_nibbles", 128);
  // Slots of consumed tokens (trace-v2: every position is on the bus).
  PCHS = B.field("pch_slot", 36);  // k one-hot (4), payload nibbles (32) of the last PCH_k
  PCLS = B.field("pcl_slot", 32);
  WSR = B.field("w_slot", 128);
  ACR = B.field("ac_slot", 384);
  OIS = B.field("oi_slot", 32);
  OIHS = B.field("oih_slot", 32);
  slot_head(l0, 1, [&](std::uint32_t) { return any_pch(); },
            [&](std::uint32_t r) { return r < 4 ? k(kPch0 + r) : PN[r - 4]; }, PCHS);
  slot_head(l0, 1, [&](std::uint32_t) { return k(kPcl); }, [&](std::uint32_t r) { return PN[r]; }, PCLS);
  // the same PCH slot, read only on the fetch step (so that the fetch key tables below are idle,
  // untouched, on every other step)
  PCHF = B.field("pch_slot_fetch", 36);
  slot_head(l0, 1, [&](std::uint32_t) { return any_pch(); },
            [&](std::uint32_t r) { return r < 4 ? k(kPch0 + r) : PN[r - 4]; }, PCHF, fetch());
  slot_head(l0, 4, [&](std::uint32_t i) { return k(kW0 + i); }, [&](std::uint32_t r) { return WPN[r]; }, WSR);
  slot_head(l0, 12, [&](std::uint32_t i) { return k(kAc0 + i); }, [&](std::uint32_t r) { return ACPN[r]; }, ACR);
  slot_head(l0, 1, [&](std::uint32_t) { return k(kOi); }, [&](std::uint32_t r) { return PN[r]; }, OIS);
  slot_head(l0, 1, [&](std::uint32_t) { return k(kOih) + k(kPcl); }, [&](std::uint32_t r) { return OIHN[r]; }, OIHS);
  // pc = RAM_BASE + 4 w as nibble one-hots: nibble n (n < 4) = w[4n+1 : 4n-2]; with
  // x = w[17:14]: nibble 4 = (x + 1) & 15, nibble 5 = [x = 15], nibbles 6, 7 = 0.
  table(l0, {masked(wnib(0), 3)}, [&](const std::vector<unsigned>& v) { return SparseVec{{PCN.dim((v[0] & 3) << 2), 1.0}}; });
  for (std::uint32_t n = 1; n < 4; ++n)
    table(l0, {masked(wnib(n - 1), 0xC), masked(wnib(n), 3)}, [&, n](const std::vector<unsigned>& v) {
      return SparseVec{{PCN.dim(16 * n + ((v[0] >> 2) | ((v[1] & 3) << 2))), 1.0}};
    });
  table(l0, {masked(wnib(3), 0xC), wnib(4)}, [&](const std::vector<unsigned>& v) {
    const unsigned x = (v[0] >> 2) | (v[1] << 2);
    return SparseVec{{PCN.dim(64 + ((x + 1) & 15)), 1.0}, {PCN.dim(80 + (x == 15 ? 1 : 0)), 1.0},
                     {PCN.dim(96), 1.0}, {PCN.dim(112), 1.0}};
  });
  // ASLOT: A0..A3 bytes as consumed; slot i holds byte i at rows 32 i. Two copies: ADDR read
  // every step, ADDRK read only where the data word is keyed (A3 and S steps), so that the key
  // tables are idle on every other step.
  ADDRK = B.field("addr_nibbles_keyed", 128);
  Lin stores;
  for (std::uint32_t i = 0; i < 4; ++i) stores += k(kS0 + i);
  for (const FieldRef* out : {&ADDR, &ADDRK})
    slot_head(l0, 4, [&](std::uint32_t i) { return k(kA0 + i); }, [&](std::uint32_t r) { return APN[r]; }, *out,
              out == &ADDR ? Lin::constant(1) : k(kA0 + 3) + stores);
  // QSLOT: quotient bits as consumed (DQ(2 i + q) tokens): bit i in slot i.
  QB = B.field("div_bits", 32);
  slot_head(l0, 32, [&](std::uint32_t i) { return DQI[i]; }, [&](std::uint32_t i) { return DQBP[i]; }, QB);
  TB = B.field("div_trial_bits", 32);
  TN = B.field("div_trial_nibbles", 128);
  INR = B.field("addr_in_ram", 1);
  // One word key for the RAM, from the fetch (PCL step) or the data address (A3, S steps): the
  // pieces wl = w & 511, wh = w >> 9 of the word index; the key of word w is wl + wh - 1 > 0.
  WL = B.field("ram_wl", 512);
  WH = B.field("ram_wh", 512);
  in_ram(l0, ADDR, INR.dim());
  // fetch (the step that consumes PCL): wl = w & 511, wh = w >> 9, straight from the w nibbles
  const OH f0 = field_oh(PCLN, 0, 16), f1 = field_oh(PCLN, 16, 16), f2 = field_oh(PCHF, 4, 16),
           f3 = field_oh(PCHF, 20, 16), f4 = field_oh(PCHF, 0, 4);
  table(l0, {f0, f1, masked(f2, 1)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{WL.dim(v[0] | (v[1] << 4) | (v[2] << 8)), 1.0}};
  });
  table(l0, {masked(f2, 0xE), f3, f4}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{WH.dim((v[0] >> 1) | (v[1] << 3) | (v[2] << 7)), 1.0}};
  });
  // data word: the load (A3 consumed) and every store byte (S_i consumed) address it
  key_pieces(l0, ADDRK, WL, WH, Lin::constant(1));
  // byte lane of the store byte S_i: (addr + i) & 3
  LANE = B.field("store_lane", 4);
  for (unsigned m = 0; m < 4; ++m)
    for (std::uint32_t i = 0; i < 4; ++i)
      when(l0, {any_of(nib(ADDRK, 0), [m](unsigned j) { return (j & 3) == m; }), k(kS0 + i)}, {{LANE.dim((m + i) & 3), 1.0}});
  // ECALL write: i + 1 for the byte index i of the slots (OI: nibbles 0, 1; OIH: nibbles 2, 3).
  IZ = B.field("oi_low_all_ones", 4);  // IZ_n = [nibbles 0 .. n-1 of i are all 15]
  INC = B.field("oi_next_index", 64);  // nibble one-hots of i + 1 (on OUT / ERR steps)
  auto inib = [&](std::uint32_t n) { return n < 2 ? field_oh(OIS, 16 * n, 16) : field_oh(OIHS, 16 * (n - 2), 16); };
  const Lin outc = k(kOut) + k(kErr);
  for (std::uint32_t n = 1; n < 4; ++n) {
    std::vector<Lin> conds = {outc};
    for (std::uint32_t j = 0; j < n; ++j) conds.push_back(inib(j)[15]);
    when(l0, conds, {{IZ.dim(n), 1.0}});
  }
  for (std::uint32_t n = 0; n < 4; ++n) {
    const OH carry = n == 0 ? OH{Lin(), Lin::constant(1)} : OH{Lin::constant(1) - IZ[n], IZ[n]};
    table(L(1), {inib(n), carry}, [&, n](const std::vector<unsigned>& v) {
      return SparseVec{{INC.dim(16 * n + ((v[0] + v[1]) & 15)), 1.0}};
    }, {outc});
  }
}

// The RAM: four heads, one per byte lane, each 2^18 word columns x 1 byte scalar, initialised
// from the image's RAM range (lane b: bytes RAM_BASE + 4 w + b). Read with the word key (fetch,
// load, store); every store byte (S_i consumed) is committed to lane (addr + i) & 3 of the data
// word (beta = the lane one-hot), so a store is visible to every later read.
void Machine::ram(const FieldRef& out) {
  LayerBuilder& l = L(1);
  for (std::uint32_t b = 0; b < 4; ++b) {
    const std::uint32_t h = l.add_head(kWords, 1, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l.head(h);
    for (std::uint32_t w = 0; w < kWords; ++w) {
      H.q[w] = WL[w & 511] + WH[w >> 9] - 1.0;
      H.k[w] = H.q[w];
    }
    H.v[0] = PS[0];
    H.beta = LANE[b];
    H.out.emplace_back(0, out.dim(b), 1.0);
    Initialiser in;
    in.name = "ram_lane" + std::to_string(b);
    in.layer = 1;
    in.head = h;
    in.source = ByteSourceKind::Image;
    in.address = kRamBase + b;
    in.length = kWords;
    in.stride = 4;
    in.encoding = ByteEncoding::Scalar;
    in.bytes_per_column = 1;
    B.initialiser(in);
  }
}

// Byte scalars -> nibble one-hots in two stages (thresholds for the high nibble, then a
// one-hot decode of the low nibble).
void Machine::byte_decode(const FieldRef& bytes, std::uint32_t first, const FieldRef& hi, const FieldRef& los, const FieldRef& out) {
  LayerBuilder& s1 = L(2);
  LayerBuilder& s2 = L(3);
  for (std::uint32_t b = 0; b < 4; ++b) {
    const Lin x = bytes[first + b];
    // T_j = [x >= 16 j] = ReLU(x - 16 j + 1) - ReLU(x - 16 j), j = 1..15; hi one-hot: T_j - T_{j+1}.
    s1.unit_out(s1.relu_unit(x), los.dim(b), 1);
    s1.mlp_bias(hi.dim(16 * b + 0), 1);
    for (std::uint32_t j = 1; j < 16; ++j) {
      const std::uint32_t u1 = s1.relu_unit(x - (16.0 * j - 1));
      const std::uint32_t u2 = s1.relu_unit(x - 16.0 * j);
      for (auto [u, sgn] : {std::pair{u1, 1.0}, std::pair{u2, -1.0}}) {
        s1.unit_out(u, hi.dim(16 * b + j), sgn);
        s1.unit_out(u, hi.dim(16 * b + j - 1), -sgn);
        s1.unit_out(u, los.dim(b), -16 * sgn);
      }
    }
    FieldRef lo_out{out.name, out.offset + 32 * b, 16};
    onehot_decode(s2, los[b], lo_out);
    for (std::uint32_t v = 0; v < 16; ++v) pass(s2, hi[16 * b + v], out.dim(32 * b + 16 + v));
  }
}

void Machine::ram_and_latches() {
  IWB = B.field("ram_bytes", 4);  // the word read this step: the instruction (fetch) or the load data (A3)
  ram(IWB);
  // LATCH (layer 2): the instruction word (written at the fetch) and the data word (written when
  // A3 is consumed), read every step.
  LW_ = B.field("latched_words", 8);
  for (std::uint32_t s = 0; s < 2; ++s) {
    const Lin when_ = s == 0 ? fetch() : k(kA0 + 3);
    const std::uint32_t h = L(2).add_head(1, 4);
    HeadBuilder& H = L(2).head(h);
    H.k[0] = Lin::constant(1);
    H.beta = when_;
    // the data word is only needed on the steps that show a loaded value (A3, W0..W2 consumed)
    H.q[0] = s == 0 ? Lin::constant(1) : k(kA0 + 3) + k(kW0) + k(kW0 + 1) + k(kW0 + 2);
    for (std::uint32_t b = 0; b < 4; ++b) {
      H.v[b] = IWB[b];
      H.out.emplace_back(b, LW_.dim(4 * s + b), 1.0);
    }
  }
  IHI = B.field("inst_hi", 64);
  ILOS = B.field("inst_lo_scalar", 4);
  DHI = B.field("data_hi", 64);
  DLOS = B.field("data_lo_scalar", 4);
  IN = B.field("inst_nibbles", 128);
  DN = B.field("data_nibbles", 128);
  byte_decode(LW_, 0, IHI, ILOS, IN);
  byte_decode(LW_, 4, DHI, DLOS, DN);
}

}  // namespace lockstep::chip::rv32::detail
