# Makes one smoke kernel image (a fatbin) with nvcc, or copies it from a cache shared by every build of the tree
# (dev, asan, release and the portable build: src/CMakeLists.txt, smoke_kernel_image), so one CI run compiles each
# image once. Run with cmake -P:
#
#   -D NVCC=<nvcc> -D SOURCE=<.cu> -D DEPENDS=<other inputs> -D ARGS=<nvcc options> -D HOST_ARGS=<-ccbin ...>
#   -D OUTPUT=<fatbin> [-D CACHE_DIR=<dir>]
#
# The key is what decides the image: the bytes of the sources, nvcc's `--version` and the options. The host compiler
# (HOST_ARGS) is left out: for a device-only compile (-fatbin) it only preprocesses, and the portable build's Debian 11
# gcc 10 and this machine's gcc 12 give the same image (docs/packaging.md, "Build once").
execute_process(COMMAND "${NVCC}" --version OUTPUT_VARIABLE nvcc_version RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NVCC} --version failed (${result})")
endif()
set(identity "${nvcc_version}\n${ARGS}\n")
foreach(input IN ITEMS ${SOURCE} ${DEPENDS})
  file(SHA256 "${input}" digest)
  string(APPEND identity "${digest}\n")
endforeach()
string(SHA256 key "${identity}")

# file(COPY_FILE) needs CMake 3.21; the portable build runs Debian 11's 3.18.
function(copy_file from to)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${from}" "${to}" RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "cannot copy ${from} to ${to}")
  endif()
endfunction()
get_filename_component(name "${OUTPUT}" NAME)
set(cached "${CACHE_DIR}/${key}/${name}")

if(CACHE_DIR AND EXISTS "${cached}")
  message(STATUS "kernel image ${name}: from ${CACHE_DIR}/${key}")
  copy_file("${cached}" "${OUTPUT}")
  return()
endif()

get_filename_component(output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${output_dir}")
execute_process(COMMAND "${NVCC}" ${ARGS} ${HOST_ARGS} -o "${OUTPUT}.tmp" "${SOURCE}" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "nvcc failed (${result}): ${NVCC} ${ARGS} ${HOST_ARGS} -o ${OUTPUT} ${SOURCE}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
if(CACHE_DIR)
  # Best effort (a read-only source tree has no cache). Another build may be storing the same image: each writes its
  # own temporary name, and a rename is atomic.
  string(RANDOM LENGTH 12 token)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E make_directory "${CACHE_DIR}/${key}" RESULT_VARIABLE made)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${OUTPUT}" "${cached}.${token}" RESULT_VARIABLE copied)
  if(made EQUAL 0 AND copied EQUAL 0)
    file(RENAME "${cached}.${token}" "${cached}")
  else()
    message(STATUS "kernel image ${name}: not kept in ${CACHE_DIR} (cannot write there)")
  endif()
endif()
