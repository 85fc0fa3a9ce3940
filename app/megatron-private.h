/* megatron-private.h - what megatron.c and megatron-words.c share (private to app/).
 *
 * Ownership: meg_words() returns an array of words that owns their text (meg_words_free).
 */
#ifndef SIMPAR_MEGATRON_PRIVATE_H
#define SIMPAR_MEGATRON_PRIVATE_H
#include <glib.h>
G_BEGIN_DECLS

/* A word of a script as a shell would cut it, with the variables it names substituted. */
typedef struct {
    char *text;
    guint line;        /* where it starts, from 1 */
    gboolean resolved; /* FALSE: it names something the file does not set to a plain value */
} MegWord;

GArray *meg_words(const char *text); /* (transfer full) MegWord */
void meg_words_free(GArray *words);

G_END_DECLS
#endif /* SIMPAR_MEGATRON_PRIVATE_H */
