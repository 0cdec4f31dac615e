// fuzz/campaign without a chip: --ops selection, reproducible generation, every generated
// program ends on the reference, item removal keeps branch targets forward, and shrinking
// against scripted oracles reaches the smallest failing program.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>

#include "lockstep/campaign/campaign.h"
#include "lockstep/ref/machine.h"

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
  EXPECT_EQ(mnemonics(select_ops("vld,add")), (std::set<std::string>{"vld", "add"}));  // the one vector op the chip runs
  EXPECT_THROW(select_ops("vmat"), OpsError);
  EXPECT_THROW(select_ops("vector"), OpsError);  // the class includes vmat
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
