/* megatron.h - a Megatron-LM / Megatron-Core launch line or script, read as simpar's own flags.
 *
 * `simpar predict --megatron-args FILE` reads the arguments of pretrain_gpt.py from a launch
 * line or a shell script without running it: nothing of the file reaches a shell. The script is
 * cut into words as a shell would (quotes, backslashes, line continuations, comments, bash
 * arrays), variables set in the file to plain values (TP=8, TP=${TP:-8}) are substituted, and
 * every `--flag [value]` found anywhere in it is a Megatron flag:
 *
 *   train.sh:  TP=8
 *              torchrun ... pretrain_gpt.py --tensor-model-parallel-size $TP --bf16 --lr 3e-4
 *     -> flags    {tensor-model-parallel-size: 8 (line 2), bf16, lr: 3e-4}
 *     -> simpar   --tp-mode=1d --tp=8 --dtype=bf16 ...      (parsed before the command line's
 *                                                            own flags, which win)
 *     -> notes    used: --tensor-model-parallel-size 8 -> --tp 8 ...
 *                 ignored: --lr (a training hyper-parameter: what is learned, not a step's time)
 *
 * Megatron's defaults hold where a flag is absent (tensor, pipeline and context parallelism 1,
 * tied embeddings, --cp-comm-type p2p, fp32 without --bf16/--fp16, dropout 0.1, LayerNorm,
 * biases), and data parallelism is the GPUs over TP x CP x PP, as Megatron derives it. Flag
 * names and defaults: NVIDIA/Megatron-LM megatron/training/arguments.py (tag core_v0.12.0).
 *
 * The Megatron names of flags simpar models the same way are also accepted on simpar's command
 * line (simpar_megatron_aliases): a spelling only, simpar's defaults unchanged.
 *
 * Ownership: a SimparMegatron owns its flags, the simpar arguments and the notes.
 */
#ifndef SIMPAR_MEGATRON_H
#define SIMPAR_MEGATRON_H
#include "job.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_MEGATRON_ERROR (simpar_megatron_error_quark())
GQuark simpar_megatron_error_quark(void);

typedef enum {
    SIMPAR_MEGATRON_ERROR_INVALID, /* a flag simpar needs is missing, unreadable or unmodelled */
} SimparMegatronError;

/* A Megatron argument file is read to at most this many bytes. */
#define SIMPAR_MEGATRON_MAX_BYTES ((gsize) 1 << 20)

typedef struct _SimparMegatron SimparMegatron;

/* Reads and translates the file at `path` (transfer full); NULL with an error naming the file,
 * the line and the flag. */
SimparMegatron *simpar_megatron_read(const char *path, GError **error);
/* The same from text; `name` begins its messages ("--megatron-args FILE"). */
SimparMegatron *simpar_megatron_parse(const char *text, const char *name, GError **error);
void simpar_megatron_free(SimparMegatron *meg);
/* The simpar flags ("--tp=8"), NULL-terminated (transfer none). */
const char *const *simpar_megatron_argv(const SimparMegatron *meg);
/* What was used and what was ignored, and why: lines for the text output (transfer full). */
char *simpar_megatron_describe(const SimparMegatron *meg);
/* The same as a JSON object: source, simpar_args, used [{megatron, simpar}], ignored [{flag,
 * why}]. */
void simpar_megatron_to_json(const SimparMegatron *meg, JsonBuilder *b);

/* A "megatron" option group of the Megatron names simpar accepts as aliases of its own flags,
 * storing into `args` (which must outlive it) (transfer full). */
GOptionGroup *simpar_megatron_aliases(SimparJobArgs *args);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparMegatron, simpar_megatron_free)
G_END_DECLS
#endif /* SIMPAR_MEGATRON_H */
