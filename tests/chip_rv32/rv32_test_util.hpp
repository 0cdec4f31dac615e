// Helpers for the RV32 chip tests: one compiled chip per process, guest images, trace checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/rv32/rv32_chip.hpp"

namespace lockstep::chip::rv32::test {

inline std::shared_ptr<const Chip> shared_chip() {
  static const std::shared_ptr<const Chip> chip = std::make_shared<const Chip>(compile_rv32_chip());
  return chip;
}

inline void put32(std::vector<std::uint8_t>& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

/// Image: code words at pc (entry = pc), data spans, initial registers at kRegImageAddress + 4 r.
/// Bignum state (chip-design.md): c at kRegImageAddress + 128, acc (12 bytes, LSB first) after it.
inline GuestImage make_image(std::uint32_t pc, const std::vector<std::uint32_t>& code,
                             const std::map<int, std::uint32_t>& regs,
                             const std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>>& mem,
                             std::uint8_t carry = 0, const std::vector<std::uint8_t>& acc = std::vector<std::uint8_t>(12, 0)) {
  GuestImage img;
  img.entry = pc;
  for (const auto& [a, bytes] : mem) img.segments.push_back({a, bytes});
  std::vector<std::uint8_t> c;
  for (std::uint32_t w : code) put32(c, w);
  img.segments.push_back({pc, c});
  std::vector<std::uint8_t> r;
  for (int i = 0; i < 32; ++i) put32(r, regs.count(i) ? regs.at(i) : 0u);
  r.push_back(carry);
  r.insert(r.end(), acc.begin(), acc.end());
  img.segments.push_back({kRegImageAddress, r});
  return img;
}

inline std::string tok(Token t) {
  static const char* names[] = {"CTRL", "W0", "W1", "W2", "W3", "A0", "A1", "A2", "A3", "S0", "S1", "S2",
                                "S3", "BR", "DQ", "CF", "AC0", "AC1", "AC2", "AC3", "AC4", "AC5", "AC6",
                                "AC7", "AC8", "AC9", "AC10", "AC11", "OUT", "ERR", "NOP", "EXIT", "TRAP"};
  static const char* v2[] = {"PCL", "PCH0", "PCH1", "PCH2", "PCH3", "OI", "OIH"};
  const std::uint32_t k = t / 256, p = t % 256;
  const std::string name = k < 33 ? std::string(names[k]) : (k >= 44 && k <= 50) ? std::string(v2[k - 44]) : "K" + std::to_string(k);
  return name + "(" + std::to_string(p) + ")";
}

/// Runs the chip from START teacher-forced on `want` and free-running, audit on; every token must
/// equal `want` and the audit must stay clean.
inline void expect_trace(const GuestImage& img, const std::vector<Token>& want, const std::string& what) {
  CpuExecutor ex(shared_chip(), 1);
  ex.set_audit(true);
  // teacher forced: inputs START, want[0..n-2]
  ex.reset(0, img);
  std::vector<Token> inputs = {0};
  for (std::size_t i = 0; i + 1 < want.size(); ++i) inputs.push_back(want[i]);
  const std::vector<Token> tf = ex.teacher_forced(0, inputs);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (tf[i] != want[i] && ++bad <= 3)
      ADD_FAILURE() << what << ": teacher-forced step " << i + 1 << ": expected " << tok(want[i]) << ", chip "
                    << tok(tf[i]);
  if (auto v = ex.audit_violation(0)) ADD_FAILURE() << what << ": audit (teacher-forced): " << v->to_string();
  // free running
  ex.reset(0, img);
  const std::vector<Token> fr = ex.free_running(0, 0, want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (fr[i] != want[i]) {
      ADD_FAILURE() << what << ": free-running step " << i + 1 << ": expected " << tok(want[i]) << ", chip "
                    << tok(fr[i]);
      break;
    }
  if (auto v = ex.audit_violation(0)) ADD_FAILURE() << what << ": audit (free-running): " << v->to_string();
}

}  // namespace lockstep::chip::rv32::test
