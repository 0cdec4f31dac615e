// Bad input to the host tools lockstep-model and lockstep-image-c (golden/tool_cli.h): a named
// models folder that lacks the model, a directory where a file is expected, an uncreatable or
// unwritable output, a bad flag or number.  Each gives one stderr line naming the flag or path
// and exit status 2; never an abort, and never the synthetic model with exit 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama2c.h"
#include "quality.h"
#include "story.h"

namespace lockstep::host {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int status = -1;     // exit status, or -1 when the process did not exit (a signal: abort, crash)
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs `cmd` through the shell, stdout and stderr captured separately.
Ran run(const std::string& cmd, const fs::path& dir) {
  const fs::path err_file = dir / "stderr.txt";
  FILE* p = ::popen((cmd + " 2>" + err_file.string()).c_str(), "r");
  Ran r;
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err_file);
  std::ostringstream s;
  s << e.rdbuf();
  r.err = s.str();
  return r;
}

// One case: the command, the exit status and a text the one stderr line must hold.
struct Case {
  std::string cmd;
  int status;
  std::string says;
};

class ToolsBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_badinput_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "empty");
    std::ofstream(dir_ / "afile") << "x";
    // A checkpoint folder whose checkpoint is a directory, and one whose tokenizer is.
    fs::create_directories(dir_ / "ck_dir" / "stories260K.bin");
    std::ofstream(dir_ / "ck_dir" / "tok512.bin") << "";
    fs::create_directories(dir_ / "tok_dir" / "tok512.bin");
    write_file_bytes(dir_ / "tok_dir" / "stories260K.bin", serialize_checkpoint(synthetic_checkpoint()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs every case; each must exit with its status and print exactly one stderr line holding
  // its text (after the synthetic model's notice, when --synthetic is given).
  void expect_all(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      const Ran r = run(c.cmd, dir_);
      std::string err = r.err;
      if (err.rfind(kNotice, 0) == 0) err.erase(0, err.find('\n') + 1);
      EXPECT_EQ(r.status, c.status) << c.cmd << "\n" << r.err;
      EXPECT_EQ(err.find('\n'), err.size() - 1) << "not one line: " << c.cmd << "\n" << r.err;
      EXPECT_NE(err.find(c.says), std::string::npos) << c.cmd << "\n" << r.err;
    }
  }
  static constexpr const char* kNotice = "lockstep-model: using the synthetic model";

  std::string p(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

const std::string kModel = LOCKSTEP_MODEL_EXE;

// Issue 1: a named models folder without the model is an error, never the synthetic model.
TEST_F(ToolsBadInput, NamedModelsFolderMustHoldTheModel) {
  std::vector<Case> cases = {
      {kModel + " --models " + p("missing") + " golden --tokens 1", 2,
       "--models " + p("missing") + ": no such folder"},
      {kModel + " --models " + p("empty") + " golden --tokens 1", 2,
       "--models " + p("empty") + ": lacks stories260K.bin and tok512.bin"},
      {kModel + " --models " + p("afile") + " check", 2, "--models " + p("afile") + ": not a folder"},
      {kModel + " --models '' golden", 2, "--models: is empty"},
      {"LOCKSTEP_MODELS=" + p("empty") + " " + kModel + " golden --tokens 1", 2,
       "LOCKSTEP_MODELS " + p("empty") + ": lacks stories260K.bin and tok512.bin"},
  };
#ifdef LOCKSTEP_IMAGE_C_EXE
  const std::string image = LOCKSTEP_IMAGE_C_EXE;
  cases.push_back({image + " --models " + p("empty") + " -o " + p("img.bin"), 2,
                   "--models " + p("empty") + ": lacks stories260K.bin and tok512.bin"});
  cases.push_back({image + " --models " + p("missing") + " -o " + p("img.bin"), 2,
                   "--models " + p("missing") + ": no such folder"});
#endif
  expect_all(cases);
  EXPECT_FALSE(fs::exists(dir_ / "img.bin"));
  // --synthetic does not read the folder (the guest build passes --models DIR --synthetic).
  const Ran r = run(kModel + " --models " + p("missing") + " --synthetic golden --build float --tokens 2", dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("using the synthetic model"), std::string::npos) << r.err;
}

// Issue 2: a directory where a model file is expected, an uncreatable output folder.
TEST_F(ToolsBadInput, DirectoryForAFileAndUncreatableOutput) {
  std::vector<Case> cases = {
      {kModel + " --models " + p("ck_dir") + " golden --tokens 1", 2,
       p("ck_dir") + "/stories260K.bin: is a directory, not a file"},
      {kModel + " --models " + p("tok_dir") + " golden --tokens 1", 2,
       p("tok_dir") + "/tok512.bin: is a directory, not a file"},
      {kModel + " --synthetic convert --out " + p("afile") + "/sub", 2,
       "--out " + p("afile") + "/sub: cannot create folder (Not a directory)"},
      {kModel + " --synthetic convert --out /dev/full", 2, "--out /dev/full: cannot create folder"},
  };
#ifdef LOCKSTEP_IMAGE_C_EXE
  const std::string image = LOCKSTEP_IMAGE_C_EXE;
  cases.push_back({image + " --models " + p("ck_dir") + " -o " + p("img.bin"), 2,
                   p("ck_dir") + "/stories260K.bin: is a directory, not a file"});
  cases.push_back({image + " --synthetic -o " + p("afile") + "/img.bin", 2,
                   p("afile") + "/img.bin: cannot write (Not a directory)"});
  cases.push_back({image + " --synthetic -o " + p("empty"), 2, p("empty") + ": cannot write (is a directory)"});
  cases.push_back({image + " --synthetic -o /dev/full", 2, "/dev/full: cannot write (No space left on device)"});
  cases.push_back({image + " --synthetic -o ''", 2, "--output: is empty"});
#endif
  expect_all(cases);
}

// Issues 2 and 3: every parse error (unknown flag, bad or out-of-range number, missing
// subcommand or option) exits 2 with one line naming the flag, as the `lockstep` CLI does.
TEST_F(ToolsBadInput, UsageErrorsExit2) {
  std::vector<Case> cases = {
      {kModel, 2, "A subcommand is required"},
      {kModel + " golden --bogus", 2, "--bogus"},
      {kModel + " bogus --help", 2, "unexpected argument bogus"},
      {kModel + " --synthetic golden --positions 100000000000", 2, "--positions: Value 100000000000 not in range 1 to 512"},
      {kModel + " --synthetic golden --positions -5", 2, "--positions: Value -5 not in range 1 to 512"},
      {kModel + " --synthetic golden --positions 0", 2, "--positions: Value 0 not in range 1 to 512"},
      {kModel + " --synthetic golden --tokens abc", 2, "--tokens: Value abc not in range 1 to 512"},
      {kModel + " --synthetic golden --tokens 10 --positions 5", 2, "--tokens 10 exceeds --positions 5"},
      {kModel + " --synthetic quality --positions 0", 2, "--positions: Value 0 not in range 1 to 512"},
      {kModel + " --synthetic quality --positions -3", 2, "--positions: Value -3 not in range 1 to 512"},
      {kModel + " --synthetic quality --positions 100000", 2, "--positions: Value 100000 not in range 1 to 512"},
      {kModel + " --synthetic quality --json ''", 2, "--json: is empty"},
      {kModel + " --synthetic convert --out ''", 2, "--out: is empty"},
  };
#ifdef LOCKSTEP_IMAGE_C_EXE
  const std::string image = LOCKSTEP_IMAGE_C_EXE;
  cases.push_back({image, 2, "--output is required"});
  cases.push_back({image + " --steps -1 -o " + p("img.bin"), 2, "--steps: Value -1 not in range 0 to 63"});
  cases.push_back({image + " --steps abc -o " + p("img.bin"), 2, "--steps: Value abc not in range 0 to 63"});
  cases.push_back({image + " --bogus -o " + p("img.bin"), 2, "--bogus"});
#endif
  expect_all(cases);
  EXPECT_EQ(run(kModel + " --help", dir_).status, 0);
}

// Issue 4: quality --json to an unwritable path fails after printing the figures; a full
// standard output is an error too.
TEST_F(ToolsBadInput, UnwritableOutputsFailAfterPrinting) {
  // One quality run (about 1.5 s, 6 s under ASan): a failing write.  A failing open (a missing
  // folder, a directory) is write_file_text's, checked in ModelsFolder below and with
  // lockstep-image-c -o.
  for (const std::string& json : {std::string("/dev/full")}) {
    const Ran r = run(kModel + " --synthetic quality --positions 1 --json " + json, dir_);
    EXPECT_EQ(r.status, 2) << json << "\n" << r.err;
    EXPECT_NE(r.err.find(json + ": cannot write"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("positions 0..0: "), std::string::npos) << r.out;  // the figures came first
  }
  std::vector<Case> cases = {
      {kModel + " --synthetic golden --build float --tokens 1 >/dev/full", 2, "lockstep-model: cannot write standard output"},
  };
#ifdef LOCKSTEP_IMAGE_C_EXE
  cases.push_back({std::string(LOCKSTEP_IMAGE_C_EXE) + " --synthetic -o " + p("img.bin") + " >/dev/full", 2,
                   "lockstep-image-c: cannot write standard output"});
#endif
  expect_all(cases);
}

// The library side of the same rules.
TEST(ModelsFolder, NamedFolderIsCheckedDefaultFallsBack) {
  const fs::path dir = fs::temp_directory_path() / ("lockstep_mf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ostringstream log;
  try {
    load_model(ModelsFolder{dir, "--models"}, false, log);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--models " + dir.string() + ": lacks stories260K.bin and tok512.bin (--synthetic for the synthetic model)");
  }
  EXPECT_FALSE(load_model(ModelsFolder{dir, "--models"}, true, log).real);  // --synthetic
  EXPECT_FALSE(load_model(ModelsFolder{dir, ""}, false, log).real);         // the default folder
  EXPECT_NE(log.str().find("because " + (dir / "stories260K.bin").string() + " is absent"), std::string::npos);
  // The default folder with a tokenizer and no checkpoint is half a model: refused, as `lockstep`
  // refuses it (found by an outside tester: it gave the synthetic model, exit 0).
  {
    const fs::path half = dir / "half";
    fs::create_directories(half);
    write_file_text(half / "tok512.bin", "x");
    try {
      load_model(ModelsFolder{half, ""}, false, log);
      ADD_FAILURE() << "no error";
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()),
                half.string() + " holds tok512.bin but not stories260K.bin: complete it, or pass --synthetic");
    }
    EXPECT_FALSE(load_model(ModelsFolder{half, ""}, true, log).real);  // --synthetic
  }
  EXPECT_EQ(find_models_folder(std::string("x"), "/src").named_by, "--models");
  EXPECT_EQ(find_models_folder(std::string("x"), "/src").dir, fs::path("x"));
  try {
    read_file_bytes(dir);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": is a directory, not a file");
  }
  try {
    write_file_text("/dev/full", "hello");
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: cannot write (No space left on device)");
  }
  for (const auto& [path, why] : {std::pair{dir, "is a directory"}, std::pair{dir / "no" / "q.json", "No such file or directory"}}) {
    try {
      write_file_text(path, "hello");
      ADD_FAILURE() << "no error";
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()), path.string() + ": cannot write (" + why + ")");
    }
  }
  write_file_text(dir / "t.txt", "hello");
  EXPECT_EQ(read_file_bytes(dir / "t.txt").size(), 5u);
  // Larger than the caller's bound, or no regular file behind a link: refused before it is read
  // (found by an outside tester: /dev/zero behind stories260K.bin was read until memory ran out).
  try {
    read_file_bytes(dir / "t.txt", 4);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "t.txt").string() + ": 5 bytes, more than the 4 a model file may have here");
  }
  fs::create_symlink("/dev/zero", dir / "zero.bin");
  try {
    read_file_bytes(dir / "zero.bin");
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "zero.bin").string() + ": is not a regular file (a device, socket or other special file)");
  }
  // A checkpoint's size is checked against its header before its tensors are read: a 6 GB sparse
  // file with stories260K's header is one line, not a 6 GB read.
  {
    const auto header = serialize_checkpoint(synthetic_checkpoint());
    std::ofstream big(dir / "big.bin", std::ios::binary);
    big.write(reinterpret_cast<const char*>(header.data()), 28);
  }
  fs::resize_file(dir / "big.bin", std::uint64_t{6} << 30);
  try {
    (void)read_checkpoint(dir / "big.bin");
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong file size 6442450944 bytes"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A story cut short is said on stderr, never silently: a checkpoint whose seq_len is below
// --tokens ends the float build's greedy story at seq_len (exit 0, the tokens it made).
TEST_F(ToolsBadInput, AGoldenStoryCutShortBySeqLenIsSaid) {
  Checkpoint ck = synthetic_checkpoint();
  ck.config.seq_len = 4;
  const fs::path m = dir_ / "short";
  fs::create_directories(m);
  write_file_bytes(m / "stories260K.bin", serialize_checkpoint(ck));
  // tok512.bin in llama2.c's format: max_token_length, then each piece's score, length, bytes.
  const Tokenizer tok = synthetic_tokenizer();
  std::ofstream t(m / "tok512.bin", std::ios::binary);
  const auto put_i32 = [&t](std::int32_t v) { t.write(reinterpret_cast<const char*>(&v), 4); };
  put_i32(tok.max_token_length);
  for (std::size_t i = 0; i < tok.pieces.size(); ++i) {
    t.write(reinterpret_cast<const char*>(&tok.scores[i]), 4);
    put_i32(static_cast<std::int32_t>(tok.pieces[i].size()));
    t.write(tok.pieces[i].data(), static_cast<std::streamsize>(tok.pieces[i].size()));
  }
  t.close();
  const Ran r = run(kModel + " --models " + m.string() + " golden --build float --tokens 10", dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream first_line(r.out.substr(0, r.out.find('\n')));
  int n = 0;
  for (int id; first_line >> id;) ++n;
  EXPECT_EQ(n, 4) << r.out;
  EXPECT_NE(r.err.find("golden: 4 of the 10 tokens asked for: the checkpoint's seq_len (4) ends it"), std::string::npos)
      << r.err;
}

TEST(MeasureQuality, PositionsOutsideOneToSeqLenAreRefused) {
  const Checkpoint ck = synthetic_checkpoint();
  const Tokenizer tok = synthetic_tokenizer();
  for (int bad : {0, -1, 513}) {
    try {
      measure_quality(ck, tok, bad);
      ADD_FAILURE() << bad;
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()),
                "quality: positions " + std::to_string(bad) + " outside 1..512 (the checkpoint's seq_len)");
    }
  }
}

}  // namespace
}  // namespace lockstep::host
