# Debian packages: libeigen3-dev libsuitesparse-dev libabsl-dev libgtest-dev
# Each missing one stops configuration with the package to install.
find_package(Eigen3 3.3 QUIET NO_MODULE)
if(NOT TARGET Eigen3::Eigen)
  message(FATAL_ERROR "mjcenic: Eigen 3 not found. Install it:  apt-get install libeigen3-dev")
endif()

find_path(CHOLMOD_INCLUDE_DIR cholmod.h PATH_SUFFIXES suitesparse)
find_library(CHOLMOD_LIBRARY cholmod)
if(NOT CHOLMOD_INCLUDE_DIR OR NOT CHOLMOD_LIBRARY)
  message(FATAL_ERROR "mjcenic: SuiteSparse CHOLMOD not found. Install it:  apt-get install libsuitesparse-dev")
endif()
add_library(cholmod::cholmod UNKNOWN IMPORTED)
set_target_properties(cholmod::cholmod PROPERTIES
  IMPORTED_LOCATION "${CHOLMOD_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CHOLMOD_INCLUDE_DIR}")

find_package(absl QUIET CONFIG)
if(NOT TARGET absl::status)
  message(FATAL_ERROR "mjcenic: abseil not found. Install it:  apt-get install libabsl-dev")
endif()

if(MJCENIC_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT TARGET GTest::gtest_main)
    message(FATAL_ERROR "mjcenic: GoogleTest not found. Install it:  apt-get install libgtest-dev")
  endif()
endif()
