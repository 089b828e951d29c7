# Build time of the default (Debug) tree, which `make test` and `make demo` build from scratch on
# a fresh machine. Goal: our own code in under 5 minutes on 2 cores.
#
# Debug info: a translation unit that includes libtorch headers spends about half of its compile
# time writing full debug information for libtorch's templates. Debug trees therefore get line
# tables only (-g1: backtraces, sanitizer reports and breakpoints keep file:line) unless
# HETRUN_DEBUG_INFO=full (-g: variables and types for a debugger session).
set(HETRUN_DEBUG_INFO "lines" CACHE STRING "Debug info in Debug builds: lines (-g1) or full (-g)")
set_property(CACHE HETRUN_DEBUG_INFO PROPERTY STRINGS lines full)
if(NOT HETRUN_DEBUG_INFO MATCHES "^(lines|full)$")
  message(FATAL_ERROR "HETRUN_DEBUG_INFO must be 'lines' or 'full', not '${HETRUN_DEBUG_INFO}'")
endif()
if(HETRUN_DEBUG_INFO STREQUAL "lines")
  # Comes after CMAKE_<LANG>_FLAGS_DEBUG's -g on the command line, and the last -g level wins.
  add_compile_options("$<$<AND:$<CONFIG:Debug>,$<COMPILE_LANGUAGE:C,CXX>>:-g1>")
endif()
