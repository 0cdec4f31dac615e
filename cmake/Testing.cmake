include_guard(GLOBAL)
# Test helpers.  Every ctest test carries exactly the labels below; ci/test runs
#   ctest -LE long                      (release build, everything but long checks)
#   ctest -L 'unit|fuzz-smoke'          (ASan+UBSan build)
#
#   unit        fast, deterministic, no files outside the build/source tree
#   property    RapidCheck properties (bounded number of cases)
#   fuzz-smoke  fuzz targets over their seed corpus / a few seconds of input
#   integration runs built executables (lockstep, guests) end to end
#   long        minutes to hours; run explicitly: ctest --test-dir build -L long
set(LOCKSTEP_TEST_LABELS unit property fuzz-smoke integration long)

# Default per-test timeout in seconds, by label (first label wins).
set(LOCKSTEP_TEST_TIMEOUT_unit 60)
set(LOCKSTEP_TEST_TIMEOUT_property 300)
set(LOCKSTEP_TEST_TIMEOUT_fuzz-smoke 300)
set(LOCKSTEP_TEST_TIMEOUT_integration 600)
set(LOCKSTEP_TEST_TIMEOUT_long 86400)

# Test executables go beside each other, away from the user-facing build/bin.
set(LOCKSTEP_TEST_BIN_DIR ${CMAKE_BINARY_DIR}/test-bin)

# lockstep_label_targets(<target> LABELS <label>...): <target> is what the tests of those labels
# run; the custom target tests-<label> (made by lockstep_add_label_targets() at the end of the
# top-level CMakeLists) builds every such target and nothing else, so that ci/test's sanitizer
# stage builds only what `ctest -L 'unit|fuzz-smoke'` runs.
function(lockstep_label_targets target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "LABELS")
  foreach(label IN LISTS ARG_LABELS)
    set_property(GLOBAL APPEND PROPERTY LOCKSTEP_LABEL_TARGETS_${label} ${target})
  endforeach()
endfunction()

# lockstep_add_label_targets(): the tests-<label> targets (call once, after every add_subdirectory).
function(lockstep_add_label_targets)
  foreach(label IN LISTS LOCKSTEP_TEST_LABELS)
    get_property(targets GLOBAL PROPERTY LOCKSTEP_LABEL_TARGETS_${label})
    add_custom_target(tests-${label})
    if(targets)
      list(REMOVE_DUPLICATES targets)
      add_dependencies(tests-${label} ${targets})
    endif()
  endforeach()
endfunction()

# lockstep_check_labels(<label>...): fails the configure on an unknown label.
function(lockstep_check_labels)
  if(NOT ARGN)
    message(FATAL_ERROR "lockstep: a test needs at least one of: ${LOCKSTEP_TEST_LABELS}")
  endif()
  foreach(label IN LISTS ARGN)
    if(NOT label IN_LIST LOCKSTEP_TEST_LABELS)
      message(FATAL_ERROR "lockstep: unknown test label '${label}' (known: ${LOCKSTEP_TEST_LABELS})")
    endif()
  endforeach()
endfunction()

# lockstep_add_gtest(NAME <name>
#                    SOURCES <file>...
#                    [LIBS <target>...]          linked PRIVATE, plus GTest::gtest_main
#                    [LABELS <label>...]         default: unit
#                    [TIMEOUT <seconds>]         default: by first label (see above)
#                    [DEFINITIONS <def>...]      compile definitions (NAME=value)
#                    [WORKING_DIRECTORY <dir>]   default: the build directory
#                    [WHOLE])                    one ctest test for the whole binary
#
# Builds executable <name> with the project warnings/sanitizers and registers
# every TEST/TEST_P in it with ctest through gtest_discover_tests(DISCOVERY_MODE
# PRE_TEST), as "<name>.<Suite>.<Test>", carrying LABELS and TIMEOUT. With
# WHOLE, the binary is one ctest test named <name> instead: for suites whose
# tests share an expensive per-process fixture (e.g. compiling a chip).
# Also defines LOCKSTEP_SOURCE_DIR and LOCKSTEP_BINARY_DIR (quoted strings) for
# tests that need data from the tree.
function(lockstep_add_gtest)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "WHOLE" "NAME;TIMEOUT;WORKING_DIRECTORY"
                        "SOURCES;LIBS;LABELS;DEFINITIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lockstep_add_gtest: unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_NAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "lockstep_add_gtest: NAME and SOURCES are required")
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  lockstep_check_labels(${ARG_LABELS})
  list(GET ARG_LABELS 0 first_label)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT ${LOCKSTEP_TEST_TIMEOUT_${first_label}})
  endif()
  if(NOT ARG_WORKING_DIRECTORY)
    set(ARG_WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()

  add_executable(${ARG_NAME} ${ARG_SOURCES})
  lockstep_target_defaults(${ARG_NAME})
  lockstep_label_targets(${ARG_NAME} LABELS ${ARG_LABELS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} GTest::gtest_main)
  target_compile_definitions(${ARG_NAME} PRIVATE
    LOCKSTEP_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    LOCKSTEP_BINARY_DIR="${CMAKE_BINARY_DIR}"
    ${ARG_DEFINITIONS})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${LOCKSTEP_TEST_BIN_DIR})

  if(ARG_WHOLE)
    add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} WORKING_DIRECTORY ${ARG_WORKING_DIRECTORY})
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    return()
  endif()

  # gtest_discover_tests flattens list-valued properties; escape the separators.
  string(REPLACE ";" "\\;" labels_escaped "${ARG_LABELS}")
  gtest_discover_tests(${ARG_NAME}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    TEST_PREFIX "${ARG_NAME}."
    WORKING_DIRECTORY ${ARG_WORKING_DIRECTORY}
    PROPERTIES LABELS "${labels_escaped}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
