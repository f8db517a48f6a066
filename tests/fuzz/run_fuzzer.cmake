# run_fuzzer.cmake: runs a libFuzzer binary for RUNS inputs over a scratch copy of its seed
# corpus, so the committed corpus never changes. Crash inputs land in ARTIFACTS.
#   cmake -DFUZZER=... -DSEEDS=... -DWORK=... -DARTIFACTS=... -DRUNS=... -P run_fuzzer.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${ARTIFACTS})
file(COPY ${SEEDS}/ DESTINATION ${WORK})
execute_process(COMMAND ${FUZZER} -runs=${RUNS} -artifact_prefix=${ARTIFACTS}/ ${WORK}
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${result}); crash inputs are in ${ARTIFACTS}")
endif()
