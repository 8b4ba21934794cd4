# What `cmake --install` and `pip install` put where.
#
# pip (SKBUILD, component "python"): the extension _mjcenic and _version.py into
#   the wheel's mjcenic/ package. RUNPATH $ORIGIN/../mujoco finds libmujoco in
#   the installed `mujoco` package; the build backend's `auditwheel repair`
#   bundles the remaining non-system libraries (python/build_backend).
# cmake --install (component "dev"): for C/C++ users
#   lib/libmjcenic.so                 C API (plugin/mjcenic.h) + MuJoCo engine plugin
#   lib/libmjcenic_core.a (+ parts)   the C++ library (mjcenic/integrator/stepper.h)
#   include/mjcenic.h, include/mjcenic/{icf,adapter,integrator}/*.h, include/mjcenic/version.h
#   lib/cmake/mjcenic/mjcenicConfig.cmake: imported targets mjcenic::c (C API)
#   and mjcenic::mjcenic (C++), MuJoCo found by find_package(mujoco CONFIG)
#   first, the `mujoco` Python wheel as fallback (cmake/mjcenicFindMuJoCo.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  set_target_properties(_mjcenic PROPERTIES INSTALL_RPATH "$ORIGIN/../mujoco")
  install(TARGETS _mjcenic LIBRARY DESTINATION mjcenic COMPONENT python)
  install(FILES "${PROJECT_BINARY_DIR}/python/mjcenic/_version.py" DESTINATION mjcenic
          COMPONENT python)
  return()
endif()

# Installed binaries find libmujoco (and the other shared dependencies) where
# they were linked from.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(mjcenic PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

# The C++ library: mjcenic_core today; its static parts, once split out, are
# exported with it (a static library's link dependencies must be installed too).
set(_mjcenic_cxx_targets)
foreach(_t mjcenic_icf mjcenic_adapter mjcenic_integrator mjcenic_core)
  if(TARGET ${_t})
    list(APPEND _mjcenic_cxx_targets ${_t})
  endif()
endforeach()
set_target_properties(mjcenic_core PROPERTIES EXPORT_NAME mjcenic)
set_target_properties(mjcenic PROPERTIES EXPORT_NAME c)

# Build-tree include directories are absolute source paths; installed targets
# use include/ instead.
foreach(_t ${_mjcenic_cxx_targets} mjcenic)
  get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _dirs)  # a part that takes its include directories from its dependencies
    continue()
  endif()
  set(_wrapped)
  foreach(_d IN LISTS _dirs)
    if(_d MATCHES "^\\$<")
      list(APPEND _wrapped "${_d}")
    else()
      list(APPEND _wrapped "$<BUILD_INTERFACE:${_d}>")
    endif()
  endforeach()
  set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                        "${_wrapped};$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
endforeach()

install(TARGETS mjcenic ${_mjcenic_cxx_targets} EXPORT mjcenicTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
install(TARGETS mjcenic-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
install(FILES "${PROJECT_SOURCE_DIR}/plugin/mjcenic.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/mjcenic/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mjcenic
        COMPONENT dev FILES_MATCHING PATTERN "*.h" PATTERN "cli" EXCLUDE)
install(FILES "${PROJECT_BINARY_DIR}/include/mjcenic/version.h"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mjcenic COMPONENT dev)

set(_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/mjcenic)
install(EXPORT mjcenicTargets NAMESPACE mjcenic:: DESTINATION ${_cmakedir} COMPONENT dev)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/mjcenicConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/mjcenicConfig.cmake" INSTALL_DESTINATION ${_cmakedir})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/mjcenicConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/mjcenicConfig.cmake"
              "${PROJECT_BINARY_DIR}/mjcenicConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/mjcenicFindMuJoCo.cmake"
        DESTINATION ${_cmakedir} COMPONENT dev)
