# Building RISC-V guest programs with the cross compiler invoked directly.
#
# lockstep_add_guest(NAME <name>
#                    SOURCES <file>...            .c and .S files (absolute or relative to
#                                                 the calling folder)
#                    [MARCH <march>]              default rv32im_zba (compile only; the link
#                                                 always uses rv32im, see TOOLCHAIN.md)
#                    [DEFINES <NAME=value>...]    -D options
#                    [CFLAGS <flag>...]           extra compiler flags
#                    [INCLUDES <dir>...]          -I options
#                    [DEPENDS <file/target>...]   extra dependencies of every object (e.g.
#                                                 an image that a .S file .incbin's)
#                    [NO_RUNTIME])                do not add crt0/rt.c/string.c
#
# Produces ${LOCKSTEP_GUEST_DIR}/<name>.elf (static ELF32, linked with
# runtime/link.ld) and <name>.dis (objdump -d), and a custom target
# guest_<name> that is part of ALL and of the `guests` target.  Each object
# has its own gcc depfile, so header changes rebuild exactly what they should.

set(LOCKSTEP_GUEST_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR}/runtime)
set(LOCKSTEP_GUEST_RUNTIME_SOURCES
    ${LOCKSTEP_GUEST_RUNTIME_DIR}/crt0.S
    ${LOCKSTEP_GUEST_RUNTIME_DIR}/rt.c
    ${LOCKSTEP_GUEST_RUNTIME_DIR}/string.c)
set(LOCKSTEP_GUEST_LINKER_SCRIPT ${LOCKSTEP_GUEST_RUNTIME_DIR}/link.ld)

# Flags for every guest object.  -fno-tree-loop-distribute-patterns keeps gcc
# from turning the runtime's own memcpy/memset loops into calls to themselves.
set(LOCKSTEP_GUEST_CFLAGS
    -mabi=ilp32 -mcmodel=medlow -O2 -g -std=gnu11
    -Wall -Wextra -Werror
    -ffreestanding -fno-common -fno-tree-loop-distribute-patterns
    -ffunction-sections -fdata-sections)

add_custom_target(guests ALL)

function(lockstep_add_guest)
  cmake_parse_arguments(PARSE_ARGV 0 G "NO_RUNTIME" "NAME;MARCH"
                        "SOURCES;DEFINES;INCLUDES;DEPENDS;CFLAGS")
  if(G_UNPARSED_ARGUMENTS OR NOT G_NAME OR NOT G_SOURCES)
    message(FATAL_ERROR "lockstep_add_guest: NAME and SOURCES required (${G_UNPARSED_ARGUMENTS})")
  endif()
  if(NOT G_MARCH)
    set(G_MARCH rv32im_zba)
  endif()
  set(sources ${G_SOURCES})
  if(NOT G_NO_RUNTIME)
    list(APPEND sources ${LOCKSTEP_GUEST_RUNTIME_SOURCES})
  endif()
  set(flags -march=${G_MARCH} ${LOCKSTEP_GUEST_CFLAGS} -I${LOCKSTEP_GUEST_RUNTIME_DIR}/include)
  foreach(inc IN LISTS G_INCLUDES)
    get_filename_component(inc ${inc} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND flags -I${inc})
  endforeach()
  list(APPEND flags ${G_CFLAGS})
  foreach(def IN LISTS G_DEFINES)
    list(APPEND flags -D${def})
  endforeach()

  set(objdir ${CMAKE_CURRENT_BINARY_DIR}/guest-obj/${G_NAME})
  set(objects)
  foreach(src IN LISTS sources)
    get_filename_component(src ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    get_filename_component(base ${src} NAME)
    set(obj ${objdir}/${base}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${objdir}
      COMMAND ${LOCKSTEP_RISCV_GCC} ${flags} -MD -MF ${obj}.d -MT ${obj} -c ${src} -o ${obj}
      DEPENDS ${src} ${G_DEPENDS}
      DEPFILE ${obj}.d
      COMMENT "Guest ${G_NAME}: compiling ${base}"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND objects ${obj})
  endforeach()

  set(elf ${LOCKSTEP_GUEST_DIR}/${G_NAME}.elf)
  add_custom_command(
    OUTPUT ${elf} ${LOCKSTEP_GUEST_DIR}/${G_NAME}.dis
    COMMAND ${CMAKE_COMMAND} -E make_directory ${LOCKSTEP_GUEST_DIR}
    COMMAND ${LOCKSTEP_RISCV_GCC} -march=rv32im -mabi=ilp32 -static -nostdlib -nostartfiles
            -T ${LOCKSTEP_GUEST_LINKER_SCRIPT} -Wl,--gc-sections
            -Wl,-Map,${LOCKSTEP_GUEST_DIR}/${G_NAME}.map
            ${objects} -lgcc -o ${elf}
    COMMAND ${LOCKSTEP_RISCV_OBJDUMP} -d ${elf} > ${LOCKSTEP_GUEST_DIR}/${G_NAME}.dis
    DEPENDS ${objects} ${LOCKSTEP_GUEST_LINKER_SCRIPT}
    COMMENT "Guest ${G_NAME}: linking ${G_NAME}.elf"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(guest_${G_NAME} DEPENDS ${elf})
  add_dependencies(guests guest_${G_NAME})
endfunction()
