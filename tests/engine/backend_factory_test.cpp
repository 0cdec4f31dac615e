// The backend factory (engine/include/lockstep/engine/backend_factory.h): registration, lookup,
// the one-line errors for unknown names, the process factory's built-in executors, and the CLI's
// registration of the built chip (cli/builtin_chip.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/builtin_chip.h"
#include "lockstep/engine/backend_factory.h"
#include "lockstep/engine/check.h"

namespace lockstep::engine {
namespace {

using Names = std::vector<std::string>;

// A maker that records what it was called with and makes nothing.
struct Recorder {
  std::shared_ptr<const chip::Chip> got;
  std::size_t streams = 0;
  int calls = 0;
  BackendFactory::MakeBackend maker() {
    return [this](std::shared_ptr<const chip::Chip> c, const BackendOptions& o) {
      got = std::move(c);
      streams = o.streams;
      ++calls;
      return std::unique_ptr<chip::ChipBackend>();
    };
  }
};

TEST(BackendFactory, UnknownBackendNamesEveryKnownOne) {
  BackendFactory f;
  Recorder r;
  f.add_backend("alpha", r.maker());
  f.add_backend("beta", r.maker());
  try {
    f.make_backend("gamma", nullptr);
    FAIL() << "no error for an unknown backend";
  } catch (const UnknownNameError& e) {
    EXPECT_STREQ(e.what(), "unknown backend 'gamma' (known: alpha, beta)");
    EXPECT_EQ(e.kind(), "backend");
    EXPECT_EQ(e.name(), "gamma");
    EXPECT_EQ(e.known(), (Names{"alpha", "beta"}));
  }
  EXPECT_EQ(r.calls, 0);
}

TEST(BackendFactory, UnknownChipInAnEmptyFactorySaysNoneIsRegistered) {
  BackendFactory f;
  try {
    f.compile_chip("rv32");
    FAIL() << "no error for an unknown chip";
  } catch (const UnknownNameError& e) {
    EXPECT_STREQ(e.what(), "unknown chip 'rv32' (known: none registered)");
    EXPECT_EQ(e.kind(), "chip");
    EXPECT_TRUE(e.known().empty());
  }
  // The error is an std::invalid_argument, one line.
  EXPECT_THROW(f.make_backend("cpu", nullptr), std::invalid_argument);
}

TEST(BackendFactory, BackendsAndChipsAreSeparateNameSpaces) {
  BackendFactory f;
  Recorder r;
  f.add_backend("x", r.maker());
  f.add_chip("y", [] { return chip::Chip{}; });
  EXPECT_TRUE(f.has_backend("x"));
  EXPECT_FALSE(f.has_chip("x"));
  EXPECT_TRUE(f.has_chip("y"));
  EXPECT_FALSE(f.has_backend("y"));
  EXPECT_EQ(f.backend_names(), Names{"x"});
  EXPECT_EQ(f.chip_names(), Names{"y"});
  try {
    f.compile_chip("x");
    FAIL() << "a backend name found as a chip";
  } catch (const UnknownNameError& e) {
    EXPECT_STREQ(e.what(), "unknown chip 'x' (known: y)");
  }
  // The same name may be a backend and a chip.
  EXPECT_NO_THROW(f.add_chip("x", [] { return chip::Chip{}; }));
}

TEST(BackendFactory, MakerGetsTheChipAndOptions) {
  BackendFactory f;
  Recorder r;
  f.add_backend("rec", r.maker());
  auto c = std::make_shared<const chip::Chip>();
  BackendOptions o;
  o.streams = 7;
  EXPECT_FALSE(f.make_backend("rec", c, o));
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(r.got, c);
  EXPECT_EQ(r.streams, 7u);
  f.make_backend("rec", c);  // default options: one stream
  EXPECT_EQ(r.streams, 1u);
}

TEST(BackendFactory, CompileChipCallsTheCompiler) {
  BackendFactory f;
  int calls = 0;
  f.add_chip("tiny", [&calls] {
    ++calls;
    chip::Chip c;
    c.config.d_model = 3;
    return c;
  });
  EXPECT_EQ(f.compile_chip("tiny").config.d_model, 3u);
  EXPECT_EQ(calls, 1);
}

TEST(BackendFactory, RegistrationRefusesEmptyAndDuplicateNames) {
  BackendFactory f;
  Recorder r;
  f.add_backend("a", r.maker());
  try {
    f.add_backend("a", r.maker());
    FAIL() << "a duplicate backend was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "backend factory: backend 'a' is already registered");
  }
  EXPECT_THROW(f.add_backend("", r.maker()), std::invalid_argument);
  EXPECT_THROW(f.add_backend("b", BackendFactory::MakeBackend()), std::invalid_argument);
  f.add_chip("c", [] { return chip::Chip{}; });
  EXPECT_THROW(f.add_chip("c", [] { return chip::Chip{}; }), std::invalid_argument);
  EXPECT_THROW(f.add_chip("", [] { return chip::Chip{}; }), std::invalid_argument);
  EXPECT_THROW(f.add_chip("d", BackendFactory::CompileChip()), std::invalid_argument);
  EXPECT_EQ(f.backend_names(), Names{"a"});
  EXPECT_EQ(f.chip_names(), Names{"c"});
}

// The process factory has the executors of every build, and no chip until one is registered.
TEST(BackendFactory, ProcessFactoryHasCpuAndCuda) {
  const BackendFactory& f = backend_factory();
  EXPECT_EQ(&f, &backend_factory());
  EXPECT_EQ(f.backend_names(), (Names{"cpu", "cuda"}));
  EXPECT_FALSE(f.has_chip(kBuiltChipName));
}

// engine::make_backend keeps the CLI's one line for an unknown --backend, listing the known ones.
TEST(BackendFactory, MakeBackendRefusesAnUnknownNameWithOneLine) {
  try {
    make_backend("tpu", nullptr);
    FAIL() << "no error for --backend tpu";
  } catch (const CheckError& e) {
    EXPECT_STREQ(e.what(), "--backend must be cpu or cuda (got 'tpu')");
  }
}

// register_rv32_backend() registers the built chip's compiler once, in a build that has it.
TEST(BackendFactory, Rv32RegistrationIsExplicitAndIdempotent) {
  BackendFactory f;
  EXPECT_EQ(cli::register_rv32_backend(f), LOCKSTEP_TEST_HAVE_CHIP_COMPILER != 0);
  EXPECT_EQ(f.has_chip(kBuiltChipName), LOCKSTEP_TEST_HAVE_CHIP_COMPILER != 0);
  EXPECT_FALSE(cli::register_rv32_backend(f));  // a second call registers nothing
  EXPECT_EQ(f.chip_names().size(), LOCKSTEP_TEST_HAVE_CHIP_COMPILER ? 1u : 0u);
  EXPECT_TRUE(f.backend_names().empty());  // a chip, not an executor
}

// The engine finds the built chip only through the factory: no file under engine/ includes a
// chip/rv32 header (issue 29).
TEST(BackendFactory, EngineIncludesNoConcreteChip) {
  namespace fs = std::filesystem;
  const fs::path engine_dir = fs::path(LOCKSTEP_SOURCE_DIR) / "engine";
  ASSERT_TRUE(fs::is_directory(engine_dir)) << engine_dir;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(engine_dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".hpp" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find("lockstep/chip/rv32/"), std::string::npos) << entry.path();
  }
  EXPECT_GT(files, 5);
}

}  // namespace
}  // namespace lockstep::engine
