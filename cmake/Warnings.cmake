# Project code builds with -Wall -Wextra -Werror (issue: foundation).
# lockstep_target_defaults(TARGET) applies warnings to one target; sanitizers
# (LOCKSTEP_SANITIZE=ON) apply to every target of the tree.
function(lockstep_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Werror>)
  if(LOCKSTEP_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's -Wmaybe-uninitialized gives false positives under -fsanitize=address
    # (e.g. inside libstdc++'s <regex> and std::function at -O2); the release
    # build keeps the warning, so nothing real is lost.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>
      $<$<COMPILE_LANGUAGE:C>:-Wno-maybe-uninitialized>)
  endif()
endfunction()

# Host C/C++ only: nvcc does not take these flags (ci/test builds the sanitizer
# tree with LOCKSTEP_CUDA=OFF anyway).
if(LOCKSTEP_SANITIZE)
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=address,undefined)
endif()
