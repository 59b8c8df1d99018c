# cmake/python.cmake: what `pip install .` puts into the Python package (pyproject.toml):
#   fusec/libfusec.so        the shared library, one file (a wheel has no symbolic links, and
#                            the package loads it by path, so its SONAME links are not needed)
#   fusec/libfusec_llvm.so   the CPU backend's LLVM module, which libfusec finds beside itself
# scikit-build-core sets SKBUILD and installs only the component "python": a plain
# `cmake --install` never puts these in a prefix. Included from CMakeLists.txt.
if(NOT SKBUILD)
  return()
endif()
install(FILES $<TARGET_FILE:fusec_shared> DESTINATION fusec RENAME libfusec.so COMPONENT python)
if(TARGET fusec_llvm)
  install(FILES $<TARGET_FILE:fusec_llvm> DESTINATION fusec COMPONENT python)
endif()
