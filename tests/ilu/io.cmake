# Issue 13, io part: the per-rank Matrix Market reader against the serial
# one (bitwise rows, identical errors; plain and gzip) at np 1..4, and
# rrt_sparse_create's agreement on n.
# Both write gzip files with zlib: not in a build without it (where the
# nozlib twin below is what the library does).
if(ZLIB_FOUND)
ringrt_test_exe(test_ilu_mm_rows test_mm_rows.c)
target_link_libraries(test_ilu_mm_rows PRIVATE ${ZLIB_LIBRARIES})
target_include_directories(test_ilu_mm_rows PRIVATE ${ZLIB_INCLUDE_DIRS})
foreach(np 1 2 3 4)
  ringrt_twin(twin ${np} 4)
  ringrt_add_test(ilu.mm_rows.np${np} test_ilu_mm_rows NP ${np} BACKEND cpu LABELS ilu io ${twin}
                  ENV RINGRT_TIMEOUT=30 TIMEOUT 120)
endforeach()

# The serial readers on item 5's inputs; and the same test built with the
# line reader compiled without zlib, where a gzip file must be refused by
# name (the library is built with zlib wherever it is found).
ringrt_test_exe(test_ilu_mm_input test_mm_input.c)
target_link_libraries(test_ilu_mm_input PRIVATE ${ZLIB_LIBRARIES})
target_include_directories(test_ilu_mm_input PRIVATE ${ZLIB_INCLUDE_DIRS})
ringrt_add_test(ilu.mm_input test_ilu_mm_input LABELS ilu io TIMEOUT 60)
endif()
add_executable(test_ilu_mm_nozlib test_mm_input.c ${PROJECT_SOURCE_DIR}/src/io/mmio.c
               ${PROJECT_SOURCE_DIR}/src/io/mm_parse.c ${PROJECT_SOURCE_DIR}/src/io/line_reader.c
               ${PROJECT_SOURCE_DIR}/src/comm/outfile.c ${PROJECT_SOURCE_DIR}/src/comm/errbuf.c
               ${PROJECT_SOURCE_DIR}/src/comm/status.c)
target_compile_definitions(test_ilu_mm_nozlib PRIVATE RRT_NO_ZLIB_BUILD)
target_include_directories(test_ilu_mm_nozlib PRIVATE ${PROJECT_SOURCE_DIR}/src
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/tests
  $<TARGET_PROPERTY:MPI::MPI_C,INTERFACE_INCLUDE_DIRECTORIES>)
target_link_libraries(test_ilu_mm_nozlib PRIVATE MPI::MPI_C ${MATH_LIBRARY})
ringrt_add_test(ilu.mm_input.nozlib test_ilu_mm_nozlib LABELS ilu io TIMEOUT 60)

# Not a test: the read time and per-rank peak memory in docs/results.md (ILU(0), reading matrices).
ringrt_test_exe(bench_mm_read bench_mm_read.c)
