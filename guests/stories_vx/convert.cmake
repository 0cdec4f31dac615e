# Writes the stories_vx image with `lockstep-model convert --build vx` (cmake -P script run by
# CMakeLists.txt at build time) and the host golden model's ids with `lockstep-model golden`.
#   -DMODEL=<lockstep-model> -DMODELS=<models dir> -DSYNTHETIC=ON|OFF -DOUT=<dir> -DTOKENS=<n>
#
# Work-around (guests/host is not ours): `convert` writes wmem/wscale/emb/pieces.bin, then
# aborts while writing manifest.json when the golden text is not valid UTF-8 (the synthetic
# model's byte-fallback tokens: nlohmann::json type_error 316).  That failure is accepted when
# the four image files are complete; manifest.json is then left as written (possibly empty)
# and golden.txt (always written) carries the golden ids.
set(flags --models ${MODELS})
if(SYNTHETIC)
  list(APPEND flags --synthetic)
endif()
file(MAKE_DIRECTORY ${OUT})
file(REMOVE ${OUT}/wmem.bin ${OUT}/wscale.bin ${OUT}/emb.bin ${OUT}/pieces.bin ${OUT}/manifest.json ${OUT}/golden.txt)
execute_process(COMMAND ${MODEL} ${flags} convert --build vx --out ${OUT}
                WORKING_DIRECTORY ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  set(complete ON)
  foreach(f wmem.bin wscale.bin emb.bin pieces.bin)
    if(NOT EXISTS ${OUT}/${f})
      set(complete OFF)
    endif()
  endforeach()
  foreach(pair IN ITEMS "wmem.bin;132864" "wscale.bin;8304" "emb.bin;34816")
    list(GET pair 0 f)
    list(GET pair 1 n)
    if(EXISTS ${OUT}/${f})
      file(SIZE ${OUT}/${f} size)
      if(NOT size EQUAL n)
        set(complete OFF)
      endif()
    endif()
  endforeach()
  if(complete AND err MATCHES "invalid UTF-8")
    message(STATUS "stories_vx: lockstep-model convert could not write manifest.json (golden text not UTF-8); image files complete")
  else()
    message(FATAL_ERROR "stories_vx: lockstep-model convert failed (${rc}):\n${out}${err}")
  endif()
endif()
execute_process(COMMAND ${MODEL} ${flags} golden --build vx --tokens ${TOKENS}
                RESULT_VARIABLE rc OUTPUT_FILE ${OUT}/golden.txt ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stories_vx: lockstep-model golden failed (${rc}):\n${err}")
endif()
