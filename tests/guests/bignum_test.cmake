# Bignum guests vs GMP (included from tests/guests/CMakeLists.txt).
lockstep_add_gtest(NAME guests_bignum_test
  SOURCES bignum_test.cpp bignum_expected.cpp
  LIBS lockstep_guests_test_support PkgConfig::GMP
  LABELS integration)
add_dependencies(guests_bignum_test guests)

# Every guest on the reference model library (lockstep_ref) directly, until and
# beside the `lockstep ref` command: directed guests against qemu, bignum
# guests (real custom-0 instructions) against GMP, stories_c against its host
# golden model, with instruction and trace-step counts.
if(TARGET lockstep_ref)
  set(ref_defs)
  set(ref_libs lockstep_guests_test_support lockstep_ref PkgConfig::GMP)
  if(TARGET stories_c_host AND TARGET guest_stories_c_synthetic)
    list(APPEND ref_defs LOCKSTEP_STORIES_HOST="$<TARGET_FILE:stories_c_host>")
    if(LOCKSTEP_STORIES_REAL)
      list(APPEND ref_defs LOCKSTEP_STORIES_REAL=1)
    else()
      list(APPEND ref_defs LOCKSTEP_STORIES_REAL=0)
    endif()
  endif()
  lockstep_add_gtest(NAME guests_ref_test
    SOURCES ref_guests_test.cpp bignum_expected.cpp
    LIBS ${ref_libs}
    LABELS integration
    DEFINITIONS ${ref_defs})
  add_dependencies(guests_ref_test guests)
  if(TARGET stories_c_host)
    add_dependencies(guests_ref_test stories_c_host)
  endif()
endif()
