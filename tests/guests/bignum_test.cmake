# Bignum guests vs GMP (included from tests/guests/CMakeLists.txt).
lockstep_add_gtest(NAME guests_bignum_test
  SOURCES bignum_test.cpp
  LIBS lockstep_guests_test_support PkgConfig::GMP
  LABELS integration)
add_dependencies(guests_bignum_test guests)
