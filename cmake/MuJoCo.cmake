# Finds MuJoCo and defines mujoco::mujoco plus MJCENIC_MUJOCO_VERSION.
#
# The supported range is read from the top-level file MUJOCO_VERSION (the only
# place it is written down). Where MuJoCo comes from (MJCENIC_MUJOCO_SOURCE):
#   AUTO   MuJoCo's own CMake package (find_package(mujoco CONFIG), e.g. a MuJoCo
#          release or source install on CMAKE_PREFIX_PATH), else the `mujoco`
#          Python wheel importable by Python3_EXECUTABLE. When the Python
#          extension is built, the wheel is used: the extension must share the
#          libmujoco that `import mujoco` loads.
#   CONFIG only find_package(mujoco CONFIG)
#   WHEEL  only the Python wheel (pip builds)
set(MJCENIC_MUJOCO_SOURCE AUTO CACHE STRING "Where to find MuJoCo: AUTO, CONFIG or WHEEL")
set_property(CACHE MJCENIC_MUJOCO_SOURCE PROPERTY STRINGS AUTO CONFIG WHEEL)

file(STRINGS "${PROJECT_SOURCE_DIR}/MUJOCO_VERSION" _mj_range REGEX "^[a-z]+=")
foreach(_kv IN LISTS _mj_range)
  string(REGEX MATCH "^([a-z]+)=(.*)$" _ "${_kv}")
  set(MJCENIC_MUJOCO_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
endforeach()
if(NOT MJCENIC_MUJOCO_minimum OR NOT MJCENIC_MUJOCO_below OR NOT MJCENIC_MUJOCO_default)
  message(FATAL_ERROR "mjcenic: MUJOCO_VERSION must define minimum=, below= and default=")
endif()
set(MJCENIC_MUJOCO_RANGE ">=${MJCENIC_MUJOCO_minimum},<${MJCENIC_MUJOCO_below}")

function(_mjcenic_check_mujoco_version version origin)
  if(version VERSION_LESS MJCENIC_MUJOCO_minimum OR NOT version VERSION_LESS MJCENIC_MUJOCO_below)
    message(FATAL_ERROR
      "mjcenic: found MuJoCo ${version} (${origin}); mjcenic supports MuJoCo "
      "${MJCENIC_MUJOCO_RANGE} (file MUJOCO_VERSION).\n"
      "Install a supported one, e.g.:  ${Python3_EXECUTABLE} -m pip install mujoco==${MJCENIC_MUJOCO_default}")
  endif()
endfunction()

set(_mj_use_wheel ON)
set(_mj_config_note "")
if(MJCENIC_MUJOCO_SOURCE STREQUAL "CONFIG" OR
   (MJCENIC_MUJOCO_SOURCE STREQUAL "AUTO" AND NOT MJCENIC_BUILD_PYTHON))
  find_package(mujoco CONFIG QUIET)
  if(TARGET mujoco::mujoco)
    set(_mj_use_wheel OFF)
    _mjcenic_check_mujoco_version("${mujoco_VERSION}" "${mujoco_DIR}")
    set(MJCENIC_MUJOCO_VERSION "${mujoco_VERSION}")
    set(MJCENIC_MUJOCO_FROM "config")
    message(STATUS "mjcenic: MuJoCo ${mujoco_VERSION} from its CMake package ${mujoco_DIR}")
  elseif(MJCENIC_MUJOCO_SOURCE STREQUAL "CONFIG")
    message(FATAL_ERROR "mjcenic: find_package(mujoco CONFIG) failed; set mujoco_DIR or "
                        "CMAKE_PREFIX_PATH to a MuJoCo install, or use -DMJCENIC_MUJOCO_SOURCE=WHEEL")
  else()
    set(_mj_config_note " (and find_package(mujoco CONFIG) found none)")
  endif()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/mjcenicFindMuJoCo.cmake")
if(_mj_use_wheel)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  mjcenic_mujoco_from_wheel("${Python3_EXECUTABLE}")
  if(NOT TARGET mujoco::mujoco)
    message(FATAL_ERROR
      "mjcenic: no MuJoCo found: ${MJCENIC_WHEEL_MUJOCO_ERROR}"
      "${_mj_config_note}.\n"
      "Install one in ${MJCENIC_MUJOCO_RANGE}, e.g.:  ${Python3_EXECUTABLE} -m pip install "
      "mujoco==${MJCENIC_MUJOCO_default}\n(or run `make deps` as root).")
  endif()
  set(MJCENIC_MUJOCO_VERSION "${MJCENIC_WHEEL_MUJOCO_VERSION}")
  set(MUJOCO_PKG_DIR "${MJCENIC_WHEEL_MUJOCO_DIR}")
  _mjcenic_check_mujoco_version("${MJCENIC_MUJOCO_VERSION}" "Python wheel in ${MUJOCO_PKG_DIR}")
  # Reconfigure when the wheel is replaced (another version installed).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${MUJOCO_PKG_DIR}/__init__.py")
  set(MJCENIC_MUJOCO_FROM "wheel")
  # Build-tree programs find libmujoco without LD_LIBRARY_PATH; installed files
  # get $ORIGIN-relative or link-time paths (cmake/Install.cmake).
  set(CMAKE_BUILD_RPATH "${MUJOCO_PKG_DIR}")
  message(STATUS "mjcenic: MuJoCo ${MJCENIC_MUJOCO_VERSION} from the Python wheel ${MUJOCO_PKG_DIR}")
endif()
