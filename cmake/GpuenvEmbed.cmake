# Embeds data files into a generated C++ source so one copied binary needs no data directory.
# gpuenv_embed_files(OUTPUT <cpp> NAMESPACE <ns> FUNCTION <fn> BASE <dir> FILES <files...>)
# generates `std::span<const EmbeddedFile> <ns>::<fn>()` where EmbeddedFile = {name, contents}.
function(gpuenv_embed_files)
  cmake_parse_arguments(ARG "" "OUTPUT;NAMESPACE;FUNCTION;BASE" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} -DNAMESPACE=${ARG_NAMESPACE} -DFUNCTION=${ARG_FUNCTION}
            -DBASE=${ARG_BASE} "-DFILES=${ARG_FILES}" -P ${PROJECT_SOURCE_DIR}/cmake/GpuenvEmbedScript.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/GpuenvEmbedScript.cmake
    COMMENT "Embedding ${ARG_FUNCTION} data"
    VERBATIM)
  # Byte arrays gain nothing from a unity build, and a data change would recompile the whole batch.
  set_source_files_properties(${ARG_OUTPUT} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
