/* fuzz-platform.c - the platform XML check that runs before SimGrid sees a file
 * (simpar_platform_check: well-formed XML, a <platform> root, whether `simpar topology` wrote
 * it). SimGrid's own parser is not fuzzed: it ends the process on bad input by design, which is
 * why simpar loads platforms in a child process after this check. */
#include "fuzz.h"
#include "platform.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    if (!simpar_platform_check(fuzz_file(data, size), &error))
        g_assert(error != NULL);
    return 0;
}
