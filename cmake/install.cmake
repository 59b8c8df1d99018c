# cmake/install.cmake: what `cmake --install` puts where, and how other projects find it.
#   bin/fusec                          the command line
#   include/fusec.h                    the whole public interface (standard headers only)
#   lib/libfusec.so.MAJOR...           the shared library, with its SONAME links
#   lib/libfusec.a                     the static library
#   lib/libfusec_llvm.so               the CPU backend's LLVM module (CMakeLists.txt installs it)
#   lib/libfusec_rt.a                  the runtime alone, which fusec --emit=lib archives into
#                                      every library it writes
#   lib/cmake/fusec/                   find_package(fusec): fusec::fusec, fusec::fusec_static,
#                                      fusec_add_library()
#   lib/pkgconfig/fusec.pc             pkg-config --cflags --libs [--static] fusec
# Included from CMakeLists.txt once every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FUSEC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fusec)

# Users see fusec::fusec (shared, what most want) and fusec::fusec_static; the aliases give a
# project that add_subdirectory()s fusec the same names it would get from find_package.
set_target_properties(fusec_shared PROPERTIES EXPORT_NAME fusec)
set_target_properties(fusec_static PROPERTIES EXPORT_NAME fusec_static)
add_library(fusec::fusec ALIAS fusec_shared)
add_library(fusec::fusec_static ALIAS fusec_static)

# The static library's link interface names xxHash by the absolute path find_library gave
# on this machine; exported as is, that path would be wrong on any other. Inside the build
# it stays; installed, it becomes fusec::xxhash, which fusecConfig.cmake finds where the
# consumer's machine keeps it. (The shared library links xxHash privately: nothing to do.)
get_target_property(_fusec_static_libs fusec_static INTERFACE_LINK_LIBRARIES)
list(FIND _fusec_static_libs "${XXHASH_LIBRARY}" _fusec_xxhash_at)
if(_fusec_xxhash_at GREATER_EQUAL 0)
  list(REMOVE_AT _fusec_static_libs ${_fusec_xxhash_at})
  list(INSERT _fusec_static_libs ${_fusec_xxhash_at}
    "$<BUILD_INTERFACE:${XXHASH_LIBRARY}>" "$<INSTALL_INTERFACE:fusec::xxhash>")
  set_target_properties(fusec_static PROPERTIES INTERFACE_LINK_LIBRARIES "${_fusec_static_libs}")
endif()

# The command line links libfusec.a today; the RPATH keeps an installed (or relocated)
# prefix working should it link libfusec.so, without LD_LIBRARY_PATH.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(fusec PROPERTIES INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
else()
  set_target_properties(fusec PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

install(TARGETS fusec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/fusec.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# LIBRARY installs libfusec.so.X.Y.Z with the libfusec.so.X (SONAME) and libfusec.so links
install(TARGETS fusec_shared fusec_static EXPORT fusecTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT fusecTargets NAMESPACE fusec:: FILE fusecTargets.cmake
  DESTINATION ${FUSEC_CMAKE_DIR})
install(TARGETS fusec_rt ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(FUSEC_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fusecConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fusecConfig.cmake INSTALL_DESTINATION ${FUSEC_CMAKE_DIR}
  PATH_VARS FUSEC_INSTALL_BINDIR)
# SameMajorVersion, as the SONAME: libfusec.so.MAJOR promises that a newer minor or patch
# keeps the API and ABI, and a new major breaks them. AnyNewerVersion would accept a major
# release that no longer builds or links the consumer that asked for the older one.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fusecConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fusecConfig.cmake ${PROJECT_BINARY_DIR}/fusecConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/fusecLibrary.cmake DESTINATION ${FUSEC_CMAKE_DIR})

# pkg-config: the paths are relative to the .pc file's own directory (${pcfiledir}), so the
# file stays right wherever the prefix is put (`cmake --install --prefix`, DESTDIR, a moved
# tree), as the CMake package is.
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(FUSEC_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(FUSEC_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FUSEC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  # from <prefix>/<libdir>/pkgconfig back up to <prefix>: one ".." per component
  file(RELATIVE_PATH _fusec_up /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
  string(REGEX REPLACE "/$" "" _fusec_up "${_fusec_up}")
  set(FUSEC_PC_PREFIX "\${pcfiledir}/${_fusec_up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/fusec.pc.in ${PROJECT_BINARY_DIR}/fusec.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fusec.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
