// format/: ELF32 reading/writing with the file-level rejections of isa.md §3,
// trace files (trace.md §6) and the token-id layout (trace.md §2).
#include <elf.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "lockstep/format/trace_file.h"

namespace lf = lockstep::format;

namespace {

lf::GuestImage sample_image() {
  lf::GuestImage img;
  img.entry = 0x10000;
  lf::Segment text{0x10000, 8, lf::kPfR | lf::kPfX, {0x13, 0, 0, 0, 0x73, 0, 0, 0}};
  lf::Segment data{0x11000, 0x100, lf::kPfR | lf::kPfW, {1, 2, 3, 4}};
  img.segments = {text, data};
  img.sections[".vec_weights"] = {9, 8, 7};
  img.symbols["begin_signature"] = 0x11000;
  img.symbols["end_signature"] = 0x11010;
  return img;
}

// Mutates a valid file and expects one one-line FormatError mentioning `needle`.
template <class F>
void expect_rejected(F mutate, const std::string& needle) {
  auto bytes = lf::write_elf(sample_image());
  mutate(bytes);
  try {
    lf::parse_elf(bytes);
    FAIL() << "accepted; expected an error mentioning '" << needle << "'";
  } catch (const lf::FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_EQ(msg.rfind("ELF: ", 0), 0u) << msg;
  }
}

Elf32_Ehdr* ehdr(std::vector<std::uint8_t>& b) { return reinterpret_cast<Elf32_Ehdr*>(b.data()); }
Elf32_Phdr* phdr(std::vector<std::uint8_t>& b, unsigned i) {
  return reinterpret_cast<Elf32_Phdr*>(b.data() + ehdr(b)->e_phoff + i * sizeof(Elf32_Phdr));
}

}  // namespace

TEST(Elf, RoundTripKeepsSegmentsSectionsSymbols) {
  const auto img = sample_image();
  const auto back = lf::parse_elf(lf::write_elf(img));
  EXPECT_EQ(back.entry, 0x10000u);
  ASSERT_EQ(back.segments.size(), 2u);
  EXPECT_EQ(back.segments[0].vaddr, 0x10000u);
  EXPECT_EQ(back.segments[0].memsz, 8u);
  EXPECT_EQ(back.segments[0].flags, lf::kPfR | lf::kPfX);
  EXPECT_EQ(back.segments[0].bytes, img.segments[0].bytes);
  EXPECT_EQ(back.segments[1].memsz, 0x100u);
  EXPECT_EQ(back.segments[1].bytes, (std::vector<std::uint8_t>{1, 2, 3, 4}));
  ASSERT_EQ(back.sections.count(".vec_weights"), 1u);
  EXPECT_EQ(back.sections.at(".vec_weights"), (std::vector<std::uint8_t>{9, 8, 7}));
  EXPECT_EQ(back.sections.count(".text"), 0u) << "allocated sections are not 'named data sections'";
  EXPECT_EQ(back.symbols.at("begin_signature"), 0x11000u);
  EXPECT_EQ(back.symbols.at("end_signature"), 0x11010u);
}

TEST(Elf, FileOffsetsCongruentToVaddrModPage) {
  auto bytes = lf::write_elf(sample_image());
  for (unsigned i = 0; i < 2; ++i) EXPECT_EQ(phdr(bytes, i)->p_offset % 4096, phdr(bytes, i)->p_vaddr % 4096);
}

TEST(Elf, RejectsWrongClass) {
  expect_rejected([](auto& b) { b[EI_CLASS] = ELFCLASS64; }, "wrong class");
}
TEST(Elf, RejectsWrongDataEncoding) {
  expect_rejected([](auto& b) { b[EI_DATA] = ELFDATA2MSB; }, "wrong data encoding");
}
TEST(Elf, RejectsWrongType) {
  expect_rejected([](auto& b) { ehdr(b)->e_type = ET_DYN; }, "wrong type 3");
}
TEST(Elf, RejectsWrongMachine) {
  expect_rejected([](auto& b) { ehdr(b)->e_machine = EM_X86_64; }, "wrong machine 62");
}
TEST(Elf, RejectsBadMagic) {
  expect_rejected([](auto& b) { b[1] = 'X'; }, "bad magic");
}
TEST(Elf, RejectsTruncatedHeader) {
  expect_rejected([](auto& b) { b.resize(40); }, "truncated");
}
TEST(Elf, RejectsTruncatedFile) {
  expect_rejected([](auto& b) { b.resize(b.size() / 2); }, "outside the file");
}
TEST(Elf, RejectsProgramHeadersOutsideFile) {
  expect_rejected([](auto& b) { ehdr(b)->e_phoff = 0x7ffffff0; }, "program headers outside the file");
}
TEST(Elf, RejectsSectionHeadersOutsideFile) {
  expect_rejected([](auto& b) { ehdr(b)->e_shoff = static_cast<Elf32_Off>(b.size()); }, "section headers outside the file");
}
TEST(Elf, RejectsSegmentDataOutsideFile) {
  expect_rejected([](auto& b) { phdr(b, 1)->p_offset = 0x40000000; }, "segment 1 data outside the file");
}
TEST(Elf, RejectsFileszGreaterThanMemsz) {
  expect_rejected([](auto& b) { phdr(b, 0)->p_memsz = 4; }, "p_filesz 0x8 > p_memsz 0x4");
}
TEST(Elf, RejectsOverlappingSegments) {
  expect_rejected([](auto& b) { phdr(b, 1)->p_vaddr = 0x10004; }, "overlaps segment 0");
}
TEST(Elf, RejectsEntryOutsideExecutableSegment) {
  expect_rejected([](auto& b) { ehdr(b)->e_entry = 0x11000; }, "not inside a PT_LOAD segment with PF_X");
  expect_rejected([](auto& b) { ehdr(b)->e_entry = 0x10008; }, "not inside a PT_LOAD segment with PF_X");
}
TEST(Elf, RejectsNoLoadSegment) {
  expect_rejected(
      [](auto& b) {
        phdr(b, 0)->p_type = PT_NOTE;
        phdr(b, 1)->p_type = PT_NULL;
      },
      "no PT_LOAD segment");
}
TEST(Elf, RejectsSectionDataOutsideFileNamingTheSection) {
  expect_rejected(
      [](auto& b) {
        // Section 3 is .vec_weights (sections: null, .text, .data, .vec_weights, ...).
        auto* sh = reinterpret_cast<Elf32_Shdr*>(b.data() + ehdr(b)->e_shoff + 3 * sizeof(Elf32_Shdr));
        sh->sh_size = 0x100000;
      },
      "section 3 (.vec_weights) data outside the file");
}
TEST(Elf, ReadFileNamesMissingPath) {
  try {
    lf::read_elf_file("/nonexistent/x.elf");
    FAIL();
  } catch (const lf::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.elf"), std::string::npos);
  }
}

TEST(Tokens, IdLayoutMatchesTraceSpec) {
  // trace.md §5 ids, by hand: 256*kind + payload.
  EXPECT_EQ(lf::token_id(lf::Kind::W0, 0xff), 511u);
  EXPECT_EQ(lf::token_id(lf::Kind::W3, 0xff), 1279u);
  EXPECT_EQ(lf::token_id(lf::Kind::A0, 0xfc), 1532u);
  EXPECT_EQ(lf::token_id(lf::Kind::A3, 0x00), 2048u);
  EXPECT_EQ(lf::token_id(lf::Kind::S3, 0xff), 3327u);
  EXPECT_EQ(lf::token_id(lf::Kind::EXIT, 0xff), 8191u);
  EXPECT_EQ(lf::token_id(lf::Kind::NOP, 0), 7680u);
  EXPECT_EQ(lf::token_id(lf::Kind::TRAP, 3), 8195u);
}

TEST(Tokens, NamesAndValidity) {
  EXPECT_EQ(lf::token_name(0), "START");
  EXPECT_EQ(lf::token_name(511), "W0(0xff)");
  EXPECT_EQ(lf::token_name(256 * 14 + 63), "DQ(63)");
  EXPECT_EQ(lf::token_name(256 * 13 + 1), "BR(1)");
  EXPECT_EQ(lf::token_name(8195), "TRAP(3)");
  EXPECT_TRUE(lf::is_valid_token(7680));
  EXPECT_FALSE(lf::is_valid_token(7681)) << "NOP has payload 0 only";
  EXPECT_FALSE(lf::is_valid_token(256 * 13 + 2)) << "BR is 0 or 1";
  EXPECT_FALSE(lf::is_valid_token(256 * 14 + 64)) << "DQ payload < 64";
  EXPECT_FALSE(lf::is_valid_token(1)) << "CTRL payloads other than 0 are reserved";
  EXPECT_EQ(lf::kind_named("AC11")->kind, 27u);
  EXPECT_EQ(lf::payload_of(1532), 0xfcu);
  EXPECT_EQ(lf::trap_name(7), "STORE_FAULT");
  EXPECT_EQ(lf::trap_name(20), "VEC_OVERLAP");
  EXPECT_EQ(lf::vocab_size(), 15616u) << "trace.md §2, vector.md §5: V = 256 * 61";
  EXPECT_EQ(lf::token_name(256 * 33 + 250), "VMC0(250)");
  EXPECT_EQ(lf::token_name(256 * 38 + 7), "VMC5(7)");
  EXPECT_EQ(lf::token_name(256 * 39 + 1), "VMH(1)");
  EXPECT_EQ(lf::token_name(256 * 56 + 3), "VLG(3)");
  EXPECT_EQ(lf::token_name(256 * 57 + 0x7f), "VLB0(0x7f)");
  EXPECT_EQ(lf::token_name(256 * 60 + 0x80), "VLB3(0x80)");
  EXPECT_FALSE(lf::is_valid_token(256 * 39 + 17)) << "VMH: r >> 8 <= 16";
  EXPECT_FALSE(lf::is_valid_token(256 * 42 + 186)) << "VQE: (k << 5) | e_k, k <= 5, e_k <= 25";
  EXPECT_FALSE(lf::is_valid_token(256 * 43 + 192)) << "VQB: (k << 5) | digest, k <= 5";
  EXPECT_EQ(lf::token_name(11520), "PCH0(0x00)") << "trace.md §5";
  EXPECT_EQ(lf::token_name(11777), "PCH1(0x01)") << "trace.md §5";
  EXPECT_EQ(lf::token_name(11266), "PCL(0x02)") << "trace.md §5";
  EXPECT_EQ(lf::token_name(256 * 50 + 1), "OIH(1)");
  EXPECT_EQ(lf::kind_named("OI")->kind, 49u);
  EXPECT_EQ(lf::kind_named("VEW")->kind, 51u);
  EXPECT_FALSE(lf::is_valid_token(256 * 61)) << "kinds 61..63 reserved";
}

TEST(TraceFile, RoundTrip) {
  const std::vector<std::uint32_t> toks = {511, 767, 1023, 1279, 8191};
  nlohmann::json h = {{"trace_version", "trace-v2"}, {"vocab_size", lf::vocab_size()},
                      {"program", "x.elf"}, {"end", "exit"}, {"exit_status", 255}};
  const auto bytes = lf::encode_trace_file(h, toks);
  ASSERT_EQ(std::memcmp(bytes.data(), "LSTRACE1", 8), 0);
  const auto tf = lf::decode_trace_file(bytes);
  EXPECT_EQ(tf.tokens, toks);
  EXPECT_EQ(tf.header["steps"], 5);
  EXPECT_EQ(tf.header["program"], "x.elf");
  // Length prefix: u32 LE header length right after the magic.
  std::uint32_t hl = bytes[8] | bytes[9] << 8 | bytes[10] << 16 | static_cast<std::uint32_t>(bytes[11]) << 24;
  EXPECT_EQ(bytes.size(), 12u + hl + 4 * toks.size());
}

TEST(TraceFile, StreamingWriterMatchesTheFormat) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "lockstep_stream.trace";
  {
    lf::TraceFileWriter w(path, 256);
    const std::vector<std::uint32_t> a = {511, 767}, b = {1023};
    w.append(a);
    w.append(b);
    w.finish({{"trace_version", "trace-v2"}, {"end", "step_limit"}});
  }
  const auto tf = lf::read_trace_file(path);
  EXPECT_EQ(tf.tokens, (std::vector<std::uint32_t>{511, 767, 1023}));
  EXPECT_EQ(tf.header["steps"], 3);
  EXPECT_EQ(tf.header["end"], "step_limit");
  std::filesystem::remove(path);
}

TEST(TraceFile, Errors) {
  const std::vector<std::uint32_t> toks = {511, 767};
  const auto good = lf::encode_trace_file({{"trace_version", "trace-v2"}}, toks);
  auto expect_error = [](std::vector<std::uint8_t> b, const std::string& needle) {
    try {
      lf::decode_trace_file(b);
      FAIL() << "accepted; expected " << needle;
    } catch (const lf::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto bad_magic = good;
  bad_magic[7] = '2';
  expect_error(bad_magic, "bad magic");
  expect_error({good.begin(), good.begin() + 10}, "truncated header length");
  expect_error({good.begin(), good.begin() + 20}, "truncated header");
  expect_error({good.begin(), good.end() - 1}, "truncated token array");
  auto extra = good;
  extra.push_back(0);
  expect_error(extra, "after the last token");
  auto not_json = good;
  not_json[12] = '[';
  expect_error(not_json, "JSON");
}
