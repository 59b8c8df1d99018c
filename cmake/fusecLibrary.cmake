# cmake/fusecLibrary.cmake: fusec_add_library(), for projects that find_package(fusec) (the
# package includes this file) and for fusec's own build (CMakeLists.txt includes it, with
# FUSEC_EXECUTABLE the build tree's fusec).
#
#   fusec_add_library(TARGET SOURCES a.fuse ... [NAME name] [CPUS x86-64-v3 ...] [ARCHS ...])
#
# runs `fusec --emit=lib` at build time (again whenever a source changes) and gives TARGET, a
# library to link: its header NAME.h (NAME defaults to TARGET, a C identifier that prefixes
# every function) on the include path, libNAME.a with -lpthread -lm -ldl. Nothing of fusec is
# needed to run the program. A CPU library by default; CPUS: the CPUs it holds code for (default
# x86-64-v2, -v3, -v4; the best one the machine has runs). ARCHS makes it a CUDA library of
# those GPU architectures (sm_90 a cubin, compute_90 PTX; "default": every one the installed
# NVRTC builds from sm_80 up, and PTX for the newest), taking pointers to device memory.
function(fusec_add_library target)
  cmake_parse_arguments(F "" "NAME" "SOURCES;CPUS;ARCHS" ${ARGN})
  if(NOT F_SOURCES)
    message(FATAL_ERROR "fusec_add_library(${target}): no SOURCES")
  endif()
  if(F_ARCHS AND F_CPUS)
    message(FATAL_ERROR "fusec_add_library(${target}): CPUS or ARCHS, not both: a library is "
      "for the CPU or for CUDA")
  endif()
  if(NOT FUSEC_EXECUTABLE)
    message(FATAL_ERROR "fusec_add_library(${target}): FUSEC_EXECUTABLE is not set")
  endif()
  set(name ${target})
  if(F_NAME)
    set(name ${F_NAME})
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/fusec_${target})
  set(sources "")
  foreach(s ${F_SOURCES})
    get_filename_component(abs ${s} ABSOLUTE)
    list(APPEND sources ${abs})
  endforeach()
  set(archs --target=cpu)
  if(F_CPUS)
    list(JOIN F_CPUS "," joined)
    list(APPEND archs "--cpu=${joined}")
  elseif(F_ARCHS)
    set(archs --target=cuda)
    if(NOT F_ARCHS STREQUAL "default")
      list(JOIN F_ARCHS "," joined)
      list(APPEND archs "--arch=${joined}")
    endif()
  endif()
  add_custom_command(
    OUTPUT ${dir}/${name}.h ${dir}/lib${name}.a
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${FUSEC_EXECUTABLE} --emit=lib ${archs} -o ${dir}/${name} ${sources}
    DEPENDS ${sources} ${FUSEC_EXECUTABLE}
    COMMENT "fusec --emit=lib: lib${name}.a and ${name}.h"
    VERBATIM)
  add_custom_target(${target}_fusec_lib DEPENDS ${dir}/${name}.h ${dir}/lib${name}.a)
  find_package(Threads REQUIRED)
  add_library(${target} INTERFACE)
  target_include_directories(${target} INTERFACE ${dir})
  target_link_libraries(${target} INTERFACE ${dir}/lib${name}.a Threads::Threads m
    ${CMAKE_DL_LIBS})
  add_dependencies(${target} ${target}_fusec_lib)
endfunction()
