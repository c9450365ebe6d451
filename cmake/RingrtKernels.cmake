# Every .cu file is built twice: by nvcc for the cuda backend (when CUDA is
# on) and as C++ against the SIMT emulator (src/kernels/emu/cuda_builtins.h) for the
# emu backend. The emu copy goes through a generated one-line .cpp wrapper so
# the same source file can carry two languages in one build.
#
# The emu copy is instrumented for the emulator's race checker
# (RINGRT_EMU_RACECHECK, src/kernels/emu/racecheck.h): GCC's -fsanitize=thread
# turns every load and store that is not a register into a call of a
# __tsan_* hook, which src/kernels/emu/racecheck.cpp defines (TSan's run time
# is never linked), so plain shared-memory accesses are seen. Not under
# RINGRT_SANITIZE (ASan and TSan instrumentation exclude each other) nor
# with other compilers: the checker then sees ldmatrix and cp.async only.
# RINGRT_EMU_INSTRUMENT_KERNELS=OFF leaves them uninstrumented (to measure
# what the instrumentation costs: bench/emu_racecheck.sh).
option(RINGRT_EMU_INSTRUMENT_KERNELS "Instrument the emu kernels for the race checker" ON)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT RINGRT_SANITIZE AND RINGRT_EMU_INSTRUMENT_KERNELS)
  set(RINGRT_EMU_INSTRUMENT "-fsanitize=thread;--param=tsan-instrument-func-entry-exit=0"
      CACHE INTERNAL "compile options of the emulator's kernel objects")
else()
  set(RINGRT_EMU_INSTRUMENT "" CACHE INTERNAL "compile options of the emulator's kernel objects")
endif()
function(ringrt_add_kernel_sources target)
  foreach(cu IN LISTS ARGN)
    get_filename_component(abs "${cu}" ABSOLUTE)
    get_filename_component(stem "${cu}" NAME_WE)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${abs}")
    string(MAKE_C_IDENTIFIER "${rel}" id)
    set(wrapper "${PROJECT_BINARY_DIR}/emu_wrappers/${id}.emu.cpp")
    set(text "// generated: ${rel} compiled for the SIMT emulator\n#include \"${abs}\"\n")
    if(EXISTS "${wrapper}")
      file(READ "${wrapper}" old)
    endif()
    if(NOT old STREQUAL text)
      file(WRITE "${wrapper}" "${text}")
    endif()
    set_source_files_properties("${wrapper}" PROPERTIES OBJECT_DEPENDS "${abs}")
    if(RINGRT_EMU_INSTRUMENT)
      set_source_files_properties("${wrapper}" PROPERTIES COMPILE_OPTIONS "${RINGRT_EMU_INSTRUMENT}")
    endif()
    target_sources(${target} PRIVATE "${wrapper}")
    if(RINGRT_HAVE_CUDA)
      target_sources(${target} PRIVATE "${abs}")
    endif()
  endforeach()
endfunction()
