# mjcenic's version (project(VERSION)) and the MuJoCo it is built against, for
# C/C++ (generated header <mjcenic/version.h>) and Python (_version.py).
configure_file("${CMAKE_CURRENT_LIST_DIR}/version.h.in"
               "${PROJECT_BINARY_DIR}/include/mjcenic/version.h" @ONLY)
foreach(_t mjcenic_core mjcenic)
  target_include_directories(${_t} PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>)
endforeach()
