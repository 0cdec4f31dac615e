// The vector unit's shared parts (vector.md): the fixed tables (§3), the memories' ELF sections
// (§2.1) and the dispatch over the registry of the eight ops.  Each op's semantics, tokens and
// traps live in its own file, ref/src/vector/<op>.cpp (docs/spec/vector/<op>.md), as one
// registry row; the shared floors they take (spans, traps, token streams) are
// ref/src/vector/unit.h.
#include "lockstep/ref/vector.h"

#include <elf.h>

#include <array>
#include <cmath>
#include <cstring>
#include <map>

#include "lockstep/ref/machine.h"
#include "vector/unit.h"

namespace lockstep::ref {

using vec::i64;
using vec::i128;
using u32 = std::uint32_t;

// ------------------------------------------------------------------ §3 tables
const VectorTables& vector_tables() {
  static const VectorTables tables = [] {
    VectorTables t;
    for (int i = 0; i < 1024; ++i) {
      t.exp[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(std::llround(65536.0 * std::exp(-i / 64.0)));
      t.sig[static_cast<std::size_t>(i)] =
          static_cast<std::int32_t>(std::llround(65536.0 / (1.0 + std::exp(-(i - 512) / 64.0))));
    }
    // RSQ: the unique y with (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1).
    for (int i = 64; i < 256; ++i) {
      i64 y = std::llround(134217728.0 / std::sqrt(i + 0.5));
      const i128 lim = i128{1} << 57;
      while ((i128{2 * y + 1} * (2 * y + 1)) * (2 * i + 1) <= lim) ++y;
      while ((i128{2 * y - 1} * (2 * y - 1)) * (2 * i + 1) >= lim) --y;
      t.rsq[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(y);
    }
    // RCP: floor((2^39 + 2i + 1) / (4i + 2)).
    for (int i = 128; i < 256; ++i) {
      t.rcp[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(((i64{1} << 39) + 2 * i + 1) / (4 * i + 2));
    }
    const double freq[4] = {1.0, 0.1, 0.01, 0.001};  // 10^-j
    for (int p = 0; p < 64; ++p) {
      for (int j = 0; j < 4; ++j) {
        const double angle = p * freq[j];
        t.cos[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::llround(65536.0 * std::cos(angle)));
        t.sin[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::llround(65536.0 * std::sin(angle)));
      }
    }
    return t;
  }();
  return tables;
}

// ------------------------------------------------------------------ §2.1 sections
void load_vector_sections(const format::GuestImage& image, VectorState& s) {
  s = VectorState{};
  struct Info {
    std::size_t max;
  };
  static const std::map<std::string, std::size_t> kMax = {
      {".lockstep.wmem", 132864}, {".lockstep.wscale", 8304}, {".lockstep.vreg", 4096},
      {".lockstep.act", 384},     {".lockstep.ash", 6},       {".lockstep.kcache", 10240},
      {".lockstep.vcache", 10240}, {".lockstep.ksh", 320},    {".lockstep.vsh", 320}};
  const auto fail = [](const std::string& name, const std::string& what) {
    throw LoadError("ELF: section " + name + ": " + what);
  };
  const auto ours = [](const std::string& name) { return name.rfind(".lockstep.", 0) == 0; };
  std::map<std::string, int> seen;
  for (const auto& h : image.section_headers) {
    if (!ours(h.name)) continue;
    if (!kMax.count(h.name)) fail(h.name, "unknown vector-unit section (vector.md §2.1)");
    if (++seen[h.name] > 1) fail(h.name, "appears twice");
    if (h.flags & SHF_ALLOC) fail(h.name, "has SHF_ALLOC (vector memories must not be allocated)");
    if (h.type != SHT_PROGBITS) fail(h.name, "is not SHT_PROGBITS");
    if (h.size > kMax.at(h.name)) fail(h.name, std::to_string(h.size) + " bytes, more than its maximum " + std::to_string(kMax.at(h.name)));
  }
  for (const auto& section : image.sections) {
    // Plain references, not structured bindings: the lambda below captures them (clang < 16
    // cannot capture a structured binding).
    const std::string& name = section.first;
    const auto& bytes = section.second;
    if (!ours(name)) continue;
    if (!kMax.count(name)) fail(name, "unknown vector-unit section (vector.md §2.1)");
    if (bytes.size() > kMax.at(name)) fail(name, std::to_string(bytes.size()) + " bytes, more than its maximum " + std::to_string(kMax.at(name)));
    const auto shifts = [&](std::uint8_t* out) {
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] > 25) fail(name, "byte " + std::to_string(i) + " is " + std::to_string(bytes[i]) + ", above 25");
        out[i] = bytes[i];
      }
    };
    if (name == ".lockstep.wmem") {
      for (std::size_t k = 0; k < bytes.size(); ++k) {  // low nibble W[c][2k'], high nibble W[c][2k'+1]
        s.wmem[2 * k] = static_cast<std::int8_t>(static_cast<std::int8_t>(bytes[k] << 4) >> 4);
        s.wmem[2 * k + 1] = static_cast<std::int8_t>(static_cast<std::int8_t>(bytes[k] & 0xf0) >> 4);
      }
    } else if (name == ".lockstep.wscale") {
      for (std::size_t c = 0; 2 * c + 1 < bytes.size(); ++c) s.wscale[c] = static_cast<std::uint16_t>(bytes[2 * c] | bytes[2 * c + 1] << 8);
      if (bytes.size() % 2) s.wscale[bytes.size() / 2] = bytes.back();
    } else if (name == ".lockstep.vreg") {
      if (!bytes.empty()) std::memcpy(s.vr.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.act") {
      if (!bytes.empty()) std::memcpy(s.act.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.ash") {
      shifts(s.ash.data());
    } else if (name == ".lockstep.kcache") {
      if (!bytes.empty()) std::memcpy(s.kc.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.vcache") {
      if (!bytes.empty()) std::memcpy(s.vc.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.ksh") {
      shifts(s.ksh.data());
    } else if (name == ".lockstep.vsh") {
      shifts(s.vsh.data());
    }
  }
}

// ------------------------------------------------------------------ the registry
std::span<const VectorOpRow> vector_ops() {
  // One line per op, in f3 order (vector.md §4.0's table); each row is defined in its op's file.
  static const std::array<VectorOpRow, 8> rows = {
      vec::kVmatRow, vec::kVmatrRow, vec::kVqRow, vec::kVexpRow,
      vec::kVewRow,  vec::kVfnRow,   vec::kVredRow, vec::kVldRow,
  };
  return rows;
}

const VectorOpRow& vector_op(unsigned f3) { return vector_ops()[f3 & 7]; }

u32 execute_vector(VectorState& s, unsigned op_index, u32 f7, unsigned rd, u32 x1, u32 x2,
                   std::span<const std::uint8_t> ram, std::vector<u32>& tokens, bool& writes_rd, u32& rd_value) {
  VectorOutput out{tokens};
  const u32 code = vector_op(op_index).execute(s, VectorOperands{f7, rd, x1, x2}, ram, out);
  writes_rd = out.writes_rd;
  if (out.writes_rd) rd_value = out.rd_value;
  return code;
}

std::string vector_mnemonic(unsigned op_index, u32 f7) { return vector_op(op_index).disasm(f7); }

}  // namespace lockstep::ref
