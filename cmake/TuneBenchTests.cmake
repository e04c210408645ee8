# How the tests are built and registered (docs/design.md, "Tests"). Three kinds:
#   logic  tests on recorded or simulated inputs and small real pieces: each under 30 s on a 2-core machine,
#          one CTest test per GoogleTest case (gtest_discover_tests), label "logic";
#   e2e    a real path end to end (a script traced and tuned, a gate, a DDP group, a window, an sshd): few,
#          each one GoogleTest suite `E2e<Area>` whose SetUpTestSuite makes the real runs once and whose cases
#          read what they left; one CTest test per suite (tb_add_e2e), label "e2e", each under 90 s;
#   measurements (speed-ups, predictions, costs, the gate's power) are benches in bench/, never CTest tests.
# scripts/check-test-times.py holds the suite to those times after every run of scripts/test.sh.

# A test translation unit compiles unoptimized: the code it tests is the optimized libraries it links, and -O0
# takes a third to a half off a GoogleTest file's compile. PCH: a precompiled header of what every test
# includes, for an executable of many files (it costs ~5.5 s of CPU and saves ~1.2 s a file that includes
# nlohmann/json and GoogleTest: a loss below ~6 files).
# OPTIMIZED keeps the build type's optimization, for tests whose time goes into inline code they share with the
# library (the tuner's simulated tunes: std::map<std::string, ...> lookups by the million): the linker keeps one
# copy of such a function for the whole executable, the first it meets, and test objects come first, so an -O0
# test file slowed the library's simulation 2.2x (TunerWorlds.FiftyRandomWorldsAt300s: 10.6 s -> 23.8 s).
function(tb_test_target target)
  cmake_parse_arguments(ARG "PCH;OPTIMIZED" "" "" ${ARGN})
  if(NOT ARG_OPTIMIZED)
    target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo,Release,MinSizeRel>:-O0>)
  endif()
  if(ARG_PCH)
    target_precompile_headers(${target} PRIVATE
      <gtest/gtest.h> <nlohmann/json.hpp> <filesystem> <fstream> <functional> <map> <memory> <optional> <sstream>
      <string> <string_view> <thread> <vector>)
  endif()
endfunction()

# The logic tests of a GoogleTest executable: every case but the E2e* suites, each its own CTest test.
# TIMEOUT is a hang guard (a wait that never ends), not the time a test is held to.
function(tb_discover_logic_tests target)
  cmake_parse_arguments(ARG "" "TEST_PREFIX;TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  set(prefix_args)
  if(ARG_TEST_PREFIX)
    set(prefix_args TEST_PREFIX ${ARG_TEST_PREFIX})
  endif()
  gtest_discover_tests(${target} ${prefix_args} TEST_FILTER "-E2e*" DISCOVERY_TIMEOUT 120
                       PROPERTIES LABELS logic TIMEOUT ${ARG_TIMEOUT})
endfunction()

# One end-to-end test: the GoogleTest suite SUITE of TARGET, run whole in one process so that its cases share
# the real runs its SetUpTestSuite made. COST puts it first on a fresh clone (CTest has no timings yet).
function(tb_add_e2e name target suite)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_test(NAME ${name} COMMAND ${target} --gtest_filter=${suite}.* --gtest_brief=0)
  set_tests_properties(${name} PROPERTIES LABELS e2e TIMEOUT ${ARG_TIMEOUT} COST 1000)
  if(ARG_RUN_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
  if(ARG_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
endfunction()
