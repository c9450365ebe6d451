# Issue 13, io part: the per-rank Matrix Market reader against the serial
# one (bitwise rows, identical errors; plain and gzip) at np 1..4, and
# rrt_sparse_create's agreement on n.
ringrt_test_exe(test_ilu_mm_rows test_mm_rows.c)
target_link_libraries(test_ilu_mm_rows PRIVATE ${ZLIB_LIBRARIES})
target_include_directories(test_ilu_mm_rows PRIVATE ${ZLIB_INCLUDE_DIRS})
foreach(np 1 2 3 4)
  ringrt_add_test(ilu.mm_rows.np${np} test_ilu_mm_rows NP ${np} BACKEND cpu LABELS ilu io
                  ENV RINGRT_TIMEOUT=30 TIMEOUT 120)
endforeach()
