/* fuzz-megatron.c - Megatron launch scripts (--megatron-args FILE): the file read as simpar
 * reads it (simpar_megatron_read: shell words, variables, the flags' translation), then what
 * a translation promises: simpar flags that simpar's own job options parse, and a description
 * of what was used and ignored. */
#include "fuzz.h"
#include "job.h"
#include "megatron.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg = simpar_megatron_read(fuzz_file(data, size), &error);
    if (meg == NULL) {
        g_assert(error != NULL);
        return 0;
    }
    g_autofree char *text = simpar_megatron_describe(meg);
    g_assert(text != NULL && g_str_has_prefix(text, "Megatron arguments"));
    for (const char *const *a = simpar_megatron_argv(meg); *a != NULL; a++)
        g_assert(g_str_has_prefix(*a, "--"));
    return 0;
}
