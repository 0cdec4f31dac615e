// ref/ and chip/ share no code (BRIEF.md, principle 1).  The first tests check
// the scanner itself on small synthetic trees; the last ones check this
// repository.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "scanner.h"

namespace fs = std::filesystem;
using namespace lockstep::independence;

namespace {

const Side kRef{"ref", "lockstep_ref"};
const Side kChip{"chip", "lockstep_chip"};

class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            (std::string("lockstep-indep-") + info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    write("ref/include/lockstep/ref/machine.h", "#pragma once\n#include <cstdint>\n");
    write("ref/src/machine.cpp", "#include \"lockstep/ref/machine.h\"\n#include <vector>\n");
    write("chip/include/lockstep/chip/compiler.h", "#pragma once\n");
    write("chip/src/layers.h", "#pragma once\n");
    write("format/include/lockstep/format/trace.h", "#pragma once\n");
    write("ref/CMakeLists.txt",
          "# never link lockstep_chip here\n"
          "add_library(lockstep_ref src/machine.cpp)\n"
          "target_link_libraries(lockstep_ref PUBLIC lockstep_format)\n");
    write("chip/CMakeLists.txt", "add_library(lockstep_chip src/x.cpp)\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }

  fs::path root_;
};

}  // namespace

TEST(Scanner, IncludesOfFindsBothForms) {
  const auto inc = includes_of("#include <vector>\n  #  include \"a/b.h\"\n// #include \"c.h\"\n");
  ASSERT_EQ(inc.size(), 2u);
  EXPECT_EQ(inc[0].line, 1);
  EXPECT_EQ(inc[0].path, "vector");
  EXPECT_FALSE(inc[0].quoted);
  EXPECT_EQ(inc[1].line, 2);
  EXPECT_EQ(inc[1].path, "a/b.h");
  EXPECT_TRUE(inc[1].quoted);
}

TEST(Scanner, StripCmakeComments) {
  EXPECT_EQ(strip_cmake_comments("a # lockstep_chip\nb \"#x\" # y\n"), "a \nb \"#x\" \n");
}

TEST_F(FakeTree, CleanTreeHasNoViolations) {
  EXPECT_EQ(describe(include_violations(root_, kRef, kChip)), "");
  EXPECT_EQ(describe(include_violations(root_, kChip, kRef)), "");
  EXPECT_EQ(describe(cmake_violations(root_, kRef, kChip)), "");
  EXPECT_EQ(describe(cmake_violations(root_, kChip, kRef)), "");
}

TEST_F(FakeTree, IncludeNamingOtherFolder) {
  write("ref/src/bad.cpp", "#include <cstdio>\n#include \"lockstep/chip/compiler.h\"\n");
  const auto v = include_violations(root_, kRef, kChip);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].file, "ref/src/bad.cpp");
  EXPECT_EQ(v[0].line, 2);
  EXPECT_NE(v[0].reason.find("lockstep/chip/compiler.h"), std::string::npos);
}

TEST_F(FakeTree, RelativeIncludeIntoOtherFolder) {
  write("chip/src/bad.cu", "#include \"../../ref/include/lockstep/ref/machine.h\"\n");
  const auto v = include_violations(root_, kChip, kRef);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].file, "chip/src/bad.cu");
  EXPECT_NE(v[0].reason.find("ref/"), std::string::npos);
}

TEST_F(FakeTree, BareIncludeOfFileOnlyTheOtherSideHas) {
  write("ref/src/bad.h", "#include \"layers.h\"\n#include \"lockstep/format/trace.h\"\n");
  const auto v = include_violations(root_, kRef, kChip);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].line, 1);
  EXPECT_NE(v[0].reason.find("only in chip/"), std::string::npos) << v[0].reason;
}

TEST_F(FakeTree, CmakeNamingOtherTargetOrFolder) {
  write("ref/CMakeLists.txt",
        "add_library(lockstep_ref x.cpp)\n"
        "target_link_libraries(lockstep_ref PRIVATE lockstep_chip_cuda)\n"
        "target_include_directories(lockstep_ref PRIVATE ${PROJECT_SOURCE_DIR}/chip/include)\n");
  write("chip/cmake/extra.cmake", "target_link_libraries(lockstep_chip PUBLIC lockstep_ref)\n");
  const auto ref = cmake_violations(root_, kRef, kChip);
  ASSERT_EQ(ref.size(), 2u) << describe(ref);
  EXPECT_EQ(ref[0].line, 2);
  EXPECT_NE(ref[0].reason.find("lockstep_chip_cuda"), std::string::npos);
  EXPECT_EQ(ref[1].line, 3);
  const auto chip = cmake_violations(root_, kChip, kRef);
  ASSERT_EQ(chip.size(), 1u) << describe(chip);
  EXPECT_EQ(chip[0].file, "chip/cmake/extra.cmake");
  // "lockstep_reflect" or "lockstep_reports" are not ref's target.
  write("chip/cmake/extra.cmake", "target_link_libraries(lockstep_chip PUBLIC lockstep_reports)\n");
  EXPECT_TRUE(cmake_violations(root_, kChip, kRef).empty());
}

// ---- the real repository ------------------------------------------------

TEST(Repository, RefDoesNotIncludeChip) {
  const auto v = include_violations(LOCKSTEP_SOURCE_DIR, kRef, kChip);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(Repository, ChipDoesNotIncludeRef) {
  const auto v = include_violations(LOCKSTEP_SOURCE_DIR, kChip, kRef);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(Repository, RefCmakeDoesNotNameChip) {
  const auto v = cmake_violations(LOCKSTEP_SOURCE_DIR, kRef, kChip);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(Repository, ChipCmakeDoesNotNameRef) {
  const auto v = cmake_violations(LOCKSTEP_SOURCE_DIR, kChip, kRef);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(Repository, LinkGraphsAreDisjoint) {
  const std::string ref_closure = "," LOCKSTEP_REF_LINK_CLOSURE ",";
  const std::string chip_closure = "," LOCKSTEP_CHIP_LINK_CLOSURE ",";
  EXPECT_EQ(ref_closure.find(",lockstep_chip"), std::string::npos)
      << "lockstep_ref links (transitively): " << LOCKSTEP_REF_LINK_CLOSURE;
  EXPECT_EQ(chip_closure.find(",lockstep_ref,"), std::string::npos)
      << "lockstep_chip links (transitively): " << LOCKSTEP_CHIP_LINK_CLOSURE;
  EXPECT_EQ(chip_closure.find(",lockstep_ref_"), std::string::npos)
      << "lockstep_chip links (transitively): " << LOCKSTEP_CHIP_LINK_CLOSURE;
  if (!LOCKSTEP_HAVE_REF_TARGET || !LOCKSTEP_HAVE_CHIP_TARGET) {
    std::cout << "note: lockstep_ref target " << (LOCKSTEP_HAVE_REF_TARGET ? "present" : "absent")
              << ", lockstep_chip target " << (LOCKSTEP_HAVE_CHIP_TARGET ? "present" : "absent")
              << "\n";
  }
}
