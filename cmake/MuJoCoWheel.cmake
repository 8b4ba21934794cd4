# Locates MuJoCo inside the official `mujoco` Python wheel and checks that its
# version is the one pinned in the top-level file MUJOCO_VERSION (the only place
# the version is written down).
file(READ "${CMAKE_SOURCE_DIR}/MUJOCO_VERSION" MJCENIC_MUJOCO_PIN)
string(STRIP "${MJCENIC_MUJOCO_PIN}" MJCENIC_MUJOCO_PIN)

find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
    "import mujoco, os; print(os.path.dirname(mujoco.__file__)); print(mujoco.__version__)"
  OUTPUT_VARIABLE _mj OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _mj_rc ERROR_QUIET)
if(NOT _mj_rc EQUAL 0)
  message(FATAL_ERROR
    "mjcenic: the Python package 'mujoco' is not importable by ${Python3_EXECUTABLE}.\n"
    "Install the pinned wheel:  ${Python3_EXECUTABLE} -m pip install mujoco==${MJCENIC_MUJOCO_PIN}\n"
    "(or run `make deps` as root).")
endif()
string(REPLACE "\n" ";" _mj "${_mj}")
list(GET _mj 0 MUJOCO_PKG_DIR)
list(GET _mj 1 MUJOCO_WHEEL_VERSION)
if(NOT MUJOCO_WHEEL_VERSION STREQUAL MJCENIC_MUJOCO_PIN)
  message(FATAL_ERROR
    "mjcenic: found mujoco ${MUJOCO_WHEEL_VERSION} but this project is pinned to "
    "${MJCENIC_MUJOCO_PIN} (file MUJOCO_VERSION).\n"
    "Install it:  ${Python3_EXECUTABLE} -m pip install mujoco==${MJCENIC_MUJOCO_PIN}")
endif()
find_library(MUJOCO_LIBRARY NAMES "libmujoco.so.${MUJOCO_WHEEL_VERSION}"
             PATHS "${MUJOCO_PKG_DIR}" NO_DEFAULT_PATH)
find_path(MUJOCO_INCLUDE_DIR mujoco/mujoco.h PATHS "${MUJOCO_PKG_DIR}/include" NO_DEFAULT_PATH)
if(NOT MUJOCO_LIBRARY OR NOT MUJOCO_INCLUDE_DIR)
  message(FATAL_ERROR "mjcenic: libmujoco.so.${MUJOCO_WHEEL_VERSION} or include/mujoco/mujoco.h "
                      "missing in ${MUJOCO_PKG_DIR}; reinstall the mujoco wheel.")
endif()
add_library(mujoco::mujoco SHARED IMPORTED)
set_target_properties(mujoco::mujoco PROPERTIES
  IMPORTED_LOCATION "${MUJOCO_LIBRARY}"
  IMPORTED_NO_SONAME FALSE
  INTERFACE_INCLUDE_DIRECTORIES "${MUJOCO_INCLUDE_DIR}")
# Programs find libmujoco without LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH "${MUJOCO_PKG_DIR}")
set(CMAKE_INSTALL_RPATH "${MUJOCO_PKG_DIR}")
message(STATUS "mjcenic: MuJoCo ${MUJOCO_WHEEL_VERSION} from ${MUJOCO_PKG_DIR}")
