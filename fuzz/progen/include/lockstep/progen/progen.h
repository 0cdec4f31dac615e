// Random program generation for differential and property tests.
//
// Everything is driven by ref's encoding table (the row's class, format and
// operand fields); every generator is seeded and reproducible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/format/elf.h"
#include "lockstep/ref/encoding.h"

namespace lockstep::progen {

/// Deterministic 64-bit generator (splitmix64); the same seed always gives
/// the same sequence on every platform.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, n) (n > 0).
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
  bool chance(std::uint32_t one_in) { return below(one_in) == 0; }
  /// A 32-bit operand: half the time an edge value (0, 1, -1, INT32_MIN,
  /// INT32_MAX, a power of two, small numbers), otherwise uniform.
  std::uint32_t operand();

 private:
  std::uint64_t state_;
};

/// Appends the two-instruction `li rd, value` expansion (lui + addi).
void emit_li(std::vector<std::uint32_t>& code, unsigned rd, std::uint32_t value);

/// A guest image whose code (an RX segment) starts at `code_base` and is the
/// entry point; `data` segments are added as given (RW).
format::GuestImage image_from_code(const std::vector<std::uint32_t>& code, std::uint32_t code_base = 0x10000,
                                   std::vector<format::Segment> data = {});

/// Options for random straight-line/forward-branch bodies.
struct BodyOptions {
  unsigned length = 40;            ///< instructions in the body (a JALR pair counts as two)
  unsigned base_reg = 31;          ///< holds the scratch address; never written by the body
  std::uint32_t scratch_bytes = 256;  ///< loads/stores use imm in [0, scratch_bytes - n], aligned
  bool bignum = false;             ///< include bignum rows (not for qemu)
};

/// Classes of rows a random body draws from (everything but ECALL/EBREAK;
/// bignum only when asked).
bool usable_in_body(const ref::Encoding& row, bool bignum);

/// A random body over the encoding table: straight-line code with forward
/// branches/jumps only (targets up to the end of the body, multiples of 4),
/// aligned loads/stores at `base_reg` + offset inside the scratch area; it
/// always runs off its end (no traps, no ECALL).
std::vector<std::uint32_t> random_body(Random& rng, const BodyOptions& options);

/// A batch of random bodies in one ELF for differential runs against
/// qemu-riscv32.  Each body k: sets x1..x31 to random edge values, its base
/// register to its own scratch area (initialised from the ELF), runs its
/// random code, stores x1..x31 into the 128-byte dump after its scratch,
/// then writes scratch + dump (record_bytes) to fd 1 with the write ECALL.
/// After the last body the program exits with the low byte of a dumped
/// register.  Output is therefore `bodies` records of record_bytes each.
struct Batch {
  format::GuestImage image;
  std::uint32_t record_bytes = 0;
  struct Body {
    std::uint32_t code_begin = 0, code_end = 0;  ///< addresses of the random code
    unsigned base_reg = 0;
  };
  std::vector<Body> bodies;
};
Batch make_batch(std::uint64_t seed, unsigned bodies, unsigned body_length = 40);

/// Disassembly listing of [begin, end) of an image's code ("addr: word  text" lines).
std::string listing(const format::GuestImage& image, std::uint32_t begin, std::uint32_t end);

}  // namespace lockstep::progen
