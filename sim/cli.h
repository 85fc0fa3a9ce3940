/* cli.h - the simpar commands (private to sim/). main.c dispatches on the first word:
 *
 *   simpar --topology FILE [...]      the main job (cmd-predict.c)
 *   simpar schedule [...]             one layer's schedule summary (cmd-schedule.c)
 *   simpar collective [...]           one collective over a range of sizes (cmd-collective.c)
 *   simpar topology [...]             writes a platform of a preset (cmd-topology.c)
 *
 * Each command parses its own options with GOptionContext and returns FALSE with a GError for
 * anything the user got wrong; main() is the only place that prints an error.
 */
#ifndef SIMPAR_CLI_H
#define SIMPAR_CLI_H
#include "generators.h"
G_BEGIN_DECLS

#define SIMPAR_CLI_ERROR (simpar_cli_error_quark())
GQuark simpar_cli_error_quark(void);

typedef enum {
    SIMPAR_CLI_ERROR_USAGE, /* unknown flag or command, missing or malformed value */
} SimparCliError;

/* Model and plan flags shared by the commands. */
typedef struct {
    char *model;
    gint64 hidden, heads, seq, micro_batch, ffn, layers, vocab;
    char *dtype;
    char *tp_mode;
    gint64 tp, depth;
    gboolean sp;
    char *variant;
    char *recompute; /* none, selective, full */
    gboolean json;
} SimparCliJob;

void simpar_cli_job_init(SimparCliJob *job);
void simpar_cli_job_clear(SimparCliJob *job);
GOptionGroup *simpar_cli_model_group(SimparCliJob *job); /* (transfer full) */
gboolean simpar_cli_model(const SimparCliJob *job, SimparModel *model, GError **error);
/* The plan of `mode` from --tp, --depth, --sp, --variant and --recompute (not validated). */
gboolean simpar_cli_plan(const SimparCliJob *job, const char *mode, SimparPlan *plan,
                         GError **error);
gboolean simpar_cli_parse(GOptionContext *ctx, const char *command, int *argc, char ***argv,
                          GError **error);
char *simpar_cli_summary(const SimparModel *model, SimparPlan *plan, gboolean json,
                         GError **error); /* (transfer full) */

gboolean simpar_cmd_schedule(int argc, char **argv, GError **error);
gboolean simpar_cmd_topology(int argc, char **argv, GError **error);
gboolean simpar_cmd_predict(int argc, char **argv, GError **error);
gboolean simpar_cmd_collective(int argc, char **argv, GError **error);

G_END_DECLS
#endif /* SIMPAR_CLI_H */
