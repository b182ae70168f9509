# Registers every Catch2 test case of a test executable with CTest, labelled by its layer (README, "Tests"):
#
#   [system-test]            -> label `system`: needs root, a real external engine, a network namespace, or > 1 s
#   [system-test][engine]    -> labels `system` and `engine`: its subject is a third-party engine (apt/dpkg in a
#                               Debian root, slurmd, cloud-init, promtool, npm validators, ...); the ASan pass skips it
#   anything else            -> label `unit`
#
# Catch2 v2's catch_discover_tests has no tag -> label mapping, so this is its small equivalent: after each link, the
# script GpuenvTestLayersScript.cmake lists the test names once per tag (`--list-test-names-only` with a tag spec)
# and writes the CTest file. With GPUENV_TEST_BATCHES (the asan preset) the unit tests are registered one CTest test
# per test file instead (Catch2's `-#` tags each test case with its file's name), the system tests still one each.
#
#   gpuenv_discover_tests(<target> [SKIP_REGULAR_EXPRESSION <regex>])
function(gpuenv_discover_tests target)
  cmake_parse_arguments(ARG "" "SKIP_REGULAR_EXPRESSION" "" ${ARGN})
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_layers.cmake")
  add_custom_command(
    TARGET ${target} POST_BUILD
    BYPRODUCTS "${ctest_file}"
    COMMAND "${CMAKE_COMMAND}" -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}" -D "SKIP_REGULAR_EXPRESSION=${ARG_SKIP_REGULAR_EXPRESSION}"
            -D "CTEST_FILE=${ctest_file}" -D "BATCH_UNIT_TESTS=${GPUENV_TEST_BATCHES}" -P "${PROJECT_SOURCE_DIR}/cmake/GpuenvTestLayersScript.cmake"
    VERBATIM)
  # Before the first build the executable does not exist: CTest then shows one failing placeholder.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_layers_include.cmake")
  file(WRITE "${include_file}"
       "if(EXISTS \"${ctest_file}\")\n"
       "  include(\"${ctest_file}\")\n"
       "else()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
