# Helpers that add libraries, bench binaries and tests the same way everywhere.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _pb_build_type_upper)

# Flags set once, on an interface target every pairbench target links.
add_library(pairbench_flags INTERFACE)
target_compile_features(pairbench_flags INTERFACE cxx_std_20)
target_compile_options(pairbench_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>
  $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr -Xcompiler=-Wall>)
target_compile_definitions(pairbench_flags INTERFACE PAIRBENCH_HAVE_CUDA=$<BOOL:${PAIRBENCH_HAVE_CUDA}>)
# Loops aligned (PAIRBENCH_ALIGN_LOOPS, CMakeLists.txt) so that an edit elsewhere moves fewer hot
# loops across a fetch block: a layout the relinked variants cannot average away.
if(PAIRBENCH_ALIGN_LOOPS AND NOT PAIRBENCH_ALIGN_LOOPS EQUAL 0)
  target_compile_options(pairbench_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-falign-loops=${PAIRBENCH_ALIGN_LOOPS}>)
endif()  # also in the recorded flags (PAIRBENCH_EFFECTIVE_CXX_FLAGS below)
# Build facts (type, compiler, flags) go to a generated header rather than -D flags with spaces.
set(_pb_align_flags)
if(PAIRBENCH_ALIGN_LOOPS AND NOT PAIRBENCH_ALIGN_LOOPS EQUAL 0)
  set(_pb_align_flags -falign-loops=${PAIRBENCH_ALIGN_LOOPS})
endif()
string(STRIP "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_pb_build_type_upper}} ${_pb_align_flags}" PAIRBENCH_EFFECTIVE_CXX_FLAGS)
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.h.in ${PROJECT_BINARY_DIR}/generated/pairbench/build_info.h)
target_include_directories(pairbench_flags INTERFACE ${PROJECT_BINARY_DIR}/generated)
target_link_libraries(pairbench_flags INTERFACE Threads::Threads)

# pairbench_include_root(VAR PATH): a folder of the build tree holding PATH (a folder of the source
# tree, e.g. "kernels" or "harness/store") and nothing beside it, as a symbolic link; VAR is set to
# it. A target whose include path has that root can include "PATH/..." and no other folder of the
# source tree: which headers a target sees follows what it links, and an include against the flow
# does not compile.
function(pairbench_include_root var path)
  string(REPLACE "/" "-" id "${path}")
  set(root ${PROJECT_BINARY_DIR}/include-roots/${id})
  get_filename_component(parent ${root}/${path} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT IS_SYMLINK ${root}/${path})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${path} ${root}/${path} SYMBOLIC)
  endif()
  set(${var} ${root} PARENT_SCOPE)
endfunction()

# pairbench_add_wing(NAME FOLDER WING SOURCES ... [USES wing libraries ...] [LINK other libraries ...]):
# a library of the harness built from harness/WING/, whose headers are seen as "harness/WING/x.h"
# by it and by what links it. USES lists the only harness wings it may depend on
# (harness/CMakeLists.txt keeps them in one table); LINK anything outside the harness.
function(pairbench_add_wing name)
  cmake_parse_arguments(ARG "" "FOLDER" "SOURCES;USES;LINK" ${ARGN})
  list(TRANSFORM ARG_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_FOLDER}/)
  add_library(${name} STATIC ${ARG_SOURCES})
  pairbench_include_root(root harness/${ARG_FOLDER})
  target_include_directories(${name} PUBLIC ${root})
  target_link_libraries(${name} PUBLIC pairbench_flags ${ARG_USES} ${ARG_LINK})
  # The harness is compiled at -O1 in Release (stats keeps the build type's flags: its tests and
  # the gate simulations loop over it). No harness code runs inside a timed region: it parses,
  # decides and launches processes, and its Release -O3 compiles took two thirds of the build
  # (bisect.cpp 37 s at -O3, 25 s at -O1, on a 2-vCPU Zen 3 VM). Kernels and bench binaries keep
  # the build type's flags, and those are the flags a run file records.
  if(NOT name STREQUAL "pairbench_stats")
    target_compile_options(${name} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
  endif()
  # Built as batches of up to six files in one translation unit: each file spends 5-15 s parsing
  # nlohmann-json, CLI11 and the harness headers before its own code (gcc -ftime-report).
  set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
  set_property(GLOBAL APPEND PROPERTY PAIRBENCH_HARNESS_WINGS ${name})
endfunction()

# pairbench_add_library(NAME SOURCES ... [CUDA_SOURCES ...] [LINK ...])
# CUDA_SOURCES are compiled only where nvcc exists; nothing replaces them elsewhere: the entry
# points they define are marked in the family's header (kernels/common/cuda_seam.h).
function(pairbench_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;LINK" ${ARGN})
  set(srcs ${ARG_SOURCES})
  if(PAIRBENCH_HAVE_CUDA)
    list(APPEND srcs ${ARG_CUDA_SOURCES})
  endif()
  if(PAIRBENCH_LAYOUT_PERTURBATION STREQUAL "link_reversed")
    list(REVERSE srcs)  # archive members, and so the order they are linked in, reversed
  endif()
  add_library(${name} STATIC ${srcs})
  pairbench_layout_perturb(${name})
  pairbench_include_root(root kernels)
  target_include_directories(${name} PUBLIC ${root})
  target_link_libraries(${name} PUBLIC pairbench_flags ${ARG_LINK})
  if(PAIRBENCH_HAVE_CUDA AND ARG_CUDA_SOURCES)
    target_link_libraries(${name} PUBLIC CUDA::cudart_static)
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                             POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()

# ---- Layout (docs/gate.md, "Layout"; harness/exec/layout.h) ----------------------------------
# PAIRBENCH_LAYOUT_VARIANTS (CMakeLists.txt): every bench binary bench_NAME is also linked K-1 more
# times from the same objects as bench_NAME.layout<k>, each with a padding object first on the link
# line: never executed bytes at the start of .text, .rodata and .data, so that every function and
# table after them moves by a different offset mod 4 KiB (a multiple of 16, never of 64: hot loops
# change their 64-byte cache-line and fetch-block alignment). Relinks only, no recompiles. The runner
# runs each time process from one of them at random, so a build's own placement is noise, not a
# constant of one side of a comparison.

# pairbench_layout_pad(VAR K): the object library of variant K's padding (made once), in VAR.
# Its sizes follow from K alone, so variant K is padded alike in every build.
function(pairbench_layout_pad var k)
  set(${var} pairbench_layout_pad_${k} PARENT_SCOPE)
  if(TARGET pairbench_layout_pad_${k})
    return()
  endif()
  string(SHA256 h "pairbench-layout-variant-${k}")
  set(sizes)
  foreach(first IN ITEMS 0 8 16 24)
    string(SUBSTRING "${h}" ${first} 6 hex)
    math(EXPR v "0x${hex}")
    list(APPEND sizes ${v})
  endforeach()
  list(GET sizes 0 a)
  list(GET sizes 1 b)
  list(GET sizes 2 c)
  list(GET sizes 3 d)
  math(EXPR text_bytes "16 * (4 * (${a} % 64) + 1 + ${b} % 3)")  # 16..4080, not a multiple of 64
  math(EXPR rodata_bytes "16 * (1 + ${c} % 255)")
  math(EXPR data_bytes "16 * (1 + ${d} % 255)")
  set(file ${PROJECT_BINARY_DIR}/generated/layout/layout_pad_${k}.cpp)
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/layout_pad.cpp.in ${file} @ONLY)
  add_library(pairbench_layout_pad_${k} OBJECT ${file})
endfunction()

# pairbench_layout_perturb(TARGET): PAIRBENCH_LAYOUT_PERTURBATION's dead code (the layout self-test,
# ci/layout-selftest.sh): dead_code_1k / dead_code_3k put a never-called function of 1000 / 3000
# bytes of code into every translation unit of TARGET (kernels/common/layout_perturbation.h).
function(pairbench_layout_perturb target)
  if(PAIRBENCH_LAYOUT_PERTURBATION MATCHES "^dead_code_([13])k$")
    math(EXPR bytes "${CMAKE_MATCH_1} * 1000")
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/kernels/common/layout_perturbation.h>")
    target_compile_definitions(${target} PRIVATE PAIRBENCH_LAYOUT_DEAD_CODE_BYTES=${bytes})
  endif()
endfunction()

# pairbench_add_bench(NAME SOURCES ... LINK ... [OUTPUT_DIRECTORY DIR]): a bench binary
# bench_NAME (in build/bin, or DIR) with the shared pairbench main (catalogue listing,
# single-benchmark runs, verification status), and its layout variants bench_NAME.layout<k>
# (k < PAIRBENCH_LAYOUT_VARIANTS) linked from the same objects.
function(pairbench_add_bench name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
  set(sources ${ARG_SOURCES})
  set(link pairbench_bench_common ${ARG_LINK})
  if(PAIRBENCH_LAYOUT_PERTURBATION STREQUAL "link_reversed")
    list(REVERSE sources)
    list(REVERSE link)
  endif()
  add_library(bench_${name}_objects OBJECT ${sources})
  target_link_libraries(bench_${name}_objects PRIVATE ${link})
  set(targets bench_${name})
  add_executable(bench_${name} $<TARGET_OBJECTS:bench_${name}_objects>)
  if(PAIRBENCH_LAYOUT_VARIANTS GREATER 1)
    math(EXPR last "${PAIRBENCH_LAYOUT_VARIANTS} - 1")
    foreach(k RANGE 1 ${last})
      pairbench_layout_pad(pad ${k})
      add_executable(bench_${name}.layout${k} $<TARGET_OBJECTS:${pad}> $<TARGET_OBJECTS:bench_${name}_objects>)
      add_dependencies(bench_${name} bench_${name}.layout${k})  # building bench_NAME builds its variants
      list(APPEND targets bench_${name}.layout${k})
    endforeach()
  endif()
  foreach(target IN LISTS targets)
    target_link_libraries(${target} PRIVATE ${link})
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    if(ARG_OUTPUT_DIRECTORY)
      set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
    endif()
  endforeach()
  # Variants of an earlier configuration with more of them would be run as this build's (the runner
  # takes bench_NAME.layout1, 2, ... up to the first missing): removed at configure time.
  set(dir ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
  if(ARG_OUTPUT_DIRECTORY)
    set(dir ${ARG_OUTPUT_DIRECTORY})
  endif()
  file(GLOB existing ${dir}/bench_${name}.layout*)
  foreach(file IN LISTS existing)
    if(file MATCHES "\\.layout([0-9]+)$" AND NOT CMAKE_MATCH_1 LESS PAIRBENCH_LAYOUT_VARIANTS)
      file(REMOVE ${file})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY PAIRBENCH_BENCH_TARGETS bench_${name})
endfunction()

# pairbench_add_bench_areas(ROOT DIR [OUTPUT_DIRECTORY DIR]): one bench binary bench_<area> per
# folder ROOT/<area>, built from every .cpp in it (and .cu where nvcc exists), so that a new
# experiment is one new file and no CMake edit. Globbed with CONFIGURE_DEPENDS: the build
# re-runs the configure step when a file or folder appears or goes. The kernel libraries an area
# links are the variable PAIRBENCH_AREA_LINK_<area> (set where the areas are added: one line per
# area that needs kernels beyond bench/common). A folder named `common` holds shared code, not an area.
function(pairbench_add_bench_areas)
  cmake_parse_arguments(ARG "" "ROOT;OUTPUT_DIRECTORY" "" ${ARGN})
  file(GLOB entries LIST_DIRECTORIES true CONFIGURE_DEPENDS ${ARG_ROOT}/*)
  list(SORT entries)
  foreach(dir IN LISTS entries)
    get_filename_component(area ${dir} NAME)
    if(NOT IS_DIRECTORY ${dir} OR area STREQUAL "common")
      continue()
    endif()
    if(NOT area MATCHES "^[a-z][a-z0-9_]*$")
      message(FATAL_ERROR "bench area folder '${dir}': expected a name of a-z, 0-9 and _ "
                          "(it becomes bench_<area> and the experiments' '<area>.' prefix)")
    endif()
    file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
    if(PAIRBENCH_HAVE_CUDA)
      file(GLOB cuda_sources CONFIGURE_DEPENDS ${dir}/*.cu)
      list(APPEND sources ${cuda_sources})
    endif()
    if(NOT sources)
      continue()  # an empty area folder (e.g. mid-way through adding one) builds nothing
    endif()
    list(SORT sources)
    set(output)
    if(ARG_OUTPUT_DIRECTORY)
      set(output OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
    endif()
    pairbench_add_bench(${area} SOURCES ${sources} LINK ${PAIRBENCH_AREA_LINK_${area}} ${output})
  endforeach()
endfunction()

# pairbench_test_pch(OPT DEFINITIONS): the target pairbench_test_pch<OPT> (OPT -O0 or -O1) whose
# precompiled header the tests compiled at OPT reuse (made once), compiled as they are: the same
# flags and definitions, or GCC would not use it.
function(pairbench_test_pch opt definitions)
  string(REPLACE "-" "_" suffix "${opt}")
  set(target pairbench_test_pch${suffix})
  if(TARGET ${target})
    return()
  endif()
  set(file ${PROJECT_BINARY_DIR}/generated/${target}.cpp)
  # Written only when its text changes, so that a re-configure does not rebuild every test.
  file(CONFIGURE OUTPUT ${file} CONTENT "// The precompiled header's owner (cmake/PairbenchHelpers.cmake): no code of its own.\n")
  add_library(${target} OBJECT ${file})
  target_link_libraries(${target} PRIVATE pairbench_flags GTest::gtest)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:${opt}>)
  target_compile_definitions(${target} PRIVATE ${definitions})
  target_precompile_headers(${target} PRIVATE
    <gtest/gtest.h> <nlohmann/json.hpp>
    <algorithm> <atomic> <chrono> <cmath> <cstdint> <filesystem> <fstream> <functional> <map>
    <memory> <optional> <set> <sstream> <string> <thread> <vector>)
endfunction()

# pairbench_add_test(NAME SOURCES ... LABELS label [LINK ...] [DEFINITIONS ...] [DEPENDS ...]
#                    [PROPERTIES ...] [OPT -O0|-O1]): a GoogleTest binary under ctest, built after DEPENDS; PROPERTIES
#                    (e.g. FIXTURES_REQUIRED postgres TIMEOUT 120) go to each of its tests;
#                    OPT its own files' optimisation in Release (default -O1).
function(pairbench_add_test name)
  cmake_parse_arguments(ARG "" "OPT" "SOURCES;LABELS;LINK;DEFINITIONS;DEPENDS;PROPERTIES" ${ARGN})
  if(NOT ARG_OPT)
    set(ARG_OPT -O1)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE pairbench_flags GTest::gtest GTest::gtest_main ${ARG_LINK})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})  # tests see the whole tree
  # A test's own files at OPT (pairbench_add_test_folder says which): the harness and kernels it
  # tests come from their libraries. GCC spends a third less on a test file at -O1 than at -O3
  # (gate_test.cpp: 14.5 s against 23 s on a 2-vCPU AMD EPYC Zen 3 VM), and 71 test files were a
  # third of CI's build.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:${ARG_OPT}>)
  if(ARG_DEFINITIONS)
    target_compile_definitions(${name} PRIVATE ${ARG_DEFINITIONS})
  endif()
  # GoogleTest, nlohmann-json and the standard headers precompiled once for every test file: they
  # were 5-8 s of each file's parse (gcc -ftime-report on claims_test.cpp, 2-vCPU Zen 3 VM).
  pairbench_test_pch(${ARG_OPT} "${ARG_DEFINITIONS}")
  string(REPLACE "-" "_" suffix "${ARG_OPT}")
  target_precompile_headers(${name} REUSE_FROM pairbench_test_pch${suffix})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" ${ARG_PROPERTIES} DISCOVERY_TIMEOUT 60)
endfunction()

# pairbench_test_exception(NAME [LABELS label] [LINK ...] [SOURCES ...] [DEPENDS ...] [PROPERTIES ...]):
# what the test binary NAME (a file NAME.cpp that pairbench_add_test_folder finds) needs beyond its
# folder's convention: LABELS replaces the folder's label, the rest is added (PROPERTIES: ctest
# properties of each of its tests, after the folder's, so a TIMEOUT here wins). Call it before the folder's
# pairbench_add_test_folder; pairbench_check_test_exceptions() then fails on an entry naming no test.
function(pairbench_test_exception name)
  set(PAIRBENCH_TEST_EXCEPTION_${name} ${ARGN} PARENT_SCOPE)
  set_property(GLOBAL APPEND PROPERTY PAIRBENCH_TEST_EXCEPTIONS ${name})
endfunction()

# pairbench_add_test_folder(FOLDER LABELS label [LINK ...] [SOURCES ...] [DEPENDS ...] [KERNEL_FAMILY]):
# one GoogleTest binary per FOLDER/*_test.cpp (FOLDER relative to the current source directory),
# named after the file, so that a new test is one new file and no CMake edit. Globbed with
# CONFIGURE_DEPENDS: the build re-runs the configure step when a test file appears or goes. Each
# binary is built from its file and SOURCES (the folder's shared sources), links LINK, is built after
# DEPENDS, is compiled with PAIRBENCH_TEST_DEFINITIONS (the same for every test), and its tests carry
# LABELS. By the test's name:
#   - a word cuda, gpu or cublas (copy_cuda_test, alloc_gpu_test): label `device` instead (needs a
#     GPU; its tests skip without one), and it links pairbench_kernels_dispatch (the CUDA seam);
#   - history_*: its tests need the PostgreSQL fixture `postgres`: FIXTURES_REQUIRED postgres, TIMEOUT 120.
# KERNEL_FAMILY: it also links pairbench_kernels_<family>, <family> being the longest leading words
# of its name that PAIRBENCH_TEST_FAMILY_<words> aliases, else that name a kernels library
# (gemm_cpu_test: gemm; allreduce_test: PAIRBENCH_TEST_FAMILY_allreduce). Anything else a test needs:
# pairbench_test_exception.
function(pairbench_add_test_folder folder)
  cmake_parse_arguments(ARG "KERNEL_FAMILY" "" "LABELS;LINK;SOURCES;DEPENDS" ${ARGN})
  list(TRANSFORM ARG_SOURCES PREPEND ${folder}/)
  file(GLOB files RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS ${folder}/*_test.cpp)
  list(SORT files)
  foreach(file IN LISTS files)
    get_filename_component(name ${file} NAME_WE)
    if(NOT name MATCHES "^[a-z][a-z0-9_]*_test$")
      message(FATAL_ERROR "test file '${file}': expected a name of a-z, 0-9 and _ ending in _test.cpp "
                          "(it becomes the test binary's name)")
    endif()
    cmake_parse_arguments(EXC "" "" "LABELS;LINK;SOURCES;DEPENDS;PROPERTIES" ${PAIRBENCH_TEST_EXCEPTION_${name}})
    set(labels ${ARG_LABELS})
    set(link ${ARG_LINK})
    set(properties)
    if(name MATCHES "(^|_)(cuda|gpu|cublas)(_|$)")
      set(labels device)
      list(APPEND link pairbench_kernels_dispatch)
    endif()
    if(name MATCHES "^history_")
      list(APPEND properties FIXTURES_REQUIRED postgres TIMEOUT 120)
    endif()
    if(ARG_KERNEL_FAMILY)
      string(REGEX REPLACE "_test$" "" words ${name})
      set(family)
      while(words)
        if(DEFINED PAIRBENCH_TEST_FAMILY_${words})
          set(family ${PAIRBENCH_TEST_FAMILY_${words}})
        elseif(TARGET pairbench_kernels_${words})
          set(family ${words})
        endif()
        if(family OR NOT words MATCHES "_")
          break()
        endif()
        string(REGEX REPLACE "_[^_]*$" "" words ${words})
      endwhile()
      if(family)
        list(APPEND link pairbench_kernels_${family})
      elseif(NOT link AND NOT EXC_LINK)
        message(FATAL_ERROR "test '${file}': no kernels family in its name; name it <family>_..._test.cpp, "
                            "alias its first word with PAIRBENCH_TEST_FAMILY_<word>, or give its LINK "
                            "with pairbench_test_exception")
      endif()
    endif()
    if(EXC_LABELS)
      set(labels ${EXC_LABELS})
    endif()
    list(APPEND properties ${EXC_PROPERTIES})
    # Kernels tests at -O1: their host references (often inline, in kernels headers) compute over
    # large inputs in the test's own file. Every other test file at -O0: it spawns processes and
    # checks what comes back, and most of its compile is code generation (gcc -ftime-report on
    # claims_test.cpp: 64 % at -O1; the file compiles in 10.5 s at -O0 against 13.7 s at -O1).
    set(opt -O0)
    if(ARG_KERNEL_FAMILY)
      set(opt -O1)
    endif()
    pairbench_add_test(${name} SOURCES ${file} ${ARG_SOURCES} ${EXC_SOURCES} LABELS ${labels}
                       LINK ${link} ${EXC_LINK} DEFINITIONS ${PAIRBENCH_TEST_DEFINITIONS}
                       DEPENDS ${ARG_DEPENDS} ${EXC_DEPENDS} PROPERTIES ${properties} OPT ${opt})
  endforeach()
endfunction()

# pairbench_check_test_exceptions(): fails on a pairbench_test_exception for a test that no longer
# exists (renamed or removed), so that the exception list cannot go stale.
function(pairbench_check_test_exceptions)
  get_property(names GLOBAL PROPERTY PAIRBENCH_TEST_EXCEPTIONS)
  foreach(name IN LISTS names)
    if(NOT TARGET ${name})
      message(FATAL_ERROR "pairbench_test_exception(${name} ...): no test file ${name}.cpp was found")
    endif()
  endforeach()
endfunction()
