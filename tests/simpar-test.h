/* simpar-test.h - the common main() of the CUnit suites.
 *
 * Each test file ends with CU_TestInfo / CU_SuiteInfo arrays and
 * `return simpar_test_main(suites);`. Runs verbosely (CI reads CUnit's "Run Summary"); returns
 * 1 on failures and 99 if CUnit itself failed (meson: ERROR).
 */
#ifndef SIMPAR_TEST_H
#define SIMPAR_TEST_H
#include <CUnit/Basic.h>

static inline int
simpar_test_main(CU_SuiteInfo *suites)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 99;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (CU_basic_run_tests() != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 99;
    }
    unsigned failures = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures != 0;
}

#endif /* SIMPAR_TEST_H */
