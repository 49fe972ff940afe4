/*
** ctest.h -- a small test harness for the engine's C tests. Each test file
** defines TEST(name) functions and lists them in main with RUN(name); CHECK
** records a failure and goes on. The last line is "C-CASES: P passed, F
** failed", which tools/run-tests.sh sums with the Lua specs.
*/
#ifndef EMBER_CTEST_H
#define EMBER_CTEST_H

#include <stdio.h>
#include <string.h>

#include "ember.h"

static int ctest_failed_checks, ctest_pass, ctest_fail;

#define TEST(name) static void name(void)
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ctest_failed_checks++;                                               \
      printf("  check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);   \
    }                                                                      \
  } while (0)
#define CHECK_OK(call)                                                     \
  do {                                                                     \
    em_status st_ = (call);                                                \
    if (st_ != EM_OK) {                                                    \
      ctest_failed_checks++;                                               \
      printf("  call failed: %s: %s (%s:%d)\n", #call, em_last_error(),   \
             __FILE__, __LINE__);                                          \
    }                                                                      \
  } while (0)
#define CHECK_ERR(call, needle)                                            \
  do {                                                                     \
    em_status st_ = (call);                                                \
    if (st_ == EM_OK || !strstr(em_last_error(), needle)) {               \
      ctest_failed_checks++;                                               \
      printf("  expected an error containing \"%s\" from %s, got \"%s\" (%s:%d)\n", \
             needle, #call, st_ == EM_OK ? "success" : em_last_error(),   \
             __FILE__, __LINE__);                                          \
    }                                                                      \
  } while (0)
#define RUN(name)                                                          \
  do {                                                                     \
    int before_ = ctest_failed_checks;                                     \
    name();                                                                \
    if (ctest_failed_checks == before_) { ctest_pass++; printf("ok %s\n", #name); } \
    else { ctest_fail++; printf("FAIL %s\n", #name); }                     \
  } while (0)
#define CTEST_END()                                                        \
  (printf("C-CASES: %d passed, %d failed\n", ctest_pass, ctest_fail),     \
   ctest_fail ? 1 : 0)

#endif
