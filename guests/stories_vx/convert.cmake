# Writes the stories_vx image with `lockstep-model convert --build vx` (cmake -P script run by
# CMakeLists.txt at build time) and the host golden model's ids with `lockstep-model golden`.
#   -DMODEL=<lockstep-model> -DMODELS=<models dir> -DSYNTHETIC=ON|OFF -DOUT=<dir> -DTOKENS=<n>
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
  message(FATAL_ERROR "stories_vx: lockstep-model convert failed (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${MODEL} ${flags} golden --build vx --tokens ${TOKENS}
                RESULT_VARIABLE rc OUTPUT_FILE ${OUT}/golden.txt ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stories_vx: lockstep-model golden failed (${rc}):\n${err}")
endif()
