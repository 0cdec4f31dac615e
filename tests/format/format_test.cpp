// format/: ELF32 reading/writing with the file-level rejections of isa.md §3,
// trace files (trace.md §6) and the token-id layout (trace.md §2).
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lockstep/format/elf.h"
#include "lockstep/format/file.h"
#include "lockstep/format/shell.h"
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

// Printed commands are pasted into a shell: each word must come back as it was.
TEST(Shell, WordsComeBackFromTheShellAsTheyWere) {
  EXPECT_EQ(lf::shell_word("build/r-1/case.json"), "build/r-1/case.json");
  EXPECT_EQ(lf::shell_word("a b"), "'a b'");
  EXPECT_EQ(lf::shell_word(""), "''");
  // a path that starts with '-' would read as an option: ./ in front
  EXPECT_EQ(lf::shell_path("-dash"), "./-dash");
  EXPECT_EQ(lf::shell_path("-a b"), "'./-a b'");
  EXPECT_EQ(lf::shell_path("/abs/-x"), "/abs/-x");
  EXPECT_EQ(lf::shell_path("rel/dir"), "rel/dir");
  EXPECT_EQ(lf::shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(lf::shell_quoted("python3 chip.py"), "'python3 chip.py'");
  const std::vector<std::string> words = {"plain", "two words", "it's", "$HOME", "a\\b", "`id`", "*", "", "x\ny",
                                          "\"q\"", "--dut=python3 -c 'print(1)'"};
  for (const std::string& w : words) {
    const std::string cmd = "printf '%s|' " + lf::shell_word(w);
    FILE* f = popen(("/bin/sh -c " + lf::shell_quoted(cmd)).c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string got;
    char buf[256];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) got.append(buf, n);
    EXPECT_EQ(pclose(f), 0) << w;
    EXPECT_EQ(got, w + "|") << "word " << w << " written " << lf::shell_word(w);
  }
}

// Text from a chip printed in a line: controls escaped, C0, C1 and bidirectional alike, and bytes
// that are not UTF-8; other text, any script, kept (found by outside testers: a newline or ESC in a
// chip's name broke the line; a C1 CSI, U+202E and invalid bytes went through raw).
TEST(Shell, EscapeControlsKeepsTextAndEscapesControls) {
  EXPECT_EQ(lf::escape_controls("chip\nname\x1b[31m\tx\x7f"), "chip\\nname\\x1b[31m\\tx\\x7f");
  EXPECT_EQ(lf::escape_controls("\xd0\xa7\xd0\xb8\xd0\xbf \xe2\x9c\x93 \xe8\x8a\xaf \xc3\xa9 \xf0\x9f\x98\x80"),
            "\xd0\xa7\xd0\xb8\xd0\xbf \xe2\x9c\x93 \xe8\x8a\xaf \xc3\xa9 \xf0\x9f\x98\x80");  // Чип ✓ 芯 é 😀
  EXPECT_EQ(lf::escape_controls("a\xc2\x9b[31m"), "a\\u009b[31m");      // U+009B, CSI
  EXPECT_EQ(lf::escape_controls("id\xe2\x80\xae" "evil"), "id\\u202eevil");  // U+202E, right-to-left override
  EXPECT_EQ(lf::escape_controls("\x9b" "31mX\xff"), "\\x9b" "31mX\\xff");  // not UTF-8
  EXPECT_EQ(lf::escape_controls("\xc0\xaf \xed\xa0\x80 \xe2\x82"), "\\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82");  // overlong, surrogate, cut
}

// read_input_file says why it refused a file twice over: the whole line, and the bare reason with
// its kind, which the readers that word their own line (a vocabulary map, a token file) use
// instead of matching the text.
TEST(InputFile, EachRefusalHasItsReasonAndFault) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lockstep-input-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "ten") << "0123456789";
  auto refusal = [](const fs::path& p, std::uint64_t max, lf::Readable r) -> std::pair<lf::InputFileFault, std::string> {
    try {
      lf::read_input_file(p, "map", max, r);
    } catch (const lf::InputFileError& e) {
      EXPECT_EQ(std::string(e.what()), "map: cannot read " + p.string() + ": " + e.reason());
      return {e.fault(), e.reason()};
    }
    ADD_FAILURE() << p << " was read";
    return {lf::InputFileFault::kSystem, ""};
  };
  using F = lf::InputFileFault;
  using P = std::pair<F, std::string>;
  EXPECT_EQ(lf::read_input_file(dir / "ten", "map", 10).size(), 10u);
  EXPECT_EQ(refusal(dir / "ten", 9, lf::Readable::kAnything), (P{F::kTooLarge, "larger than 9 bytes"}));
  EXPECT_EQ(refusal(dir / "none", 9, lf::Readable::kAnything), (P{F::kMissing, "no such file"}));
  EXPECT_EQ(refusal(dir / "sub", 9, lf::Readable::kAnything), (P{F::kDirectory, "it is a directory, not a file"}));
  EXPECT_EQ(refusal("/dev/zero", 9, lf::Readable::kAnything), (P{F::kNotRegular, "it is a device, not a regular file"}));
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(refusal(dir / "fifo", 9, lf::Readable::kRegularOnly),
            (P{F::kNotRegular, "it is a named pipe (FIFO), not a regular file"}));
  EXPECT_EQ(refusal(dir / "fifo", 9, lf::Readable::kAnything),
            (P{F::kEmptyFifo, "it is a named pipe (FIFO) and nothing wrote to it"}));
  fs::remove_all(dir);
}

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
  expect_rejected([](auto& b) { phdr(b, 1)->p_offset = 0x40000000; }, "program header 1 (PT_LOAD) data outside the file");
}
TEST(Elf, RejectsFileszGreaterThanMemsz) {
  expect_rejected([](auto& b) { phdr(b, 0)->p_memsz = 4; }, "program header 0 (PT_LOAD): p_filesz 0x8 > p_memsz 0x4");
}
TEST(Elf, RejectsOverlappingSegments) {
  expect_rejected([](auto& b) { phdr(b, 1)->p_vaddr = 0x10004; }, "program header 1 (PT_LOAD) [0x10004, 0x10104) overlaps program header 0 (PT_LOAD) [0x10000, 0x10008)");
}
// Messages number program headers as `readelf -l` does, PT_LOAD or not, and each segment keeps its
// header's index (a PT_NOTE first makes the data segment program header 1, segment 0).
TEST(Elf, ProgramHeadersAreNumberedAsInTheFile) {
  expect_rejected(
      [](auto& b) {
        phdr(b, 0)->p_type = PT_NOTE;
        phdr(b, 0)->p_offset = 0x40000000;
      },
      "program header 0 (PT_NOTE) data outside the file");
  expect_rejected(
      [](auto& b) {
        phdr(b, 0)->p_type = 0x70000003;
        phdr(b, 1)->p_memsz = 0x2;
      },
      "program header 1 (PT_LOAD): p_filesz 0x4 > p_memsz 0x2");
  expect_rejected([](auto& b) { phdr(b, 1)->p_type = 0x12345; phdr(b, 1)->p_offset = 0x40000000; },
                  "program header 1 (type 0x12345) data outside the file");
  auto bytes = lf::write_elf(sample_image());
  phdr(bytes, 0)->p_type = PT_NOTE;
  ehdr(bytes)->e_entry = 0x11000;
  phdr(bytes, 1)->p_flags |= PF_X;
  const lf::GuestImage img = lf::parse_elf(bytes);
  ASSERT_EQ(img.segments.size(), 1u);
  EXPECT_EQ(img.segments[0].vaddr, 0x11000u);
  EXPECT_EQ(img.segments[0].phdr_index, 1u);
  EXPECT_EQ(lf::segment_label(img, 0), "program header 1 (PT_LOAD)");
  EXPECT_EQ(lf::segment_label(sample_image(), 1), "program header 1 (PT_LOAD)") << "built in memory: its index";
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
  // An id past its kind's payloads is named by the kind; one of no kind is a number.
  EXPECT_EQ(lf::token_name(256 * 14 + 64), "?(3648: DQ payload 64, outside DQ's 0..63)");
  EXPECT_EQ(lf::token_name(256 * 13 + 2), "?(3330: BR payload 2, outside BR's 0..1)");
  EXPECT_EQ(lf::kind_named("AC11")->kind, 27u);
  EXPECT_EQ(lf::payload_of(1532), 0xfcu);
  EXPECT_EQ(lf::trap_name(7), "STORE_FAULT");
  EXPECT_EQ(lf::trap_name(20), "VEC_OVERLAP");
  EXPECT_EQ(lf::token_name(11520), "PCH0(0x00)") << "trace.md §2: kind 45";
  EXPECT_EQ(lf::token_name(11777), "PCH1(0x01)") << "trace.md §2: kind 46";
  EXPECT_EQ(lf::token_name(11266), "PCL(0x02)") << "trace.md §2: kind 44";
  EXPECT_EQ(lf::token_name(256 * 50 + 1), "OIH(1)");
  EXPECT_EQ(lf::kind_named("OI")->kind, 49u);
}

// trace-v3's vector kinds (trace.md §2, vector.md §5): 33..43 and 51..80, all 8-bit payloads.
TEST(Tokens, TraceV3VectorKinds) {
  EXPECT_EQ(lf::vocab_size(), 20736u) << "trace.md §2: the highest kind is 80 (VXM3), V = 256 * 81";
  // Ids by hand, 256*kind + payload.
  EXPECT_EQ(lf::token_id(lf::Kind::VMC0, 0), 8448u);
  EXPECT_EQ(lf::token_id(lf::Kind::VMV, 63), 256u * 40 + 63);
  EXPECT_EQ(lf::token_id(lf::Kind::VRD, 15), 10511u);
  EXPECT_EQ(lf::token_id(lf::Kind::VWG, 0), 11008u);
  EXPECT_EQ(lf::token_id(lf::Kind::VY0, 0), 13056u);
  EXPECT_EQ(lf::token_id(lf::Kind::VYN3, 0xff), 14335u);
  EXPECT_EQ(lf::token_id(lf::Kind::VLG, 0), 14336u);
  EXPECT_EQ(lf::token_id(lf::Kind::VW00, 0), 15616u);
  EXPECT_EQ(lf::token_id(lf::Kind::VW33, 0xff), 19711u) << "VW33 = 61 + 4*3 + 3 = 76";
  EXPECT_EQ(lf::token_id(lf::Kind::VXM0, 0), 19712u);
  EXPECT_EQ(lf::token_id(lf::Kind::VXM3, 0xff), 20735u) << "the last id, V - 1";
  // Kind numbers by name.
  const std::pair<const char*, std::uint32_t> named[] = {
      {"VMC0", 33}, {"VMC5", 38}, {"VMH", 39}, {"VMV", 40}, {"VRD", 41}, {"VQE", 42}, {"VWG", 43},
      {"VY0", 51}, {"VY3", 54}, {"VYN3", 55}, {"VLG", 56}, {"VLB0", 57}, {"VLB3", 60},
      {"VW00", 61}, {"VW01", 62}, {"VW03", 64}, {"VW10", 65}, {"VW21", 70}, {"VW32", 75}, {"VW33", 76},
      {"VXM0", 77}, {"VXM1", 78}, {"VXM3", 80}};
  for (const auto& [name, kind] : named) {
    ASSERT_TRUE(lf::kind_named(name).has_value()) << name;
    EXPECT_EQ(lf::kind_named(name)->kind, kind) << name;
    EXPECT_FALSE(lf::kind_named(name)->wide) << name << ": vector kinds have 8-bit payloads";
  }
  for (const char* gone : {"VMK", "VQB", "VEW", "VFN", "VXS", "VXM"}) {
    EXPECT_FALSE(lf::kind_named(gone).has_value()) << gone << ": a trace-v2 digest kind, gone in trace-v3";
  }
  // Names: position payloads in decimal, data bytes in hex.
  EXPECT_EQ(lf::token_name(256 * 33 + 250), "VMC0(250)");
  EXPECT_EQ(lf::token_name(256 * 38 + 7), "VMC5(7)");
  EXPECT_EQ(lf::token_name(256 * 39 + 1), "VMH(1)");
  EXPECT_EQ(lf::token_name(256 * 40 + 63), "VMV(63)");
  EXPECT_EQ(lf::token_name(256 * 41 + 15), "VRD(15)");
  EXPECT_EQ(lf::token_name(256 * 42 + 35), "VQE(35)");
  EXPECT_EQ(lf::token_name(256 * 43 + 255), "VWG(255)");
  EXPECT_EQ(lf::token_name(256 * 56 + 3), "VLG(3)");
  EXPECT_EQ(lf::token_name(256 * 51 + 0x7f), "VY0(0x7f)");
  EXPECT_EQ(lf::token_name(256 * 54 + 0x80), "VY3(0x80)");
  EXPECT_EQ(lf::token_name(256 * 55 + 0xff), "VYN3(0xff)");
  EXPECT_EQ(lf::token_name(256 * 57 + 0x7f), "VLB0(0x7f)");
  EXPECT_EQ(lf::token_name(256 * 60 + 0x80), "VLB3(0x80)");
  EXPECT_EQ(lf::token_name(256 * 61 + 0x01), "VW00(0x01)");
  EXPECT_EQ(lf::token_name(256 * 70 + 0xab), "VW21(0xab)");
  EXPECT_EQ(lf::token_name(256 * 76 + 0x00), "VW33(0x00)");
  EXPECT_EQ(lf::token_name(256 * 77 + 0xfe), "VXM0(0xfe)");
  EXPECT_EQ(lf::token_name(256 * 80 + 0x12), "VXM3(0x12)");
  // Payloads the meanings exclude, reserved kinds and the (empty) wide range.
  EXPECT_TRUE(lf::is_valid_token(256 * 39 + 16));
  EXPECT_FALSE(lf::is_valid_token(256 * 39 + 17)) << "VMH: r >> 8 <= 16";
  EXPECT_FALSE(lf::is_valid_token(256 * 40 + 64)) << "VMV: t <= 63";
  EXPECT_FALSE(lf::is_valid_token(256 * 41 + 16)) << "VRD: k <= 15";
  EXPECT_TRUE(lf::is_valid_token(256 * 42 + 185)) << "VQE (5 << 5) | 25";
  EXPECT_FALSE(lf::is_valid_token(256 * 42 + 186)) << "VQE: (k << 5) | e_k, k <= 5, e_k <= 25";
  EXPECT_TRUE(lf::is_valid_token(256 * 43 + 255)) << "VWG: e >> 2 <= 255";
  for (std::uint32_t k : {51u, 55u, 56u, 60u, 61u, 76u, 77u, 80u}) {
    EXPECT_TRUE(lf::is_valid_token(256 * k + 255)) << "kind " << k << ": every byte";
  }
  EXPECT_TRUE(lf::is_valid_token(20735));
  EXPECT_FALSE(lf::is_valid_token(20736)) << "kind 81 reserved";
  EXPECT_FALSE(lf::is_valid_token(256 * 127 + 5)) << "kinds 81..127 reserved";
  EXPECT_FALSE(lf::is_valid_token(256 * 128)) << "no wide kind in trace-v3 (wide kinds would start at 128)";
  EXPECT_FALSE(lf::kind_of(256 * 128 + 1000).has_value());
  EXPECT_EQ(lf::kinds().back().kind, 80u);
  EXPECT_EQ(lf::kinds().size(), 81u) << "kinds 0..80 are all listed (44..50 scalar; none reserved below 81)";
}

// A failure line names the element of a vector stream a token belongs to, read from the position
// tokens before it (vector.md section 5).
TEST(Tokens, StreamPositionReadsThePositionTokensBeforeIt) {
  using lf::Kind;
  auto t = [](Kind k, std::uint32_t p) { return lf::token_id(k, p); };
  auto vw = [](std::uint32_t q, std::uint32_t m, std::uint32_t p) { return 256 * (61 + 4 * q + m) + p; };
  // a word stream from element 213 (quad 53, q = 1): VWG(53), then words 213..215, VWG(54), word 216
  std::vector<std::uint32_t> words = {t(Kind::PCL, 4), t(Kind::VWG, 53)};
  for (std::uint32_t q = 1; q < 4; ++q)
    for (std::uint32_t m = 0; m < 4; ++m) words.push_back(vw(q, m, 7));
  words.push_back(t(Kind::VWG, 54));
  for (std::uint32_t m = 0; m < 4; ++m) words.push_back(vw(0, m, 9));
  EXPECT_EQ(lf::stream_position(words, 0), "");  // PCL: no vector stream
  EXPECT_EQ(lf::stream_position(words, 1), "word quad 53");
  EXPECT_EQ(lf::stream_position(words, 2), "word element 213, byte 0");
  EXPECT_EQ(lf::stream_position(words, 9), "word element 214, byte 3");
  EXPECT_EQ(lf::stream_position(words, 13), "word element 215, byte 3");
  EXPECT_EQ(lf::stream_position(words, 16), "word element 216, byte 1");
  EXPECT_EQ(lf::stream_position(words, words.size()), "");  // past the tokens
  EXPECT_EQ(lf::stream_position(std::vector<std::uint32_t>{vw(2, 0, 1)}, 0), "");  // no VWG before it
  // int8 stream: VLG(0) VLB0..3 VLG(1) VLB0
  const std::vector<std::uint32_t> int8 = {t(Kind::VLG, 0), t(Kind::VLB0, 1), t(Kind::VLB1, 1), t(Kind::VLB2, 1),
                                           t(Kind::VLB3, 1), t(Kind::VLG, 1), t(Kind::VLB0, 5)};
  EXPECT_EQ(lf::stream_position(int8, 3), "int8 element 2");
  EXPECT_EQ(lf::stream_position(int8, 5), "int8 group 1");
  EXPECT_EQ(lf::stream_position(int8, 6), "int8 element 4");
  // VMAT: row 255's chunks and result, then VMH(1) and row 256's
  const std::vector<std::uint32_t> vmat = {t(Kind::VMC0, 255), t(Kind::VMC1, 255), t(Kind::VY0, 1), t(Kind::VY1, 2),
                                           t(Kind::VY2, 3), t(Kind::VYN3, 4), t(Kind::VMH, 1), t(Kind::VMC0, 0),
                                           t(Kind::VY2, 0)};
  EXPECT_EQ(lf::stream_position(vmat, 1), "row 255, chunk 1");
  EXPECT_EQ(lf::stream_position(vmat, 5), "row 255's result, byte 3");
  EXPECT_EQ(lf::stream_position(vmat, 6), "rows from 256");
  EXPECT_EQ(lf::stream_position(vmat, 7), "row 256, chunk 0");
  EXPECT_EQ(lf::stream_position(vmat, 8), "row 256's result, byte 2");
  // VMATR V, VRED, VQ, VEXP
  EXPECT_EQ(lf::stream_position(std::vector<std::uint32_t>{t(Kind::VMV, 12)}, 0), "position 12");
  EXPECT_EQ(lf::stream_position(std::vector<std::uint32_t>{t(Kind::VRD, 3)}, 0), "source group 3");
  EXPECT_EQ(lf::stream_position(std::vector<std::uint32_t>{t(Kind::VQE, 2 << 5 | 25)}, 0), "group 2");
  const std::vector<std::uint32_t> vexp = {t(Kind::VXM0, 1), t(Kind::VXM1, 1), t(Kind::VXM2, 1), t(Kind::VXM3, 1),
                                           vw(0, 0, 0),      t(Kind::VXM0, 2), t(Kind::VXM1, 2)};
  EXPECT_EQ(lf::stream_position(vexp, 3), "group 0's maximum, byte 3");
  EXPECT_EQ(lf::stream_position(vexp, 6), "group 1's maximum, byte 1");
}

TEST(TraceFile, RoundTrip) {
  const std::vector<std::uint32_t> toks = {511, 767, 1023, 1279, 8191};
  nlohmann::json h = {{"trace_version", "trace-v3"}, {"vocab_size", lf::vocab_size()},
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
    w.finish({{"trace_version", "trace-v3"}, {"end", "step_limit"}});
  }
  const auto tf = lf::read_trace_file(path);
  EXPECT_EQ(tf.tokens, (std::vector<std::uint32_t>{511, 767, 1023}));
  EXPECT_EQ(tf.header["steps"], 3);
  EXPECT_EQ(tf.header["end"], "step_limit");
  std::filesystem::remove(path);
}

TEST(TraceFile, Errors) {
  const std::vector<std::uint32_t> toks = {511, 767};
  const auto good = lf::encode_trace_file({{"trace_version", "trace-v3"}}, toks);
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
