// The encoding table: no two rows overlap (Spike's check-opcode-overlap),
// every row decodes to itself, illegal words, and disassembly.
#include <gtest/gtest.h>

#include <set>
#include <string_view>
#include <utility>

#include "lockstep/ref/encoding.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref {
namespace {

TEST(EncodingTable, NoTwoRowsOverlap) {
  const auto table = encoding_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    for (std::size_t j = i + 1; j < table.size(); ++j) {
      const Encoding &a = table[i], &b = table[j];
      // Some word matches both iff the matches agree on every bit both masks fix.
      const bool overlap = ((a.match ^ b.match) & a.mask & b.mask) == 0;
      EXPECT_FALSE(overlap) << a.mnemonic << " overlaps " << b.mnemonic;
    }
  }
}

TEST(EncodingTable, EveryOpHasExactlyOneRowAndMatchIsInsideMask) {
  std::vector<int> count(static_cast<std::size_t>(Op::kCount), 0);
  for (const Encoding& e : encoding_table()) {
    ++count[static_cast<std::size_t>(e.op)];
    EXPECT_EQ(e.match & ~e.mask, 0u) << e.mnemonic;
    EXPECT_EQ(e.mask & 0x7f, 0x7fu) << e.mnemonic << ": the major opcode must be fixed";
    EXPECT_EQ(e.match & 3, 3u) << e.mnemonic << ": 32-bit encodings only";
    EXPECT_EQ(decode(e.match).op, e.op) << e.mnemonic;
  }
  for (std::size_t op = static_cast<std::size_t>(Op::kLui); op < count.size(); ++op) {
    EXPECT_EQ(count[op], 1) << "op " << op;
  }
}

TEST(Decode, HandEncodedWords) {
  // addi a0, zero, -1 (trace.md §5)
  Decoded d = decode(0xfff00513u);
  EXPECT_EQ(d.op, Op::kAddi);
  EXPECT_EQ(d.rd, 10);
  EXPECT_EQ(d.rs1, 0);
  EXPECT_EQ(d.imm, 0xffffffffu);
  // sw a0, 0(sp) = 0x00a12023
  d = decode(0x00a12023u);
  EXPECT_EQ(d.op, Op::kSw);
  EXPECT_EQ(d.rs1, 2);
  EXPECT_EQ(d.rs2, 10);
  EXPECT_EQ(d.imm, 0u);
  // beq x0, x0, -4 = 0xfe000ee3
  d = decode(0xfe000ee3u);
  EXPECT_EQ(d.op, Op::kBeq);
  EXPECT_EQ(d.imm, 0xfffffffcu);
  // jal ra, +2048 = 0x001000ef... imm_j bit 11 -> word bit 20: 0x001000ef is jal ra, 0x800
  d = decode(0x001000efu);
  EXPECT_EQ(d.op, Op::kJal);
  EXPECT_EQ(d.imm, 0x800u);
  // lui a0, 0x80000
  d = decode(0x80000537u);
  EXPECT_EQ(d.op, Op::kLui);
  EXPECT_EQ(d.imm, 0x80000000u);
  // srai a0, a0, 31 = 0x41f55513
  d = decode(0x41f55513u);
  EXPECT_EQ(d.op, Op::kSrai);
  EXPECT_EQ(d.imm, 31u);
  // bn.addc a0, a1, a2 = 0x00c5850b
  d = decode(0x00c5850bu);
  EXPECT_EQ(d.op, Op::kBnAddc);
  EXPECT_EQ(d.rd, 10);
  EXPECT_EQ(d.rs1, 11);
  EXPECT_EQ(d.rs2, 12);
}

TEST(Decode, IllegalWords) {
  const std::uint32_t illegal[] = {
      0x00000000u,  // all zero (low bits 00)
      0xffffffffu,
      0x00000001u,  // compressed quadrant
      0x0000100fu,  // FENCE.I
      0x40001013u,  // slli with f7 = 0100000
      0x02005013u,  // srli with f7 = 0000001
      0x02001013u,  // slli with f7 = 0000001
      0x000000f3u,  // ecall with rd != 0
      0x00200073u,  // not ecall/ebreak (imm 2)
      0x10500073u,  // wfi (no privileged ops)
      0x40007033u,  // and with f7 = 0100000
      0x20002033u,  // sh1add-like f3 with f7 = 0010000 bit pattern wrong (0x10 << 25 is 0x20000000: f3=2 valid) -> check below
      0x0200600bu,  // custom-0 f3 = 6
      0x0000700bu,  // custom-0 f3 = 7
      0x02c5850bu,  // bn.addc with f7 = 1
      0x00b5a50bu,  // bn.xchgc with rs2 = x11
      0x00c5b58bu,  // bn.mac with rd = x11
      0x0005c58bu,  // bn.accrd with rs1 = x11
      0x0000558bu,  // bn.accclr with rd = x11
      0x0000205bu,  // custom-2 opcode (vector.md §4.0: illegal)
      0x0000207bu,  // custom-3 opcode
      0x00003003u,  // ld (RV64)
      0x00006003u,  // lwu (RV64)
      0x00003023u,  // sd
      0x0000201bu,  // OP-IMM-32 (RV64)
      0x00002063u,  // branch f3 = 2
      0x00001067u,  // jalr f3 = 1
  };
  for (std::uint32_t w : illegal) {
    if (w == 0x20002033u) {
      EXPECT_EQ(decode(w).op, Op::kSh1add) << "f7=0010000 f3=010 is sh1add";
      continue;
    }
    EXPECT_EQ(decode(w).op, Op::kIllegal) << std::hex << w;
  }
  EXPECT_EQ(decode(0x0ff0000fu).op, Op::kFence);
  EXPECT_EQ(decode(0x8330000fu).op, Op::kFence) << "fence.tso: any fm accepted";
  EXPECT_EQ(decode(0x0ff5a58fu).op, Op::kIllegal) << "f3 = 2 on MISC-MEM";
  EXPECT_EQ(decode(0x0ff5858fu).op, Op::kFence) << "any rd/rs1 accepted";
}

TEST(Disassemble, ObjdumpLikeSyntax) {
  EXPECT_EQ(disassemble(0xfff00513u), "addi a0, zero, -1");
  EXPECT_EQ(disassemble(0x00a12023u), "sw a0, 0(sp)");
  EXPECT_EQ(disassemble(0x00812503u), "lw a0, 8(sp)");
  EXPECT_EQ(disassemble(0xfe000ee3u, 0x10010), "beq zero, zero, 0x1000c");
  EXPECT_EQ(disassemble(0x001000efu, 0x10000), "jal ra, 0x10800");
  EXPECT_EQ(disassemble(0x000080e7u), "jalr ra, 0(ra)");
  EXPECT_EQ(disassemble(0x80000537u), "lui a0, 0x80000");
  EXPECT_EQ(disassemble(0x41f55513u), "srai a0, a0, 31");
  EXPECT_EQ(disassemble(0x02c5c533u), "div a0, a1, a2");
  EXPECT_EQ(disassemble(0x20c5a533u), "sh1add a0, a1, a2");
  EXPECT_EQ(disassemble(0x00000073u), "ecall");
  EXPECT_EQ(disassemble(0x00100073u), "ebreak");
  EXPECT_EQ(disassemble(0x0ff0000fu), "fence");
  EXPECT_EQ(disassemble(0x00c5850bu), "bn.addc a0, a1, a2");
  EXPECT_EQ(disassemble(0x00c5950bu), "bn.subb a0, a1, a2");
  EXPECT_EQ(disassemble(0x0005a50bu), "bn.xchgc a0, a1");
  EXPECT_EQ(disassemble(0x00c5b00bu), "bn.mac a1, a2");
  EXPECT_EQ(disassemble(0x0000450bu), "bn.accrd a0");
  EXPECT_EQ(disassemble(0x0000500bu), "bn.accclr");
  EXPECT_EQ(disassemble(0x00000000u), ".word 0x00000000");
}

// The vector-op registry (ref/src/vector/<op>.cpp, one row each) is the single source of the
// encoding table's custom-1 rows and of the vector disassembly (vector.md §4.0).
TEST(VectorRegistry, EightRowsInF3OrderAreTheEncodingTablesCustom1Rows) {
  const auto ops = vector_ops();
  ASSERT_EQ(ops.size(), 8u);
  const char* const kNames[] = {"vmat", "vmatr", "vq", "vexp", "vew", "vfn", "vred", "vld"};  // §4.0's table
  for (unsigned f3 = 0; f3 < 8; ++f3) {
    const VectorOpRow& v = ops[f3];
    EXPECT_EQ(v.f3, f3);
    EXPECT_EQ(v.mnemonic, kNames[f3]);
    EXPECT_EQ(&vector_op(f3), &v);
    ASSERT_NE(v.execute, nullptr) << v.mnemonic;
    ASSERT_NE(v.disasm, nullptr) << v.mnemonic;
    const Op op = static_cast<Op>(static_cast<unsigned>(Op::kVmat) + f3);
    const Encoding& e = encoding_of(op);
    EXPECT_EQ(e.mnemonic, v.mnemonic);
    EXPECT_EQ(e.mask, 0x707fu) << v.mnemonic << ": opcode and f3 only (f7, rd are the op's traps)";
    EXPECT_EQ(e.match, 0x2bu | f3 << 12) << v.mnemonic;
    EXPECT_EQ(e.format, Format::kV);
    EXPECT_EQ(e.cls, InsnClass::kVector);
    EXPECT_EQ(e.operands, kOpdRd | kOpdRs1 | kOpdRs2);
  }
  // the custom-1 rows are the table's last eight, in f3 order (the program generator draws
  // from the table in its order)
  const auto table = encoding_table();
  ASSERT_GE(table.size(), 8u);
  for (unsigned f3 = 0; f3 < 8; ++f3) EXPECT_EQ(table[table.size() - 8 + f3].mnemonic, kNames[f3]);
  std::size_t custom1 = 0;
  for (const Encoding& e : table) custom1 += (e.match & 0x7f) == 0x2b;
  EXPECT_EQ(custom1, 8u);
}

// The shared class-name table: one name per class, unique, spelled as the fuzz campaign's
// --ops lists and the engine's reports use them.
TEST(EncodingTable, EveryClassHasOneUniqueName) {
  const std::pair<InsnClass, const char*> kWant[] = {
      {InsnClass::kAlu, "alu"},     {InsnClass::kAluImm, "alu-imm"}, {InsnClass::kUpper, "upper"},
      {InsnClass::kMul, "mul"},     {InsnClass::kDiv, "div"},        {InsnClass::kZba, "zba"},
      {InsnClass::kLoad, "load"},   {InsnClass::kStore, "store"},    {InsnClass::kBranch, "branch"},
      {InsnClass::kJal, "jal"},     {InsnClass::kJalr, "jalr"},      {InsnClass::kFence, "fence"},
      {InsnClass::kSystem, "system"}, {InsnClass::kBignum, "bignum"}, {InsnClass::kVector, "vector"}};
  std::set<std::string_view> seen;
  for (const auto& [cls, name] : kWant) {
    EXPECT_EQ(insn_class_name(cls), name);
    EXPECT_TRUE(seen.insert(insn_class_name(cls)).second) << name;
  }
  for (const Encoding& e : encoding_table()) EXPECT_NE(insn_class_name(e.cls), "other") << e.mnemonic;
}

// vector.md §4.0's f7 fields, spelled by each row's disassembly (worked by hand from the table).
TEST(Disassemble, VectorMnemonicsSpellTheF7Fields) {
  const auto w = [](unsigned f3, unsigned f7, unsigned rd) { return f7 << 25 | 12u << 20 | 11u << 15 | f3 << 12 | rd << 7 | 0x2bu; };
  EXPECT_EQ(disassemble(w(0, 3, 0)), "vmat.k3 zero, a1, a2");
  EXPECT_EQ(disassemble(w(0, 9, 10)), "vmat.k1.argmax a0, a1, a2");
  EXPECT_EQ(disassemble(w(0, 0, 0)), "vmat.f7=0x00 zero, a1, a2") << "K = 0";
  EXPECT_EQ(disassemble(w(0, 7, 0)), "vmat.f7=0x07 zero, a1, a2") << "K = 7";
  EXPECT_EQ(disassemble(w(0, 0x11, 0)), "vmat.f7=0x11 zero, a1, a2") << "bit 4";
  EXPECT_EQ(disassemble(w(1, 0, 0)), "vmatr.k zero, a1, a2");
  EXPECT_EQ(disassemble(w(1, 1, 0)), "vmatr.v zero, a1, a2");
  EXPECT_EQ(disassemble(w(1, 2, 0)), "vmatr.f7=0x02 zero, a1, a2");
  EXPECT_EQ(disassemble(w(2, 0, 0)), "vq.act zero, a1, a2");
  EXPECT_EQ(disassemble(w(2, 1, 0)), "vq.k zero, a1, a2");
  EXPECT_EQ(disassemble(w(2, 2, 0)), "vq.v zero, a1, a2");
  EXPECT_EQ(disassemble(w(2, 3, 0)), "vq.f7=0x03 zero, a1, a2") << "TARGET = 3";
  EXPECT_EQ(disassemble(w(3, 0, 0)), "vexp.g1 zero, a1, a2");
  EXPECT_EQ(disassemble(w(3, 7, 0)), "vexp.g8 zero, a1, a2");
  EXPECT_EQ(disassemble(w(3, 8, 0)), "vexp.f7=0x08 zero, a1, a2");
  EXPECT_EQ(disassemble(w(4, 0, 0)), "vew.add zero, a1, a2");
  EXPECT_EQ(disassemble(w(4, 1, 0)), "vew.mul zero, a1, a2");
  EXPECT_EQ(disassemble(w(4, 2 | 6 << 2, 0)), "vew.muls.gs6 zero, a1, a2");
  EXPECT_EQ(disassemble(w(4, 2 | 7 << 2, 0)), "vew.f7=0x1e zero, a1, a2") << "GS = 7";
  EXPECT_EQ(disassemble(w(4, 1 | 1 << 2, 0)), "vew.f7=0x05 zero, a1, a2") << "GS outside MULS";
  EXPECT_EQ(disassemble(w(4, 3, 0)), "vew.rot zero, a1, a2");
  EXPECT_EQ(disassemble(w(4, 0x7f, 0)), "vew.f7=0x7f zero, a1, a2");
  EXPECT_EQ(disassemble(w(5, 0, 0)), "vfn.rsqrt zero, a1, a2");
  EXPECT_EQ(disassemble(w(5, 1, 0)), "vfn.recip zero, a1, a2");
  EXPECT_EQ(disassemble(w(5, 2, 0)), "vfn.silu zero, a1, a2");
  EXPECT_EQ(disassemble(w(5, 3, 0)), "vfn.f7=0x03 zero, a1, a2");
  EXPECT_EQ(disassemble(w(6, 0 | 6 << 2, 0)), "vred.sumsq.sh6 zero, a1, a2");
  EXPECT_EQ(disassemble(w(6, 1, 0)), "vred.sum.sh0 zero, a1, a2");
  EXPECT_EQ(disassemble(w(6, 2, 0)), "vred.max zero, a1, a2");
  EXPECT_EQ(disassemble(w(6, 2 | 1 << 2, 0)), "vred.f7=0x06 zero, a1, a2") << "MAX with SH != 0";
  EXPECT_EQ(disassemble(w(6, 3, 0)), "vred.f7=0x03 zero, a1, a2") << "MODE = 3";
  EXPECT_EQ(disassemble(w(7, 0, 0)), "vld zero, a1, a2");
  EXPECT_EQ(disassemble(w(7, 1, 5)), "vld.f7=0x01 t0, a1, a2");
  for (unsigned f3 = 0; f3 < 8; ++f3) {
    for (unsigned f7 = 0; f7 < 128; ++f7) EXPECT_EQ(vector_mnemonic(f3, f7), vector_op(f3).disasm(f7));
  }
}

TEST(Encode, InvertsDecode) {
  EXPECT_EQ(encode::i(Op::kAddi, 10, 0, 0xffffffffu), 0xfff00513u);
  EXPECT_EQ(encode::s(Op::kSw, 2, 10, 0), 0x00a12023u);
  EXPECT_EQ(encode::b(Op::kBeq, 0, 0, 0xfffffffcu), 0xfe000ee3u);
  EXPECT_EQ(encode::j(Op::kJal, 1, 0x800), 0x001000efu);
  EXPECT_EQ(encode::u(Op::kLui, 10, 0x80000000u), 0x80000537u);
  EXPECT_EQ(encode::r(Op::kBnAddc, 10, 11, 12), 0x00c5850bu);
  for (std::uint32_t off : {4u, 0xfffffffcu, 0xffeu, 0xfffff000u, 2u}) {
    EXPECT_EQ(decode(encode::b(Op::kBne, 1, 2, off)).imm, off) << off;
  }
  for (std::uint32_t off : {4u, 0xfffffffcu, 0xffffeu, 0xfff00000u, 2u}) {
    EXPECT_EQ(decode(encode::j(Op::kJal, 1, off)).imm, off) << off;
  }
  for (std::uint32_t imm : {0u, 0x7ffu, 0xfffff800u, 0xffffffffu}) {
    EXPECT_EQ(decode(encode::s(Op::kSb, 1, 2, imm)).imm, imm);
  }
}

}  // namespace
}  // namespace lockstep::ref
