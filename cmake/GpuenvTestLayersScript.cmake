# Writes CTEST_FILE: one add_test per Catch2 test case of TEST_EXECUTABLE with its layer labels
# (GpuenvTestLayers.cmake explains the tags). Run with cmake -P after each link.

cmake_minimum_required(VERSION 3.18)  # IN_LIST (CMP0057) in a cmake -P script

# The test names a Catch2 test spec selects (an empty spec: every test that is not hidden).
function(list_tests spec out_var)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${spec} --list-test-names-only
                  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE result
                  WORKING_DIRECTORY "${WORKING_DIRECTORY}")
  # Catch2 v2 exits with the number of tests listed (at most 255); a signal or a message is a broken executable.
  if(NOT result MATCHES "^[0-9]+$" OR NOT errors STREQUAL "")
    message(FATAL_ERROR "${TEST_EXECUTABLE} ${spec} --list-test-names-only failed (${result}):\n${errors}${output}")
  endif()
  string(REGEX REPLACE "\n$" "" output "${output}")
  # A test name holds no ';' (tests/support/test_names_test.cpp), so the lines are a CMake list as they are.
  string(REPLACE "\n" ";" names "${output}")
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

# `name` as a Catch2 test spec that matches it (case-insensitively, as Catch2 does): \ , [ ] and a leading ~ escaped.
function(catch_spec name out_var)
  string(REGEX REPLACE "([][\\\\,])" "\\\\\\1" escaped "${name}")
  string(REGEX REPLACE "^~" "\\\\~" escaped "${escaped}")
  set(${out_var} "${escaped}" PARENT_SCOPE)
endfunction()

list_tests("" all_tests)
list_tests("[system-test]" system_tests)
list_tests("[engine]" engine_tests)

set(script "")
foreach(name IN LISTS all_tests)
  if(name IN_LIST system_tests)
    set(labels "system")
    if(name IN_LIST engine_tests)
      string(APPEND labels "\;engine")
    endif()
  elseif(name IN_LIST engine_tests)
    message(FATAL_ERROR "test \"${name}\" is tagged [engine] but not [system-test]: an engine test is a system test")
  else()
    set(labels "unit")
  endif()
  catch_spec("${name}" spec)
  # -w NoTests: a spec that matches no test fails (exit 2) instead of passing with nothing run.
  string(APPEND script
         "add_test([==[${name}]==] \"${TEST_EXECUTABLE}\" [==[${spec}]==] -w NoTests)\n"
         "set_tests_properties([==[${name}]==] PROPERTIES LABELS \"${labels}\""
         " WORKING_DIRECTORY \"${WORKING_DIRECTORY}\" SKIP_REGULAR_EXPRESSION [==[${SKIP_REGULAR_EXPRESSION}]==])\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
