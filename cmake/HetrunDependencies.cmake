# Every third-party dependency is found here, once. scripts/setup installs them.
find_package(Threads REQUIRED)
if(HETRUN_WHEEL)
  # The wheel's interpreter (scikit-build-core passes it): the extension's ABI, and pythonX.Y of
  # the site-packages folder where the wheel's launcher looks for its plugin.
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
endif()
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(cxxopts REQUIRED)
# libcrypto: HMAC-SHA256 of the rendezvous store records under the job secret (the wheel's
# launcher links the system's libcrypto.so.3 too).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# What the core and the launcher link for logging: the shared libraries normally; in the wheel and
# with HETRUN_STATIC_DEPS (the training image) spdlog and fmt header-only, so the extension,
# bin/hetrun and the plugin need neither at run time.
add_library(hetrun_logging_deps INTERFACE)
add_library(hetrun::logging_deps ALIAS hetrun_logging_deps)
if(HETRUN_WHEEL OR HETRUN_STATIC_DEPS)
  get_target_property(_spdlog_inc spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(_fmt_inc fmt::fmt-header-only INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(hetrun_logging_deps SYSTEM INTERFACE ${_spdlog_inc} ${_fmt_inc})
  target_compile_definitions(hetrun_logging_deps INTERFACE SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY=1)
  if(HETRUN_WHEEL)
    # spdlog's implementation compiled once (runtime/logging/spdlog_compiled.cc, in the core)
    # instead of in every file that logs: half of `pip install .`'s compile time. Not in the
    # image, whose torch wing links the shared spdlog (one registry per process).
    target_compile_definitions(hetrun_logging_deps INTERFACE SPDLOG_COMPILED_LIB)
  endif()
  target_link_libraries(hetrun_logging_deps INTERFACE Threads::Threads)
else()
  target_link_libraries(hetrun_logging_deps INTERFACE spdlog::spdlog fmt::fmt)
endif()
# zstd and lz4 (compressed fatbin payloads): header and library, searched in CMAKE_PREFIX_PATH
# and the system, so a machine without pkg-config (the GPU image; tests/gpu/stage-deps.sh) works.
foreach(_lib IN ITEMS zstd lz4)
  string(TOUPPER ${_lib} _up)
  find_path(HETRUN_${_up}_INCLUDE_DIR ${_lib}.h REQUIRED)
  if(HETRUN_WHEEL)
    # Static archives, linked into the extension and the launcher (Debian's and Ubuntu's are
    # position-independent). Not for HETRUN_STATIC_DEPS: Debian 12's libzstd.a linked into
    # libhetrun_core.so crashed (SIGSEGV in its Huffman decoder) on cuBLAS's compressed fatbins,
    # where the same archive in the wheel's executable and the shared libzstd decode them; the
    # image ships the shared zstd and lz4 beside hetrun's own libraries instead.
    find_library(HETRUN_${_up}_LIBRARY NAMES lib${_lib}.a ${_lib} REQUIRED)
  else()
    find_library(HETRUN_${_up}_LIBRARY ${_lib} REQUIRED)
  endif()
  add_library(hetrun::${_lib} UNKNOWN IMPORTED)
  set_target_properties(hetrun::${_lib} PROPERTIES IMPORTED_LOCATION "${HETRUN_${_up}_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${HETRUN_${_up}_INCLUDE_DIR}")
endforeach()
# yaml-cpp: tests parse the Volcano manifests back and check them against the CRD's schema.
if(HETRUN_BUILD_TESTS)
  find_package(yaml-cpp REQUIRED)
endif()

# CUDA toolkit: $CUDA_HOME, else /usr/local/cuda. Optional.
set(HETRUN_HAVE_CUDA OFF)
if(HETRUN_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    if(DEFINED ENV{CUDA_HOME} AND EXISTS "$ENV{CUDA_HOME}/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "$ENV{CUDA_HOME}/bin/nvcc")
    elseif(EXISTS "/usr/local/cuda/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc")
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(HETRUN_HAVE_CUDA ON)
  else()
    message(STATUS "hetrun: no CUDA toolkit found ($CUDA_HOME or /usr/local/cuda): kernels/ and CUDA tests are skipped")
  endif()
endif()

# libtorch, from the Python environment that scripts/setup creates.
set(HETRUN_HAVE_TORCH OFF)
if(HETRUN_WITH_TORCH)
  if(EXISTS "${HETRUN_PYTHON}")
    execute_process(
      COMMAND "${HETRUN_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE HETRUN_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(_torch_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${HETRUN_TORCH_PREFIX}")
      # Torch's config would probe the local GPUs to pick nvcc flags (and fails without one);
      # we never compile CUDA against torch, so name the architectures and skip the probe.
      if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
        set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
      endif()
      # Torch's config also rewrites the global CUDA flags and architectures: keep ours.
      set(_saved_cuda_arch "${CMAKE_CUDA_ARCHITECTURES}")
      set(_saved_cuda_flags "${CMAKE_CUDA_FLAGS}")
      find_package(Torch REQUIRED)
      set(CMAKE_CUDA_ARCHITECTURES "${_saved_cuda_arch}")
      set(CMAKE_CUDA_FLAGS "${_saved_cuda_flags}")
      set(HETRUN_HAVE_TORCH ON)
      # torch.__version__ with its local part (2.11.0+cu130), for the rendezvous plugin's record
      # (launcher/rendezvous/plugin_torch.h); read from version.py, without importing torch.
      get_filename_component(HETRUN_TORCH_PACKAGE_DIR "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
      file(STRINGS "${HETRUN_TORCH_PACKAGE_DIR}/version.py" _torch_version_line
           REGEX "^__version__ *= *")
      string(REGEX REPLACE "^__version__ *= *['\"]([^'\"]+)['\"].*" "\\1"
             HETRUN_TORCH_PACKAGE_VERSION "${_torch_version_line}")
      if(NOT HETRUN_TORCH_PACKAGE_VERSION)
        set(HETRUN_TORCH_PACKAGE_VERSION "${Torch_VERSION}")
      endif()
      message(STATUS "hetrun: libtorch ${HETRUN_TORCH_PACKAGE_VERSION} from ${HETRUN_TORCH_PREFIX}")
    endif()
  endif()
  if(NOT HETRUN_HAVE_TORCH)
    message(STATUS "hetrun: no torch in ${HETRUN_PYTHON} (run scripts/setup): runtime/torch is skipped")
  endif()
endif()
