// Decode (isa.md sections 2, 3; bignum.md section 1): rd, rs1, rs2, the (opcode, f3) class
// candidates and f7 (layer 4), the register file's read ports and write-back (layer 5) and the
// instruction class one-hot CLS with the illegal-word flag.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// ---- decode ----
OH Machine::imm_i(std::uint32_t n) const {  // imm_i nibble n
  if (n < 3) return nib(IN, 5 + n);
  return sign_oh();
}

OH Machine::sign_oh() const {
  OH s(16);
  s[15] = any_of(nib(IN, 7), [](unsigned j) { return j >= 8; });
  s[0] = any_of(nib(IN, 7), [](unsigned j) { return j < 8; });
  return s;
}

OH Machine::imm_s(std::uint32_t n) const {
  if (n < 2) return field_oh(IMS01, 16 * n, 16);
  if (n == 2) return nib(IN, 7);
  return sign_oh();
}

OH Machine::imm_u(std::uint32_t n) const { return n < 3 ? const_oh(16, 0) : nib(IN, n); }

void Machine::decode_fields() {
  LayerBuilder& l3 = L(4);
  RD = B.field("rd", 32);
  RS1 = B.field("rs1", 32);
  RS2 = B.field("rs2", 32);
  table(l3, {masked(nib(IN, 1), 8), nib(IN, 2)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{RD.dim((v[0] >> 3) | (v[1] << 1)), 1.0}}; });
  table(l3, {masked(nib(IN, 3), 8), nib(IN, 4)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{RS1.dim((v[0] >> 3) | (v[1] << 1)), 1.0}}; });
  table(l3, {nib(IN, 5), masked(nib(IN, 6), 1)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{RS2.dim(v[0] | (v[1] << 4)), 1.0}}; });
  // rs1 and rs2 again, on custom-1 words only (the vector ops, opcode 0x2B): the queries of the
  // vector ops' operand ports (operand_port()) read these, so on every other step those heads
  // have no input at all and the executor skips them
  RSV1 = B.field("vec_rs1", 32);
  RSV2 = B.field("vec_rs2", 32);
  const std::vector<Lin> custom1 = {nib(IN, 0)[0xB], masked(nib(IN, 1), 7)[2]};
  table(l3, {masked(nib(IN, 3), 8), nib(IN, 4)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{RSV1.dim((v[0] >> 3) | (v[1] << 1)), 1.0}}; }, custom1);
  table(l3, {nib(IN, 5), masked(nib(IN, 6), 1)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{RSV2.dim(v[0] | (v[1] << 4)), 1.0}}; }, custom1);
  // (opcode, f3) candidates per class
  PRE = B.field("class_candidate", kNumCls);
  table(l3, {nib(IN, 0), masked(nib(IN, 1), 7), masked(nib(IN, 3), 7)}, [&](const std::vector<unsigned>& v) {
    const unsigned opcode = v[0] | (v[1] << 4), f3 = v[2];
    SparseVec out;
    for (const ClsSpec& s : cls_specs())
      if (s.opcode == opcode && (s.f3 < 0 || static_cast<unsigned>(s.f3) == f3)) out.push_back({PRE.dim(s.cls), 1.0});
    return out;
  });
  F7 = B.field("f7_class", kF7Values.size());
  table(l3, {masked(nib(IN, 6), 0xE), nib(IN, 7)}, [&](const std::vector<unsigned>& v) {
    const int f7 = static_cast<int>((v[0] >> 1) | (v[1] << 3));
    const int i = f7_index(f7);
    return i < 0 ? SparseVec{} : SparseVec{{F7.dim(static_cast<std::uint32_t>(i)), 1.0}};
  });
  WECALL = B.field("word_ecall", 1);
  WEBREAK = B.field("word_ebreak", 1);
  for (auto [word, out] : {std::pair{0x00000073u, WECALL.dim()}, std::pair{0x00100073u, WEBREAK.dim()}}) {
    std::vector<Lin> conds;
    for (std::uint32_t n = 0; n < 8; ++n) conds.push_back(nib(IN, n)[(word >> (4 * n)) & 15]);
    when(l3, conds, {{out, 1.0}});
  }
  IMS01 = B.field("imm_s_nibbles01", 32);
  // imm_s[3:0] = inst[10:7]; imm_s[7:4] = inst[27:25] : inst[11]
  table(l3, {masked(nib(IN, 1), 8), masked(nib(IN, 2), 7)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{IMS01.dim((v[0] >> 3) | (v[1] << 1)), 1.0}};
  });
  table(l3, {masked(nib(IN, 2), 8), masked(nib(IN, 6), 0xE)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{IMS01.dim(16 + ((v[0] >> 3) | v[1])), 1.0}};
  });
}

// act_q = ReLU lets a query row be gated: ReLU(RS1[r] + gate - 1).
void Machine::reg_port(const std::string& name, const std::function<Lin(std::uint32_t)>& q, const FieldRef& out,
              Activation act_q) {
  LayerBuilder& l4 = L(5);
  const std::uint32_t h = l4.add_head(32, 128, Activation::Identity, act_q);
  HeadBuilder& H = l4.head(h);
  for (std::uint32_t r = 0; r < 32; ++r) H.q[r] = q(r);
  for (std::uint32_t i = 0; i < 128; ++i) H.out.emplace_back(i, out.dim(i), 1.0);
  // Write-back: when W3 is consumed, rd (a0 for ECALL) <- W0..W3 as consumed (W slot), before
  // this step's reads; W1..W3 were computed from the old sources. x0 is never written (no W
  // token has rd = x0).
  const Lin ec = WECALL[0];
  for (std::uint32_t r = 0; r < 32; ++r) H.k[r] = RD[r] + ec * ((r == 10 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0));
  for (std::uint32_t i = 0; i < 128; ++i) H.v[i] = WSR[i];
  H.beta = k(kW0 + 3);
  Initialiser in;
  in.name = name;
  in.layer = 5;
  in.head = h;
  in.column = 1;
  in.source = ByteSourceKind::Image;
  in.address = kRegImageAddress + 4;
  in.length = 31 * 4;
  in.encoding = ByteEncoding::Nibbles;
  in.bytes_per_column = 4;
  B.initialiser(in);
  Initialiser z;  // x0 = 0 as nibble one-hots
  z.name = name + "_x0";
  z.layer = 5;
  z.head = h;
  z.column = 0;
  z.is_const = true;
  z.values.assign(128, 0.0f);
  for (std::uint32_t b = 0; b < 4; ++b) {
    z.values[32 * b] = 1.0f;
    z.values[32 * b + 16] = 1.0f;
  }
  B.initialiser(z);
}

void Machine::registers_and_class() {
  R1 = B.field("rs1_value", 128);
  R2 = B.field("rs2_value", 128);
  RA1 = B.field("a1_value", 128);
  RA2 = B.field("a2_value", 128);
  const Lin ec = WECALL[0];
  reg_port("reg_port1", [&](std::uint32_t r) { return RS1[r] + ec * ((r == 17 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0)); }, R1);
  reg_port("reg_port2", [&](std::uint32_t r) { return RS2[r] + ec * ((r == 10 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0)); }, R2);
  reg_port("reg_port3", [&](std::uint32_t r) { return r == 11 ? ec : Lin(); }, RA1);
  reg_port("reg_port4", [&](std::uint32_t r) { return r == 12 ? ec : Lin(); }, RA2);
  // The vector ops' operands X(rs1), X(rs2) (vector.md section 4.0) are read through per-op
  // copies made on first use (vec_port(), operand_port() below), each zero off its own steps.
  CN = B.field("bn_c", 32);      // bignum c and acc: read from the BNSTATE head of layer 7 (commits())
  ACN = B.field("bn_acc", 384);
  LayerBuilder& l4 = L(5);
  CLS = B.field("class", kNumCls);
  ILL = B.field("illegal", 1);
  l4.mlp_bias(ILL.dim(), 1);
  for (const ClsSpec& s : cls_specs()) {
    std::vector<Lin> conds = {PRE[s.cls]};
    if (s.f7 >= 0) conds.push_back(F7[static_cast<std::uint32_t>(f7_index(s.f7))]);
    switch (s.cls) {  // bignum.md section 1: fields that must be zero
      case BN_XCHGC: conds.push_back(RS2[0]); break;
      case BN_MAC: conds.push_back(RD[0]); break;
      case BN_ACCRD: conds.push_back(RS1[0]); conds.push_back(RS2[0]); break;
      case BN_ACCCLR: conds.push_back(RD[0]); conds.push_back(RS1[0]); conds.push_back(RS2[0]); break;
      default: break;
    }
    when(l4, conds, {{CLS.dim(s.cls), 1.0}, {ILL.dim(), -1.0}});
  }
  when(l4, {WECALL[0]}, {{CLS.dim(ECALL), 1.0}, {ILL.dim(), -1.0}});
  when(l4, {WEBREAK[0]}, {{CLS.dim(EBREAK), 1.0}, {ILL.dim(), -1.0}});
}

FieldRef Machine::vec_port(std::uint32_t which, Cls c) {
  static constexpr std::array<Cls, 8> kVectorOps = {VLD, VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED};
  static constexpr std::array<const char*, 8> kNames = {"vld", "vmat", "vmatr", "vq", "vexp", "vew", "vfn", "vred"};
  const auto at = std::find(kVectorOps.begin(), kVectorOps.end(), c);
  if (at == kVectorOps.end())
    throw std::invalid_argument("vec_port: class " + std::to_string(c) + " is not a vector op");
  return operand_port(which, kNames[static_cast<std::size_t>(at - kVectorOps.begin())], PRE[c]);
}

FieldRef Machine::operand_port(std::uint32_t which, const std::string& name, const Lin& gate) {
  if (which != 1 && which != 2)
    throw std::invalid_argument("operand_port: operand " + std::to_string(which) + " is neither rs1 (1) nor rs2 (2)");
  const std::string field = "vec_rs" + std::to_string(which) + "_value_" + name;
  for (const auto& [n, f] : operand_ports_)
    if (n == field) return f;
  const FieldRef out = B.field(field, 128);
  const FieldRef& rs = which == 1 ? RSV1 : RSV2;  // zero off custom-1 words: the gate implies one
  reg_port("reg_port_" + name + "_rs" + std::to_string(which), [&](std::uint32_t r) { return rs[r] + gate - 1.0; }, out,
           Activation::Relu);
  operand_ports_.emplace_back(field, out);
  return out;
}

OH Machine::vnib(std::uint32_t which, std::initializer_list<Cls> cs, std::uint32_t n) {
  OH sum(16);
  for (Cls c : cs) {
    const OH o = nib(vec_port(which, c), n);
    for (std::uint32_t j = 0; j < 16; ++j) sum[j] += o[j];
  }
  return sum;
}

Lin Machine::vhalf(std::uint32_t which, std::initializer_list<Cls> cs, std::uint32_t h) {
  Lin sum;
  for (Cls c : cs) sum += half(vec_port(which, c), h);
  return sum;
}

}  // namespace lockstep::chip::rv32::detail
