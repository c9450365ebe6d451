# `cmake --install`: headers, libringrt.so (SONAME) and libringrt.a, the
# ringrt tool, ringrtConfig.cmake (imported targets ringrt::ringrt and
# ringrt::ringrt_static), ringrt.pc, and the LICENSE under share/doc/ringrt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RINGRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ringrt)
set_target_properties(ringrt_static PROPERTIES EXPORT_NAME ringrt_static)
set_target_properties(ringrt_app PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS ringrt ringrt_static EXPORT ringrtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ringrt_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/launch/ringrt-run DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ringrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/ringrt/config.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringrt)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT ringrtTargets NAMESPACE ringrt:: DESTINATION ${RINGRT_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ringrtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ringrtConfig.cmake INSTALL_DESTINATION ${RINGRT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ringrtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ringrtConfig.cmake ${PROJECT_BINARY_DIR}/ringrtConfigVersion.cmake
  DESTINATION ${RINGRT_CMAKE_DIR})

# pkg-config: the static dependencies go in Libs.private. The CUDA runtime
# is the static archive (by path; libringrt.so carries its own copy) and NCCL
# is never linked (opened at run time), so neither appears in Libs.
set(RINGRT_PC_PRIVATE "")
foreach(pair "BLAS;-lopenblas" "HWLOC;-lhwloc" "HDF5;-lhdf5_serial")
  list(GET pair 0 dep)
  list(GET pair 1 flags)
  if(RINGRT_HAVE_${dep})
    string(APPEND RINGRT_PC_PRIVATE "${flags} ")
  endif()
endforeach()
if(ZLIB_FOUND)
  string(APPEND RINGRT_PC_PRIVATE "-lz ")
endif()
string(APPEND RINGRT_PC_PRIVATE "-lm -fopenmp -lstdc++ -ldl")
if(RINGRT_HAVE_CUDA)
  string(APPEND RINGRT_PC_PRIVATE " ${CUDA_cudart_static_LIBRARY} -lrt -lpthread")
endif()
file(RELATIVE_PATH RINGRT_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/ringrt.pc.in ${PROJECT_BINARY_DIR}/ringrt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ringrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
