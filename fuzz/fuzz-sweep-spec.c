/* fuzz-sweep-spec.c - sweep specs: a --spec key file ([sweep] keys named like the long flags)
 * through simpar_sweep_parse_args, then what simpar sweep checks before it runs anything:
 * simpar_sweep_resolve (the lists N, A..B, A..B:+S, A..B:*F, the names, the platform choice)
 * and simpar_sweep_identify (the sweep's identity and its configuration count). */
#include "fuzz.h"
#include "sweep.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[] = {(char *) "simpar", (char *) "--spec", (char *) fuzz_file(data, size), NULL};
    SimparSweep sw = {0};
    g_auto(GStrv) parts = NULL;
    g_autoptr(GError) error = NULL;
    if (simpar_sweep_parse_args(&sw, 3, argv, &parts, &error) &&
        simpar_sweep_resolve(&sw, &error) && simpar_sweep_identify(&sw, &error))
        g_assert(sw.total > 0);
    else
        g_assert(error != NULL);
    simpar_sweep_clear(&sw);
    return 0;
}
