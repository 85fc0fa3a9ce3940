/* replay.c - the fuzz targets without libFuzzer: every file of the directories given, in name
 * order, through LLVMFuzzerTestOneInput (fuzz.h). A directory that does not exist is skipped
 * (a target without regressions). Exit status 0 when every input returned. */
#include "fuzz.h"
#include <stdio.h>
#include <string.h>

static gint
replay_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static guint
replay_dir(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (d == NULL)
        return 0;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *name; (name = g_dir_read_name(d)) != NULL;)
        g_ptr_array_add(names, g_build_filename(dir, name, NULL));
    g_ptr_array_sort(names, replay_cmp);
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *data = NULL;
        gsize len;
        g_autoptr(GError) error = NULL;
        if (!g_file_get_contents(names->pdata[i], &data, &len, &error))
            g_error("%s", error->message);
        printf("%s (%" G_GSIZE_FORMAT " bytes)\n", (const char *) names->pdata[i], len);
        fflush(stdout); /* a crash names its input */
        LLVMFuzzerTestOneInput((const uint8_t *) data, len);
    }
    return names->len;
}

int
main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    guint n = 0;
    for (int i = 1; i < argc; i++)
        n += replay_dir(argv[i]);
    printf("%u inputs replayed without a crash\n", n);
    return n > 0 ? 0 : 1;
}
