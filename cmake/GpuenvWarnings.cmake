# Warnings for every gpuenv target; -Werror in the dev, asan and ci presets.
function(gpuenv_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
                                           -Wformat=2 -Wimplicit-fallthrough)
  # GCC 12 reports false -Wrestrict positives inside std::string at -O2/-O3 (GCC bug 105651).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(GPUENV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
