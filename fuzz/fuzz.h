/* fuzz.h - what the fuzz targets share: one per parser, fuzz/fuzz-<name>.c.
 *
 * Each target defines LLVMFuzzerTestOneInput(): libFuzzer calls it in the fuzz build (clang,
 * -Dfuzz=enabled, fuzz/run.sh) and fuzz/replay.c calls it on every file of the target's corpus
 * and regressions in the normal build (meson test --suite fuzz). A target feeds the input to
 * its parser, frees what it got back (GError included) and returns 0; a bug shows as a crash,
 * a leak, a sanitizer report, a GLib critical or a failed g_assert on a property of the result.
 *
 *   input bytes --fuzz_file()--> /tmp/simpar-fuzz-XXXXXX --> a loader that takes a path
 *               --fuzz_words()-> {"simpar", word, ...}   --> a GOptionContext parser
 *
 * Ownership: fuzz_file() keeps the file and its path (one per process, rewritten per input);
 * fuzz_words() returns a vector the caller frees (g_strfreev).
 */
#ifndef SIMPAR_FUZZ_H
#define SIMPAR_FUZZ_H
#include <glib.h>
#include <stdint.h>
G_BEGIN_DECLS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* fuzz.c, once per process: a GLib critical or warning (a g_return_if_fail on input) aborts,
 * so that libFuzzer keeps the input as a crash. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input written to this process's temporary file, whose path is returned (transfer none). */
const char *fuzz_file(const uint8_t *data, size_t size);
/* "simpar" followed by the input's words, separated by NUL or newline bytes (transfer full). */
char **fuzz_words(const uint8_t *data, size_t size);

G_END_DECLS
#endif /* SIMPAR_FUZZ_H */
