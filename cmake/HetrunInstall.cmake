# cmake --install: bin/hetrun, lib/libhetrun_*.so, include/hetrun/*.h, and a CMake package so a
# trainer project can find_package(hetrun) and link hetrun::runtime.
include(CMakePackageConfigHelpers)

set(_hetrun_targets hetrun hetrun_core hetrun_runtime)
if(TARGET hetrun_torch)
  list(APPEND _hetrun_targets hetrun_torch)
endif()
if(TARGET hetrun_kernels)
  list(APPEND _hetrun_targets hetrun_kernels)
endif()

set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
# The torch wing finds libtorch/libc10 where hetrun was built against them (the venv's torch/lib);
# a trainer that brings its own torch sets its RPATH or LD_LIBRARY_PATH first.
if(TARGET hetrun_torch)
  set_property(TARGET hetrun_torch APPEND PROPERTY INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib")
endif()
foreach(t IN LISTS _hetrun_targets)
  if(NOT t STREQUAL "hetrun_runtime")
    set_property(TARGET ${t} APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
endforeach()

install(TARGETS ${_hetrun_targets} EXPORT hetrunTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The rendezvous plugin: dlopened by bin/hetrun from $ORIGIN/../lib (not linked, not exported),
# with the record of the torch it needs beside it (launcher/rendezvous/plugin_torch.h).
if(TARGET hetrun_rendezvous)
  install(TARGETS hetrun_rendezvous LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES "${PROJECT_BINARY_DIR}/lib/libhetrun_rendezvous.torch"
          DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/runtime/include/hetrun"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(FILES "${PROJECT_BINARY_DIR}/runtime/include/hetrun/base/version.h"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hetrun/base)
if(TARGET hetrun_torch)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/runtime/torch/include/hetrun"
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endif()
if(TARGET hetrun_kernels)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/kernels/include/hetrun"
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endif()

set(HETRUN_CONFIG_WITH_TORCH ${HETRUN_HAVE_TORCH})
install(EXPORT hetrunTargets NAMESPACE hetrun::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrun)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/hetrunConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/hetrunConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrun)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/hetrunConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/hetrunConfig.cmake"
              "${PROJECT_BINARY_DIR}/hetrunConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrun)
