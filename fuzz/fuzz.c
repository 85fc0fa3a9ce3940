/* fuzz.c - the helpers of the fuzz targets (fuzz.h). */
#include "fuzz.h"
#include <glib/gstdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *fuzz_path; /* the process's temporary file, removed at exit */

static GLogWriterOutput
fuzz_log(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer data)
{
    GLogWriterOutput out = g_log_writer_standard_streams(level, fields, n_fields, data);
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
        abort();
    return out;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc, (void) argv;
    g_log_set_writer_func(fuzz_log, NULL, NULL);
    return 0;
}

static void
fuzz_remove(void)
{
    g_unlink(fuzz_path);
    g_clear_pointer(&fuzz_path, g_free);
}

const char *
fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = g_file_open_tmp("simpar-fuzz-XXXXXX", &fuzz_path, NULL);
        g_assert(fd >= 0);
        atexit(fuzz_remove);
    }
    g_assert(ftruncate(fd, 0) == 0);
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t) done);
        g_assert(n > 0);
        done += (size_t) n;
    }
    return fuzz_path; /* (transfer none) */
}

char **
fuzz_words(const uint8_t *data, size_t size)
{
    GPtrArray *words = g_ptr_array_new();
    g_ptr_array_add(words, g_strdup("simpar"));
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\0' && data[i] != '\n')
            continue;
        if (i < size || i > start) /* no empty word after a final separator */
            g_ptr_array_add(words, g_strndup((const char *) data + start, i - start));
        start = i + 1;
    }
    g_ptr_array_add(words, NULL);
    return (char **) g_ptr_array_free(words, FALSE); /* (transfer full) */
}
