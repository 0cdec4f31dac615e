#include "lockstep/chip/machines/accumulator.hpp"

#include <stdexcept>

namespace lockstep::chip::machines {

using namespace compiler;

AccumulatorMachine compile_accumulator(std::uint32_t digits) {
  if (digits == 0 || digits > 64) throw std::invalid_argument("compile_accumulator: digits must be 1..64");
  AccumulatorMachine m;
  m.digits = digits;
  const std::uint32_t N = digits;
  TokenSpace& ts = m.tokens;
  m.kind_bos = ts.add_kind("BOS", 1);
  m.kind_pos = ts.add_kind("POS", N);
  m.kind_sum0 = ts.add_kind("SUM0", 256);
  m.kind_sum1 = ts.add_kind("SUM1", 256);
  m.kind_end = ts.add_kind("END", 256);

  ChipBuilder B("accumulator: A += B over " + std::to_string(N) + "-byte numbers, one byte per token pair",
                ts.vocab_size());
  // Token embedding: kind one-hot and payload scalar.
  const FieldRef kind = B.field("kind", 5);
  const FieldRef payload = B.field("payload", 1);
  for (std::uint32_t k = 0; k < ts.kinds().size(); ++k)
    for (std::uint32_t p = 0; p < ts.kinds()[k].count; ++p) {
      const Token t = ts.token(k, p);
      B.embed(t, kind.dim(k), 1);
      if (p != 0) B.embed(t, payload.dim(), p);
    }
  const Lin is_bos = kind[m.kind_bos], is_pos = kind[m.kind_pos], is_sum0 = kind[m.kind_sum0],
            is_sum1 = kind[m.kind_sum1], is_end = kind[m.kind_end];
  const Lin is_sum = is_sum0 + is_sum1;

  // Layer 0: registers written from the token, then read.
  B.add_layer();
  const FieldRef p = B.field("p", 1), c = B.field("c", 1), r = B.field("r", 1);
  const Memory regP = add_memory(B, 0, "P", 1, 1);
  const Memory regC = add_memory(B, 0, "C", 1, 1);
  const Memory regR = add_memory(B, 0, "R", 1, 1);
  memory_write_slot(B, regP, 0, {payload[0]}, is_pos);
  memory_write_slot(B, regC, 0, {is_sum1}, is_bos + is_end + is_sum);
  memory_write_slot(B, regR, 0, {payload[0]}, is_end);
  memory_read_slot(B, regP, 0, p);
  memory_read_slot(B, regC, 0, c);
  memory_read_slot(B, regR, 0, r);
  // Layer 0 MLP: one-hot of P, [P = N-1], (R + 1) mod 256.
  const FieldRef p_oh = B.field("p_oh", N), last = B.field("last", 1), r_inc = B.field("r_inc", 1);
  onehot_decode(B.layer(0), p[0], p_oh);
  threshold(B.layer(0), p[0], N - 1, last.dim());
  pass(B.layer(0), r[0] + 1.0, r_inc.dim());
  threshold(B.layer(0), r[0], 255, r_inc.dim(), -256);

  // Layer 1: memories A and B, addressed by the one-hot of P.
  B.add_layer();
  const FieldRef a = B.field("a", 1), b = B.field("b", 1);
  const Memory memA = add_memory(B, 1, "A", N, 1);
  const Memory memB = add_memory(B, 1, "B", N, 1);
  memory_write(B, memA, p_oh, {payload[0]}, is_sum);
  memory_read(B, memA, p_oh, a);
  memory_read(B, memB, p_oh, b);
  {
    Initialiser in;
    in.name = "A";
    in.source = ByteSourceKind::Image;
    in.address = m.a_address;
    in.length = N;
    memory_init_bytes(B, memA, 0, in);
    in.name = "B";
    in.source = ByteSourceKind::Section;
    in.section = m.b_section;
    in.offset = 0;
    memory_init_bytes(B, memB, 0, in);
    in.name = "R";
    in.source = ByteSourceKind::Entry;
    in.length = 1;
    memory_init_bytes(B, regR, 0, in);
  }
  // Layer 1 MLP: the next token's kind (one-hot) and payload (scalar).
  const FieldRef next_kind = B.field("next_kind", 5), next_payload = B.field("next_payload", 1);
  LayerBuilder& L1 = B.layer(1);
  const Lin t = a[0] + b[0] + c[0];
  add_with_carry_if(L1, a[0], b[0], c[0], is_pos, next_payload.dim(), next_kind.dim(m.kind_sum1));
  pass(L1, is_pos, next_kind.dim(m.kind_sum0));
  threshold_if(L1, t, 256, 511, is_pos, next_kind.dim(m.kind_sum0), -1);
  and_bits(L1, {is_sum, last[0]}, next_kind.dim(m.kind_end));
  pass(L1, is_bos + is_end + is_sum, next_kind.dim(m.kind_pos));
  and_bits(L1, {is_sum, last[0]}, next_kind.dim(m.kind_pos), -1);
  gated_product(L1, p[0] + 1.0, is_sum - last[0], next_payload.dim());
  gated_product(L1, r_inc[0], is_sum + last[0] - 1.0, next_payload.dim());

  // Layer 2 MLP: one-hot of the next payload; then emission.
  B.add_layer();
  const FieldRef next_payload_oh = B.field("next_payload_oh", 256);
  onehot_decode(B.layer(2), next_payload[0], next_payload_oh);
  emit_onehot(B, ts, next_kind, next_payload_oh, 2);

  // Probe map and declared bounds.
  B.probe(-1, Sublayer::Embed, {"kind", "payload"});
  B.probe(0, Sublayer::Memory, {"p", "c", "r"});
  B.probe(0, Sublayer::Mlp, {"p_oh", "last", "r_inc"});
  B.probe(1, Sublayer::Memory, {"a", "b"});
  B.probe(1, Sublayer::Mlp, {"next_kind", "next_payload"});
  B.probe(2, Sublayer::Mlp, {"next_payload_oh"});
  B.bound("embed", -1, 255);
  B.bound("logits", -1, 4);
  for (int l = 0; l < 3; ++l) {
    for (const char* act : {"mem.k", "mem.q", "mem.beta"}) B.bound(act, l, 1);
    for (const char* act : {"mem.v", "mem.state", "mem.o"}) B.bound(act, l, 255);
    B.bound("mem.resid", l, 255);
    B.bound("mlp.pre", l, 511);
    B.bound("mlp.u", l, 511);
    B.bound("mlp.hidden", l, 511);
    B.bound("mlp.resid", l, 256);
  }
  m.chip = B.build();
  return m;
}

}  // namespace lockstep::chip::machines
