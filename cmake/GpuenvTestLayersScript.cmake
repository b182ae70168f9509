# Writes CTEST_FILE: one add_test per Catch2 test case of TEST_EXECUTABLE with its layer labels
# (GpuenvTestLayers.cmake explains the tags). Run with cmake -P after each link.

cmake_minimum_required(VERSION 3.18)  # IN_LIST (CMP0057) in a cmake -P script

# What the test executable lists with ARGN (a test spec and --list-test-names-only or --list-tags), into out_var.
function(catch_listing out_var)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${ARGN}
                  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE result
                  WORKING_DIRECTORY "${WORKING_DIRECTORY}")
  # Catch2 v2 exits with the number of items listed (at most 255); a signal or a message is a broken executable.
  if(NOT result MATCHES "^[0-9]+$" OR NOT errors STREQUAL "")
    message(FATAL_ERROR "${TEST_EXECUTABLE} ${ARGN} failed (${result}):\n${errors}${output}")
  endif()
  set(${out_var} "${output}" PARENT_SCOPE)
endfunction()

# The test names a Catch2 test spec selects (an empty spec: every test that is not hidden).
function(list_tests spec out_var)
  catch_listing(output ${spec} --list-test-names-only)
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
set(unit_test_count 0)
foreach(name IN LISTS all_tests)
  if(name IN_LIST system_tests)
    set(labels "system")
    if(name IN_LIST engine_tests)
      string(APPEND labels ";engine")  # a CMake list: two labels, not one label "system;engine"
    endif()
  elseif(name IN_LIST engine_tests)
    message(FATAL_ERROR "test \"${name}\" is tagged [engine] but not [system-test]: an engine test is a system test")
  else()
    set(labels "unit")
    math(EXPR unit_test_count "${unit_test_count} + 1")
    if(BATCH_UNIT_TESTS)
      continue()  # registered below, with the other unit tests of its file
    endif()
  endif()
  catch_spec("${name}" spec)
  # -w NoTests: a spec that matches no test fails (exit 2) instead of passing with nothing run.
  string(APPEND script
         "add_test([==[${name}]==] \"${TEST_EXECUTABLE}\" [==[${spec}]==] -w NoTests)\n"
         "set_tests_properties([==[${name}]==] PROPERTIES LABELS \"${labels}\""
         " WORKING_DIRECTORY \"${WORKING_DIRECTORY}\" SKIP_REGULAR_EXPRESSION [==[${SKIP_REGULAR_EXPRESSION}]==])\n")
endforeach()

# Batched (GPUENV_TEST_BATCHES): the unit tests of one test file run in one process. Catch2's -# (--filenames-as-tags)
# tags each test case with its file's name, "[#version_test]"; two folders' files of one name share a batch. One
# call lists those tags with their counts, which must add up to the unit tests listed above: none is left out. A
# batch is a unit test that passes or fails as a whole: a test in it that prints "SKIPPED: " does not make CTest call
# the batch skipped (the dev build's unit layer, one process per test, counts the skips).
if(BATCH_UNIT_TESTS)
  # A filter also selects the hidden test cases ([.gpu]) unless told not to. "-#" is quoted: # begins a CMake comment.
  set(unit_spec "~[system-test]~[!hide]")
  catch_listing(output "-#" "${unit_spec}" --list-tags)
  string(REGEX MATCHALL "[0-9]+  \\[#[^]\n]+\\]" file_tags "${output}")
  set(batched_count 0)
  foreach(file_tag IN LISTS file_tags)
    string(REGEX REPLACE "^([0-9]+)  \\[#(.+)\\]$" "\\1;\\2" count_and_file "${file_tag}")
    list(GET count_and_file 0 count)
    list(GET count_and_file 1 file)
    math(EXPR batched_count "${batched_count} + ${count}")
    set(name "unit tests of ${file}")
    string(APPEND script
           "add_test([==[${name}]==] \"${TEST_EXECUTABLE}\" \"-#\" [==[[#${file}]${unit_spec}]==] -w NoTests)\n"
           "set_tests_properties([==[${name}]==] PROPERTIES LABELS unit WORKING_DIRECTORY \"${WORKING_DIRECTORY}\")\n")
  endforeach()
  if(NOT batched_count EQUAL unit_test_count)
    message(FATAL_ERROR "the test files' tags count ${batched_count} unit tests, the listing ${unit_test_count}:\n"
                        "${output}")
  endif()
endif()
file(WRITE "${CTEST_FILE}" "${script}")
