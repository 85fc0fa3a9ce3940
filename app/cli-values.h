/* cli-values.h - the grammar of the sizes and lists simpar's flags take, in one place for every
 * command (docs/usage.md, "Sizes and lists"):
 *
 *   SIZE  N[UNIT]  a whole number of bytes; UNIT K, M, G or T, powers of 1024, in either case,
 *                  optionally followed by i and B: 64K = 64Ki = 64KiB = 65536; 8 = 8B
 *   LIST  ITEM[,ITEM...]  each ITEM one of
 *           N          a number
 *           A..B       A to B (also A-B); by 1, or by doubling on the flags whose values
 *                      double (--gpus, --tp, --pp, --dp, ... of simpar sweep)
 *           A..B:+S    A, A+S, ... up to B
 *           A..B:*F    A, A*F, ... up to B
 *
 * Flags: collective --bytes, --min-bytes, --max-bytes (SIZE); every list of simpar sweep, the
 * --trace-ranks of the main job and the --ranks of simpar plot (LIST). Every error is
 * SIMPAR_CLI_ERROR_USAGE naming the flag, the value and the valid forms.
 */
#ifndef SIMPAR_CLI_VALUES_H
#define SIMPAR_CLI_VALUES_H
#include <glib.h>
G_BEGIN_DECLS

typedef enum {
    SIMPAR_CLI_LIST_DOUBLING = 1 << 0,   /* A..B without a step doubles */
    SIMPAR_CLI_LIST_REPEATS_OK = 1 << 1, /* a value given twice is kept once, not refused */
} SimparCliListFlags;

/* `text`, a SIZE, into *out, refused outside [min, max]; `flag` as given ("--bytes"). */
gboolean simpar_cli_parse_size(const char *flag, const char *text, guint64 min, guint64 max,
                               guint64 *out, GError **error);
/* `text`, a LIST of whole numbers each in [min, max], at most `max_values` of them, appended to
 * `out` (gint64) in the order given. */
gboolean simpar_cli_parse_list(const char *flag, const char *text, gint64 min, gint64 max,
                               guint max_values, SimparCliListFlags flags, GArray *out,
                               GError **error);

G_END_DECLS
#endif /* SIMPAR_CLI_VALUES_H */
