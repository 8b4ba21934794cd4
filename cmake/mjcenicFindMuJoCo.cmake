# mjcenic_mujoco_from_wheel(<python>): defines the imported target mujoco::mujoco
# from the official `mujoco` Python wheel importable by <python>, and sets
# MJCENIC_WHEEL_MUJOCO_VERSION and MJCENIC_WHEEL_MUJOCO_DIR in the caller's scope;
# on failure leaves mujoco::mujoco undefined and sets MJCENIC_WHEEL_MUJOCO_ERROR.
# Used by mjcenic's own build (cmake/MuJoCo.cmake); an install carries its own
# copy of that libmujoco instead (cmake/Install.cmake).
function(mjcenic_mujoco_from_wheel python)
  execute_process(
    COMMAND "${python}" -c
      "import mujoco, os; print(os.path.dirname(mujoco.__file__)); print(mujoco.__version__)"
    OUTPUT_VARIABLE _mj OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    set(MJCENIC_WHEEL_MUJOCO_ERROR "the Python package 'mujoco' is not importable by ${python}"
        PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" _mj "${_mj}")
  list(GET _mj 0 _dir)
  list(GET _mj 1 _version)
  find_library(_lib NAMES "libmujoco.so.${_version}" PATHS "${_dir}" NO_DEFAULT_PATH NO_CACHE)
  find_path(_inc mujoco/mujoco.h PATHS "${_dir}/include" NO_DEFAULT_PATH NO_CACHE)
  if(NOT _lib OR NOT _inc)
    set(MJCENIC_WHEEL_MUJOCO_ERROR
        "libmujoco.so.${_version} or include/mujoco/mujoco.h missing in ${_dir}; reinstall the mujoco wheel"
        PARENT_SCOPE)
    return()
  endif()
  add_library(mujoco::mujoco SHARED IMPORTED GLOBAL)
  set_target_properties(mujoco::mujoco PROPERTIES
    IMPORTED_LOCATION "${_lib}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${_inc}")
  set(MJCENIC_WHEEL_MUJOCO_VERSION "${_version}" PARENT_SCOPE)
  set(MJCENIC_WHEEL_MUJOCO_DIR "${_dir}" PARENT_SCOPE)
endfunction()
