// fuzz_make_corpus OUT_DIR: writes the seed corpora of fuzz/corpus/ (committed; rerun after a
// format change:  build/bin/fuzz_make_corpus fuzz/corpus).  Deterministic: fixed programs,
// the accumulator chip of chip/machines, tiny llama2.c checkpoints and tokenizers, and
// instruction inputs from a fixed seed; plus truncated and corrupted variants of each.
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <array>
#include <string>
#include <vector>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/machines/accumulator.hpp"
#include "lockstep/dut/protocol.h"
#include "lockstep/format/elf.h"
#include "llama2c.h"

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

fs::path g_out;

void put(const std::string& rel, const Bytes& b) {
  const fs::path p = g_out / rel;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz_make_corpus: cannot write %s\n", p.string().c_str());
    std::exit(1);
  }
  std::printf("%7zu %s\n", b.size(), rel.c_str());
}

void put32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(std::uint8_t(v >> (8 * i)));
}
void putf(Bytes& b, float f) {
  std::uint32_t v;
  std::memcpy(&v, &f, 4);
  put32(b, v);
}

Bytes truncated(Bytes b, std::size_t n) {
  b.resize(std::min(n, b.size()));
  return b;
}
Bytes flipped(Bytes b, std::size_t at, std::uint8_t x) {
  if (at < b.size()) b[at] ^= x;
  return b;
}

// RV32 encodings (isa.md §4), written out so the seeds do not depend on ref/.
constexpr std::uint32_t addi(unsigned rd, unsigned rs1, std::int32_t imm) {
  return (std::uint32_t(imm) << 20) | (rs1 << 15) | (rd << 7) | 0x13;
}
constexpr std::uint32_t kEcall = 0x00000073;
constexpr std::uint32_t kA0 = 10, kA7 = 17;

lockstep::format::GuestImage program(const std::vector<std::uint32_t>& code, std::uint32_t extra_mem = 0) {
  lockstep::format::GuestImage img;
  img.entry = 0x10000;
  lockstep::format::Segment text;
  text.vaddr = 0x10000;
  text.flags = lockstep::format::kPfR | lockstep::format::kPfX;
  for (std::uint32_t w : code) put32(text.bytes, w);
  text.memsz = std::uint32_t(text.bytes.size());
  img.segments.push_back(text);
  if (extra_mem) {
    lockstep::format::Segment data;
    data.vaddr = 0x20000;
    data.flags = lockstep::format::kPfR | lockstep::format::kPfW;
    data.bytes = {1, 2, 3, 4, 5, 6, 7, 8};
    data.memsz = extra_mem;
    img.segments.push_back(data);
  }
  img.symbols["_start"] = 0x10000;
  return img;
}

// Issue 28 (isa.md §3): extended section numbering and the loader's other rules.  A program
// with a non-alloc section, written with extended numbering, then edited field by field.
Elf32_Ehdr& ehdr_of(Bytes& b) { return *reinterpret_cast<Elf32_Ehdr*>(b.data()); }
Elf32_Shdr& shdr_of(Bytes& b, unsigned i) {
  return *reinterpret_cast<Elf32_Shdr*>(b.data() + ehdr_of(b).e_shoff + i * sizeof(Elf32_Shdr));
}
Elf32_Phdr& phdr_of(Bytes& b, unsigned i) {
  return *reinterpret_cast<Elf32_Phdr*>(b.data() + ehdr_of(b).e_phoff + i * sizeof(Elf32_Phdr));
}

void elf_regression_seeds() {
  using lockstep::format::write_elf;
  // Sections: 0 null, 1 .text, 2 .comment, 3 .symtab, 4 .strtab, 5 .shstrtab.
  auto img = program({addi(kA0, 0, 7), addi(kA7, 0, 93), kEcall});
  img.sections[".comment"] = {'s', 'e', 'e', 'd', 0};
  const Bytes ext = write_elf(img, {.extended_numbering = true});
  put("elf/ext_numbering.elf", ext);  // valid: exits 7
  Bytes shdrs_only = ext;  // extended section numbering only, e_phnum as usual
  ehdr_of(shdrs_only).e_phnum = 1;
  shdr_of(shdrs_only, 0).sh_info = 0;
  put("elf/ext_numbering_sections.elf", shdrs_only);
  // The outside report: section 0 is the name table (e_shstrndx 0), .comment (named ".text")
  // far outside the file.
  Bytes report = shdrs_only;
  ehdr_of(report).e_shstrndx = 0;
  shdr_of(report, 0).sh_type = SHT_STRTAB;
  shdr_of(report, 0).sh_offset = shdr_of(report, 5).sh_offset;
  shdr_of(report, 0).sh_link = 0;
  for (unsigned i = 1; i < 6; ++i) shdr_of(report, i).sh_name = i == 2 ? 1 : 0;
  shdr_of(report, 2).sh_offset = 0x7ff00000;
  put("elf/ext_section_far.elf", report);
  Bytes past = ext;  // in-file offset, size running past the end
  shdr_of(past, 2).sh_offset = std::uint32_t(past.size() - 2);
  shdr_of(past, 2).sh_size = 16;
  put("elf/ext_section_past_end.elf", past);
  Bytes count = ext;  // 2^32 - 1 sections claimed by section 0
  shdr_of(count, 0).sh_size = 0xffffffffu;
  put("elf/ext_count_huge.elf", count);
  Bytes phcount = ext;  // 2^27 program headers claimed by section 0
  shdr_of(phcount, 0).sh_info = 0x08000000;
  put("elf/ext_phnum_huge.elf", phcount);
  Bytes version = ext;
  version[EI_VERSION] = 0;
  put("elf/ei_version0.elf", version);
  Bytes phent = ext;
  ehdr_of(phent).e_phentsize = 56;
  put("elf/phentsize56.elf", phent);
  Bytes note = write_elf(img);  // a non-PT_LOAD segment whose range wraps in 32 bits
  phdr_of(note, 0).p_type = PT_NOTE;
  phdr_of(note, 0).p_offset = 0xfffffff0u;
  phdr_of(note, 0).p_filesz = 0x20;
  put("elf/note_outside.elf", note);
  auto empty = img;  // empty PT_LOADs at 0 and at the text's start (ignored): exits 7
  empty.segments.insert(empty.segments.begin(), lockstep::format::Segment{0, 0, lockstep::format::kPfR, {}});
  empty.segments.push_back(lockstep::format::Segment{0x10000, 0, lockstep::format::kPfR, {}});
  put("elf/empty_loads.elf", write_elf(empty));
  auto bss = img;  // entry in the zero-filled tail of the text segment
  bss.segments[0].memsz = 0x100;
  bss.entry = 0x10010;
  put("elf/entry_in_bss_tail.elf", write_elf(bss));
}

void elf_seeds() {
  using lockstep::format::write_elf;
  // exit(7)
  const Bytes exit7 = write_elf(program({addi(kA0, 0, 7), addi(kA7, 0, 93), kEcall}));
  put("elf/exit7.elf", exit7);
  // a counting loop (addi a0, a0, 1; blt a0, a1 -> back), then exit
  const std::uint32_t blt_back = 0xFEB54EE3;  // blt a0, a1, -4
  put("elf/loop.elf", write_elf(program({addi(11, 0, 100), addi(kA0, kA0, 1), blt_back,
                                         addi(kA7, 0, 93), kEcall}, 0x100)));
  // store/load on a data segment with .bss tail, then an illegal word (TRAP 1)
  const std::uint32_t lui_a1 = 0x000205B7;   // lui a1, 0x20
  const std::uint32_t sw = 0x00A5A223;       // sw a0, 4(a1)
  const std::uint32_t lw = 0x0045A603;       // lw a2, 4(a1)
  put("elf/data_trap.elf", write_elf(program({lui_a1, addi(kA0, 0, -1), sw, lw, 0xFFFFFFFF}, 0x1000)));
  // a non-alloc section and an empty vector-unit section
  auto img = program({addi(kA7, 0, 93), kEcall});
  img.sections[".comment"] = {'f', 'u', 'z', 'z', 0};
  img.sections[".lockstep.vreg"] = Bytes(16, 0);
  put("elf/sections.elf", write_elf(img));
  // corrupt variants of exit7
  put("elf/trunc_header.elf", truncated(exit7, 40));
  put("elf/trunc_phdr.elf", truncated(exit7, 60));
  put("elf/bad_machine.elf", flipped(exit7, 18, 0x01));
  put("elf/bad_class.elf", flipped(exit7, 4, 0x03));
  Bytes entry = exit7;  // e_entry outside RAM
  entry[24 + 3] = 0x80;
  put("elf/entry_outside.elf", entry);
  elf_regression_seeds();
}

// Issue 28 (chip-format.md §3): the header text is '{', one JSON object (no NUL, no key
// twice), then only spaces; N is capped.  Variants of the accumulator chip's header.
Bytes with_header_text(const Bytes& chip, const std::string& h) {
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= std::uint64_t(chip[i]) << (8 * i);
  Bytes out(8);
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = std::uint8_t(n >> (8 * i));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), chip.begin() + 8 + long(hlen), chip.end());
  return out;
}

void chip_regression_seeds(const Bytes& chip) {
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= std::uint64_t(chip[i]) << (8 * i);
  std::string json(chip.begin() + 8, chip.begin() + 8 + long(hlen));
  while (!json.empty() && json.back() == ' ') json.pop_back();
  put("chip/header_nul_garbage.chip", with_header_text(chip, json + std::string("\0garbage{{", 10) + "      "));
  put("chip/header_newline_pad.chip", with_header_text(chip, json + "\n   "));
  put("chip/header_leading_space.chip", with_header_text(chip, " " + json));
  const std::size_t at = json.find("\"embed.bias_idx\":");
  const std::size_t end = json.find('}', at) + 1;
  std::string twice = json;
  twice.insert(end, "," + json.substr(at, end - at));
  put("chip/header_duplicate_key.chip", with_header_text(chip, twice));
  Bytes capped = chip;  // N = 100,000,001: over the cap
  const std::uint64_t n = 100'000'001;
  for (int i = 0; i < 8; ++i) capped[std::size_t(i)] = std::uint8_t(n >> (8 * i));
  put("chip/header_over_cap.chip", capped);
}

void chip_seeds() {
  const auto acc = lockstep::chip::machines::compile_accumulator(1);
  const Bytes chip = lockstep::chip::serialize_chip(acc.chip);
  put("chip/accumulator1.chip", chip);
  put("chip/trunc_header.chip", truncated(chip, 6));
  put("chip/trunc_data.chip", truncated(chip, chip.size() - 7));
  // The safetensors header length is the first 8 bytes; flip a byte inside the JSON and one
  // inside the data.
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= std::uint64_t(chip[i]) << (8 * i);
  put("chip/json_flip.chip", flipped(chip, 8 + std::size_t(hlen / 2), 0x20));
  put("chip/data_flip.chip", flipped(chip, chip.size() - 3, 0x40));
  put("chip/empty.chip", Bytes{});
  chip_regression_seeds(lockstep::chip::serialize_chip(lockstep::chip::machines::compile_accumulator(1).chip));
}

lockstep::host::Checkpoint tiny_checkpoint(bool shared) {
  lockstep::host::Checkpoint ck;
  auto& c = ck.config;
  c.dim = 2, c.hidden_dim = 3, c.n_layers = 1, c.n_heads = 1, c.n_kv_heads = 1, c.vocab_size = 4,
  c.seq_len = 2, c.shared_classifier = shared;
  auto fill = [](std::vector<float>& v, std::size_t n, float base) {
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = base + 0.125f * float(i);
  };
  const std::size_t D = 2, H = 3, V = 4;
  auto& w = ck.w;
  fill(w.token_embedding, V * D, -1), fill(w.rms_att, D, 1), fill(w.wq, D * D, 0.5f);
  fill(w.wk, D * D, 0.25f), fill(w.wv, D * D, -0.5f), fill(w.wo, D * D, 2), fill(w.rms_ffn, D, 1);
  fill(w.w1, H * D, 0.1f), fill(w.w2, D * H, -0.1f), fill(w.w3, H * D, 0.3f), fill(w.rms_final, D, 1);
  if (shared) w.wcls = w.token_embedding;
  else fill(w.wcls, V * D, 3);
  return ck;
}

Bytes with_prefix(std::uint8_t first, const Bytes& b) {
  Bytes out{first};
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

void model_seeds() {
  // First byte (fuzz_model_converter): even = checkpoint, odd = tokenizer with 1 + (b >> 1) pieces.
  const Bytes shared = lockstep::host::serialize_checkpoint(tiny_checkpoint(true));
  const Bytes separate = lockstep::host::serialize_checkpoint(tiny_checkpoint(false));
  put("model/ckpt_shared.bin", with_prefix(0, shared));
  put("model/ckpt_separate_cls.bin", with_prefix(0, separate));
  put("model/ckpt_header_only.bin", with_prefix(0, truncated(shared, 28)));
  put("model/ckpt_short_header.bin", with_prefix(0, truncated(shared, 20)));
  put("model/ckpt_wrong_size.bin", with_prefix(0, truncated(shared, shared.size() - 4)));
  Bytes nan = shared;  // a non-finite weight
  nan[28 + 3] = 0x7f, nan[28 + 2] = 0xc0;
  put("model/ckpt_nan.bin", with_prefix(0, nan));
  Bytes big = truncated(shared, 28);  // header claiming 65536 x 65536 layers
  for (int i = 0; i < 3; ++i) big[4 * i + 0] = 0, big[4 * i + 1] = 0, big[4 * i + 2] = 1, big[4 * i + 3] = 0;
  put("model/ckpt_huge_header.bin", with_prefix(0, big));
  // Issue 28: header mode (first byte 2): 28 header bytes, then a claimed file size (u64).
  auto layout = [](std::array<std::int32_t, 7> h, std::uint64_t size) {
    Bytes b{2};
    for (std::int32_t v : h) put32(b, std::uint32_t(v));
    put32(b, std::uint32_t(size)), put32(b, std::uint32_t(size >> 32));
    return b;
  };
  // dim 65536, n_heads = n_kv_heads = 32768: kv_dim overflowed an int; the size it computed
  // (1,835,044 bytes) and the true one (68,721,311,780 bytes).
  put("model/layout_kvdim_overflow_wrapped.bin", layout({65536, 1, 1, 32768, 32768, 1, 1}, 1835044));
  put("model/layout_kvdim_overflow_true.bin", layout({65536, 1, 1, 32768, 32768, 1, 1}, 68721311780ull));
  // 65536 layers and positions of a dim-2 model: a 7 MB file, 2^34 floats of K/V cache.
  put("model/layout_run_state.bin", layout({2, 1, 65536, 1, 1, 1, 65536}, 28 + 4 * 1835012ull));
  put("model/layout_tiny.bin", layout({2, 3, 1, 1, 1, 4, 2}, shared.size()));  // valid: parses
  // tokenizer: max_token_length, then per piece: float score, int32 length, bytes
  Bytes tok;
  put32(tok, 6);
  const char* pieces[] = {"<unk>", "<s>", " a", "<0x0A>"};
  for (int i = 0; i < 4; ++i) {
    putf(tok, -float(i));
    put32(tok, std::uint32_t(std::strlen(pieces[i])));
    tok.insert(tok.end(), pieces[i], pieces[i] + std::strlen(pieces[i]));
  }
  put("model/tok4.bin", with_prefix(std::uint8_t((4 - 1) << 1 | 1), tok));
  put("model/tok4_truncated.bin", with_prefix(std::uint8_t((4 - 1) << 1 | 1), truncated(tok, tok.size() - 2)));
  put("model/tok4_trailing.bin", with_prefix(std::uint8_t((3 - 1) << 1 | 1), tok));
}

void insn_seeds() {
  // fuzz_lockstep_insn reads its input through FuzzedDataProvider; any bytes are a program.
  std::mt19937_64 rng(20261129);
  for (int i = 0; i < 6; ++i) {
    Bytes b(std::size_t(64) << (i % 4));
    for (auto& x : b) x = std::uint8_t(rng());
    put("insn/random" + std::to_string(i) + ".bin", b);
  }
  put("insn/one_word.bin", Bytes{0x13, 0, 0, 0, 0x01});
}

}  // namespace

// fuzz_dut_frame: byte 0 picks the request (1 + b % 13), then frames as a chip would answer it.
void dut_seeds() {
  using namespace lockstep::dut;
  auto seed = [](const std::string& name, std::uint32_t request, std::vector<Bytes> frames) {
    Bytes b{static_cast<std::uint8_t>(request - 1)};
    for (const Bytes& f : frames) b.insert(b.end(), f.begin(), f.end());
    put("dut/" + name, b);
  };
  auto frame = [](std::uint32_t type, const Bytes& payload) { return encode_frame(type, payload); };
  HelloOk ok;
  ok.vocab_size = 20736;
  ok.max_streams = 64;
  ok.capabilities = 0xF;
  ok.name = "seed chip";
  ok.identity = "0123456789abcdef";
  seed("hello_ok", kHello, {frame(kResponse | kHello, encode_hello_ok(ok))});
  const std::vector<std::uint32_t> toks{0x104, 0x0D01, 0x1C41, 0x1F00};
  seed("tokens", kStep, {frame(kResponse | kStep, encode_tokens(toks)), frame(kResponse | kStep, encode_tokens(toks))});
  seed("tokens_forced", kForced, {frame(kResponse | kForced, encode_tokens(toks))});
  lockstep::chip::ProbeMap pm;
  pm.fields.push_back({"next_kind", 81, {{3, lockstep::chip::Sublayer::Mlp}, {7, lockstep::chip::Sublayer::Memory}}});
  pm.fields.push_back({"in_payload_oh", 256, {}});
  pm.points.push_back({-1, lockstep::chip::Sublayer::Embed, {"in_payload_oh"}});
  pm.points.push_back({3, lockstep::chip::Sublayer::Mlp, {"next_kind"}});
  pm.unembed_reads = {"next_kind"};
  seed("probe_map", kProbeMap, {frame(kResponse | kProbeMap, encode_probe_map(pm))});
  seed("values", kProbe, {frame(kResponse | kProbe, encode_values(std::vector<float>{0, 1, -1, 0.5f}))});
  seed("hash", kHash, {frame(kResponse | kHash, encode_u64(0x0123456789abcdefull))});
  seed("blob", kSave, {frame(kResponse | kSave, encode_blob(Bytes{'L', 'K', 'C', 'S', 1, 0, 0, 0}))});
  seed("ok", kReset, {frame(kResponse | kReset, {}), frame(kResponse | kStreams, {})});
  seed("error", kStep, {frame(kError, encode_error(kInternal, "out of memory on the GPU"))});
  // Faults the harness must survive: a wrong type, a wrong count, a length over the limit, a
  // truncated frame, stray text on stdout.
  seed("wrong_type", kStep, {frame(kResponse | kReset, {})});
  Bytes bad_count;
  put32(bad_count, 1000000);
  put32(bad_count, 1);
  seed("bad_count", kStep, {frame(kResponse | kStep, bad_count)});
  Bytes over;
  put32(over, kResponse | kStep);
  put32(over, kMaxPayload + 1);
  seed("over_limit", kStep, {over});
  seed("truncated", kStep, {truncated(frame(kResponse | kStep, encode_tokens(toks)), 13)});
  const std::string text = "loading weights... done\n";
  seed("stray_text", kHello, {Bytes(text.begin(), text.end())});
  Bytes pm_bad = encode_probe_map(pm);
  pm_bad[pm_bad.size() - 1] = 0x7F;  // an unembed read index out of range
  seed("probe_map_bad_index", kProbeMap, {frame(kResponse | kProbeMap, pm_bad)});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus OUT_DIR (e.g. fuzz/corpus)\n");
    return 2;
  }
  g_out = argv[1];
  elf_seeds();
  chip_seeds();
  model_seeds();
  insn_seeds();
  dut_seeds();
  return 0;
}
