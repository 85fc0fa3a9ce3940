/* fuzz-nccl-tests.c - nccl-tests output (simpar calibrate --nccl-tests LOG): simpar_nccl_log_read.
 * A log it accepts names a test, has two ranks or more on one host or more, and rows whose sizes
 * and times are positive and finite. */
#include "fuzz.h"
#include "nccl-log.h"
#include <math.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    SimparNcclLog log;
    gboolean ok = simpar_nccl_log_read(fuzz_file(data, size), &log, &error);
    g_assert(ok == (error == NULL));
    if (ok) {
        g_assert(log.test != NULL && log.ranks >= 2 && log.nodes >= 1 && log.rows->len > 0);
        for (guint i = 0; i < log.rows->len; i++) {
            const SimparNcclRow *r = &g_array_index(log.rows, SimparNcclRow, i);
            g_assert(r->bytes > 0 && isfinite(r->bytes) && r->time_s > 0 && isfinite(r->time_s));
        }
    }
    simpar_nccl_log_clear(&log);
    return 0;
}
