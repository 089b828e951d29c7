# Strict warnings for our own targets only; third-party headers come in as SYSTEM includes.
function(hetrun_strict target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-unused-parameter>)
endfunction()
