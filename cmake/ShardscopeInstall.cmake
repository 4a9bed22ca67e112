# `cmake --install build --prefix P`: headers, static libraries, the programs, a CMake package
# (find_package(Shardscope) -> Shardscope::engine, ::store, ::viewer) and shardscope.pc.
# Every library installed and exported is listed here, in link order (dependents first), so a
# new module library is one more line. Format and use: docs/install.md.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SHARDSCOPE_ENGINE_LIBRARIES
  shardscope_model shardscope_record shardscope_export shardscope_onnx shardscope_runtime shardscope_search
  shardscope_partition shardscope_graph shardscope_redistribution shardscope_cost shardscope_comm_mpi
  shardscope_comm shardscope_data shardscope_layout shardscope_core)
set(SHARDSCOPE_STORE_LIBRARIES shardscope_store shardscope_base)
set(SHARDSCOPE_VIEWER_LIBRARIES)
set(SHARDSCOPE_PROGRAMS shardscope)
if(SHARDSCOPE_BUILD_GUI)
  set(SHARDSCOPE_VIEWER_LIBRARIES shardscope_viewer)
  list(APPEND SHARDSCOPE_PROGRAMS shardscope-render shardscope-gui)
endif()
set(SHARDSCOPE_INSTALLED_LIBRARIES
  ${SHARDSCOPE_VIEWER_LIBRARIES} ${SHARDSCOPE_ENGINE_LIBRARIES} ${SHARDSCOPE_STORE_LIBRARIES})
# Header trees installed by directory, so moving a header inside them needs no change here.
set(SHARDSCOPE_HEADER_DIRS engine/include base/include store/include)
if(SHARDSCOPE_BUILD_GUI)
  list(APPEND SHARDSCOPE_HEADER_DIRS viewer/include)
endif()

option(SHARDSCOPE_INSTALL_NATIVE
       "Allow installing libraries built with -march=native (they run only on CPUs like this one)"
       OFF)

# Installed targets find their headers under the prefix, not in this source tree.
set(_shardscope_build_includes)
foreach(dir IN LISTS SHARDSCOPE_HEADER_DIRS)
  list(APPEND _shardscope_build_includes "${CMAKE_SOURCE_DIR}/${dir}")
endforeach()
foreach(lib IN LISTS SHARDSCOPE_INSTALLED_LIBRARIES)
  get_target_property(_dirs ${lib} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_wrapped)
    foreach(d IN LISTS _dirs)
      list(APPEND _wrapped "$<BUILD_INTERFACE:${d}>")
    endforeach()
    set_target_properties(${lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
      "${_wrapped};$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  endif()
endforeach()

# The package's three names: each an interface target over the libraries of its part.
foreach(part engine store viewer)
  string(TOUPPER ${part} _upper)
  if(NOT SHARDSCOPE_${_upper}_LIBRARIES)
    continue()
  endif()
  add_library(shardscope_pkg_${part} INTERFACE)
  target_link_libraries(shardscope_pkg_${part} INTERFACE ${SHARDSCOPE_${_upper}_LIBRARIES})
  set_target_properties(shardscope_pkg_${part} PROPERTIES EXPORT_NAME ${part})
  add_library(Shardscope::${part} ALIAS shardscope_pkg_${part})
  list(APPEND _shardscope_pkg_targets shardscope_pkg_${part})
endforeach()

# Refuse to install -march=native libraries unless asked (option above, or the environment
# variable SHARDSCOPE_INSTALL_NATIVE=1 at install time): a package must run where it is copied.
if(NOT SHARDSCOPE_PORTABLE AND NOT SHARDSCOPE_INSTALL_NATIVE)
  install(CODE [[
    if(NOT "$ENV{SHARDSCOPE_INSTALL_NATIVE}" STREQUAL "1")
      message(FATAL_ERROR
        "shardscope: this build uses -march=native; its libraries would run only on CPUs like "
        "this one. Install a portable build (cmake -DSHARDSCOPE_PORTABLE=ON, or `make install "
        "PREFIX=...`), or ask for native libraries: -DSHARDSCOPE_INSTALL_NATIVE=ON at configure "
        "time or SHARDSCOPE_INSTALL_NATIVE=1 in the environment of cmake --install.")
    endif()]])
endif()

foreach(dir IN LISTS SHARDSCOPE_HEADER_DIRS)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(TARGETS ${SHARDSCOPE_INSTALLED_LIBRARIES} ${_shardscope_pkg_targets}
        EXPORT ShardscopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ${SHARDSCOPE_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(SHARDSCOPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Shardscope)
install(EXPORT ShardscopeTargets NAMESPACE Shardscope:: DESTINATION ${SHARDSCOPE_CMAKE_DIR})
if(SHARDSCOPE_PORTABLE)
  set(SHARDSCOPE_PACKAGE_NATIVE OFF)
else()
  set(SHARDSCOPE_PACKAGE_NATIVE ON)
endif()
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/ShardscopeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/ShardscopeConfig.cmake INSTALL_DESTINATION ${SHARDSCOPE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ShardscopeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/ShardscopeConfig.cmake
              ${CMAKE_BINARY_DIR}/ShardscopeConfigVersion.cmake
        DESTINATION ${SHARDSCOPE_CMAKE_DIR})

# pkg-config: the engine and the store (the viewer needs Qt's CMake packages: use CMake).
list(TRANSFORM SHARDSCOPE_ENGINE_LIBRARIES REPLACE "^shardscope_" "-lshardscope_"
     OUTPUT_VARIABLE _pc_engine)
list(TRANSFORM SHARDSCOPE_STORE_LIBRARIES REPLACE "^shardscope_" "-lshardscope_"
     OUTPUT_VARIABLE _pc_store)
list(JOIN _pc_engine " " SHARDSCOPE_PC_ENGINE_LIBS)
list(JOIN _pc_store " " SHARDSCOPE_PC_STORE_LIBS)
# The prefix relative to the .pc file, so `cmake --install --prefix P` may pick any P.
file(RELATIVE_PATH SHARDSCOPE_PC_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
string(REGEX REPLACE "/$" "" SHARDSCOPE_PC_PREFIX "${SHARDSCOPE_PC_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/shardscope.pc.in ${CMAKE_BINARY_DIR}/shardscope.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/shardscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
