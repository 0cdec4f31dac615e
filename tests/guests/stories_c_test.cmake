# stories_c guest vs its host golden model (included from tests/guests/CMakeLists.txt).
if(TARGET stories_c_host AND TARGET guest_stories_c_synthetic AND TARGET lockstep_story)
  if(LOCKSTEP_STORIES_REAL)
    set(real_flag 1)
  else()
    set(real_flag 0)
  endif()
  lockstep_add_gtest(NAME guests_stories_c_test
    SOURCES stories_c_test.cpp
    LIBS lockstep_guests_test_support lockstep_story
    LABELS integration
    DEFINITIONS LOCKSTEP_STORIES_HOST="$<TARGET_FILE:stories_c_host>"
                LOCKSTEP_STORIES_MODELS_DIR="${LOCKSTEP_STORIES_MODELS_DIR}"
                LOCKSTEP_STORIES_REAL=${real_flag})
  add_dependencies(guests_stories_c_test guests stories_c_host)
endif()

if(TARGET lockstep_image_c AND TARGET lockstep_story)
  lockstep_add_gtest(NAME guests_image_c_test
    SOURCES image_c_test.cpp
    LIBS lockstep_image_c lockstep_story
    LABELS unit)
endif()

# A generated BOS ends the story (issue 28): stories_c_host and the guest on the reference, with
# the BOS-preferring model of tests/golden/bos_model.h.  Needs only stories_c_synthetic.elf.
if(TARGET stories_c_host AND TARGET guest_stories_c_synthetic AND TARGET lockstep_image_c AND TARGET lockstep_ref)
  lockstep_add_gtest(NAME guests_stories_c_bos_test
    SOURCES stories_c_bos_test.cpp
    LIBS lockstep_image_c lockstep_story lockstep_ref lockstep_format
    LABELS integration
    DEFINITIONS LOCKSTEP_STORIES_HOST="$<TARGET_FILE:stories_c_host>"
                LOCKSTEP_STORIES_C_ELF="${LOCKSTEP_GUEST_DIR}/stories_c_synthetic.elf")
  target_include_directories(guests_stories_c_bos_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/golden)
  add_dependencies(guests_stories_c_bos_test stories_c_host guest_stories_c_synthetic)
endif()
