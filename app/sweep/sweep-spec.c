/* sweep-spec.c - the sweep's options: lists, checks, identity and the enumeration. */
#include "cli-values.h"
#include "cli.h"
#include "generators.h"
#include "model.h"
#include "predict-config.h"
#include "sweep.h"
#include <string.h>

G_DEFINE_QUARK(simpar_sweep_error_quark, simpar_sweep_error)

/* More values than this in one list, or configurations than SWEEP_MAX_CONFIGS in a sweep,
 * are refused as absurd. */
#define SWEEP_MAX_VALUES  4096
#define SWEEP_MAX_CONFIGS 1000000

static const struct {
    const char *flag;
    gboolean doubling; /* A..B doubles (sizes) or steps by 1 (grid sides) */
    gint64 min, max;
} sweep_axes[SIMPAR_SWEEP_N_NUMBERS] = {
    [SIMPAR_SWEEP_GPUS] = {"gpus", TRUE, 1, 1 << 20},
    [SIMPAR_SWEEP_TP] = {"tp", TRUE, 1, 1 << 20},
    [SIMPAR_SWEEP_Q] = {"q", FALSE, 1, 1024},
    [SIMPAR_SWEEP_DEPTH] = {"depth", FALSE, 1, 1024},
    [SIMPAR_SWEEP_PP] = {"pp", TRUE, 1, 1 << 20},
    [SIMPAR_SWEEP_DP] = {"dp", TRUE, 1, 1 << 20},
    [SIMPAR_SWEEP_MICRO_BATCH] = {"micro-batch", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_GLOBAL_BATCH] = {"global-batch", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_HIDDEN] = {"hidden", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_LAYERS] = {"layers", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_SEQ] = {"seq", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_KV_HEADS] = {"kv-heads", TRUE, 1, SIMPAR_MODEL_MAX_DIM},
    [SIMPAR_SWEEP_SHARD_GROUP] = {"shard-group", TRUE, 1, 1 << 20},
    [SIMPAR_SWEEP_CP] = {"cp", TRUE, 1, 65536},
    [SIMPAR_SWEEP_EP] = {"ep", TRUE, 1, 1 << 20},
};

static const char *const sweep_name_flags[SIMPAR_SWEEP_N_NAMES] = {
    "tp-mode", "model", "recompute", "schedule", "cp-mode", "precision"};

/* The items of --precision: a model dtype, or fp8 with its recipe (fp8: delayed). */
static const char *const sweep_precisions[] = {
    "fp16", "bf16", "fp32", "fp64", "fp8", "fp8-delayed", "fp8-current", "fp8-mxfp8", NULL};

/* A refusal from another module, as a usage error (exit status 2). */
static gboolean
sweep_usage_from(GError **error, GError *local)
{
    simpar_cli_usage(error, "%s", local->message);
    g_error_free(local);
    return FALSE;
}

/* ------------------------------------------------------------------------------------ lists */

gboolean
simpar_sweep_parse_list(const char *flag, const char *text, gboolean doubling, gint64 min,
                        gint64 max, GArray *out, GError **error)
{
    g_autofree char *dashed = g_strconcat("--", flag, NULL);
    return simpar_cli_parse_list(dashed, text, min, max, SWEEP_MAX_VALUES,
                                 doubling ? SIMPAR_CLI_LIST_DOUBLING : 0, out, error);
}

/* One name of a name list, checked; `all` for --tp-mode. */
static gboolean
sweep_check_name(SimparSweepNames which, const char *name, GError **error)
{
    GError *local = NULL;
    SimparRecompute r;
    SimparPipeSchedule s;
    gboolean ok = TRUE, ring;
    if (which == SIMPAR_SWEEP_MODES)
        ok = simpar_generator_lookup(name, &local) != NULL;
    else if (which == SIMPAR_SWEEP_RECOMPUTE)
        ok = simpar_recompute_parse(name, &r, &local);
    else if (which == SIMPAR_SWEEP_PRECISION && !g_strv_contains(sweep_precisions, name))
        return simpar_cli_usage(error,
                                "--precision %s: valid are fp16, bf16, fp32, fp64, fp8 (delayed "
                                "scaling), fp8-delayed, fp8-current, fp8-mxfp8",
                                name);
    else if (which == SIMPAR_SWEEP_CP_MODE)
        ok = simpar_job_cp_mode_parse(name, &ring, &local);
    else if (which == SIMPAR_SWEEP_SCHEDULE && simpar_pipe_schedule_parse(name, &s, &local) &&
             s == SIMPAR_PIPE_LOCAL)
        return simpar_cli_usage(error, "--schedule local: simpar sweep does not sweep local "
                                       "parallelism (valid: gpipe, 1f1b, interleaved)");
    return local == NULL && ok ? TRUE : sweep_usage_from(error, local);
}

static gboolean
sweep_parse_names(SimparSweep *sw, SimparSweepNames which, GError **error)
{
    const char *text = sw->args.names[which];
    const char *flag = sweep_name_flags[which];
    GPtrArray *out = sw->names[which];
    if (text == NULL)
        text = which == SIMPAR_SWEEP_MODES    ? "all"
               : which == SIMPAR_SWEEP_MODELS ? SIMPAR_PREDICT_DEFAULT_MODEL
                                              : NULL;
    g_autofree char *trimmed = text != NULL ? g_strstrip(g_strdup(text)) : NULL;
    if (trimmed != NULL && which == SIMPAR_SWEEP_MODES && g_str_equal(trimmed, "all")) {
        guint n;
        const SimparGenerator *gens = simpar_generators(&n);
        for (guint i = 0; i < n; i++)
            g_ptr_array_add(out, g_strdup(gens[i].name));
        return TRUE;
    }
    g_auto(GStrv) items = text != NULL ? g_strsplit(text, ",", -1) : g_new0(char *, 1);
    for (guint i = 0; items[i] != NULL; i++) {
        const char *item = g_strstrip(items[i]);
        if (item[0] == '\0')
            return simpar_cli_usage(error, "--%s '%s': an empty item (comma-separated names)", flag,
                                    text);
        for (guint j = 0; j < out->len; j++)
            if (g_str_equal(out->pdata[j], item))
                return simpar_cli_usage(error, "--%s %s: %s appears twice", flag, text, item);
        if (which != SIMPAR_SWEEP_MODELS && !sweep_check_name(which, item, error))
            return FALSE;
        g_ptr_array_add(out, g_strdup(item));
    }
    return TRUE;
}

/* The base models of --model, with --vocab, --dtype and --fp8-recipe (the shapes are per
 * configuration). */
static gboolean
sweep_load_models(SimparSweep *sw, GError **error)
{
    GPtrArray *names = sw->names[SIMPAR_SWEEP_MODELS];
    for (guint i = 0; i < names->len; i++) {
        SimparJobArgs a;
        simpar_job_args_init(&a);
        a.model = names->pdata[i], a.vocab = sw->args.job.vocab, a.dtype = sw->args.job.dtype;
        a.fp8_recipe = sw->args.job.fp8_recipe;
        SimparModel m;
        GError *local = NULL;
        if (!simpar_job_model(&a, SIMPAR_PREDICT_DEFAULT_MODEL, &m, &local))
            return sweep_usage_from(error, local);
        g_array_append_val(sw->models, m);
    }
    return TRUE;
}

/* ----------------------------------------------------------------------------- the options */

/* `flag` (its list given) needs a mode with `fact` in the sweep: `what` it is, `tail` more. */
static gboolean
sweep_axis_applies(const SimparSweep *sw, SimparSweepAxis axis, const char *flag,
                   SimparGenFact fact, const char *what, const char *tail, GError **error)
{
    const char *value = sw->args.numbers[axis];
    const GPtrArray *modes = sw->names[SIMPAR_SWEEP_MODES];
    for (guint i = 0; value != NULL && i < modes->len; i++)
        if (simpar_generator_has(simpar_generator_of(modes->pdata[i]), fact))
            return TRUE;
    if (value == NULL)
        return TRUE;
    g_autofree char *names = simpar_generator_list(fact, SIMPAR_GEN_NAME, "or");
    return simpar_cli_usage(error, "%s %s: %s needs %s in --tp-mode%s", flag, value, what, names,
                            tail);
}

/* --tp is 1-D's, --q the grids', --depth 2.5-D's: each needs its mode in the sweep. */
static gboolean
sweep_check_axes(const SimparSweep *sw, GError **error)
{
    g_autofree char *line = simpar_generator_list(SIMPAR_GEN_LINE, SIMPAR_GEN_LABEL, "or");
    g_autofree char *grids = simpar_generator_list(SIMPAR_GEN_GRID, SIMPAR_GEN_NAME, "and");
    g_autofree char *tp = g_strdup_printf("the %s tensor-parallel size", line);
    g_autofree char *tail = g_strdup_printf(" (%s take --q and --depth)", grids);
    return sweep_axis_applies(sw, SIMPAR_SWEEP_TP, "--tp", SIMPAR_GEN_LINE, tp, tail, error) &&
           sweep_axis_applies(sw, SIMPAR_SWEEP_Q, "--q", SIMPAR_GEN_GRID, "the grid side", "",
                              error) &&
           sweep_axis_applies(sw, SIMPAR_SWEEP_DEPTH, "--depth", SIMPAR_GEN_LAYERS, "the depth", "",
                              error);
}

/* The single-valued job options, checked once (a wrong one would refuse every row). */
static gboolean
sweep_check_job(const SimparSweep *sw, GError **error)
{
    const SimparJobArgs *j = &sw->args.job;

    const struct {
        const char *flag;
        gint64 v;
    } dims[] = {{"heads", j->heads}, {"ffn", j->ffn}, {"vocab", j->vocab}};

    for (guint i = 0; i < G_N_ELEMENTS(dims); i++)
        if (dims[i].v != SIMPAR_JOB_UNSET && (dims[i].v < 1 || dims[i].v > SIMPAR_MODEL_MAX_DIM))
            return simpar_cli_usage(
                error, "--%s %" G_GINT64_FORMAT ": must be from 1 to %" G_GINT64_FORMAT,
                dims[i].flag, dims[i].v, SIMPAR_MODEL_MAX_DIM);
    if (sw->names[SIMPAR_SWEEP_PRECISION]->len > 0 && (j->dtype != NULL || j->fp8_recipe != NULL))
        return simpar_cli_usage(error, "--precision replaces --dtype and --fp8-recipe: give the "
                                       "precisions in its list (fp8-current, ...)");
    SimparMlp mlp;
    SimparNorm norm;
    GError *flavour = NULL;
    if (j->mlp != NULL && !simpar_mlp_parse(j->mlp, &mlp, &flavour)) {
        g_prefix_error(&flavour, "--mlp: ");
        return sweep_usage_from(error, flavour);
    }
    if (j->norm != NULL && !simpar_norm_parse(j->norm, &norm, &flavour)) {
        g_prefix_error(&flavour, "--norm: ");
        return sweep_usage_from(error, flavour);
    }
    if (j->variant != NULL && !g_str_equal(j->variant, "paper") &&
        !g_str_equal(j->variant, "later"))
        return simpar_cli_usage(error, "--variant %s: valid are paper and later", j->variant);
    SimparTrain train;
    GError *local = NULL;
    return simpar_job_train(j, &train, &local) ? TRUE : sweep_usage_from(error, local);
}

static gboolean
sweep_resolve_predict(SimparSweep *sw, GError **error)
{
    GError *local = NULL;
    SimparPredictContext ctx = {0};
    if (!simpar_predict_args_resolve(&sw->args.predict, "analytic", &ctx, &local))
        return sweep_usage_from(error, local);
    sw->backend = ctx.backend, sw->run = ctx.run, sw->attention = ctx.attention;
    sw->all_slices = ctx.all_slices, sw->block_backend = ctx.block_backend;
    sw->budget_s = ctx.budget_s;
    if (!simpar_attention_check_fp8(sw->args.job.fp8_attention, sw->attention, &local))
        return sweep_usage_from(error, local);
    return TRUE;
}

gboolean
simpar_sweep_parse_rank_by(const char *name, SimparSweepRankBy *out, GError **error)
{
    const char *rank[] = {"time", "throughput", "cost"};
    for (guint i = 0; i < G_N_ELEMENTS(rank); i++)
        if (g_str_equal(name != NULL ? name : "throughput", rank[i])) {
            *out = (SimparSweepRankBy) i;
            return TRUE;
        }
    return simpar_cli_usage(error, "--rank-by %s: valid are throughput (default), time and cost",
                            name);
}

static gboolean
sweep_resolve_run(SimparSweep *sw, GError **error)
{
    const SimparSweepArgs *a = &sw->args;
    if (!simpar_sweep_parse_rank_by(a->rank_by, &sw->rank_by, error))
        return FALSE;
    if (a->jobs != SIMPAR_JOB_UNSET && (a->jobs < 1 || a->jobs > 1024))
        return simpar_cli_usage(
            error, "--jobs %" G_GINT64_FORMAT ": from 1 to 1024 worker processes", a->jobs);
    sw->jobs = a->jobs != SIMPAR_JOB_UNSET ? (guint) a->jobs : g_get_num_processors();
    if (a->output == NULL)
        return simpar_cli_usage(error, "simpar sweep: -o FILE is required (the CSV to write)");
    if (!simpar_output_check("-o", a->output, "the CSV file", error))
        return FALSE;
    if (a->shard != NULL) {
        guint64 i, n;
        char *end = NULL;
        i = g_ascii_strtoull(a->shard, &end, 10);
        if (end == a->shard || *end != '/' ||
            !g_ascii_string_to_unsigned(end + 1, 10, 1, 1 << 20, &n, NULL) || i >= n)
            return simpar_cli_usage(error, "--shard %s: give i/n with 0 <= i < n (e.g. 0/4)",
                                    a->shard);
        sw->shard = (guint) i, sw->n_shards = (guint) n;
    }
    if (a->refine != SIMPAR_JOB_UNSET && (a->refine < 0 || a->refine > 10000))
        return simpar_cli_usage(
            error, "--refine %" G_GINT64_FORMAT ": from 0 to 10000 configurations", a->refine);
    if (a->refine > 0 && sw->backend->contention)
        return simpar_cli_usage(error,
                                "--refine %" G_GINT64_FORMAT ": refines an analytic or formula "
                                "sweep with SimGrid; this one already runs on --backend %s",
                                a->refine, sw->backend->name);
    if (a->refine > 0 && sw->n_shards > 0)
        return simpar_cli_usage(error, "--refine with --shard: refinement needs every row; refine "
                                       "after --merge with an unsharded run, or leave it out");
    return TRUE;
}

guint
simpar_sweep_node_gpus(const SimparSweep *sw)
{
    g_return_val_if_fail(sw->preset != NULL, 1);
    return sw->args.rack_gpus > 0 ? (guint) sw->args.rack_gpus : sw->preset->gpus_per_node;
}

static gboolean
sweep_resolve_platform(SimparSweep *sw, GError **error)
{
    const SimparSweepArgs *a = &sw->args;
    if ((a->preset == NULL) == (a->topology == NULL))
        return simpar_cli_usage(error,
                                "simpar sweep: give either --preset NAME with --gpus LIST (a "
                                "generated platform per GPU count) or --topology FILE");
    if (a->preset != NULL && (sw->preset = simpar_topology_lookup(a->preset)) == NULL)
        return simpar_cli_usage(error, "--preset %s: unknown (see simpar topology --list)",
                                a->preset);
    if (a->preset != NULL && a->numbers[SIMPAR_SWEEP_GPUS] == NULL)
        return simpar_cli_usage(error, "--preset %s needs --gpus LIST (e.g. --gpus 64..4096)",
                                a->preset);
    if (a->rack_gpus != 0 && (sw->preset == NULL || !sw->preset->racks))
        return simpar_cli_usage(error, "--rack-gpus is for a rack-scale --preset such as "
                                       "gb200-nvl72 (each rack one NVLink domain)");
    g_autofree char *rack_why =
        a->rack_gpus != 0 ? simpar_topology_rack_gpus_invalid(sw->preset, a->rack_gpus) : NULL;
    if (rack_why != NULL)
        return simpar_cli_usage(error, "%s", rack_why);
    GArray *gpus = sw->numbers[SIMPAR_SWEEP_GPUS];
    for (guint i = 0; sw->preset != NULL && i < gpus->len; i++) {
        gint64 g = g_array_index(gpus, gint64, i), per = simpar_sweep_node_gpus(sw);
        if ((g + per - 1) / per > SIMPAR_TOPOLOGY_MAX_NODES)
            return simpar_cli_usage(error, "--gpus %" G_GINT64_FORMAT ": more than %d nodes of %s",
                                    g, SIMPAR_TOPOLOGY_MAX_NODES, sw->preset->name);
    }
    return TRUE;
}

gboolean
simpar_sweep_resolve(SimparSweep *sw, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < SIMPAR_SWEEP_N_NUMBERS; i++) {
        sw->numbers[i] = g_array_new(FALSE, FALSE, sizeof(gint64));
        if (sw->args.numbers[i] != NULL &&
            !simpar_sweep_parse_list(sweep_axes[i].flag, sw->args.numbers[i],
                                     sweep_axes[i].doubling, sweep_axes[i].min, sweep_axes[i].max,
                                     sw->numbers[i], error))
            return FALSE;
    }
    for (guint i = 0; i < SIMPAR_SWEEP_N_NAMES; i++) {
        sw->names[i] = g_ptr_array_new_with_free_func(g_free);
        if (!sweep_parse_names(sw, (SimparSweepNames) i, error))
            return FALSE;
    }
    sw->models = g_array_new(FALSE, FALSE, sizeof(SimparModel));
    sw->platform_nodes = g_array_new(FALSE, FALSE, sizeof(guint));
    return sweep_resolve_platform(sw, error) && sweep_load_models(sw, error) &&
           sweep_check_axes(sw, error) && sweep_check_job(sw, error) &&
           sweep_resolve_predict(sw, error) && sweep_resolve_run(sw, error);
}

void
simpar_sweep_clear(SimparSweep *sw)
{
    SimparSweepArgs *a = &sw->args;
    for (guint i = 0; i < SIMPAR_SWEEP_N_NUMBERS; i++) {
        g_clear_pointer(&a->numbers[i], g_free);
        if (sw->numbers[i] != NULL)
            g_array_free(g_steal_pointer(&sw->numbers[i]), TRUE);
    }
    for (guint i = 0; i < SIMPAR_SWEEP_N_NAMES; i++) {
        g_clear_pointer(&a->names[i], g_free);
        g_clear_pointer(&sw->names[i], g_ptr_array_unref);
    }
    char **strs[] = {&a->preset, &a->topology, &a->output,  &a->rank_by, &a->shard,
                     &a->spec,   &a->plot,     &a->summary, &sw->id,     &sw->spec_text};
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
    simpar_job_args_clear(&a->job);
    simpar_predict_args_clear(&a->predict);
    g_clear_pointer(&a->spec_keys, g_ptr_array_unref);
    if (sw->models != NULL)
        g_array_free(g_steal_pointer(&sw->models), TRUE);
    if (sw->platform_nodes != NULL)
        g_array_free(g_steal_pointer(&sw->platform_nodes), TRUE);
    g_clear_pointer(&sw->per_gpus, g_free);
}

/* ---------------------------------------------------------------------------- enumeration */

typedef struct {
    gint64 tp, q, depth;
} SweepGrid;

typedef struct {
    const SimparSweep *sw;
    SimparSweepVisit visit;
    gpointer data;
    guint64 next;
} SweepEnum;

static void
sweep_add_grid(GArray *out, gint64 tp, gint64 q, gint64 depth)
{
    SweepGrid g = {tp, q, depth};
    g_array_append_val(out, g);
}

/* 2.5-D: every d of --depth, or by default every d >= 2 with q*q*d dividing G. */
static void
sweep_grids_2p5d(const SimparSweep *sw, gint64 q, gint64 G, gboolean q_given, GArray *out)
{
    const GArray *depths = sw->numbers[SIMPAR_SWEEP_DEPTH];
    guint before = out->len;
    for (guint i = 0; i < depths->len; i++)
        sweep_add_grid(out, q * q * g_array_index(depths, gint64, i), q,
                       g_array_index(depths, gint64, i));
    for (gint64 d = 2; depths->len == 0 && q * q * d <= G; d++)
        if (G % (q * q * d) == 0)
            sweep_add_grid(out, q * q * d, q, d);
    if (out->len == before && q_given) /* a grid side you gave is always tried */
        sweep_add_grid(out, q * q, q, 0);
}

/* The tensor-parallel sizes of mode `gen` on G GPUs: the values given, or by default every
 * size the mode allows that divides G (1-D: powers of two; grids: q >= 2). */
static void
sweep_grids(const SimparSweep *sw, const SimparGenerator *gen, gint64 G, GArray *out)
{
    const GArray *tp = sw->numbers[SIMPAR_SWEEP_TP], *qs = sw->numbers[SIMPAR_SWEEP_Q];
    if (gen->grid == SIMPAR_GRID_LINE) {
        for (guint i = 0; i < tp->len; i++)
            sweep_add_grid(out, g_array_index(tp, gint64, i), 0, 0);
        for (gint64 t = 1; tp->len == 0 && t <= G && G % t == 0; t *= 2)
            sweep_add_grid(out, t, 0, 0);
        return;
    }
    gboolean p2p5d = gen->grid == SIMPAR_GRID_LAYERS;
    guint n = qs->len > 0 ? qs->len : G_MAXUINT;
    for (guint i = 0; i < n; i++) {
        gint64 q = qs->len > 0 ? g_array_index(qs, gint64, i) : i + 2;
        gint64 t = simpar_generator_grid_tp(gen, q, 1); /* 2.5-D: one layer here */
        if (qs->len == 0 && t * (p2p5d ? 2 : 1) > G)
            break;
        if (p2p5d)
            sweep_grids_2p5d(sw, q, G, qs->len > 0, out);
        else if (qs->len > 0 || G % t == 0)
            sweep_add_grid(out, t, q, 0);
    }
}

/* (P, D) pairs for T on G GPUs: the values given; D = G / (T P) and P = G / (T D) when one is
 * left out; neither: P every power of two dividing G / T up to the layers. 0: no integer fits
 * (the row says so). */
static void
sweep_splits(const SimparSweep *sw, gint64 G, gint64 T, gint64 layers, GArray *out)
{
    const GArray *pp = sw->numbers[SIMPAR_SWEEP_PP], *dp = sw->numbers[SIMPAR_SWEEP_DP];
    for (guint i = 0; i < MAX(pp->len, 1) && (pp->len > 0 || dp->len > 0); i++)
        for (guint j = 0; j < MAX(dp->len, 1); j++) {
            gint64 p = pp->len > 0 ? g_array_index(pp, gint64, i) : 0;
            gint64 d = dp->len > 0 ? g_array_index(dp, gint64, j) : 0;
            if (p == 0)
                p = G % (T * d) == 0 ? G / (T * d) : 0;
            if (d == 0)
                d = G % (T * p) == 0 ? G / (T * p) : 0;
            gint64 pair[2] = {p, d};
            g_array_append_vals(out, pair, 2);
        }
    if (pp->len > 0 || dp->len > 0)
        return;
    for (gint64 p = 1; T > 0 && G % T == 0 && p <= layers && (G / T) % p == 0; p *= 2) {
        gint64 pair[2] = {p, G / (T * p)};
        g_array_append_vals(out, pair, 2);
    }
    if (out->len == 0) {
        gint64 none[2] = {0, 0};
        g_array_append_vals(out, none, 2);
    }
}

/* Schedules, recomputation and context-parallel forms, innermost. */
static gboolean
sweep_enum_leaves(SweepEnum *e, SimparSweepConfig *c, GError **error)
{
    const GPtrArray *sch = e->sw->names[SIMPAR_SWEEP_SCHEDULE];
    const GPtrArray *rec = e->sw->names[SIMPAR_SWEEP_RECOMPUTE];
    const GPtrArray *cpm = e->sw->names[SIMPAR_SWEEP_CP_MODE];
    const GPtrArray *pre = e->sw->names[SIMPAR_SWEEP_PRECISION];
    for (guint i = 0; i < MAX(sch->len, 1); i++)
        for (guint j = 0; j < MAX(rec->len, 1); j++)
            /* Without context parallelism the form means nothing: one row, not one per form. */
            for (guint k = 0; k < (c->cp > 1 ? MAX(cpm->len, 1) : 1); k++)
                for (guint l = 0; l < MAX(pre->len, 1); l++) {
                    c->schedule = sch->len > 0 ? sch->pdata[i] : NULL;
                    c->recompute = rec->len > 0 ? rec->pdata[j] : NULL;
                    c->cp_mode = cpm->len > 0 && c->cp > 1 ? cpm->pdata[k] : NULL;
                    c->precision = pre->len > 0 ? pre->pdata[l] : NULL;
                    c->index = e->next++;
                    if (!e->visit(c, e->data, error))
                        return FALSE;
                }
    return TRUE;
}

static gint64
sweep_gcd(gint64 a, gint64 b)
{
    while (b != 0) {
        gint64 t = a % b;
        a = b, b = t;
    }
    return a;
}

static gboolean
sweep_enum_mode(SweepEnum *e, SimparSweepConfig *c, GError **error)
{
    g_autoptr(GArray) grids = g_array_new(FALSE, FALSE, sizeof(SweepGrid));
    /* T x P x D over the GPUs each context-parallel rank's share of them; C not dividing the
     * GPUs leaves no split (its rows say so) */
    gint64 G = c->gpus % c->cp == 0 ? c->gpus / c->cp : 0;
    sweep_grids(e->sw, c->gen, MAX(G, 1), grids);
    /* without --micro-batch each grid gets the model's micro-batch rounded up to what the grid
     * splits (whole sequences per GPU), so that every mode competes */
    gint64 base_b = c->micro_batch;
    gboolean own_b = e->sw->numbers[SIMPAR_SWEEP_MICRO_BATCH]->len == 0;
    const SimparGenerator *gen = c->gen;
    for (guint i = 0; i < grids->len; i++) {
        const SweepGrid *g = &g_array_index(grids, SweepGrid, i);
        c->tp = g->tp, c->q = g->q, c->depth = g->depth;
        if (own_b) {
            gint64 div = simpar_generator_batch_divisor(gen, g->q, MAX(g->depth, 1));
            c->micro_batch = base_b % div == 0 ? base_b : div * base_b / sweep_gcd(base_b, div);
        }
        g_autoptr(GArray) splits = g_array_new(FALSE, TRUE, sizeof(gint64));
        if ((g->depth == 0 && gen->grid == SIMPAR_GRID_LAYERS) || G == 0)
            /* no depth, or no split: one row says so */
            g_array_set_size(splits, 2);
        else
            sweep_splits(e->sw, G, c->tp, c->layers, splits);
        for (guint j = 0; j < splits->len; j += 2) {
            c->pp = g_array_index(splits, gint64, j), c->dp = g_array_index(splits, gint64, j + 1);
            if (!sweep_enum_leaves(e, c, error))
                return FALSE;
        }
    }
    return TRUE;
}

/* The value of axis `a` at position k, or `fallback` when the axis was not given. */
static gint64
sweep_value(const SimparSweep *sw, SimparSweepAxis a, guint k, gint64 fallback)
{
    const GArray *v = sw->numbers[a];
    return v->len > 0 ? g_array_index(v, gint64, k) : fallback;
}

/* The shapes of one configuration: a swept hidden size keeps the base model's head dimension
 * and FFN ratio unless --heads / --ffn are given. */
static void
sweep_shapes(const SimparSweep *sw, const SimparModel *base, const guint *k, SimparSweepConfig *c)
{
    const SimparJobArgs *j = &sw->args.job;
    gboolean swept = sw->numbers[SIMPAR_SWEEP_HIDDEN]->len > 0;
    c->hidden = sweep_value(sw, SIMPAR_SWEEP_HIDDEN, k[0], base->hidden);
    c->heads = j->heads != SIMPAR_JOB_UNSET ? j->heads
               : swept                      ? MAX(1, c->hidden / (base->hidden / base->heads))
                                            : base->heads;
    c->ffn = j->ffn != SIMPAR_JOB_UNSET ? j->ffn
             : swept                    ? MAX(1, c->hidden * base->ffn / base->hidden)
                                        : base->ffn;
    c->layers = sweep_value(sw, SIMPAR_SWEEP_LAYERS, k[1], base->layers);
    c->seq = sweep_value(sw, SIMPAR_SWEEP_SEQ, k[2], base->seq);
    c->micro_batch = sweep_value(sw, SIMPAR_SWEEP_MICRO_BATCH, k[3], base->micro_batch);
    c->global_batch = sweep_value(sw, SIMPAR_SWEEP_GLOBAL_BATCH, k[4], SIMPAR_JOB_UNSET);
    /* a multi-head base keeps one key/value head per head, however many heads there are */
    c->kv_heads = sweep_value(sw, SIMPAR_SWEEP_KV_HEADS, k[5],
                              base->kv_heads != 0 ? base->kv_heads : SIMPAR_JOB_UNSET);
    c->shard_group = sweep_value(sw, SIMPAR_SWEEP_SHARD_GROUP, k[6], SIMPAR_JOB_UNSET);
    c->cp = sweep_value(sw, SIMPAR_SWEEP_CP, k[7], 1);
    c->ep = sweep_value(sw, SIMPAR_SWEEP_EP, k[8], SIMPAR_JOB_UNSET);
}

/* Whether some mode has a grid on G GPUs: then every shape gives configurations (a grid has at
 * least one split row), else none does, however many shapes the lists give. */
static gboolean
sweep_has_grid(const SimparSweep *sw, gint64 G)
{
    g_autoptr(GArray) grids = g_array_new(FALSE, FALSE, sizeof(SweepGrid));
    for (guint mode = 0; mode < sw->names[SIMPAR_SWEEP_MODES]->len && grids->len == 0; mode++)
        sweep_grids(sw, simpar_generator_of(sw->names[SIMPAR_SWEEP_MODES]->pdata[mode]), G, grids);
    return grids->len > 0;
}

/* The axes of a model's shapes, the last turning fastest. */
static const SimparSweepAxis sweep_shape_axes[] = {
    SIMPAR_SWEEP_HIDDEN,      SIMPAR_SWEEP_LAYERS,       SIMPAR_SWEEP_SEQ,
    SIMPAR_SWEEP_MICRO_BATCH, SIMPAR_SWEEP_GLOBAL_BATCH, SIMPAR_SWEEP_KV_HEADS,
    SIMPAR_SWEEP_SHARD_GROUP, SIMPAR_SWEEP_CP,           SIMPAR_SWEEP_EP};

/* The shapes of one model: the product of the shape axes' lengths (a double: up to 4096^9). */
static double
sweep_n_shapes(const SimparSweep *sw)
{
    double n = 1;
    for (guint a = 0; a < G_N_ELEMENTS(sweep_shape_axes); a++)
        n *= MAX(sw->numbers[sweep_shape_axes[a]]->len, 1);
    return n;
}

/* Every shape of model m on the slot-th GPU count, then every mode. */
static gboolean
sweep_enum_shapes(SweepEnum *e, guint slot, guint m, GError **error)
{
    const SimparSweep *sw = e->sw;
    if (!sweep_has_grid(sw, g_array_index(sw->numbers[SIMPAR_SWEEP_GPUS], gint64, slot)))
        return TRUE;                          /* not 4096^5 empty shapes in a row */
    guint64 n = (guint64) sweep_n_shapes(sw); /* at most SWEEP_MAX_CONFIGS (identify) */
    for (guint64 i = 0; i < n; i++) {
        guint k[G_N_ELEMENTS(sweep_shape_axes)];
        guint64 rest = i;
        for (guint a = G_N_ELEMENTS(sweep_shape_axes); a-- > 0;) {
            guint len = MAX(sw->numbers[sweep_shape_axes[a]]->len, 1);
            k[a] = (guint) (rest % len), rest /= len;
        }
        SimparSweepConfig c = {.gpus_slot = slot, .model = m};
        c.gpus = (guint) g_array_index(sw->numbers[SIMPAR_SWEEP_GPUS], gint64, slot);
        sweep_shapes(sw, &g_array_index(sw->models, SimparModel, m), k, &c);
        for (guint mode = 0; mode < sw->names[SIMPAR_SWEEP_MODES]->len; mode++) {
            c.gen = simpar_generator_of(sw->names[SIMPAR_SWEEP_MODES]->pdata[mode]);
            g_assert(c.gen != NULL); /* the names were checked (sweep_check_name) */
            if (!sweep_enum_mode(e, &c, error))
                return FALSE;
        }
    }
    return TRUE;
}

gboolean
simpar_sweep_enumerate(const SimparSweep *sw, SimparSweepVisit visit, gpointer data, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SweepEnum e = {sw, visit, data, 0};
    for (guint g = 0; g < sw->numbers[SIMPAR_SWEEP_GPUS]->len; g++)
        for (guint m = 0; m < sw->models->len; m++)
            if (!sweep_enum_shapes(&e, g, m, error))
                return FALSE;
    return TRUE;
}

/* ------------------------------------------------------------------------------- identity */

/* "path@sha256-prefix": a file's name and content. */
static char *
sweep_file_tag(const char *path)
{
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!simpar_file_read(path, SIMPAR_JSON_LARGE_MAX, &data, &len, NULL))
        return g_strdup(path);
    g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (guchar *) data, len);
    return g_strdup_printf("%s@%.12s", path, sum); /* (transfer full) */
}

static void
sweep_spec_names(const SimparSweep *sw, GString *s)
{
    for (guint i = 0; i < SIMPAR_SWEEP_N_NAMES; i++) {
        const GPtrArray *v = sw->names[i];
        if (i == SIMPAR_SWEEP_PRECISION && v->len == 0)
            continue; /* the identities of sweeps without it stay as they were */
        g_string_append_printf(s, ";%s=", sweep_name_flags[i]);
        for (guint k = 0; k < v->len; k++) {
            const char *name = v->pdata[k];
            g_autofree char *tag = i == SIMPAR_SWEEP_MODELS && g_str_has_suffix(name, ".json")
                                       ? sweep_file_tag(name)
                                       : g_strdup(name);
            g_string_append_printf(s, "%s%s", k > 0 ? "," : "", tag);
        }
    }
}

char *
simpar_sweep_spec_text(const SimparSweep *sw)
{
    const SimparSweepArgs *a = &sw->args;
    GString *s = g_string_new(NULL);
    g_autofree char *topo = a->topology != NULL ? sweep_file_tag(a->topology) : NULL;
    g_string_append_printf(s, "%s=%s", a->preset != NULL ? "preset" : "topology",
                           a->preset != NULL ? a->preset : topo);
    if (a->rack_gpus != 0) /* the identity of a sweep without it as before */
        g_string_append_printf(s, ";rack-gpus=%" G_GINT64_FORMAT, a->rack_gpus);
    for (guint i = 0; i < SIMPAR_SWEEP_N_NUMBERS; i++) {
        if (i == SIMPAR_SWEEP_EP && sw->numbers[i]->len == 0)
            continue; /* the identity of a sweep without --ep as before it had one */
        g_string_append_printf(s, ";%s=", sweep_axes[i].flag);
        for (guint k = 0; k < sw->numbers[i]->len; k++)
            g_string_append_printf(s, "%s%" G_GINT64_FORMAT, k > 0 ? "," : "",
                                   g_array_index(sw->numbers[i], gint64, k));
    }
    sweep_spec_names(sw, s);
    g_auto(GStrv) job = simpar_job_args_to_argv(&a->job);
    g_autofree char *job_text = g_strjoinv(" ", job);
    const SimparPredictArgs *p = &a->predict;
    g_autofree char *calib = p->calibration != NULL ? sweep_file_tag(p->calibration) : NULL;
    g_string_append_printf(s,
                           ";job=%s;backend=%s;collectives=%s;algo=%s;nccl-proto=%s;attention=%s;"
                           "calibration=%s",
                           job_text, sw->backend->name, p->coll_mode ? p->coll_mode : "fused",
                           p->algo ? p->algo : "auto", p->proto ? p->proto : "auto",
                           simpar_attention_name(sw->attention), calib ? calib : "");
    if (sw->numbers[SIMPAR_SWEEP_MICRO_BATCH]->len == 0) /* the rows' micro-batches */
        g_string_append(s, ";micro-batch-default=per-grid");
    if (sw->all_slices)
        g_string_append(s, ";tp-slices=all");
    if (p->time_budget != NULL) /* which rows it skips */
        g_string_append_printf(s, ";time-budget=%.17g", sw->budget_s);
    if (sw->block_backend != NULL)
        g_string_append_printf(s, ";block-backend=%s", sw->block_backend->name);
    return g_string_free(s, FALSE); /* (transfer full) */
}

static gboolean
sweep_too_many(GError **error)
{
    return simpar_cli_usage(error,
                            "simpar sweep: more than %d configurations; narrow the lists or "
                            "split the sweep",
                            SWEEP_MAX_CONFIGS);
}

static gboolean
sweep_count(const SimparSweepConfig *c, gpointer data, GError **error)
{
    SimparSweep *sw = data;
    if (++sw->total > SWEEP_MAX_CONFIGS)
        return sweep_too_many(error);
    sw->per_gpus[c->gpus_slot]++;
    return TRUE;
}

/* The fewest configurations the lists give, without enumerating them: every shape of every
 * model, on a GPU count with a grid, gives each mode at least one row per grid of its GPUs
 * (sweep_splits gives every grid a split, a split at least one leaf), and a shape's GPUs are
 * the count's over its context parallelism (sweep_enum_mode). */
static double
sweep_least(const SimparSweep *sw)
{
    const GArray *cps = sw->numbers[SIMPAR_SWEEP_CP];
    double least = 0, per_cp = sweep_n_shapes(sw) / MAX(cps->len, 1);
    g_autoptr(GArray) grids = g_array_new(FALSE, FALSE, sizeof(SweepGrid));
    for (guint g = 0; g < sw->numbers[SIMPAR_SWEEP_GPUS]->len; g++) {
        gint64 gpus = g_array_index(sw->numbers[SIMPAR_SWEEP_GPUS], gint64, g);
        if (!sweep_has_grid(sw, gpus))
            continue;
        for (guint mode = 0; mode < sw->names[SIMPAR_SWEEP_MODES]->len; mode++)
            for (guint i = 0; i < MAX(cps->len, 1); i++) {
                gint64 cp = cps->len > 0 ? g_array_index(cps, gint64, i) : 1;
                gint64 G = gpus % cp == 0 ? gpus / cp : 0;
                g_array_set_size(grids, 0);
                sweep_grids(sw, simpar_generator_of(sw->names[SIMPAR_SWEEP_MODES]->pdata[mode]),
                            MAX(G, 1), grids);
                least += (double) sw->models->len * per_cp * grids->len;
            }
    }
    return least;
}

gboolean
simpar_sweep_identify(SimparSweep *sw, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    sw->spec_text = simpar_sweep_spec_text(sw);
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, sw->spec_text, -1);
    sw->id = g_strndup(sum, 16);
    sw->total = 0;
    sw->per_gpus = g_new0(guint64, sw->numbers[SIMPAR_SWEEP_GPUS]->len);
    /* refused before a million rows are counted: the shapes alone past the bound (each a
     * configuration to consider, with or without rows), or the rows they must give */
    double shapes = sweep_n_shapes(sw) * sw->models->len * sw->numbers[SIMPAR_SWEEP_GPUS]->len;
    if (shapes > SWEEP_MAX_CONFIGS || sweep_least(sw) > SWEEP_MAX_CONFIGS)
        return sweep_too_many(error);
    if (!simpar_sweep_enumerate(sw, sweep_count, sw, error))
        return FALSE;
    if (sw->total == 0)
        return simpar_cli_usage(error, "simpar sweep: these lists give no configuration (no "
                                       "grid of the modes divides the GPU counts; give --q or "
                                       "--tp to try one anyway)");
    return TRUE;
}
