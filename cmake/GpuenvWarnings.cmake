# Warnings for every gpuenv target; -Werror in the dev, asan and ci presets.
function(gpuenv_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
                                           -Wnull-dereference -Wformat=2 -Wimplicit-fallthrough)
  if(GPUENV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
