# ctest install.find_package_example: `cmake --install` the build into a temporary prefix,
# configure and build examples/ against it with find_package(octet) only (no path into
# the source tree), then run the example on a fixture. Run with
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DSHARED=ON|OFF -P install_and_build_example.cmake
set(work "${BUILD_DIR}/install_test")
file(REMOVE_RECURSE "${work}")
set(prefix "${work}/prefix")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" --component dev)
file(GLOB_RECURSE installed_files RELATIVE "${prefix}" "${prefix}/*")
foreach(pattern "^include/octet/octet\\.h$" "^lib[^/]*/(.*/)?liboctet\\.a$" "/cmake/octet/octetConfig\\.cmake$")
  set(found ${installed_files})
  list(FILTER found INCLUDE REGEX "${pattern}")
  if(NOT found)
    message(FATAL_ERROR "the install has no file matching ${pattern}")
  endif()
endforeach()
# The public headers must stand alone: nothing from src/ is installed.
file(GLOB_RECURSE installed_headers RELATIVE "${prefix}/include" "${prefix}/include/*")
foreach(h ${installed_headers})
  if(NOT h MATCHES "^octet/(octet|error|tensor|session|quantize|generate)\\.h$")
    message(FATAL_ERROR "unexpected installed header ${h}")
  endif()
endforeach()

set(variants static)
if(SHARED)
  list(APPEND variants shared)
endif()
foreach(variant ${variants})
  set(build "${work}/example_${variant}")
  run("configure examples/ (${variant})" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples" -B "${build}"
      -DCMAKE_PREFIX_PATH=${prefix} -DOCTET_EXAMPLE_LINK=${variant} -DCMAKE_BUILD_TYPE=Release)
  run("build examples/ (${variant})" ${CMAKE_COMMAND} --build "${build}")
  run("run the example (${variant})" "${build}/octet_example" "${SOURCE_DIR}/tests/models/fixtures/bert_tiny.onnx")
  message(STATUS "${last_output}")
  if(NOT last_output MATCHES "output 'logits' float32\\[2,2\\]" OR
     NOT last_output MATCHES "quantized: [1-9][0-9]* layers, [0-9.]+% of MACs in int8, 4 samples from the caller's CalibrationSource")
    message(FATAL_ERROR "unexpected example output:\n${last_output}")
  endif()
  run("run the generate example (${variant})" "${build}/octet_generate_example"
      "${SOURCE_DIR}/tests/models/fixtures/llama_gen_with_past.onnx")
  message(STATUS "${last_output}")
  if(NOT last_output MATCHES "streamed:( [0-9]+)+\ngenerated 8 tokens \\(max_new_tokens\\)")
    message(FATAL_ERROR "unexpected generate example output:\n${last_output}")
  endif()
endforeach()
