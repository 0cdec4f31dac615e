// fuzz/campaign without a chip: --ops selection, reproducible generation, every generated
// program ends on the reference, item removal keeps branch targets forward, and shrinking
// against scripted oracles reaches the smallest failing program.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "lockstep/campaign/campaign.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::campaign {
namespace {

std::set<std::string> mnemonics(const std::vector<const ref::Encoding*>& ops) {
  std::set<std::string> s;
  for (const ref::Encoding* e : ops) s.emplace(e->mnemonic);
  return s;
}

TEST(CampaignOps, MnemonicsAndClasses) {
  EXPECT_EQ(mnemonics(select_ops("mul")), (std::set<std::string>{"mul", "mulh", "mulhsu", "mulhu"}));
  EXPECT_EQ(mnemonics(select_ops("add, SUB,bn.addc")), (std::set<std::string>{"add", "sub", "bn.addc"}));
  EXPECT_EQ(mnemonics(select_ops("zba,sh1add")), (std::set<std::string>{"sh1add", "sh2add", "sh3add"}));
  const auto all = select_ops("");
  EXPECT_EQ(all.size(), select_ops("all").size());
  for (const ref::Encoding* e : all) {
    EXPECT_NE(e->cls, ref::InsnClass::kVector) << e->mnemonic;
    EXPECT_NE(e->cls, ref::InsnClass::kSystem) << e->mnemonic;
  }
  EXPECT_EQ(mnemonics(select_ops("vld,add")), (std::set<std::string>{"vld", "add"}));
  EXPECT_EQ(mnemonics(select_ops("vmat,vmatr")), (std::set<std::string>{"vmat", "vmatr"}));
  EXPECT_EQ(mnemonics(select_ops("vector")),  // the class: all eight
            (std::set<std::string>{"vmat", "vmatr", "vq", "vexp", "vew", "vfn", "vred", "vld"}));
  // VEW and VFN: the row, with the modes (functions) named; the class name is all four (three).
  unsigned modes = 99, fns = 99;
  EXPECT_EQ(mnemonics(select_ops("vew", &modes, &fns)), (std::set<std::string>{"vew"}));
  EXPECT_EQ(modes, kVewAdd | kVewMul | kVewMuls | kVewRot);
  EXPECT_EQ(fns, 0u);
  EXPECT_EQ(mnemonics(select_ops("vld, VEW.MULS,vew.add,sub", &modes)), (std::set<std::string>{"vld", "vew", "sub"}));
  EXPECT_EQ(modes, kVewAdd | kVewMuls);
  const auto chosen = select_ops("vld, VEW.MULS,vew.add,sub", &modes);
  EXPECT_EQ(ops_list(chosen, modes), "sub,vew.add,vew.muls,vld");  // table order
  const auto all_modes = select_ops("vew.mul,vew", &modes);
  EXPECT_EQ(ops_list(all_modes, modes), "vew");
  EXPECT_EQ(mnemonics(select_ops("vew.rot", &modes, &fns)), (std::set<std::string>{"vew"}));
  EXPECT_EQ(modes, kVewRot);
  EXPECT_EQ(mnemonics(select_ops("vfn", &modes, &fns)), (std::set<std::string>{"vfn"}));
  EXPECT_EQ(modes, 0u);
  EXPECT_EQ(fns, kVfnRsqrt | kVfnRecip | kVfnSilu);
  const auto vf = select_ops("VFN.SILU,vew.rot,vfn.rsqrt", &modes, &fns);
  EXPECT_EQ(mnemonics(vf), (std::set<std::string>{"vew", "vfn"}));
  EXPECT_EQ(fns, kVfnRsqrt | kVfnSilu);
  EXPECT_EQ(ops_list(vf, modes, fns), "vew.rot,vfn.rsqrt,vfn.silu");
  const auto vf_all = select_ops("vfn.recip,vfn,vew", &modes, &fns);
  EXPECT_EQ(ops_list(vf_all, modes, fns), "vew,vfn");
  select_ops("add", &modes, &fns);
  EXPECT_EQ(modes, 0u);
  EXPECT_EQ(fns, 0u);
  // VRED: the row (its three modes) or single modes
  unsigned red = 99;
  const auto vr = select_ops("vred.sum,vld", &modes, &fns, &red);
  EXPECT_EQ(mnemonics(vr), (std::set<std::string>{"vred", "vld"}));
  EXPECT_EQ(red, kVredSum);
  EXPECT_EQ(ops_list(vr, modes, fns, red), "vred.sum,vld");
  const auto vr2 = select_ops("VRED.SUMSQ,vred.sum", &modes, &fns, &red);
  EXPECT_EQ(red, kVredSum | kVredSumsq);
  EXPECT_EQ(ops_list(vr2, modes, fns, red), "vred.sumsq,vred.sum");
  const auto vr3 = select_ops("vred.max,vred", &modes, &fns, &red);
  EXPECT_EQ(red, kVredSum | kVredSumsq | kVredMax);
  EXPECT_EQ(ops_list(vr3, modes, fns, red), "vred");
  select_ops("add", &modes, &fns, &red);
  EXPECT_EQ(red, 0u);
  EXPECT_THROW(select_ops("vfn.exp"), OpsError);
  EXPECT_THROW(select_ops("vew.sub"), OpsError);
  EXPECT_THROW(select_ops("ecall"), OpsError);
  EXPECT_THROW(select_ops("frobnicate"), OpsError);
  EXPECT_THROW(select_ops(","), OpsError);
}

TEST(CampaignGenerate, ReproducibleAndAlwaysEnds) {
  const auto ops = select_ops("");
  EXPECT_EQ(campaign::generate(program_seed(7, 3), 3, ops).code(), campaign::generate(program_seed(7, 3), 3, ops).code());
  EXPECT_NE(campaign::generate(program_seed(7, 3), 3, ops).code(), campaign::generate(program_seed(7, 4), 4, ops).code());
  EXPECT_NE(program_seed(7, 3), program_seed(8, 3));
  for (std::uint64_t k = 0; k < 300; ++k) {
    const Program p = campaign::generate(program_seed(1, k), k, ops);
    EXPECT_TRUE(reference_exits(p, 100000)) << "program " << k << "\n" << p.listing();
  }
}

TEST(CampaignGenerate, TestWordsComeFromTheSelection) {
  for (const std::string list : {"mul", "add,sub,bn.addc", "lw,sb", "branch", "jalr", "vld", "vld,sw,sb"}) {
    const auto ops = select_ops(list);
    const auto want = mnemonics(ops);
    Coverage cov;
    for (std::uint64_t k = 0; k < 40; ++k) {
      const Program p = campaign::generate(program_seed(2, k), k, ops);
      ASSERT_TRUE(reference_exits(p, 100000)) << list << " program " << k << "\n" << p.listing();
      const auto code = p.code();
      const auto test = p.test_words();
      ASSERT_EQ(code.size(), test.size());
      for (std::size_t i = 0; i < code.size(); ++i) {
        if (!test[i]) continue;
        const ref::Decoded d = ref::decode(code[i]);
        ASSERT_NE(d.op, ref::Op::kIllegal);
        EXPECT_TRUE(want.count(std::string(ref::encoding_of(d.op).mnemonic))) << list << ": " << ref::disassemble(code[i]);
      }
      cov.add(p);
    }
    for (const auto& [name, row] : cov.rows) EXPECT_TRUE(want.count(name)) << list << ": " << name;
    EXPECT_GT(cov.instructions, 0u) << list;
  }
}

// VRED (vector.md 4.7) on the reference: with --ops vred every VRED that does not trap is a SUMSQ,
// SUM or MAX (each drawn; MAX with SH = 0) with valid operands (the source span inside VR, dst <
// 1024), SH reaches 0, 1, 16, 17 and 31, spans of more than one group and dst inside the source
// span occur, sources read earlier results, SUMs saturate both ways; a program that traps does so
// at its body's last word with code 16, 17 or 18 (each raised); the others exit.
TEST(CampaignGenerate, VredWords) {
  constexpr std::uint64_t kSeed = 23, kPrograms = 160;
  unsigned modes = 0, fns = 0, red = 0;
  const auto ops = select_ops("vred,add,vld", &modes, &fns, &red);
  std::map<std::uint32_t, unsigned> by_mode;
  std::map<std::uint32_t, unsigned> traps, shifts;
  unsigned exits = 0, sums = 0, multi = 0, inside = 0, chained = 0, sat_up = 0, sat_down = 0;
  auto rnd = [](std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; };
  for (std::uint64_t k = 0; k < kPrograms; ++k) {
    const Program p = campaign::generate(program_seed(kSeed, k), k, ops, modes, fns, red);
    SCOPED_TRACE("--ops vred,add,vld seed " + std::to_string(kSeed) + " program " + std::to_string(k));
    const auto code = p.code();
    ref::Machine m;
    m.load(p.image());
    std::vector<std::uint32_t> results;  // dst of every VRED SUM so far
    while (m.status() == ref::Status::kRunning && m.steps() < 1'000'000) {
      const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
      ASSERT_LT(slot, code.size());
      const ref::Decoded d = ref::decode(code[slot]);
      const std::uint32_t x1 = m.reg(d.rs1), x2 = m.reg(d.rs2), f7 = code[slot] >> 25;
      const std::uint32_t A = x1 & 0xffff, B = x1 >> 16, N = x2 >> 16;
      const auto before = m.vector().vr;
      if (m.step().empty() || m.status() != ref::Status::kRunning) break;
      if (d.op != ref::Op::kVred) continue;
      ASSERT_LE(f7 & 3, 2u) << ref::disassemble(code[slot]);
      if ((f7 & 3) == 2) {
        ASSERT_EQ(f7 >> 2, 0u) << ref::disassemble(code[slot]);
      }
      ASSERT_TRUE(N >= 1 && B + N <= 1024 && A < 1024) << ref::disassemble(code[slot]);
      ++by_mode[f7 & 3];
      ++sums;
      ++shifts[f7 >> 2];
      multi += N > 64;
      inside += A >= B && A < B + N;
      chained += std::any_of(results.begin(), results.end(), [&](std::uint32_t r) { return r >= B && r < B + N; });
      results.push_back(A);
      if ((f7 & 3) != 1) continue;  // SUM's sums
      std::int64_t acc = 0;
      for (std::uint32_t i = 0; i < N; ++i) acc += before[B + i];
      const std::int64_t z = rnd(acc, f7 >> 2);
      sat_up += z > INT32_MAX;
      sat_down += z < INT32_MIN;
    }
    if (m.status() == ref::Status::kExited) {
      ++exits;
      continue;
    }
    ASSERT_EQ(m.status(), ref::Status::kTrapped) << p.listing();
    const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
    EXPECT_EQ(slot + 4, code.size()) << "the trap is the body's last word\n" << p.listing();
    EXPECT_EQ(ref::decode(code[slot]).op, ref::Op::kVred) << ref::disassemble(code[slot]);
    const std::uint32_t t = m.trap_code();
    EXPECT_TRUE(t == 16 || t == 17 || t == 18) << t;
    ++traps[t];
  }
  for (const std::uint32_t t : {16u, 17u, 18u}) EXPECT_GT(traps[t], 0u) << "no program raised " << t;
  for (const std::uint32_t sh : {0u, 1u, 16u, 17u, 31u}) EXPECT_GT(shifts[sh], 0u) << "no VRED SUM with SH = " << sh;
  EXPECT_GT(exits, kPrograms / 2);
  EXPECT_GT(sums, kPrograms);
  EXPECT_GT(by_mode[0], 0u) << "no VRED SUMSQ";
  EXPECT_GT(by_mode[1], 0u) << "no VRED SUM";
  EXPECT_GT(by_mode[2], 0u) << "no VRED MAX";
  EXPECT_GT(multi, 0u);
  EXPECT_GT(inside, 0u);
  EXPECT_GT(chained, 0u);
  EXPECT_GT(sat_up, 0u);
  EXPECT_GT(sat_down, 0u);
}

// VQ (vector.md 4.3) on the reference: every generated VQ that does not trap has valid operands
// (ACT: 1 <= n <= 384 and b0 + ceil(n/64) <= 6; K/V: n = 32, row < 320; the span inside VR), all
// three TARGETs and every group count occur, sources read earlier VEW destinations, and a program
// that traps does so at its body's last word (a VQ half the time, else a VEW) with code 16, 17,
// 18, 19 or 22 for a VQ (every one raised).
TEST(CampaignGenerate, VqWords) {
  constexpr std::uint64_t kSeed = 29, kPrograms = 320;
  unsigned modes = 0, fns = 0, red = 0;
  const auto ops = select_ops("vq,vew.add,add", &modes, &fns, &red);
  ASSERT_EQ(ops_list(ops, modes, fns, red), "add,vq,vew.add");  // table order
  std::map<std::uint32_t, unsigned> traps, by_target, by_groups;
  unsigned exits = 0, chained = 0, row_edges = 0;
  for (std::uint64_t k = 0; k < kPrograms; ++k) {
    const Program p = campaign::generate(program_seed(kSeed, k), k, ops, modes, fns, red);
    SCOPED_TRACE("--ops vq,vew.add,add seed " + std::to_string(kSeed) + " program " + std::to_string(k));
    const auto code = p.code();
    ref::Machine m;
    m.load(p.image());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> written;  // VEW destinations so far
    while (m.status() == ref::Status::kRunning && m.steps() < 1'000'000) {
      const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
      ASSERT_LT(slot, code.size());
      const ref::Decoded d = ref::decode(code[slot]);
      const std::uint32_t x1 = m.reg(d.rs1), x2 = m.reg(d.rs2), f7 = code[slot] >> 25;
      const std::uint32_t A = x1 & 0xffff, B = x1 >> 16, N = x2 >> 16;
      if (m.step().empty() || m.status() != ref::Status::kRunning) break;
      if (d.op == ref::Op::kVew) written.emplace_back(A, N);
      if (d.op != ref::Op::kVq) continue;
      ASSERT_LE(f7, 2u) << ref::disassemble(code[slot]);
      ASSERT_LE(B + N, 1024u) << ref::disassemble(code[slot]);
      if (f7 == 0) {
        ASSERT_TRUE(N >= 1 && N <= 384 && A + (N + 63) / 64 <= 6) << ref::disassemble(code[slot]);
        ++by_groups[(N + 63) / 64];
      } else {
        ASSERT_TRUE(N == 32 && A < 320) << ref::disassemble(code[slot]);
        row_edges += A == 0 || A == 319;
      }
      ++by_target[f7];
      chained += std::any_of(written.begin(), written.end(), [&](const auto& w) { return w.first < B + N && B < w.first + w.second; });
    }
    if (m.status() == ref::Status::kExited) {
      ++exits;
      continue;
    }
    ASSERT_EQ(m.status(), ref::Status::kTrapped) << p.listing();
    const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
    EXPECT_EQ(slot + 4, code.size()) << "the trap is the body's last word\n" << p.listing();
    const ref::Op op = ref::decode(code[slot]).op;
    EXPECT_TRUE(op == ref::Op::kVq || op == ref::Op::kVew) << ref::disassemble(code[slot]);
    if (op == ref::Op::kVq) ++traps[m.trap_code()];
  }
  for (const std::uint32_t t : {16u, 17u, 18u, 19u, 22u}) EXPECT_GT(traps[t], 0u) << "no program raised " << t;
  EXPECT_EQ(traps.size(), 5u) << "only codes 16, 17, 18, 19, 22";
  for (std::uint32_t t = 0; t < 3; ++t) EXPECT_GT(by_target[t], 0u) << "no VQ of TARGET " << t;
  for (std::uint32_t g = 1; g <= 6; ++g) EXPECT_GT(by_groups[g], 0u) << "no VQ ACT of " << g << " groups";
  EXPECT_GT(exits, kPrograms / 2);
  EXPECT_GT(chained, 0u);
  EXPECT_GT(row_edges, 0u);
}

// VEXP (vector.md 4.4) on the reference: every generated VEXP that does not trap has valid operands
// (G = (f7 & 7) + 1, 1 <= T <= 64, spans inside VR, no overlap of section 6), every G occurs, in
// place and in the source's gaps, sources read earlier destinations, and a program that traps does
// so at its body's last word (a VEXP half the time, else a VQ) with code 16, 17, 18 or 20 for a
// VEXP (every one raised).
TEST(CampaignGenerate, VexpWords) {
  constexpr std::uint64_t kSeed = 31, kPrograms = 320;
  unsigned modes = 0, fns = 0, red = 0;
  const auto ops = select_ops("vexp,vq,add", &modes, &fns, &red);
  ASSERT_EQ(ops_list(ops, modes, fns, red), "add,vq,vexp");  // table order
  std::map<std::uint32_t, unsigned> traps, by_g;
  unsigned exits = 0, in_place = 0, gaps = 0, chained = 0;
  for (std::uint64_t k = 0; k < kPrograms; ++k) {
    const Program p = campaign::generate(program_seed(kSeed, k), k, ops, modes, fns, red);
    SCOPED_TRACE("--ops vexp,vq,add seed " + std::to_string(kSeed) + " program " + std::to_string(k));
    const auto code = p.code();
    ref::Machine m;
    m.load(p.image());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> written;  // VEXP destination groups so far
    while (m.status() == ref::Status::kRunning && m.steps() < 1'000'000) {
      const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
      ASSERT_LT(slot, code.size());
      const ref::Decoded d = ref::decode(code[slot]);
      const std::uint32_t x1 = m.reg(d.rs1), x2 = m.reg(d.rs2), f7 = code[slot] >> 25;
      const std::uint32_t A = x1 & 0xffff, B = x1 >> 16, C = x2 & 0xffff, T = x2 >> 16;
      if (m.step().empty() || m.status() != ref::Status::kRunning) break;
      if (d.op != ref::Op::kVexp) continue;
      const std::uint32_t G = (f7 & 7) + 1;
      ASSERT_EQ(f7 >> 3, 0u) << ref::disassemble(code[slot]);
      ASSERT_TRUE(T >= 1 && T <= 64 && B + 64 * (G - 1) + T <= 1024 && A + 64 * (G - 1) + T <= 1024 && C + G <= 1024)
          << ref::disassemble(code[slot]);
      ++by_g[G];
      in_place += A == B;
      gaps += A > B && A < B + 64 - T;
      chained += std::any_of(written.begin(), written.end(), [&](const auto& w) { return w.first < B + T && B < w.first + w.second; });
      for (std::uint32_t g = 0; g < G; ++g) written.emplace_back(A + 64 * g, T);
    }
    if (m.status() == ref::Status::kExited) {
      ++exits;
      continue;
    }
    ASSERT_EQ(m.status(), ref::Status::kTrapped) << p.listing();
    const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
    EXPECT_EQ(slot + 4, code.size()) << "the trap is the body's last word\n" << p.listing();
    const ref::Op op = ref::decode(code[slot]).op;
    EXPECT_TRUE(op == ref::Op::kVexp || op == ref::Op::kVq) << ref::disassemble(code[slot]);
    if (op == ref::Op::kVexp) ++traps[m.trap_code()];
  }
  for (const std::uint32_t t : {16u, 17u, 18u, 20u}) EXPECT_GT(traps[t], 0u) << "no program raised " << t;
  EXPECT_EQ(traps.size(), 4u) << "only codes 16, 17, 18, 20";
  for (std::uint32_t g = 1; g <= 8; ++g) EXPECT_GT(by_g[g], 0u) << "no VEXP of G = " << g;
  EXPECT_GT(exits, kPrograms / 2);
  EXPECT_GT(in_place, 0u);
  EXPECT_GT(gaps, 0u);
  EXPECT_GT(chained, 0u);
}

// VMAT and VMATR (vector.md 4.1, 4.2) on the reference: every generated VMAT or VMATR word that
// does not trap has valid operands (K 1..6, b0 + K <= 6, c0 + R K <= 4152, dst + R <= 1024 in
// write mode; T 1..64, r0 + T <= 320, K mode's src <= 5 and dst + 448 + T <= 1024, V mode's dst
// apart from the probability spans), both modes of each occur, rows pass 256, the programs carry
// the memories' sections; a program that traps does so at its body's last word, and every code of
// section 6 for the two ops is raised; the others exit.
TEST(CampaignGenerate, VmatWords) {
  constexpr std::uint64_t kSeed = 32, kPrograms = 320;
  unsigned modes = 0, fns = 0, red = 0;
  const auto ops = select_ops("vmatr,vmat,add", &modes, &fns, &red);
  ASSERT_EQ(ops_list(ops, modes, fns, red), "add,vmat,vmatr");  // table order
  std::map<std::uint32_t, unsigned> traps;
  unsigned exits = 0, write = 0, argmax = 0, past256 = 0, kmode = 0, vmode = 0, with_sections = 0;
  for (std::uint64_t k = 0; k < kPrograms; ++k) {
    const Program p = campaign::generate(program_seed(kSeed, k), k, ops, modes, fns, red);
    SCOPED_TRACE("--ops vmat,vmatr,add seed " + std::to_string(kSeed) + " program " + std::to_string(k));
    with_sections += p.sections.count(".lockstep.wmem") == 1 && p.image().sections.count(".lockstep.vsh") == 1;
    const auto code = p.code();
    ref::Machine m;
    m.load(p.image());
    while (m.status() == ref::Status::kRunning && m.steps() < 2'000'000) {
      const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
      ASSERT_LT(slot, code.size());
      const ref::Decoded d = ref::decode(code[slot]);
      const std::uint32_t x1 = m.reg(d.rs1), x2 = m.reg(d.rs2), f7 = code[slot] >> 25;
      const std::uint32_t A = x1 & 0xffff, B = x1 >> 16, C = x2 & 0xffff, N = x2 >> 16;
      if (m.step().empty() || m.status() != ref::Status::kRunning) break;
      if (d.op == ref::Op::kVmat) {
        const std::uint32_t K = f7 & 7;
        ASSERT_TRUE(K >= 1 && K <= 6 && (f7 >> 4) == 0 && N >= 1 && B + K <= 6 && C + N * K <= 4152) << ref::disassemble(code[slot]);
        if (f7 & 8) {
          ++argmax;
        } else {
          ++write;
          ASSERT_LE(A + N, 1024u) << ref::disassemble(code[slot]);
        }
        past256 += N > 256;
      }
      if (d.op == ref::Op::kVmatr) {
        ASSERT_TRUE((f7 >> 1) == 0 && N >= 1 && N <= 64 && C + N <= 320) << ref::disassemble(code[slot]);
        if (f7 & 1) {
          ++vmode;
          ASSERT_TRUE(B + 448 + N <= 1024 && A + 64 <= 1024 && (A + 64 <= B || A >= B + 448 + N)) << ref::disassemble(code[slot]);
        } else {
          ++kmode;
          ASSERT_TRUE(B <= 5 && A + 448 + N <= 1024) << ref::disassemble(code[slot]);
        }
      }
    }
    if (m.status() == ref::Status::kExited) {
      ++exits;
      continue;
    }
    ASSERT_EQ(m.status(), ref::Status::kTrapped) << p.listing();
    const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
    EXPECT_EQ(slot + 4, code.size()) << "the trap is the body's last word\n" << p.listing();
    const ref::Op op = ref::decode(code[slot]).op;
    EXPECT_TRUE(op == ref::Op::kVmat || op == ref::Op::kVmatr) << ref::disassemble(code[slot]);
    ++traps[m.trap_code()];
  }
  for (const std::uint32_t t : {16u, 17u, 18u, 19u, 20u, 21u, 22u}) EXPECT_GT(traps[t], 0u) << "no program raised " << t;
  EXPECT_EQ(traps.size(), 7u) << "only codes 16..22";
  EXPECT_GT(exits, kPrograms / 2);
  EXPECT_GT(write, 0u);
  EXPECT_GT(argmax, 0u);
  EXPECT_GT(past256, 0u);
  EXPECT_GT(kmode, 0u);
  EXPECT_GT(vmode, 0u);
  EXPECT_GT(with_sections, kPrograms / 2);
}

// VEW and VFN (vector.md 4.5, 4.6) on the reference: every generated VEW or VFN word that does not
// trap decodes as one of the selected modes or functions (ref::vector_mnemonic), its operands are
// valid (spans inside VR, dst identical to or disjoint from the sources, ROT's n even and position
// below 64), sources read earlier VLD/VEW/VFN destinations, results saturate (ADD, MUL, ROT;
// counted from VR before the step), each function's inputs reach its paths (x <= 0, powers of two,
// INT32_MAX, final-rounding ties; SILU: the clamp of ix, ties of rnd(x, 10) and of the product),
// and a program that traps does so at its body's last word with code 16, 17, 18, 20 or (ROT) 23
// (every one of them raised); the others exit.
TEST(CampaignGenerate, VewAndVfnWordsAreTheSelectedModes) {
  constexpr std::uint64_t kSeed = 21;
  struct Case {
    std::string list;
    std::set<std::string> modes;  // vector_mnemonic prefixes allowed
    std::uint64_t programs;
    std::set<std::uint32_t> codes;  // trap codes each raised by some program
  };
  const std::set<std::string> vew_all = {"vew.add", "vew.mul", "vew.muls", "vew.rot"};
  const std::set<std::string> vfn_all = {"vfn.rsqrt", "vfn.recip", "vfn.silu"};
  std::set<std::string> both = vfn_all;
  both.insert("vew.rot");
  const ref::VectorTables& tab = ref::vector_tables();
  auto rnd = [](std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; };
  auto tie = [](std::int64_t x, unsigned s) { return s >= 1 && (x & ((std::int64_t{1} << s) - 1)) == std::int64_t{1} << (s - 1); };
  auto log2 = [](std::int64_t u) { return 63u - static_cast<unsigned>(__builtin_clzll(static_cast<std::uint64_t>(u))); };
  const std::set<std::uint32_t> codes = {16, 17, 18, 20}, rot_codes = {16, 17, 18, 20, 23};
  for (const Case& c : std::vector<Case>{{"vew", vew_all, 160, rot_codes},
                                         {"vew.mul", {"vew.mul"}, 96, codes},
                                         {"vew.add,vew.muls", {"vew.add", "vew.muls"}, 128, codes},
                                         {"vew.rot", {"vew.rot"}, 128, rot_codes},
                                         {"vld,vew,add,mul", vew_all, 128, codes},
                                         {"vfn", vfn_all, 160, codes},
                                         {"vfn.silu", {"vfn.silu"}, 96, codes},
                                         {"vfn,vew.rot", both, 160, rot_codes}}) {
    const std::uint64_t kPrograms = c.programs;
    unsigned modes = 0, fns = 0;
    const auto ops = select_ops(c.list, &modes, &fns);
    const bool rot = c.modes.count("vew.rot") > 0;
    std::map<std::string, unsigned> seen;     // mode -> VEWs/VFNs executed without a trap
    std::map<std::uint32_t, unsigned> traps;  // code -> programs
    std::map<std::string, std::map<std::string, unsigned>> paths;  // function -> path -> elements
    std::set<std::uint32_t> group_sizes, positions;
    std::uint64_t elements = 0, sat = 0, sat_elements = 0;
    unsigned exits = 0, chained = 0, in_place = 0, long_n = 0, with_vreg = 0;
    for (std::uint64_t k = 0; k < kPrograms; ++k) {
      const Program p = campaign::generate(program_seed(kSeed, k), k, ops, modes, fns);
      SCOPED_TRACE("--ops " + c.list + " seed " + std::to_string(kSeed) + " program " + std::to_string(k));
      ASSERT_LE(p.vreg.size(), 4096u);
      with_vreg += !p.vreg.empty();
      const auto code = p.code();
      const auto test = p.test_words();
      ref::Machine m;
      m.load(p.image());
      std::vector<std::pair<std::uint32_t, std::uint32_t>> written;  // [start, start + n) of VLD/VEW/VFN destinations
      while (m.status() == ref::Status::kRunning && m.steps() < 1'000'000) {
        const std::uint32_t pc = m.pc(), slot = (pc - kCodeBase) / 4;
        ASSERT_LT(slot, code.size());
        const ref::Decoded d = ref::decode(code[slot]);
        const std::uint32_t x1 = m.reg(d.rs1), x2 = m.reg(d.rs2), f7 = code[slot] >> 25;
        const std::uint32_t A = x1 & 0xffff, B = x1 >> 16, C = x2 & 0xffff, N = x2 >> 16;
        const auto before = m.vector().vr;
        if (m.step().empty()) break;
        if (m.status() != ref::Status::kRunning) break;
        if (d.op == ref::Op::kVld) written.emplace_back(C, C + N);
        if (d.op != ref::Op::kVew && d.op != ref::Op::kVfn) continue;
        ASSERT_TRUE(test[slot]);
        const bool vfn = d.op == ref::Op::kVfn;
        const std::string name = ref::vector_mnemonic(vfn ? 5 : 4, f7);
        const std::string mode = name.rfind("vew.muls", 0) == 0 ? "vew.muls" : name;
        ASSERT_TRUE(c.modes.count(mode)) << name << " " << ref::disassemble(code[slot]);
        ++seen[mode];
        const std::uint32_t gs = (f7 >> 2) & 7, bn = mode == "vew.muls" ? ((N - 1) >> gs) + 1 : mode == "vew.rot" || vfn ? 0 : N;
        ASSERT_TRUE(N >= 1 && N <= 1024 && A + N <= 1024 && B + N <= 1024 && (bn == 0 || C + bn <= 1024))
            << name << " " << N;
        ASSERT_TRUE(A == B || A + N <= B || B + N <= A) << name << " dst " << A << " src " << B << " n " << N;
        if (mode == "vew.rot") {
          ASSERT_TRUE(N % 2 == 0 && C < 64) << name << " n " << N << " p " << C;
          positions.insert(C);
        }
        if (mode == "vew.muls") group_sizes.insert(gs);
        long_n += N > 512;
        in_place += A == B;
        bool reads_earlier = false;
        for (const auto& [s, e] : written) {
          reads_earlier |= B < e && s < B + N;
          if (bn) reads_earlier |= C < e && s < C + bn;
        }
        chained += reads_earlier;
        written.emplace_back(A, A + N);
        for (std::uint32_t i = 0; i < N; ++i) {
          const std::int64_t x = before[B + i];
          ++elements;
          if (vfn) {  // the paths of section 4.6's formulas
            auto& path = paths[mode];
            path["x<=0"] += x <= 0;
            path["pow2"] += x > 0 && (x & (x - 1)) == 0;
            path["int-max"] += x == INT32_MAX;
            if (mode == "vfn.silu") {
              const std::int64_t ix = rnd(x, 10) + 512;
              path["clamp-edge"] += ix == -1 || ix == 0 || ix == 1023 || ix == 1024;
              path["tie-ix"] += tie(x, 10);
              path["tie-product"] += tie(x * tab.sig[static_cast<std::size_t>(std::clamp<std::int64_t>(ix, 0, 1023))], 16);
            } else {
              const std::int64_t u = std::max<std::int64_t>(x, 1);
              const unsigned kk = log2(u), k2 = kk - kk % 2;
              if (mode == "vfn.rsqrt") {
                const std::int64_t ix = k2 >= 6 ? u >> (k2 - 6) : u << (6 - k2);
                path["tie"] += tie(tab.rsq[static_cast<std::size_t>(ix)], k2 / 2);
              } else {
                const std::int64_t ix = kk >= 7 ? u >> (kk - 7) : u << (7 - kk);
                path["tie"] += kk >= 3 && tie(tab.rcp[static_cast<std::size_t>(ix)], kk - 2);
              }
            }
            continue;
          }
          if (mode == "vew.rot") {
            if (i % 2) continue;
            const std::int64_t v = before[B + i + 1], cs = tab.cos[C][(i / 2) % 4], sn = tab.sin[C][(i / 2) % 4];
            for (const std::int64_t z : {rnd(x * cs - v * sn, 16), rnd(x * sn + v * cs, 16)})
              sat += z > INT32_MAX || z < INT32_MIN;
            sat_elements += 2;
            continue;
          }
          const std::int64_t y = before[mode == "vew.muls" ? C + (i >> gs) : C + i];
          const std::int64_t z = mode == "vew.add" ? x + y : rnd(x * y, 16);
          sat += z > INT32_MAX || z < INT32_MIN;
          ++sat_elements;
        }
      }
      if (m.status() == ref::Status::kExited) {
        ++exits;
      } else {
        ASSERT_EQ(m.status(), ref::Status::kTrapped) << p.listing();
        const std::uint32_t slot = (m.pc() - kCodeBase) / 4;
        EXPECT_EQ(slot + 4, code.size()) << "the trap is the body's last word\n" << p.listing();
        const ref::Op op = ref::decode(code[slot]).op;
        EXPECT_TRUE(op == ref::Op::kVew || op == ref::Op::kVfn) << ref::disassemble(code[slot]);
        const std::uint32_t t = m.trap_code();
        EXPECT_TRUE(t == 16 || t == 17 || t == 18 || t == 20 || (t == 23 && rot && op == ref::Op::kVew)) << t;
        ++traps[t];
      }
    }
    std::cout << "--ops " << c.list << " (seed " << kSeed << ", " << kPrograms << " programs): " << exits << " exit, traps";
    for (const auto& [code, n] : traps) std::cout << " " << code << ":" << n;
    std::cout << "; executed";
    for (const auto& [mode, n] : seen) std::cout << " " << mode << ":" << n;
    std::cout << "; " << sat << " of " << sat_elements << " VEW results saturate, " << chained
              << " reading earlier destinations, " << in_place << " in place, " << long_n << " with n > 512, "
              << with_vreg << " with .lockstep.vreg";
    for (const auto& [fn, counts] : paths) {
      std::cout << "; " << fn;
      for (const auto& [path, n] : counts) std::cout << " " << path << ":" << n;
    }
    std::cout << "\n";
    EXPECT_EQ(seen.size(), c.modes.size()) << c.list;
    for (const std::uint32_t code : c.codes) EXPECT_GT(traps[code], 0u) << c.list << " code " << code;
    EXPECT_GT(exits, kPrograms / 2) << c.list;
    if (sat_elements) {
      EXPECT_GT(sat, 0u) << c.list;
      EXPECT_LT(sat, sat_elements) << c.list;
    }
    EXPECT_GT(chained, 20u) << c.list;
    EXPECT_GT(in_place, 0u) << c.list;
    EXPECT_GT(long_n, 0u) << c.list;
    EXPECT_GT(with_vreg, kPrograms * 3 / 4) << c.list;
    if (c.modes.count("vew.muls")) {
      EXPECT_EQ(group_sizes.size(), 7u) << c.list;
    }
    if (rot) {
      EXPECT_TRUE(positions.count(0) && positions.count(63)) << c.list;
      EXPECT_GT(positions.size(), 16u) << c.list;
    }
    for (const std::string& fn : c.modes) {
      if (fn.rfind("vfn.", 0) != 0) continue;
      const std::vector<std::string> want = fn == "vfn.silu"
                                                ? std::vector<std::string>{"x<=0", "pow2", "int-max", "clamp-edge", "tie-ix", "tie-product"}
                                                : std::vector<std::string>{"x<=0", "pow2", "int-max", "tie"};
      for (const std::string& path : want) EXPECT_GT(paths[fn][path], 0u) << c.list << " " << fn << " " << path;
    }
  }
}

TEST(CampaignCoverage, ValueClasses) {
  EXPECT_EQ(value_class(0), 0);
  EXPECT_EQ(value_class(1), 1);
  EXPECT_EQ(value_class(0xffffffffu), 2);
  EXPECT_EQ(value_class(0x80000000u), 3);
  EXPECT_EQ(value_class(0x7fffffffu), 4);
  EXPECT_EQ(value_class(0x100u), 5);
  EXPECT_EQ(value_class(0x101u), 6);
  Coverage a;
  a.add(campaign::generate(program_seed(3, 0), 0, select_ops("")));
  Coverage b = Coverage::from_json(a.to_json());
  EXPECT_EQ(b.to_json(), a.to_json());
  b.merge(a);
  EXPECT_EQ(b.instructions, 2 * a.instructions);
}

TEST(CampaignProgram, RemovalKeepsForwardTargetsForward) {
  const auto ops = select_ops("branch,jal,jalr,alu");
  for (std::uint64_t k = 0; k < 50; ++k) {
    Program p = campaign::generate(program_seed(4, k), k, ops);
    for (std::size_t cut = 0; p.items.size() > 8 && cut < 6; ++cut) {
      const std::size_t a = (k * 7 + cut * 13) % (p.items.size() - 4);
      p = p.without(a, a + 1 + cut % 3);
      for (std::size_t i = 0; i < p.items.size(); ++i) {
        const Item& it = p.items[i];
        if (it.kind != Item::Kind::kBranch && it.kind != Item::Kind::kJalr) continue;
        if (it.test) {
          EXPECT_GT(it.target, static_cast<std::int64_t>(i)) << "program " << k;
        }
        EXPECT_LE(it.target, static_cast<std::int64_t>(p.items.size()));
      }
      // The scratch base and the exit survive every removal.
      EXPECT_EQ(std::count_if(p.items.begin(), p.items.end(), [](const Item& it) { return it.fixed; }), 3);
    }
  }
}

// Oracles over the reference alone (the first failing candidate, as the chip oracle answers).
FirstFailing oracle(const std::function<bool(const Program&)>& fails) {
  return [fails](const std::vector<Program>& cands) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < cands.size(); ++i)
      if (reference_exits(cands[i], 20000) && fails(cands[i])) return i;
    return std::nullopt;
  };
}

TEST(CampaignShrink, DownToTheOneInstructionThatMatters) {
  const auto ops = select_ops("mul,alu,load,store");
  auto has_mulhu = [](const Program& p) {
    for (std::uint32_t w : p.code())
      if (ref::decode(w).op == ref::Op::kMulhu) return true;
    return false;
  };
  unsigned checked = 0;
  for (std::uint64_t k = 0; k < 20 && checked < 3; ++k) {
    const Program p = campaign::generate(program_seed(5, k), k, ops);
    if (!has_mulhu(p)) continue;
    ++checked;
    const ShrinkResult r = shrink(p, oracle(has_mulhu));
    EXPECT_EQ(r.original_words, p.words());
    EXPECT_EQ(r.shrunk_words, 6u) << r.program.listing();  // li x31 (2), mulhu, li a7 (2), ecall
    EXPECT_TRUE(has_mulhu(r.program));
    EXPECT_FALSE(r.budget_exhausted);
  }
  EXPECT_EQ(checked, 3u);
}

TEST(CampaignShrink, LiValuesGoTowardsZeroAndOne) {
  // Fails while x7 ends odd: what must stay is one li of x7, simplified to 1.
  auto x7_odd = [](const Program& p) {
    ref::Machine m;
    m.load(p.image());
    m.run(20000);
    return (m.reg(7) & 1) == 1;
  };
  unsigned checked = 0;
  for (std::uint64_t k = 0; k < 20 && checked < 3; ++k) {
    const Program p = campaign::generate(program_seed(6, k), k, select_ops("alu"));
    if (!x7_odd(p)) continue;
    ++checked;
    const ShrinkResult r = shrink(p, oracle(x7_odd));
    ASSERT_TRUE(x7_odd(r.program));
    std::vector<Item> loose;
    for (const Item& it : r.program.items)
      if (!it.fixed) loose.push_back(it);
    // Usually `li x7, 1` alone; an alu instruction may carry the value from another li.
    EXPECT_GE(loose.size(), 1u);
    EXPECT_LE(loose.size(), 3u) << r.program.listing();
    for (const Item& it : loose)
      if (it.kind == Item::Kind::kLi) {
        EXPECT_LE(it.value, 1u) << r.program.listing();
      }
    std::cout << "[ shrink   ] " << r.original_words << " -> " << r.shrunk_words << " words:\n" << r.program.listing();
    EXPECT_TRUE(std::all_of(r.program.scratch.begin(), r.program.scratch.end(), [](std::uint8_t b) { return b == 0; }));
  }
  EXPECT_EQ(checked, 3u);
}

}  // namespace
}  // namespace lockstep::campaign
