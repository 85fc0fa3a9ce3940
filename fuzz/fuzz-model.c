/* fuzz-model.c - model JSON files (--model FILE): simpar_model_load_json. */
#include "fuzz.h"
#include "model.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    SimparModel m;
    if (simpar_model_load_json(fuzz_file(data, size), &m, &error))
        g_assert(simpar_model_validate(&m, NULL)); /* what the loader returns is valid */
    else
        g_assert(error != NULL);
    return 0;
}
