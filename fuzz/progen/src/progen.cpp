#include "lockstep/progen/progen.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "lockstep/ref/machine.h"

namespace lockstep::progen {

using ref::Encoding;
using ref::InsnClass;
using ref::Op;
using u32 = std::uint32_t;

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

u32 Random::operand() {
  static constexpr u32 kEdges[] = {0, 1, 2, 0xffffffffu, 0xfffffffeu, 0x80000000u, 0x7fffffffu,
                                   0x80000001u, 0xffff, 0x10000, 0xff, 0x100, 0x7ff, 0xfffff800u};
  switch (below(4)) {
    case 0: return kEdges[below(sizeof kEdges / sizeof kEdges[0])];
    case 1: return 1u << below(32);
    default: return static_cast<u32>(next());
  }
}

void emit_li(std::vector<u32>& code, unsigned rd, u32 value) {
  // lui rd, hi; addi rd, rd, lo with lo = sext(value[11:0]) and hi = value - lo.
  const u32 lo = ref::field::sext(value & 0xfff, 12);
  code.push_back(ref::encode::u(Op::kLui, rd, value - lo));
  code.push_back(ref::encode::i(Op::kAddi, rd, rd, lo));
}

format::GuestImage image_from_code(const std::vector<u32>& code, u32 code_base, std::vector<format::Segment> data) {
  format::GuestImage img;
  img.entry = code_base;
  format::Segment text;
  text.vaddr = code_base;
  text.flags = format::kPfR | format::kPfX;
  text.bytes.resize(code.size() * 4);
  if (!code.empty()) std::memcpy(text.bytes.data(), code.data(), text.bytes.size());
  text.memsz = static_cast<u32>(text.bytes.size());
  img.segments.push_back(std::move(text));
  for (auto& s : data) {
    if (s.flags == 0) s.flags = format::kPfR | format::kPfW;
    if (s.memsz < s.bytes.size()) s.memsz = static_cast<u32>(s.bytes.size());
    img.segments.push_back(std::move(s));
  }
  return img;
}

bool usable_in_body(const Encoding& row, bool bignum) {
  switch (row.cls) {
    case InsnClass::kSystem: return false;
    case InsnClass::kVector: return false;  // not yet generated (needs vector-unit state set-up)
    case InsnClass::kBignum: return bignum;
    default: return true;
  }
}

std::vector<u32> random_body(Random& rng, const BodyOptions& o) {
  std::vector<const Encoding*> rows;
  for (const Encoding& e : ref::encoding_table()) {
    if (usable_in_body(e, o.bignum)) rows.push_back(&e);
  }
  const unsigned n = o.length;
  std::vector<u32> code;
  code.reserve(n);
  auto any_reg = [&] { return rng.below(32); };
  auto dest = [&] {  // any register but the base
    u32 r;
    do r = rng.below(32);
    while (r == o.base_reg);
    return r;
  };
  auto imm12 = [&]() -> u32 {
    static constexpr u32 kImm[] = {0, 1, 0xfff, 0x7ff, 0x800, 2, 0xffe, 31, 32};
    return rng.chance(2) ? kImm[rng.below(sizeof kImm / sizeof kImm[0])] : rng.below(4096);
  };
  // Branches and jumps get their forward targets once the layout is known:
  // never the second word of an auipc/jalr pair.
  struct Fixup {
    u32 pos;   // index of the branch/jump word
    u32 from;  // index its offset is relative to (the auipc for a JALR pair)
    Op op;
    u32 r1, r2, low_bit;
  };
  std::vector<Fixup> fixups;
  while (code.size() < n) {
    const Encoding& row = *rows[rng.below(static_cast<u32>(rows.size()))];
    const u32 pos = static_cast<u32>(code.size());
    const u32 remaining = n - pos;  // a forward target k in [1, remaining] ends at most at the body's end
    switch (row.cls) {
      case InsnClass::kAlu:
      case InsnClass::kMul:
      case InsnClass::kDiv:
      case InsnClass::kZba:
        code.push_back(ref::encode::r(row.op, dest(), any_reg(), any_reg()));
        break;
      case InsnClass::kBignum:
        code.push_back(ref::encode::r(row.op, (row.operands & ref::kOpdRd) ? dest() : 0,
                                      (row.operands & ref::kOpdRs1) ? any_reg() : 0,
                                      (row.operands & ref::kOpdRs2) ? any_reg() : 0));
        break;
      case InsnClass::kAluImm:
        code.push_back(ref::encode::i(row.op, dest(), any_reg(),
                                      row.format == ref::Format::kIShift ? rng.below(32) : imm12()));
        break;
      case InsnClass::kUpper:
        code.push_back(ref::encode::u(row.op, dest(), rng.operand()));
        break;
      case InsnClass::kLoad:
      case InsnClass::kStore: {
        const u32 size = 1u << ((row.match >> 12) & 3);  // f3[1:0]: 0 byte, 1 half, 2 word
        const u32 off = rng.below(o.scratch_bytes / size) * size;
        code.push_back(row.cls == InsnClass::kLoad ? ref::encode::i(row.op, dest(), o.base_reg, off)
                                                   : ref::encode::s(row.op, o.base_reg, any_reg(), off));
        break;
      }
      case InsnClass::kBranch:
        fixups.push_back({pos, pos, row.op, any_reg(), any_reg(), 0});
        code.push_back(0);
        break;
      case InsnClass::kJal:
        fixups.push_back({pos, pos, row.op, dest(), 0, 0});
        code.push_back(0);
        break;
      case InsnClass::kJalr: {
        // auipc t, 0; jalr rd, off(t): target = the auipc's pc + off (bit 0 of off sometimes set: cleared).
        if (remaining < 2) break;
        u32 t;
        do t = dest();
        while (t == 0);
        code.push_back(ref::encode::u(Op::kAuipc, t, 0));
        fixups.push_back({pos + 1, pos, row.op, dest(), t, rng.chance(2) ? 1u : 0u});
        code.push_back(0);
        break;
      }
      case InsnClass::kFence:
        code.push_back(row.match | rng.below(16) << 24 | rng.below(16) << 20);
        break;
      case InsnClass::kSystem:
      case InsnClass::kVector:
        break;
    }
  }
  std::vector<bool> landing(n + 1, true);  // index n: just after the body
  for (const Fixup& f : fixups) {
    if (f.op == Op::kJalr) landing[f.pos] = false;
  }
  for (const Fixup& f : fixups) {
    std::vector<u32> targets;
    for (u32 k = f.pos + 1; k <= n; ++k) {
      if (landing[k]) targets.push_back(k);
    }
    const u32 offset = 4 * (targets[rng.below(static_cast<u32>(targets.size()))] - f.from);
    switch (f.op) {
      case Op::kJal: code[f.pos] = ref::encode::j(f.op, f.r1, offset); break;
      case Op::kJalr: code[f.pos] = ref::encode::i(f.op, f.r1, f.r2, offset + f.low_bit); break;
      default: code[f.pos] = ref::encode::b(f.op, f.r1, f.r2, offset); break;
    }
  }
  return code;
}

Batch make_batch(std::uint64_t seed, unsigned bodies, unsigned body_length) {
  constexpr u32 kCodeBase = 0x10000, kDataBase = 0x80000, kScratch = 256, kDump = 128;
  constexpr u32 kRecord = kScratch + kDump;
  Random rng(seed);
  Batch batch;
  batch.record_bytes = kRecord;
  std::vector<u32> code;
  format::Segment data;
  data.vaddr = kDataBase;
  data.bytes.resize(std::size_t{bodies} * kRecord);
  for (unsigned k = 0; k < bodies; ++k) {
    const u32 scratch = kDataBase + k * kRecord;
    for (u32 i = 0; i < kScratch; i += 4) {
      const u32 v = rng.operand();
      std::memcpy(data.bytes.data() + (scratch - kDataBase) + i, &v, 4);
    }
    BodyOptions opt;
    opt.length = body_length;
    opt.base_reg = 1 + rng.below(31);
    opt.scratch_bytes = kScratch;
    for (unsigned r = 1; r < 32; ++r) {
      if (r != opt.base_reg) emit_li(code, r, rng.operand());
    }
    emit_li(code, opt.base_reg, scratch);
    Batch::Body info;
    info.base_reg = opt.base_reg;
    info.code_begin = kCodeBase + static_cast<u32>(code.size()) * 4;
    const auto body = random_body(rng, opt);
    code.insert(code.end(), body.begin(), body.end());
    info.code_end = kCodeBase + static_cast<u32>(code.size()) * 4;
    batch.bodies.push_back(info);
    for (unsigned r = 1; r < 32; ++r) code.push_back(ref::encode::s(Op::kSw, opt.base_reg, r, kScratch + 4 * r));
    emit_li(code, 17, 64);  // write(1, scratch, record)
    emit_li(code, 10, 1);
    emit_li(code, 11, scratch);
    emit_li(code, 12, kRecord);
    code.push_back(0x00000073u);
  }
  // exit(low byte of a dumped register of the last body)
  const u32 last_dump = kDataBase + (bodies - 1) * kRecord + kScratch;
  emit_li(code, 5, last_dump + 4 * (1 + rng.below(31)));
  code.push_back(ref::encode::i(Op::kLw, 10, 5, 0));
  emit_li(code, 17, 93);
  code.push_back(0x00000073u);
  if (kCodeBase + code.size() * 4 > kDataBase) throw std::length_error("make_batch: code overlaps the data area");
  std::vector<format::Segment> segs;
  data.memsz = static_cast<u32>(data.bytes.size());
  segs.push_back(std::move(data));
  batch.image = image_from_code(code, kCodeBase, std::move(segs));
  return batch;
}

std::string listing(const format::GuestImage& image, u32 begin, u32 end) {
  std::string out;
  for (const auto& s : image.segments) {
    for (u32 a = begin; a < end; a += 4) {
      if (a < s.vaddr || a + 4 > s.vaddr + s.bytes.size()) continue;
      u32 w;
      std::memcpy(&w, s.bytes.data() + (a - s.vaddr), 4);
      char buf[160];
      std::snprintf(buf, sizeof buf, "  %08x: %08x  %s\n", a, w, ref::disassemble(w, a).c_str());
      out += buf;
    }
  }
  return out;
}

}  // namespace lockstep::progen
