/* test-exec.c - the simpar-exec binary on the host executor: RUN.json and BENCH.json hold the
 * documented fields and numbers, --check passes, every run's outputs are verified, job
 * arguments round-trip, bad inputs get one clear message and the documented exit status.
 *
 *   simpar-exec --run layer|step ... --check -o RUN.json   <- schedule rebuilt here from the
 *                                                            same job options: op for op
 *   simpar-exec --bench all --quick -o BENCH.json          <- flops, bytes, busbw recomputed
 *
 * The binary's path comes from SIMPAR_EXEC_BIN (tests/meson.build); the working directory is
 * the source root.
 */
#include "cli-run.h"
#include "compute.h"
#include "job.h"
#include "simpar-test.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

static char *tmpdir;

typedef struct {
    int status;
    char *out, *err;
} ExecRun;

static ExecRun
exec_cli(const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv("SIMPAR_EXEC_BIN"), args);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    ExecRun r = {0};
    int wait = 0;
    g_assert(
        g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err, &wait, NULL));
    r.status = g_spawn_check_wait_status(wait, NULL) ? 0 : WEXITSTATUS(wait);
    return r;
}

static void
exec_run_clear(ExecRun *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}

static int
suite_init(void)
{
    tmpdir = g_dir_make_tmp("simpar-exec-XXXXXX", NULL);
    return tmpdir == NULL || g_getenv("SIMPAR_EXEC_BIN") == NULL;
}

static int
suite_clean(void)
{
    simpar_test_tmpdir_remove(tmpdir);
    return 0;
}

/* Runs simpar-exec with `args` -o FILE; the parsed file (NULL if it failed, with a message). */
static JsonParser *
exec_json(const char *args, const char *file)
{
    g_autofree char *path = g_build_filename(tmpdir, file, NULL);
    g_autofree char *full = g_strdup_printf("%s -o %s", args, path);
    ExecRun r = exec_cli(full);
    JsonParser *p = json_parser_new();
    if (r.status != 0 || !json_parser_load_from_file(p, path, NULL)) {
        printf("\n    simpar-exec %s -> status %d: %s", full, r.status, r.err);
        g_clear_object(&p);
    }
    exec_run_clear(&r);
    return p;
}

/* The schedule simpar-exec builds for `args` (job options only). */
static SimparSchedule *
exec_schedule(const char *const *argv, SimparJobRun run)
{
    SimparJobArgs job;
    simpar_job_args_init(&job);
    g_autoptr(GError) error = NULL;
    SimparModel model;
    SimparTrain train;
    SimparSchedule *s = NULL;
    if (simpar_job_args_from_argv(&job, argv, &error))
        s = simpar_job_schedule(&job, run, "tiny", &model, &train, &error);
    if (s == NULL)
        printf("\n    job: %s", error->message);
    simpar_job_args_clear(&job);
    return s; /* (transfer full) */
}

/* ---- runs --------------------------------------------------------------------------------- */

static void
check_step_s(JsonObject *run, guint repeats)
{
    JsonObject *st = json_object_get_object_member(run, "step_s");
    double med = json_object_get_double_member(st, "median");
    double lo = json_object_get_double_member(st, "min"),
           hi = json_object_get_double_member(st, "max");
    JsonArray *samples = json_object_get_array_member(st, "samples");
    CU_ASSERT_EQUAL(json_array_get_length(samples), repeats);
    CU_ASSERT_TRUE(lo > 0 && lo <= med && med <= hi);
    gboolean found = FALSE; /* the median is one of the repeats */
    double sum = 0;
    for (guint i = 0; i < repeats; i++) {
        double v = json_array_get_double_element(samples, i);
        found = found || v == med;
        sum += v;
        CU_ASSERT_TRUE(v >= lo && v <= hi);
    }
    CU_ASSERT_TRUE(found);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(st, "mean"), sum / repeats, 1e-12);
}

/* One entry per op of `s`, in op order, with its rank, kind and name; times from the median
 * repeat, whose span is the median step time. */
static void
check_ops(JsonObject *run, const SimparSchedule *s)
{
    JsonArray *ops = json_object_get_array_member(run, "ops");
    guint n = simpar_schedule_n_ops(s), bad = 0, ds = simpar_dtype_size(simpar_schedule_dtype(s));
    CU_ASSERT_EQUAL(json_array_get_length(ops), n);
    double first = G_MAXDOUBLE, last = 0;
    for (guint i = 0; i < n && i < json_array_get_length(ops); i++) {
        JsonObject *o = json_array_get_object_element(ops, i);
        const SimparOp *op = simpar_schedule_op(s, i);
        double st = json_object_get_double_member(o, "start_s");
        double en = json_object_get_double_member(o, "end_s");
        first = MIN(first, st), last = MAX(last, en);
        bad += json_object_get_int_member(o, "op") != i;
        bad += json_object_get_int_member(o, "rank") != op->rank;
        bad +=
            !g_str_equal(json_object_get_string_member(o, "kind"), simpar_op_kind_name(op->kind));
        bad += !g_str_equal(json_object_get_string_member(o, "name"), op->name);
        bad += !g_str_equal(json_object_get_string_member(o, "stream"),
                            simpar_schedule_stream_name(s, op->stream));
        bad += !(st >= 0 && en >= st);
        if (op->kind == SIMPAR_OP_COLLECTIVE) {
            bad += !g_str_equal(json_object_get_string_member(o, "coll"),
                                simpar_coll_kind_name(op->u.coll.kind));
            bad += !g_str_equal(json_object_get_string_member(o, "axis"),
                                simpar_schedule_group(s, op->u.coll.group)->axis);
            bad += json_object_get_int_member(o, "bytes") !=
                   (gint64) (simpar_op_coll_elems(s, op) * ds);
        }
        if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV)
            bad += json_object_get_int_member(o, "peer") != op->u.p2p.peer ||
                   json_object_get_int_member(o, "bytes") != (gint64) (op->u.p2p.count * ds);
    }
    CU_ASSERT_EQUAL(bad, 0);
    double med =
        json_object_get_double_member(json_object_get_object_member(run, "step_s"), "median");
    CU_ASSERT_DOUBLE_EQUAL(last - first, med, 1e-12);
}

static guint
exec_output_shards(const SimparSchedule *s)
{
    guint n, outputs = 0;
    const SimparShard *sh = simpar_schedule_shards(s, &n);
    for (guint i = 0; i < n; i++)
        outputs += sh[i].role == SIMPAR_SHARD_OUTPUT;
    return outputs;
}

/* --check against the host: passed, every output shard compared, exactly equal numbers. */
static void
check_check(JsonObject *run, const SimparSchedule *s, double tolerance)
{
    JsonObject *ck = json_object_get_object_member(run, "check");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ck);
    guint outputs = exec_output_shards(s);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ck, "against"), "host");
    CU_ASSERT_EQUAL(json_object_get_int_member(ck, "buffers"), outputs);
    CU_ASSERT_TRUE(outputs > 0);
    CU_ASSERT_EQUAL(json_object_get_double_member(ck, "max_rel_error"), 0.0);
    CU_ASSERT_EQUAL(json_object_get_double_member(ck, "tolerance"), tolerance);
    CU_ASSERT_TRUE(json_object_get_boolean_member(ck, "passed"));
}

/* Every run's outputs verified before its timings: one block per distinct (tensor, rows,
 * columns) of the output shards, the replicated ones those held by several ranks. */
static void
check_verified(JsonObject *run, const SimparSchedule *s, double tolerance)
{
    JsonObject *vd = json_object_get_object_member(run, "verified");
    CU_ASSERT_PTR_NOT_NULL_FATAL(vd);
    guint shards = exec_output_shards(s);
    gint64 blocks = json_object_get_int_member(vd, "blocks");
    gint64 replicated = json_object_get_int_member(vd, "replicated");
    CU_ASSERT_TRUE(blocks > 0 && blocks <= shards && replicated <= blocks);
    CU_ASSERT_TRUE(blocks + replicated <= shards); /* a replicated block has 2 shards or more */
    CU_ASSERT_EQUAL(json_object_get_double_member(vd, "tolerance"), tolerance);
}

/* job_args parse back into the same schedule. */
static void
check_job_args(JsonObject *run, const SimparSchedule *s, SimparJobRun kind)
{
    JsonArray *a = json_object_get_array_member(run, "job_args");
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    for (guint i = 0; i < json_array_get_length(a); i++)
        g_ptr_array_add(argv, (gpointer) json_array_get_string_element(a, i));
    g_ptr_array_add(argv, NULL);
    g_autoptr(SimparSchedule) back = exec_schedule((const char *const *) argv->pdata, kind);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(simpar_schedule_n_ops(back), simpar_schedule_n_ops(s));
    CU_ASSERT_EQUAL(simpar_schedule_n_ranks(back), simpar_schedule_n_ranks(s));
    CU_ASSERT_EQUAL(simpar_schedule_n_buffers(back), simpar_schedule_n_buffers(s));
}

/* A checked run of `job` (job options only), every field of its RUN.json. */
static void
check_run(const char *job, SimparJobRun kind, const char *mode, guint ranks, const char *dtype,
          double tolerance)
{
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(job, NULL, &argv, NULL));
    g_autoptr(SimparSchedule) s = exec_schedule((const char *const *) argv, kind);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autofree char *args = g_strdup_printf("--executor host --run %s %s --check --warmup 1 "
                                            "--repeats 3 --seed 7",
                                            simpar_job_run_name(kind), job);
    g_autoptr(JsonParser) p = exec_json(args, "run.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    JsonObject *run = json_node_get_object(json_parser_get_root(p));
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "format"), "simpar-run");
    CU_ASSERT_EQUAL(json_object_get_int_member(run, "version"), 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "executor"), "host");
    CU_ASSERT_TRUE(g_str_has_prefix(json_object_get_string_member(run, "device"), "host CPU ("));
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "run"), simpar_job_run_name(kind));
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "model"), "tiny");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "mode"), mode);
    CU_ASSERT_EQUAL(json_object_get_int_member(run, "ranks"), ranks);
    CU_ASSERT_EQUAL(simpar_schedule_n_ranks(s), ranks);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "dtype"), dtype);
    CU_ASSERT_FALSE(json_object_get_boolean_member(run, "tf32"));
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "attention"), "unfused");
    CU_ASSERT_EQUAL(json_object_get_int_member(run, "warmup"), 1);
    CU_ASSERT_EQUAL(json_object_get_int_member(run, "repeats"), 3);
    check_step_s(run, 3);
    check_ops(run, s);
    check_check(run, s, tolerance);
    check_verified(run, s, tolerance);
    check_job_args(run, s, kind);
}

static void
test_layer_modes(void)
{
    check_run("--tp-mode 1d --tp 2", SIMPAR_JOB_RUN_LAYER, "1d", 2, "fp32", 1e-4);
    check_run("--tp-mode 1d --tp 2 --sp --dtype fp64", SIMPAR_JOB_RUN_LAYER, "1d", 2, "fp64", 1e-9);
    check_run("--tp-mode 2d --tp 4", SIMPAR_JOB_RUN_LAYER, "2d", 4, "fp32", 1e-4);
    check_run("--tp-mode 2.5d --tp 8 --depth 2", SIMPAR_JOB_RUN_LAYER, "2.5d", 8, "fp32", 1e-4);
    check_run("--tp-mode 3d --tp 8 --dtype bf16", SIMPAR_JOB_RUN_LAYER, "3d", 8, "bf16", 5e-2);
}

static void
test_step(void)
{
    check_run("--tp 2 --pp 2 --dp 2 --micro-batch 2 --global-batch 8 --layers 2 --dtype fp16",
              SIMPAR_JOB_RUN_STEP, "1d", 8, "fp16", 1e-2);
}

/* Without -o: the summary on stdout (with the verification of the outputs), nothing on stderr;
 * --check adds its table. */
static void
test_summary(void)
{
    ExecRun r = exec_cli("--executor host --tp 2 --repeats 2 --warmup 0 --check --nccl-timeout 30");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "executor:  host on host CPU"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "job:       layer --tp=2 (model tiny, 1d, 2 ranks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "ops:       88\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "verified:  20 output blocks finite, 8 replicated ones "
                                         "equal on every rank (to 1e-04)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "step time: median "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(2 repeats after 0 warm-up)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "check against host: 28 output shards, worst relative "
                                         "error 0 (tolerance 1e-04): passed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "  qkv.weight.grad"));
    exec_run_clear(&r);
}

/* ---- benches ------------------------------------------------------------------------------ */

static void
check_times(JsonObject *o, guint *bad)
{
    double t = json_object_get_double_member(o, "time_s");
    *bad += !(t > 0 && json_object_get_double_member(o, "min_s") <= t &&
              t <= json_object_get_double_member(o, "max_s"));
}

static void
check_bench_gemm(JsonArray *gemm)
{
    guint bad = 0, squares = 0;
    for (guint i = 0; i < json_array_get_length(gemm); i++) {
        JsonObject *g = json_array_get_object_element(gemm, i);
        double m = json_object_get_int_member(g, "m"), n = json_object_get_int_member(g, "n");
        double k = json_object_get_int_member(g, "k"), b = json_object_get_int_member(g, "batch");
        double flops = json_object_get_double_member(g, "flops");
        bad += flops != 2 * m * n * k * b;
        check_times(g, &bad);
        double tflops = flops / json_object_get_double_member(g, "time_s") / 1e12;
        bad += fabs(json_object_get_double_member(g, "tflops") - tflops) > 1e-12 * tflops;
        bad += !g_str_equal(json_object_get_string_member(g, "dtype"), "fp32");
        squares +=
            m == n && n == k && g_str_equal(json_object_get_string_member(g, "name"), "square");
    }
    /* tiny (h=64, f=256, b*s=256) at T=1: qkv, proj, fc1, fc2 x fwd, dgrad, wgrad; 32, 64 */
    CU_ASSERT_EQUAL(json_array_get_length(gemm), 12 + 2);
    CU_ASSERT_EQUAL(squares, 2);
    JsonObject *qkv = json_array_get_object_element(gemm, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(qkv, "name"), "qkv.fwd/T1");
    CU_ASSERT_EQUAL(json_object_get_int_member(qkv, "m"), 256);
    CU_ASSERT_EQUAL(json_object_get_int_member(qkv, "n"), 192);
    CU_ASSERT_EQUAL(json_object_get_int_member(qkv, "k"), 64);
    CU_ASSERT_EQUAL(bad, 0);
}

/* The compute model's bytes of a few kinds at rows x cols, fp32: */
static double
kernel_bytes(const char *kind, double r, double c)
{
    if (g_str_equal(kind, "ln_stats"))
        return (r * c + 2 * r) * 4; /* x in, sums out */
    if (g_str_equal(kind, "gelu"))
        return 2 * r * c * 4;
    if (g_str_equal(kind, "dropout"))
        return 2 * r * c * 4 + r * c; /* + its 1-byte mask */
    if (g_str_equal(kind, "adam"))
        return 7 * 4 * r * c; /* grad in; weight, moments read and written */
    return -1;
}

static void
check_bench_kernels(JsonArray *kernels)
{
    const char *want[] = {"ln_stats",  "ln_apply",     "ln_bwd_stats", "ln_bwd_apply", "bias_add",
                          "bias_grad", "gelu",         "gelu_bwd",     "swiglu",       "swiglu_bwd",
                          "dropout",   "dropout_bwd",  "add",          "embed",        "embed_bwd",
                          "xent_max",  "xent_fwd",     "xent_loss",    "xent_bwd",     "adam",
                          "attention", "attention_bwd"};
    guint bad = 0, found = 0, exact = 0;
    CU_ASSERT_EQUAL(json_array_get_length(kernels), G_N_ELEMENTS(want));
    for (guint i = 0; i < json_array_get_length(kernels); i++) {
        JsonObject *k = json_array_get_object_element(kernels, i);
        const char *kind = json_object_get_string_member(k, "kind");
        double bytes = json_object_get_double_member(k, "bytes");
        double r = json_object_get_int_member(k, "rows"), c = json_object_get_int_member(k, "cols");
        found += i < G_N_ELEMENTS(want) && g_str_equal(kind, want[i]);
        check_times(k, &bad);
        double gbps = bytes / json_object_get_double_member(k, "time_s") / 1e9;
        bad += !(bytes > 0) || fabs(json_object_get_double_member(k, "GBps") - gbps) > 1e-12 * gbps;
        if (kernel_bytes(kind, r, c) >= 0) {
            bad += bytes != kernel_bytes(kind, r, c);
            exact++;
        }
        if (g_str_has_prefix(kind, "attention")) /* tiny: b=8 sequences of 32, heads/8 = 1 */
            bad += json_object_get_int_member(k, "batch") != 8 ||
                   json_object_get_int_member(k, "seq") != 32 ||
                   json_object_get_int_member(k, "heads") != 1 ||
                   json_object_get_int_member(k, "head_dim") != 16 || r != 256 || c != 16;
        else if (g_str_has_prefix(kind, "xent")) /* quick: b*s/8 rows of V = 1024 */
            bad += r != 32 || c != 1024;
        else /* quick: b*s/8 rows of h */
            bad += r != 32 || c != 64;
    }
    CU_ASSERT_EQUAL(found, G_N_ELEMENTS(want));
    CU_ASSERT_EQUAL(exact, 4);
    CU_ASSERT_EQUAL(bad, 0);
}

static double
busbw_factor(const char *op, double n)
{
    if (g_str_equal(op, "allreduce"))
        return 2.0 * (n - 1) / n;
    if (g_str_equal(op, "allgather") || g_str_equal(op, "reducescatter") ||
        g_str_equal(op, "alltoall"))
        return (n - 1) / n;
    return 1.0;
}

/* nccl-tests sizes from 8 B to 64 KiB (quick) over 4 ranks of fp32: all-reduce, broadcast and
 * reduce from 8 B (14 sizes), the others from 4 x 4 = 16 B (13). */
static void
check_bench_collectives(JsonArray *colls)
{
    const char *ops[] = {"allreduce", "allgather", "reducescatter",
                         "broadcast", "reduce",    "alltoall"};
    guint bad = 0, per_op[G_N_ELEMENTS(ops)] = {0};
    for (guint i = 0; i < json_array_get_length(colls); i++) {
        JsonObject *c = json_array_get_object_element(colls, i);
        const char *op = json_object_get_string_member(c, "op");
        double bytes = json_object_get_int_member(c, "bytes"),
               n = json_object_get_int_member(c, "gpus");
        double count = json_object_get_int_member(c, "count");
        gboolean full = busbw_factor(op, 4) == 0.75;
        for (guint k = 0; k < G_N_ELEMENTS(ops); k++)
            per_op[k] += g_str_equal(op, ops[k]);
        check_times(c, &bad);
        double algbw = json_object_get_double_member(c, "algbw_GBps");
        bad += n != 4 || bytes != count * 4 * (full ? n : 1) || bytes > 65536;
        bad +=
            fabs(algbw - bytes / json_object_get_double_member(c, "time_s") / 1e9) > 1e-12 * algbw;
        bad += json_object_get_double_member(c, "busbw_GBps") != algbw * busbw_factor(op, n);
    }
    guint want[] = {14, 13, 13, 14, 14, 13};
    for (guint k = 0; k < G_N_ELEMENTS(ops); k++)
        CU_ASSERT_EQUAL(per_op[k], want[k]);
    CU_ASSERT_EQUAL(bad, 0);
}

static void
test_bench(void)
{
    g_autoptr(JsonParser) p = exec_json("--executor host --bench all --quick", "bench.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    JsonObject *b = json_node_get_object(json_parser_get_root(p));
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(b, "format"), "simpar-bench");
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "version"), 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(b, "executor"), "host");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(b, "dtype"), "fp32");
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "gpus"), 4);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(b, "inputs"), "random");
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "warmup"), 1);
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "repeats"), 3);
    check_bench_gemm(json_object_get_array_member(b, "gemm"));
    check_bench_kernels(json_object_get_array_member(b, "kernels"));
    check_bench_collectives(json_object_get_array_member(b, "collectives"));
}

/* One section only; --gpus, the sizes and --repeats reach the file. */
static void
test_bench_options(void)
{
    g_autoptr(JsonParser) p = exec_json("--executor host --bench collectives --gpus 2 "
                                        "--min-bytes 1K --max-bytes 4K --repeats 2 --warmup 0",
                                        "bench2.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    JsonObject *b = json_node_get_object(json_parser_get_root(p));
    CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(b, "gemm")), 0);
    CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(b, "kernels")), 0);
    JsonArray *c = json_object_get_array_member(b, "collectives");
    CU_ASSERT_EQUAL(json_array_get_length(c), 6 * 3); /* 1K, 2K, 4K */
    JsonObject *first = json_array_get_object_element(c, 0);
    CU_ASSERT_EQUAL(json_object_get_int_member(first, "bytes"), 1024);
    CU_ASSERT_EQUAL(json_object_get_int_member(first, "count"), 256);
    CU_ASSERT_EQUAL(json_object_get_int_member(first, "gpus"), 2);
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "repeats"), 2);
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "warmup"), 0);
}

/* Without --quick: every kind from 64 rows to the host's largest (2^18 elements), each group's
 * progress on stderr; no collectives on one rank, and the file says one GPU. */
static void
test_bench_sizes(void)
{
    g_autofree char *path = g_build_filename(tmpdir, "bench-sizes.json", NULL);
    g_autofree char *args =
        g_strdup_printf("--executor host --bench kernels --repeats 1 --warmup 0 -o %s", path);
    ExecRun r = exec_cli(args);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "simpar-exec --bench: kernels, add: 3 sizes up to "
                                         "4096 x 64"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "simpar-exec --bench: kernels, xent-bwd: 2 sizes up to "
                                         "256 x 1024"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "simpar-exec --bench: attention (unfused): 7 shapes"));
    exec_run_clear(&r);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonObject *b = json_node_get_object(json_parser_get_root(p));
    CU_ASSERT_EQUAL(json_object_get_int_member(b, "gpus"), 1);
    JsonArray *k = json_object_get_array_member(b, "kernels");
    guint adds = 0, largest = 0;
    for (guint i = 0; i < json_array_get_length(k); i++) {
        JsonObject *e = json_array_get_object_element(k, i);
        if (!g_str_equal(json_object_get_string_member(e, "kind"), "add"))
            continue;
        guint rows = (guint) json_object_get_int_member(e, "rows");
        CU_ASSERT_TRUE(rows == 64 || rows == 512 || rows == 4096);
        adds++, largest = MAX(largest, rows);
    }
    CU_ASSERT_EQUAL(adds, 3);
    CU_ASSERT_EQUAL(largest * 64, 1 << 18);
    /* 15 row kinds x 3 sizes, 4 cross-entropy kinds x 2 (64, 256 rows of 1024), adam x 3,
     * attention 7 shapes each way */
    CU_ASSERT_EQUAL(json_array_get_length(k), 15 * 3 + 4 * 2 + 3 + 14);
}

/* ---- refusals ----------------------------------------------------------------------------- */

/* Exits with `status`, nothing on stdout, one stderr line containing `want`. */
static void
refuses(const char *args, int status, const char *want)
{
    ExecRun r = exec_cli(args);
    gboolean ok = r.status == status && strstr(r.err, want) != NULL && r.out[0] == '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    if (!ok)
        printf("\n    simpar-exec %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_TRUE(ok);
    exec_run_clear(&r);
}

static void
test_version(void)
{
    ExecRun r = exec_cli("--version");
    g_autofree char *want = g_strdup_printf("simpar-exec %s (executors: host", SIMPAR_VERSION);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(g_str_has_prefix(r.out, want));
    exec_run_clear(&r);
}

static void
test_refusals(void)
{
    refuses("--frobnicate", 2, "Unknown option --frobnicate");
    refuses("--executor gpu", 2, "--executor gpu: unknown executor (valid: host");
    refuses("--executor host --repeats 0", 2, "--repeats 0: must be between 1 and");
    refuses("--executor host --warmup -1", 2, "--warmup -1: must be between 0 and");
    refuses("--executor host --run foo", 2, "--run foo: valid are layer");
    refuses("--executor host --tp 3", 2, "--heads 4 is not divisible by 3");
    refuses("--executor host --tp-mode 2d --tp 8", 2, "--tp 8 is not a square");
    refuses("--executor host --run layer --pp 2", 2, "--pp and --dp apply to --run step");
    refuses("--executor host --attention sparse", 2, "--attention sparse: valid are unfused");
    refuses("--executor host --seed -1", 2, "--seed -1: must be at least 0");
    refuses("--executor host --nccl-timeout 0", 2,
            "--nccl-timeout 0: give seconds, more than 0 and at most 86400 (a day)");
    refuses("--executor host --nccl-timeout -5", 2, "--nccl-timeout -5: give seconds");
    refuses("--executor host --nccl-timeout 1e9", 2, "--nccl-timeout 1e9: give seconds");
    refuses("--executor host --nccl-timeout nan", 2, "--nccl-timeout nan: give seconds");
    refuses("--executor host --nccl-timeout 5min", 2, "--nccl-timeout 5min: give seconds");
    refuses("--executor host --bench gemm --nccl-timeout 0", 2, "--nccl-timeout 0: give seconds");
    refuses("--executor host --devices 0,x", 2, "--devices 0,x: 'x' is not a GPU index");
    refuses("--executor host --devices 1,1", 2, "GPU 1 is listed twice");
    refuses("--executor host extra", 2, "unexpected argument 'extra'");
    refuses("--executor host --model gpt3-13b --check", 2,
            "--check: the host reference would compute 1.65e+13 flops for gpt3-13b");
    refuses("--executor host --gpus 2", 2, "apply to --bench");
    refuses("--executor host --bench all --check", 2, "apply to runs, not --bench");
    refuses("--executor host --bench fast", 2, "--bench fast: valid are gemm, kernels");
    refuses("--executor host --bench collectives --max-bytes 1X", 2, "--max-bytes 1X: give a size");
    refuses("--executor host --bench collectives --min-bytes 4K --max-bytes 1K", 2,
            "--min-bytes 4096 is above --max-bytes 1024");
    refuses("--executor host --bench collectives --max-bytes 1G", 2, "give at most 256M");
    refuses("--executor host --bench collectives --gpus 0", 2, "--gpus 0: must be between 1");
    g_autofree char *bad = g_strdup_printf("--executor host -o %s/no/such/dir/run.json", tmpdir);
    refuses(bad, 2, "/no/such/dir/run.json"); /* checked before the run, as simpar's outputs */
}

/* --executor cuda: built without CUDA, a usage error saying so; built with it and no GPU, the
 * executor's no-device error; with a GPU, a checked one-rank run. */
static void
test_cuda(void)
{
    ExecRun help = exec_cli("--help");
    gboolean built = strstr(help.out, "Executor: host, cuda (default cuda)") != NULL;
    CU_ASSERT_TRUE(built || strstr(help.out, "Executor: host (default host)") != NULL);
    exec_run_clear(&help);
    g_autofree char *path = g_build_filename(tmpdir, "cuda.json", NULL);
    g_autofree char *args = g_strdup_printf("--executor cuda --tp 1 --check -o %s", path);
    ExecRun r = exec_cli(args);
    if (!built) {
        CU_ASSERT_EQUAL(r.status, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--executor cuda: this simpar-exec was built without "
                                             "CUDA (rebuild with meson -Dcuda=enabled"));
    } else if (r.status != 0) {
        CU_ASSERT_EQUAL(r.status, 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "no usable CUDA device"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(r.err, "; --executor host runs the same schedule on the CPU"));
    } else {
        g_autoptr(JsonParser) p = json_parser_new();
        CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
        JsonObject *run = json_node_get_object(json_parser_get_root(p));
        CU_ASSERT_STRING_EQUAL(json_object_get_string_member(run, "executor"), "cuda");
        CU_ASSERT_TRUE(
            json_object_get_boolean_member(json_object_get_object_member(run, "check"), "passed"));
    }
    exec_run_clear(&r);
}

static CU_TestInfo exec_tests[] = {
    {"a layer of every tensor-parallel mode runs, checks and reports op for op", test_layer_modes},
    {"a training step (tp x pp x dp) runs, checks and reports op for op", test_step},
    {"without -o a run prints its summary and the check table", test_summary},
    {"--bench all --quick reports GEMM flops, model bytes and nccl-tests bandwidths", test_bench},
    {"--bench options choose the section, ranks, sizes and repeats", test_bench_options},
    {"--bench kernels measures every kind from launch-bound sizes up, with progress on stderr",
     test_bench_sizes},
    {"bad flags, values and splits are refused with exit status 2, failed jobs with 1",
     test_refusals},
    {"--version prints the version and the executors", test_version},
    {"--executor cuda says why it cannot run here, or runs and checks", test_cuda},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"simpar-exec", suite_init, suite_clean, NULL, NULL, exec_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
