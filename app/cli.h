/* cli.h - the simpar commands (private to app/). main.c dispatches on the first word:
 *
 *   simpar --topology FILE [...]      the main job (cmd-predict.c)
 *   simpar schedule [...]             one layer's schedule summary (cmd-schedule.c)
 *   simpar collective [...]           one collective over a range of sizes (cmd-collective.c)
 *   simpar topology [...]             writes a platform of a preset (cmd-topology.c)
 *   simpar validate [...]             a measured run against its prediction (cmd-validate.c)
 *   simpar calibrate [...]            fits the compute and link figures to microbenchmarks
 *                                     (cmd-calibrate.c)
 *   simpar sweep [...]                capacity planning: many configurations into a CSV
 *                                     (cmd-sweep.c, sweep.h)
 *   simpar plot KIND INPUT -o OUT     a picture of a saved output (cmd-plot.c, plot.c)
 *
 * Each command parses its own options with GOptionContext and returns FALSE with a GError for
 * anything the user got wrong; main() is the only place that prints an error.
 */
#ifndef SIMPAR_CLI_H
#define SIMPAR_CLI_H
#include "backend.h"
#include "generators.h"
#include "job.h"
#include "output.h"
#include "platform.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_CLI_ERROR (simpar_cli_error_quark())
GQuark simpar_cli_error_quark(void);

typedef enum {
    SIMPAR_CLI_ERROR_USAGE, /* unknown flag or command, missing or malformed value */
} SimparCliError;

/* The commands: `simpar NAME ...` runs `run` with "simpar" and the options after NAME; the
 * program's help lists them from this table (simpar_cli_commands_help). */
typedef struct {
    const char *name;
    const char *description;
    gboolean (*run)(int argc, char **argv, GError **error);
} SimparCommand;

const SimparCommand *simpar_commands(guint *n); /* (transfer none) */
/* "Commands:" and one line per command, for simpar --help (transfer full). */
char *simpar_cli_commands_help(void);
/* (transfer full): the commands' names, "schedule, predict, ...", from the table. */
char *simpar_cli_command_names(void);

gboolean simpar_cli_parse(GOptionContext *ctx, const char *command, int *argc, char ***argv,
                          GError **error);
/* Exit status of a failed command, one rule: 2 when the command line is at fault (an option,
 * its value, or a split or shape the options ask for that cannot be built or run: CLI, job,
 * plan, predict and backend errors), 1 when a file is (a platform, model, calibration, measured
 * run or trace) or a run fails. */
int simpar_cli_exit_status(const GError *error);
/* Sets a SIMPAR_CLI_ERROR_USAGE error from a printf format; returns FALSE. */
gboolean simpar_cli_usage(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
char *simpar_cli_summary(const SimparModel *model, SimparPlan *plan, gboolean json,
                         GError **error); /* (transfer full) */

gboolean simpar_cmd_schedule(int argc, char **argv, GError **error);
gboolean simpar_cmd_topology(int argc, char **argv, GError **error);
gboolean simpar_cmd_predict(int argc, char **argv, GError **error);
gboolean simpar_cmd_collective(int argc, char **argv, GError **error);
gboolean simpar_cmd_validate(int argc, char **argv, GError **error);
gboolean simpar_cmd_calibrate(int argc, char **argv, GError **error);

/* What simpar collective runs for one size (cmd-collective.c): the collective `kind` of `size`
 * bytes (rounded to whole fp32 elements per member) on the platform's first n GPUs, run by
 * `backend` with `base`'s algorithm, parameters and mode; returns its time. */
typedef struct {
    double bytes, count;      /* the size S run and its elements */
    const char *algo, *proto; /* what ran (static) */
} SimparCollResult;

double simpar_collective_time(const SimparPlatform *platform, const SimparBackend *backend,
                              const SimparRun *base, SimparCollKind kind, guint n, double size,
                              SimparCollResult *out);
/* simpar validate --published SET (validate-published.c): every case of a published table of
 * step times (topologies/published.ini) predicted by `backend`, against the published time; the
 * table or JSON into `out`. */
gboolean simpar_validate_published(const char *set, const char *backend, gboolean json,
                                   GString *out, GError **error);
/* The prediction row that a published case's run printed (`out`, simpar --json): the first
 * element of a JSON array, an object with a positive "step_time_s", a "split", "gpus",
 * "memory_per_gpu_gib", "memory": {"capacity_gib"}, "config": {"global_batch"} and
 * "model_dims": {"seq"}. NULL, with one line naming case `name` and its `err` output, when the
 * run printed anything else (nothing, a cut or empty array): never a row of zeros.
 * (transfer none: owned by `parser`) */
JsonObject *simpar_published_row(JsonParser *parser, const char *name, const char *out,
                                 const char *err, GError **error);
/* A calibration file's "format": "simpar-calibration" and "version" (docs/schemas/), first in
 * the object `b` is writing (calibrate-nccl.c; cmd-calibrate.c too). */
void simpar_calibration_json_head(JsonBuilder *b);
/* simpar calibrate --nccl-tests LOG... --topology FILE -o CALIB.json (calibrate-nccl.c). */
gboolean simpar_calibrate_nccl_tests(char **logs, const char *topology, const char *output,
                                     GError **error);
/* FALSE, nothing written, when a fitted figure is one a calibration file may not hold (the
 * loaders' ranges: simpar predict would refuse the file). */
gboolean simpar_calibration_figure_check(const char *key, double v, GError **error);
gboolean simpar_cmd_sweep(int argc, char **argv, GError **error);
gboolean simpar_cmd_plot(int argc, char **argv, GError **error);

G_END_DECLS
#endif /* SIMPAR_CLI_H */
