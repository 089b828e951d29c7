// spdlog's compiled part, once, for the Python wheel (HETRUN_WHEEL; docs/ARCHITECTURE.md §2.5).
//
// The wheel carries spdlog from its headers so that nothing it installs needs libspdlog at run
// time. Header-only, every translation unit that logs compiles spdlog's whole implementation again
// (the registry, the pattern formatter, the sinks): about half of each file's compile time at
// -O3, and most of `pip install .`'s. With SPDLOG_COMPILED_LIB (set for the wheel's targets by
// cmake/HetrunDependencies.cmake) the headers only declare it; this file defines it, from the
// same headers' -inl.h parts, and instantiates the templates hetrun uses: the base sink, the
// plain stderr sink the launcher logs to, and the colour sink spdlog's default logger is made of.
// fmt stays header-only: its share of the cost is small.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_compiled.cc is built only with SPDLOG_COMPILED_LIB (the wheel)"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_nullmutex>;
template class spdlog::sinks::stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_nullmutex>;
