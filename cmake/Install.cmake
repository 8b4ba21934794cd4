# What `cmake --install` and `pip install` put where (docs/install.md).
#
# pip (SKBUILD, component "python"): into the wheel's mjcenic/ package the
#   extension _mjcenic, the plugin library libmjcenic.so (for `mjcenic
#   install-plugin`) and _version.py. Their RUNPATH $ORIGIN/../mujoco finds
#   libmujoco in the installed `mujoco` package; the build backend's `auditwheel
#   repair` bundles the remaining non-system libraries (python/build_backend).
# cmake --install (component "dev"): for C/C++ users
#   bin/mjcenic-run                   the runner (RUNPATH $ORIGIN/../lib)
#   lib/libmjcenic.so                 C API (plugin/mjcenic.h) + MuJoCo engine plugin (RUNPATH $ORIGIN)
#   lib/libmjcenic_core.a (+ parts)   the C++ library (mjcenic/integrator/stepper.h), C++20
#   include/mjcenic.h, include/mjcenic/{icf,adapter,integrator}/*.h, include/mjcenic/version.h
#   lib/cmake/mjcenic/mjcenicConfig.cmake: imported targets mjcenic::c (C API)
#   and mjcenic::mjcenic (C++)
#   MuJoCo: built against the `mujoco` Python wheel, the prefix gets a copy of
#   that wheel's libmujoco.so.X.Y.Z, its headers (include/mujoco) and licence
#   (share/doc/mjcenic/mujoco), so the install depends on no Python environment;
#   built against MuJoCo's CMake package, the installed files find libmujoco
#   where that package has it and the config looks it up again.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  # hypot bound to its pre-2.35 glibc version: the wheel's platform tag is then
  # set by its bundled libraries (glibc 2.34), see cmake/hypot_glibc_2_2_5.c.
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    foreach(_t _mjcenic mjcenic)
      target_sources(${_t} PRIVATE "${CMAKE_CURRENT_LIST_DIR}/hypot_glibc_2_2_5.c")
      target_link_options(${_t} PRIVATE -Wl,--wrap=hypot)
    endforeach()
    # The rollout pool's condition variable, likewise bound to its older
    # libstdc++ version (cmake/condvar_wait_glibcxx_3_4_11.c).
    target_sources(_mjcenic PRIVATE "${CMAKE_CURRENT_LIST_DIR}/condvar_wait_glibcxx_3_4_11.c")
    target_link_options(_mjcenic PRIVATE
                        -Wl,--wrap=_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE)
  endif()
  set_target_properties(_mjcenic mjcenic PROPERTIES INSTALL_RPATH "$ORIGIN/../mujoco")
  install(TARGETS _mjcenic mjcenic LIBRARY DESTINATION mjcenic COMPONENT python)
  install(FILES "${PROJECT_BINARY_DIR}/python/mjcenic/_version.py" DESTINATION mjcenic
          COMPONENT python)
  return()
endif()

# RUNPATHs relative to the installed files: bin/ -> lib/, lib/ -> itself.
file(RELATIVE_PATH _bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
set_target_properties(mjcenic-run PROPERTIES INSTALL_RPATH "$ORIGIN/${_bin_to_lib}")
set_target_properties(mjcenic PROPERTIES INSTALL_RPATH "$ORIGIN")
if(MJCENIC_MUJOCO_FROM STREQUAL "config")
  set(MJCENIC_MUJOCO_BUNDLED FALSE)
  # libmujoco stays in MuJoCo's own install: found through the link path.
  set_target_properties(mjcenic mjcenic-run PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
else()
  set(MJCENIC_MUJOCO_BUNDLED TRUE)
  get_target_property(_mj_lib mujoco::mujoco IMPORTED_LOCATION)
  install(FILES "${_mj_lib}" DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(DIRECTORY "${MUJOCO_PKG_DIR}/include/mujoco" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          COMPONENT dev)
  file(GLOB _mj_licences "${MUJOCO_PKG_DIR}/../mujoco-${MJCENIC_MUJOCO_VERSION}.dist-info/licenses/*"
       "${MUJOCO_PKG_DIR}/../mujoco-${MJCENIC_MUJOCO_VERSION}.dist-info/LICENSE*")
  install(FILES ${_mj_licences} DESTINATION ${CMAKE_INSTALL_DOCDIR}/mujoco COMPONENT dev)
endif()
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)

# The C++ library: mjcenic_core and its static parts (a static library's link
# dependencies must be installed too).
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
  "${PROJECT_BINARY_DIR}/mjcenicConfig.cmake" INSTALL_DESTINATION ${_cmakedir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/mjcenicConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/mjcenicConfig.cmake"
              "${PROJECT_BINARY_DIR}/mjcenicConfigVersion.cmake"
        DESTINATION ${_cmakedir} COMPONENT dev)
