/* fuzz-calibration.c - calibration files (--calibration FILE, what simpar calibrate writes):
 * simpar_gpu_load_calibration over a GPU's figures, then simpar_gpu_validate. */
#include "compute.h"
#include "fuzz.h"
#include <math.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    SimparGpu gpu;
    simpar_gpu_init(&gpu);
    if (!simpar_gpu_load_calibration(&gpu, fuzz_file(data, size), &error)) {
        g_assert(error != NULL);
        return 0;
    }
    for (SimparDtype dt = SIMPAR_DTYPE_FP16; dt <= SIMPAR_DTYPE_FP64; dt++) {
        g_autoptr(GError) invalid = NULL;
        if (simpar_gpu_validate(&gpu, dt, &invalid)) {
            double t = simpar_compute_gemm_time(&gpu, dt, 64, 64, 64, 1);
            g_assert(isfinite(t) && t > 0);
        }
    }
    return 0;
}
