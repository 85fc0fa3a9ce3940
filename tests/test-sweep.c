/* test-sweep.c - `simpar sweep` through the binary (SIMPAR_BIN), on topologies/v100x64.xml with
 * a 4-layer default-4k model and the analytic backend, so every sweep takes about a second:
 *
 *   determinism  --jobs 1 and --jobs 2, shards merged and a resumed journal give the same bytes
 *   robustness   SIGKILL half-way leaves no worker and resumes to the same file; a torn last
 *                journal line; a second sweep on the same output is refused
 *   numbers      rows equal `simpar predict --json` of their configuration; tokens/s and
 *                GPU-hours per billion tokens follow their closed forms; ranks; a row that does
 *                not fit keeps its memory figures; --refine
 *   refusals     malformed lists and options exit 2 naming the flag and the value
 */
#include "app/csv-table.h"
#include "cli-run.h"
#include "simpar-test.h"
#include "sweep-rate.h"
#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <unistd.h>

#define TOPO  "topologies/v100x64.xml"
#define SMALL "sweep --topology " TOPO " --model default-4k --layers 4 -q"
/* Llama 3 8B's micro-batch of 1 on a small shape, 8 GPUs */
#define SMALL_LLAMA                                                                                \
    "--model llama3-8b --hidden 256 --heads 8 --kv-heads 8 --ffn 1024 --layers 2 --seq 128 "       \
    "--vocab 1024 --dtype fp16 --gpus 8 --global-batch 16"
/* A longer sweep (about 800 configurations) for the SIGKILL test. */
#define LONG                                                                                       \
    "sweep --topology " TOPO " --gpus 16,32,64 --layers 4,8 --micro-batch 4,16 --seq 256,512 "     \
    "--jobs 1 -q"

static char *tmpdir; /* made on first use, removed with the suite */

static char *
tmp_path(const char *name)
{
    if (tmpdir == NULL)
        tmpdir = g_dir_make_tmp("simpar-sweep-test-XXXXXX", NULL);
    g_assert(tmpdir != NULL);
    return g_build_filename(tmpdir, name, NULL); /* (transfer full) */
}

static int
suite_clean(void)
{
    if (tmpdir != NULL)
        simpar_test_tmpdir_remove(g_steal_pointer(&tmpdir));
    return 0;
}

/* Runs simpar `args` (printf-style), which must succeed; its stdout. */
static char *run_ok(const char *format, ...) G_GNUC_PRINTF(1, 2);

static char *
run_ok(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *args = g_strdup_vprintf(format, ap);
    va_end(ap);
    SimparCliRun r = simpar_cli_run(args);
    if (r.status != 0)
        printf("\n    simpar %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    g_free(r.err);
    return r.out; /* (transfer full) */
}

static gboolean
same_file(const char *a, const char *b)
{
    g_autofree char *x = NULL, *y = NULL;
    gsize nx = 0, ny = 0;
    gboolean ok = g_file_get_contents(a, &x, &nx, NULL) && g_file_get_contents(b, &y, &ny, NULL) &&
                  nx == ny && memcmp(x, y, nx) == 0;
    if (!ok)
        printf("\n    %s and %s differ", a, b);
    return ok;
}

static SimparCsv *
read_csv(const char *path)
{
    g_autoptr(GError) error = NULL;
    SimparCsv *csv = simpar_csv_read(path, SIMPAR_CSV_NONE, &error);
    if (csv == NULL)
        printf("\n    %s", error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    return csv; /* (transfer full) */
}

static const char *
field(const SimparCsv *csv, guint row, const char *column)
{
    int c = simpar_csv_column(csv, column);
    CU_ASSERT_FATAL(c >= 0);
    return simpar_csv_get(csv, row, c);
}

static double
number(const SimparCsv *csv, guint row, const char *column)
{
    return g_ascii_strtod(field(csv, row, column), NULL);
}

/* The reference sweep's output (computed once). */
static const char *
small_csv(void)
{
    static char *path;
    if (path == NULL) {
        path = tmp_path("small.csv");
        g_free(run_ok(SMALL " -o %s", path));
    }
    return path;
}

/* ------------------------------------------------------------------------- determinism */

static void
test_jobs_do_not_change_the_output(void)
{
    g_autofree char *one = tmp_path("jobs1.csv"), *two = tmp_path("jobs2.csv");
    g_free(run_ok(SMALL " --jobs 1 -o %s", one));
    g_free(run_ok(SMALL " --jobs 2 -o %s", two));
    CU_ASSERT_TRUE(same_file(one, two));
    CU_ASSERT_TRUE(same_file(one, small_csv()));
    g_autofree char *part = g_strconcat(one, ".part", NULL);
    CU_ASSERT_FALSE(g_file_test(part, G_FILE_TEST_EXISTS)); /* the journal is gone */
}

static void
test_shards_merge_into_the_unsharded_output(void)
{
    g_autofree char *all = tmp_path("merged.csv");
    char *p[3];
    for (guint i = 0; i < 3; i++) {
        g_autofree char *name = g_strdup_printf("shard%u.csv", i);
        p[i] = tmp_path(name);
        g_free(run_ok(SMALL " --shard %u/3 -o %s", i, p[i]));
    }
    g_free(run_ok("sweep --merge -o %s %s %s %s", all, p[2], p[0], p[1]));
    CU_ASSERT_TRUE(same_file(all, small_csv()));
    g_autofree char *missing = g_strdup_printf("sweep --merge -o %s %s %s", all, p[0], p[1]);
    CU_ASSERT_TRUE(simpar_cli_refused(missing, 1, "shard 2/3 is missing"));
    g_autofree char *twice =
        g_strdup_printf("sweep --merge -o %s %s %s %s %s", all, p[0], p[1], p[2], p[1]);
    CU_ASSERT_TRUE(simpar_cli_refused(twice, 1, "are both shard 1/3"));
    g_autofree char *other = tmp_path("other-shard.csv");
    g_free(run_ok(SMALL " --layers 8 --shard 1/3 -o %s", other));
    g_autofree char *mixed =
        g_strdup_printf("sweep --merge -o %s %s %s %s", all, p[0], other, p[2]);
    CU_ASSERT_TRUE(simpar_cli_refused(mixed, 1, "belong to different sweeps"));
    g_autofree char *none = g_strdup_printf("sweep --merge -o %s %s", all, small_csv());
    CU_ASSERT_TRUE(simpar_cli_refused(none, 1, "not a shard file"));
    for (guint i = 0; i < 3; i++)
        g_free(p[i]);
}

/* A journal cut in the middle of a line is resumed: the torn line is run again. */
static void
test_a_torn_journal_resumes_to_the_same_output(void)
{
    g_autofree char *whole = tmp_path("torn-ref.csv"), *out = tmp_path("torn.csv");
    g_autofree char *part = g_strconcat(out, ".part", NULL);
    g_free(run_ok(SMALL " --shard 0/1 -o %s", whole)); /* a shard file is a sorted journal */
    g_autofree char *text = NULL;
    gsize len = 0;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(whole, &text, &len, NULL));
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(part, text, (gssize) (len / 2), NULL));
    g_autofree char *said = run_ok(SMALL " --shard 0/1 -o %s", out);
    CU_ASSERT_PTR_NOT_NULL(strstr(said, "already in"));
    CU_ASSERT_TRUE(same_file(whole, out));
}

/* A forged journal is refused on resume: a row whose step is not a figure simpar writes (it
 * would rank first) or that is not the configuration of its index; a forged shard on merge. */
static void
test_a_forged_journal_is_refused(void)
{
    g_autofree char *whole = tmp_path("forged-ref.csv"), *out = tmp_path("forged.csv");
    g_autofree char *part = g_strconcat(out, ".part", NULL);
    g_free(run_ok(SMALL " --shard 0/1 -o %s", whole)); /* a shard file is a sorted journal */
    g_autofree char *text = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(whole, &text, NULL, NULL));
    /* the first "ok" row's step time, then its mode */
    const char *ok = strstr(text, ",ok,");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
    const char *step = ok + strlen(",ok,") + strcspn(ok + strlen(",ok,"), ",") + 1;
    gsize step_len = strcspn(step, ",");
    const char *forgeries[] = {"1e-9", "nan", "-3"};
    for (guint f = 0; f < G_N_ELEMENTS(forgeries); f++) {
        g_autofree char *forged =
            g_strdup_printf("%.*s%s%s", (int) (step - text), text, forgeries[f], step + step_len);
        CU_ASSERT_TRUE_FATAL(g_file_set_contents(part, forged, -1, NULL));
        g_autofree char *args = g_strdup_printf(SMALL " --shard 0/1 -o %s", out);
        CU_ASSERT_TRUE(simpar_cli_refused(args, 1, "step_time_s"));
        /* the same row in a shard: refused by --merge */
        g_autofree char *shard = tmp_path("forged-shard.csv"), *all = tmp_path("forged-all.csv");
        CU_ASSERT_TRUE_FATAL(g_file_set_contents(shard, forged, -1, NULL));
        g_autofree char *merge = g_strdup_printf("sweep --merge -o %s %s", all, shard);
        CU_ASSERT_TRUE(simpar_cli_refused(merge, 1, "step_time_s"));
    }
    const char *mode = strstr(text, ",1d,");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mode);
    g_autofree char *other = g_strdup_printf("%.*s,3d,%s", (int) (mode - text), text, mode + 4);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(part, other, -1, NULL));
    g_autofree char *args = g_strdup_printf(SMALL " --shard 0/1 -o %s", out);
    CU_ASSERT_TRUE(simpar_cli_refused(args, 1, "not the configuration of its index"));
    g_remove(part);
}

/* ------------------------------------------------------------------------------ SIGKILL */

/* Processes alive (not zombies) whose command line holds `text`. */
static guint
processes_with(const char *text)
{
    g_autoptr(GDir) d = g_dir_open("/proc", 0, NULL);
    const char *name;
    guint n = 0;
    while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
        if (!g_ascii_isdigit(name[0]))
            continue;
        g_autofree char *cmd_path = g_build_filename("/proc", name, "cmdline", NULL);
        g_autofree char *stat_path = g_build_filename("/proc", name, "stat", NULL);
        g_autofree char *cmd = NULL, *stat = NULL;
        gsize len = 0;
        if (!g_file_get_contents(cmd_path, &cmd, &len, NULL) ||
            !g_file_get_contents(stat_path, &stat, NULL, NULL))
            continue;
        const char *state = strrchr(stat, ')');
        gboolean mine = FALSE;
        for (gsize at = 0; at < len; at += strlen(cmd + at) + 1) /* NUL-separated arguments */
            mine = mine || strstr(cmd + at, text) != NULL;
        if (mine && state != NULL && state[1] != '\0' && state[2] != 'Z')
            n++;
    }
    return n;
}

static guint
journal_rows(const char *part)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(part, &text, NULL, NULL))
        return 0;
    guint lines = 0;
    for (const char *p = text; *p != '\0'; p++)
        lines += *p == '\n';
    return lines > 3 ? lines - 3 : 0; /* two comment lines and the header */
}

static GPid
spawn_sweep(const char *out)
{
    g_autofree char *cmd = g_strdup_printf("%s " LONG " -o %s", g_getenv("SIMPAR_BIN"), out);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    /* the killed workers' reply files go to the suite's folder, removed with it */
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "TMPDIR", tmpdir, TRUE);
    GPid pid = 0;
    g_assert(g_spawn_async(NULL, argv, env,
                           G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                               G_SPAWN_STDERR_TO_DEV_NULL,
                           NULL, NULL, &pid, NULL));
    return pid;
}

static void
test_a_killed_sweep_leaves_no_worker_and_resumes(void)
{
    g_autofree char *ref = tmp_path("long-ref.csv"), *out = tmp_path("long.csv");
    g_autofree char *part = g_strconcat(out, ".part", NULL);
    g_free(run_ok(LONG " -o %s", ref));
    g_autoptr(SimparCsv) whole = read_csv(ref);
    guint total = simpar_csv_n_rows(whole);
    GPid pid = spawn_sweep(out);
    gboolean second_tried = FALSE;
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    guint rows;
    /* half the rows, and a worker running (it must die with the sweep) */
    while (((rows = journal_rows(part)) < total / 2 || processes_with(out) < 2) &&
           g_get_monotonic_time() < deadline) {
        if (rows > 0 && !second_tried) { /* one sweep per output at a time */
            g_autofree char *again = g_strdup_printf(LONG " -o %s", out);
            CU_ASSERT_TRUE(simpar_cli_refused(again, 1, "another simpar sweep"));
            second_tried = TRUE;
        }
        g_usleep(2000);
    }
    CU_ASSERT_TRUE(kill(pid, SIGKILL) == 0);
    int status;
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
    rows = journal_rows(part);
    printf("\n    killed at %u of %u rows", rows, total);
    CU_ASSERT_TRUE(rows > 0 && rows < total);
    for (guint i = 0; i < 500 && processes_with(out) > 0; i++) /* workers die with the parent */
        g_usleep(10000);
    CU_ASSERT_EQUAL(processes_with(out), 0);
    g_autofree char *said = run_ok(LONG " -o %s", out);
    CU_ASSERT_PTR_NOT_NULL(strstr(said, "already in"));
    CU_ASSERT_TRUE(same_file(ref, out));
    CU_ASSERT_TRUE(second_tried);
}

/* ------------------------------------------------------------------------------- numbers */

/* The row of the sweep with this mode, tp, pp and dp. */
static guint
find_row(const SimparCsv *csv, const char *mode, const char *tp, const char *pp, const char *dp)
{
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++)
        if (g_str_equal(field(csv, i, "mode"), mode) && g_str_equal(field(csv, i, "tp"), tp) &&
            g_str_equal(field(csv, i, "pp"), pp) && g_str_equal(field(csv, i, "dp"), dp))
            return i;
    CU_FAIL_FATAL("no such row");
    return 0;
}

static char *
json_figure(JsonObject *o, const char *key)
{
    return g_strdup_printf("%.9g", json_object_get_double_member(o, key));
}

/* Row `row`'s step time is, as the CSV prints it, that of the first prediction of `json`
 * (simpar predict --json; freed here). */
static void
step_equals_predict(const SimparCsv *csv, guint row, char *json)
{
    g_autofree char *text = json;
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, text, -1, NULL));
    JsonObject *o = json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
    g_autofree char *step = json_figure(o, "step_time_s");
    CU_ASSERT_STRING_EQUAL(field(csv, row, "step_time_s"), step);
}

static void
test_rows_equal_predict(void)
{
    g_autoptr(SimparCsv) csv = read_csv(small_csv());
    const char *cases[][5] = {{"3d", "64", "1", "1", ""},
                              {"2.5d", "16", "4", "1", "--depth 4"},
                              {"1d", "8", "2", "4", ""},
                              {"2d", "16", "2", "2", ""}};
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
        guint i = find_row(csv, cases[k][0], cases[k][1], cases[k][2], cases[k][3]);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), "ok");
        g_autofree char *out =
            run_ok("--topology " TOPO " --backend analytic --model default-4k "
                   "--layers 4 --tp-mode %s --tp %s --pp %s --dp %s %s --json",
                   cases[k][0], cases[k][1], cases[k][2], cases[k][3], cases[k][4]);
        g_autoptr(JsonParser) p = json_parser_new();
        CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, out, -1, NULL));
        JsonObject *o =
            json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
        g_autofree char *step = json_figure(o, "step_time_s"),
                        *mem = json_figure(o, "memory_per_gpu_gib");
        g_autofree char *tp = json_figure(o, "tp_exposed_s"), *mfu = json_figure(o, "mfu");
        CU_ASSERT_STRING_EQUAL(field(csv, i, "step_time_s"), step);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "mem_GiB"), mem);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "tp_exposed_s"), tp);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "mfu"), mfu);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "analytic_step_time_s"), step);
    }
}

static void
test_closed_forms_and_ranks(void)
{
    g_autoptr(SimparCsv) csv = read_csv(small_csv());
    guint n = simpar_csv_n_rows(csv), ok = 0, skipped_memory = 0;
    double last = INFINITY;
    for (guint r = 1; r <= n; r++) /* ranks 1..ok in order of throughput (the default) */
        for (guint i = 0; i < n; i++)
            if (atoi(field(csv, i, "rank")) == (int) r) {
                CU_ASSERT_TRUE(number(csv, i, "tokens_per_s") <= last);
                last = number(csv, i, "tokens_per_s");
                ok++;
            }
    for (guint i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(atoll(field(csv, i, "index")), i);
        if (!g_str_equal(field(csv, i, "status"), "ok")) {
            CU_ASSERT_STRING_EQUAL(field(csv, i, "rank"), "");
            CU_ASSERT_STRING_EQUAL(field(csv, i, "step_time_s"), "");
            if (strstr(field(csv, i, "reason"), "does not fit in GPU memory") != NULL) {
                CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), "skipped");
                CU_ASSERT_TRUE(number(csv, i, "mem_GiB") > number(csv, i, "mem_capacity_GiB"));
                CU_ASSERT_TRUE(number(csv, i, "states_GiB") > 0);
                skipped_memory++;
            }
            continue;
        }
        double step = number(csv, i, "step_time_s"), gpus = number(csv, i, "gpus");
        double tokens = number(csv, i, "global_batch") * number(csv, i, "seq");
        CU_ASSERT_DOUBLE_EQUAL(number(csv, i, "tokens_per_s") / (tokens / step), 1, 1e-8);
        CU_ASSERT_DOUBLE_EQUAL(
            number(csv, i, "gpu_hours_per_btok") / (gpus * step / 3600 / (tokens / 1e9)), 1, 1e-8);
        CU_ASSERT_EQUAL(number(csv, i, "tp") * number(csv, i, "cp") * number(csv, i, "pp") *
                            number(csv, i, "dp"),
                        gpus);
    }
    CU_ASSERT_TRUE(ok > 10);
    CU_ASSERT_TRUE(skipped_memory > 0);
    /* the first row: 1-D T=1 P=1 D=64 holds the whole model on each V100 */
    CU_ASSERT_STRING_EQUAL(field(csv, 0, "status"), "skipped");
    CU_ASSERT_TRUE(number(csv, 0, "mem_GiB") > 16);
}

/* --kv-heads is a list axis: grouped-query attention rows equal simpar predict, fewer key/value
 * heads give a faster step, and a count the tensor-parallel group cannot split is a skipped row
 * that says why. */
static void
test_kv_heads_axis(void)
{
    g_autofree char *out = tmp_path("kv.csv");
    g_free(run_ok("sweep --topology " TOPO " --model llama3-8b --layers 2 --seq 1024 --dtype fp16 "
                  "--gpus 8 --tp-mode 1d --tp 4 --pp 1 --kv-heads 2..8 --global-batch 8 -q -o %s",
                  out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 3);
    const char *kv[] = {"2", "4", "8"};
    for (guint i = 0; i < 3; i++)
        CU_ASSERT_STRING_EQUAL(field(csv, i, "kv_heads"), kv[i]);
    CU_ASSERT_STRING_EQUAL(field(csv, 0, "status"), "skipped");
    CU_ASSERT_PTR_NOT_NULL(strstr(field(csv, 0, "reason"), "--kv-heads 2 is not divisible by 4"));
    CU_ASSERT_STRING_EQUAL(field(csv, 1, "status"), "ok");
    CU_ASSERT_STRING_EQUAL(field(csv, 2, "status"), "ok");
    CU_ASSERT_TRUE(number(csv, 1, "step_time_s") < number(csv, 2, "step_time_s"));
    CU_ASSERT_TRUE(number(csv, 1, "mem_GiB") < number(csv, 2, "mem_GiB"));
    step_equals_predict(csv, 1,
                        run_ok("--topology " TOPO " --backend analytic --model llama3-8b "
                               "--layers 2 --seq 1024 --dtype fp16 --gpus 8 --tp-mode 1d "
                               "--tp 4 --pp 1 --dp 2 --kv-heads 4 --global-batch 8 --json"));
}

/* --cp and --cp-mode are list axes: one row without context parallelism (the form means nothing
 * there), one per form with it, each equal to simpar predict; C x T x P x D = GPUs. */
static void
test_cp_axis(void)
{
    g_autofree char *out = tmp_path("cp.csv");
    g_free(run_ok("sweep --topology " TOPO " --model llama3-8b --layers 2 --seq 4096 --dtype fp16 "
                  "--gpus 8 --tp-mode 1d --tp 4 --pp 1 --cp 1,2 --cp-mode allgather,ring "
                  "--global-batch 8 -q -o %s",
                  out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 3);
    const char *cp[][3] = {{"1", "allgather", "2"}, {"2", "allgather", "1"}, {"2", "ring", "1"}};
    for (guint i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), "ok");
        CU_ASSERT_STRING_EQUAL(field(csv, i, "cp"), cp[i][0]);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "cp_mode"), cp[i][1]);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "dp"), cp[i][2]);
        step_equals_predict(
            csv, i,
            run_ok("--topology " TOPO " --backend analytic --model llama3-8b --layers 2 "
                   "--seq 4096 --dtype fp16 --gpus 8 --tp-mode 1d --tp 4 --pp 1 --dp %s --cp %s "
                   "--cp-mode %s --global-batch 8 --json",
                   cp[i][2], cp[i][0], cp[i][1]));
    }
    /* the two forms move different traffic, so they cannot tie */
    CU_ASSERT_TRUE(number(csv, 1, "step_time_s") != number(csv, 2, "step_time_s"));
}

/* --ep is a list axis: each row's EP in the ep column, equal to simpar predict where it splits,
 * and skipped rows that say why where the experts (8) or the stage's T x C x D GPUs (4) are not
 * divisible by it. */
static void
test_ep_axis(void)
{
    g_autofree char *out = tmp_path("ep.csv");
    const char *moe = "--model tiny --experts 8 --topk 2 --moe-ffn 64 --gpus 4 --tp-mode 1d "
                      "--tp 1 --pp 1 --global-batch 32";
    g_free(run_ok("sweep --topology " TOPO " %s --ep 1,2,3,8 -q -o %s", moe, out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 4);
    const char *ep[] = {"1", "2", "3", "8"};
    const char *why[] = {NULL, NULL, "is not divisible by --ep 3", "does not divide --tp x --cp"};
    for (guint i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(field(csv, i, "ep"), ep[i]);
        CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), why[i] == NULL ? "ok" : "skipped");
        if (why[i] != NULL) {
            CU_ASSERT_PTR_NOT_NULL(strstr(field(csv, i, "reason"), why[i]));
            continue;
        }
        step_equals_predict(csv, i,
                            run_ok("--topology " TOPO " --backend analytic %s --dp 4 --ep %s "
                                   "--json",
                                   moe, ep[i]));
    }
    /* EP 2 splits the experts' all-to-alls and gradients otherwise than EP 1 */
    CU_ASSERT_TRUE(number(csv, 0, "step_time_s") != number(csv, 1, "step_time_s"));
}

/* --etp is one value for every row: with --ep 1,2,4 over 8 GPUs (T 2 with --sp, D 4), each
 * row equals simpar predict with the same --etp 2 and its EP, EP 4 x ETP 2 filling the stage. */
static void
test_etp_applies_to_every_row(void)
{
    g_autofree char *out = tmp_path("etp.csv");
    const char *moe = "--model tiny --experts 8 --topk 2 --moe-ffn 64 --gpus 8 --tp-mode 1d "
                      "--tp 2 --sp --pp 1 --global-batch 32 --etp 2";
    g_free(run_ok("sweep --topology " TOPO " %s --ep 1,2,4 --jobs 1 -q -o %s", moe, out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 3);
    const char *ep[] = {"1", "2", "4"};
    for (guint i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), "ok");
        step_equals_predict(csv, i,
                            run_ok("--topology " TOPO " --backend analytic %s --dp 4 --ep %s "
                                   "--json",
                                   moe, ep[i]));
    }
}

/* --moe-dispatcher is one value for every row: with --ep 1,2,4 over 8 GPUs, each row equals
 * simpar predict with --moe-dispatcher allgather and its EP, and differs from the all-to-all's
 * row where EP > 1. */
static void
test_moe_dispatcher_applies_to_every_row(void)
{
    g_autofree char *out = tmp_path("dispatcher.csv");
    g_autofree char *a2a = tmp_path("dispatcher-a2a.csv");
    const char *moe = "--model tiny --experts 8 --topk 2 --moe-ffn 64 --gpus 8 --tp-mode 1d "
                      "--tp 2 --sp --pp 1 --global-batch 32";
    g_free(run_ok("sweep --topology " TOPO " %s --moe-dispatcher allgather --ep 1,2,4 --jobs 1 "
                  "-q -o %s",
                  moe, out));
    g_free(run_ok("sweep --topology " TOPO " %s --ep 1,2,4 --jobs 1 -q -o %s", moe, a2a));
    g_autoptr(SimparCsv) csv = read_csv(out);
    g_autoptr(SimparCsv) plain = read_csv(a2a);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 3);
    const char *ep[] = {"1", "2", "4"};
    for (guint i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL_FATAL(field(csv, i, "status"), "ok");
        step_equals_predict(csv, i,
                            run_ok("--topology " TOPO " --backend analytic %s --dp 4 --ep %s "
                                   "--moe-dispatcher allgather --json",
                                   moe, ep[i]));
    }
    CU_ASSERT_TRUE(number(csv, 2, "step_time_s") != number(plain, 2, "step_time_s"));
}

/* --tp-comm-overlap is one value for every row: 1-D rows with --sp over T 2 and 4 each equal
 * simpar predict with it, their exposed tensor-parallel time below the rows' without it (on two
 * small layers the step itself need not be shorter: the GEMMs give up SMs); other modes' rows
 * are skipped with predict's reason. */
static void
test_tp_comm_overlap_applies_to_every_row(void)
{
    g_autofree char *topo = tmp_path("tpov-h100x8.xml");
    g_free(run_ok("topology --preset dgx-h100 --nodes 1 -o %s", topo));
    g_autofree char *out = tmp_path("tpov.csv");
    g_autofree char *plain = tmp_path("tpov-plain.csv");
    const char *job = "--model llama3-8b --layers 2 --seq 2048 --gpus 8 --sp --pp 1 "
                      "--global-batch 8";
    g_free(run_ok("sweep --topology %s %s --tp-mode 1d,2d --tp 2,4 --tp-comm-overlap --jobs 1 -q "
                  "-o %s",
                  topo, job, out));
    g_free(
        run_ok("sweep --topology %s %s --tp-mode 1d --tp 2,4 --jobs 1 -q -o %s", topo, job, plain));
    g_autoptr(SimparCsv) csv = read_csv(out);
    g_autoptr(SimparCsv) base = read_csv(plain);
    guint ok = 0, skipped = 0;
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        if (g_str_equal(field(csv, i, "status"), "ok")) {
            CU_ASSERT_STRING_EQUAL(field(csv, i, "mode"), "1d");
            step_equals_predict(csv, i,
                                run_ok("--topology %s --backend analytic %s --tp-mode 1d --tp %s "
                                       "--tp-comm-overlap --json",
                                       topo, job, field(csv, i, "tp")));
            ok++;
        } else {
            CU_ASSERT_PTR_NOT_NULL(strstr(field(csv, i, "reason"), "1d"));
            skipped++;
        }
    }
    CU_ASSERT_EQUAL(ok, 2);
    CU_ASSERT(skipped >= 1);
    for (guint i = 0; i < simpar_csv_n_rows(base); i++)
        for (guint j = 0; j < simpar_csv_n_rows(csv); j++)
            if (g_str_equal(field(csv, j, "status"), "ok") &&
                g_str_equal(field(csv, j, "tp"), field(base, i, "tp")))
                CU_ASSERT(number(csv, j, "tp_exposed_s") < number(base, i, "tp_exposed_s"));
}

/* --precision is a list axis, the innermost: one row per precision, each equal to simpar
 * predict with its --dtype and --fp8-recipe, the dtype column naming the recipe; MXFP8 on
 * Hopper is a skipped row that says why. One worker: the rows share its cache of layers, which
 * must tell an FP8 layer from the bf16 one (it gave the FP8 rows the bf16 layer's GEMMs). */
static void
test_precision_axis(void)
{
    g_autofree char *topo = tmp_path("h100x8.xml");
    g_free(run_ok("topology --preset dgx-h100 --nodes 1 -o %s", topo));
    g_autofree char *out = tmp_path("precision.csv");
    g_free(run_ok("sweep --topology %s --model llama3-8b --layers 2 --seq 1024 --gpus 8 "
                  "--tp-mode 1d --tp 8 --pp 1 --global-batch 8 "
                  "--precision bf16,fp8,fp8-current,fp8-mxfp8 -q --jobs 1 -o %s",
                  topo, out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 4);
    const char *dtype[] = {"bf16", "fp8 (delayed)", "fp8 (current)", "fp8 (mxfp8)"};
    const char *flags[] = {"--dtype bf16", "--dtype fp8", "--dtype fp8 --fp8-recipe current"};
    for (guint i = 0; i < 4; i++)
        CU_ASSERT_STRING_EQUAL(field(csv, i, "dtype"), dtype[i]);
    for (guint i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL_FATAL(field(csv, i, "status"), "ok");
        step_equals_predict(
            csv, i,
            run_ok("--topology %s --backend analytic --model llama3-8b --layers 2 --seq 1024 "
                   "--gpus 8 --tp-mode 1d --tp 8 --pp 1 --dp 1 --global-batch 8 %s --json",
                   topo, flags[i]));
    }
    /* FP8 GEMMs and their casts are not bf16's (at this small shape the casts outweigh what
     * the FP8 peak saves); current scaling adds an amax pass per cast */
    CU_ASSERT_TRUE(number(csv, 1, "compute_s") != number(csv, 0, "compute_s"));
    CU_ASSERT_TRUE(number(csv, 2, "compute_s") > number(csv, 1, "compute_s"));
    CU_ASSERT_STRING_EQUAL(field(csv, 3, "status"), "skipped");
    CU_ASSERT_PTR_NOT_NULL(strstr(field(csv, 3, "reason"), "--fp8-recipe mxfp8: GPU "
                                                           "H100-SXM5-80GB has no block-scaled"));
}

/* --fp8-dot-product-attention as a sweep job option: the FP8 rows of --precision run their
 * attention in FP8, the bf16 row as before, each equal to simpar predict (FP8 attention with
 * its flag); without --attention flash the sweep is refused, naming the flag. */
static void
test_precision_fp8_attention(void)
{
    g_autofree char *topo = tmp_path("h100x8-dpa.xml");
    g_free(run_ok("topology --preset dgx-h100 --nodes 1 -o %s", topo));
    g_autofree char *out = tmp_path("dpa.csv");
    const char *job = "--model llama3-8b --layers 2 --seq 4096 --gpus 8 --tp-mode 1d --tp 8 "
                      "--pp 1 --global-batch 8 --attention flash";
    g_free(run_ok("sweep --topology %s %s --precision bf16,fp8 --fp8-dot-product-attention -q "
                  "--jobs 1 -o %s",
                  topo, job, out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 2);
    const char *flags[] = {"--dtype bf16", "--dtype fp8 --fp8-dot-product-attention"};
    for (guint i = 0; i < 2; i++) {
        CU_ASSERT_STRING_EQUAL_FATAL(field(csv, i, "status"), "ok");
        step_equals_predict(
            csv, i,
            run_ok("--topology %s --backend analytic %s --dp 1 %s --json", topo, job, flags[i]));
    }
    g_autofree char *plain = run_ok("--topology %s --backend analytic %s --dp 1 --dtype fp8 "
                                    "--json",
                                    topo, job);
    CU_ASSERT_PTR_NULL(strstr(plain, "fp8_attention"));
    g_autofree char *bad = g_strdup_printf("sweep --topology %s %s --attention unfused "
                                           "--precision fp8 --fp8-dot-product-attention -q -o %s",
                                           topo, job, out);
    SimparCliRun r = simpar_cli_run(bad);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--fp8-dot-product-attention needs --attention flash"));
    simpar_cli_run_clear(&r);
}

/* The rows of `sweep ARGS EXTRA` and of the same sweep without EXTRA, read (`name`: the
 * files' stem). */
static void
sweep_with_without(const char *name, const char *args, const char *extra, SimparCsv **with,
                   SimparCsv **without)
{
    g_autofree char *base = g_strdup_printf("%s.csv", name);
    g_autofree char *plain_name = g_strdup_printf("%s-plain.csv", name);
    g_autofree char *out = tmp_path(base), *plain = tmp_path(plain_name);
    g_free(run_ok("sweep %s %s -q --jobs 1 -o %s", args, extra, out));
    g_free(run_ok("sweep %s -q --jobs 1 -o %s", args, plain));
    *with = read_csv(out);
    *without = read_csv(plain);
}

/* --fp8-output-proj as a sweep job option: the MXFP8 row of --precision runs its output layer in
 * MXFP8, the current-scaling and bf16 rows as without it, each equal to simpar predict of its
 * own flags; the MXFP8 row faster than the same row without the flag. */
static void
test_precision_fp8_output_proj(void)
{
    g_autofree char *topo = tmp_path("b200x8-proj.xml");
    g_free(run_ok("topology --preset dgx-b200 --nodes 1 -o %s", topo));
    const char *job = "--model llama3-8b --layers 2 --seq 4096 --gpus 8 --tp-mode 1d --tp 8 "
                      "--pp 1 --global-batch 8";
    g_autofree char *args = g_strdup_printf("--topology %s %s --precision "
                                            "bf16,fp8-current,fp8-mxfp8",
                                            topo, job);
    g_autoptr(SimparCsv) csv = NULL;
    g_autoptr(SimparCsv) without = NULL;
    sweep_with_without("proj", args, "--fp8-output-proj", &csv, &without);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 3);
    const char *flags[] = {"--dtype bf16", "--dtype fp8 --fp8-recipe current",
                           "--dtype fp8 --fp8-recipe mxfp8 --fp8-output-proj"};
    for (guint i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL_FATAL(field(csv, i, "status"), "ok");
        step_equals_predict(
            csv, i,
            run_ok("--topology %s --backend analytic %s --dp 1 %s --json", topo, job, flags[i]));
        double with = number(csv, i, "step_time_s"), wo = number(without, i, "step_time_s");
        CU_ASSERT(i < 2 ? with == wo : with < wo);
    }
}

/* --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split as sweep
 * job options: a pipelined row (P >= 2) runs the accounted split, its step simpar predict's
 * with the two flags and not the row's without them (6 layers over P = 2 x v = 2: chunks of
 * 1, 2, 2, 1 layers instead of 2, 1, 2, 1); the row of one stage, which has no split to
 * account, is simpar predict's without them. */
static void
test_accounted_split(void)
{
    g_autofree char *topo = tmp_path("h100x8-acct.xml");
    g_free(run_ok("topology --preset dgx-h100 --nodes 1 -o %s", topo));
    const char *job = "--model llama3-8b --layers 6 --seq 1024 --gpus 8 --tp-mode 1d --tp 2 "
                      "--global-batch 32";
    const char *acct = "--account-for-embedding-in-pipeline-split "
                       "--account-for-loss-in-pipeline-split";
    const char *rows[] = {"--pp 1 --schedule 1f1b",
                          "--pp 2 --schedule interleaved --virtual-stages 2"};
    const char *dp[] = {"--dp 4", "--dp 2"};
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autofree char *args = g_strdup_printf("--topology %s %s %s", topo, job, rows[i]);
        g_autoptr(SimparCsv) csv = NULL;
        g_autoptr(SimparCsv) without = NULL;
        sweep_with_without("acct", args, acct, &csv, &without);
        CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 1);
        CU_ASSERT_STRING_EQUAL_FATAL(field(csv, 0, "status"), "ok");
        step_equals_predict(csv, 0,
                            run_ok("--topology %s --backend analytic %s %s %s %s --json", topo, job,
                                   rows[i], dp[i], i > 0 ? acct : ""));
        double with = number(csv, 0, "step_time_s"), wo = number(without, 0, "step_time_s");
        CU_ASSERT(i == 0 ? with == wo : with != wo);
    }
}

/* --rack-gpus with a rack-scale --preset: the row runs on racks of that many GPUs, its step the
 * one simpar predict gives on `simpar topology --preset gb200-nvl72 --racks 2 --rack-gpus 64`;
 * the nodes column counts those racks (2 for 128 GPUs, as on racks of 72). */
static void
test_rack_gpus(void)
{
    g_autofree char *topo = tmp_path("gb200-2x64.xml"), *out = tmp_path("racks.csv");
    g_free(run_ok("topology --preset gb200-nvl72 --racks 2 --rack-gpus 64 -o %s", topo));
    const char *job = "--model llama3-8b --layers 4 --tp-mode 1d --tp 8 --pp 2 --global-batch 64";
    g_free(run_ok("sweep --preset gb200-nvl72 --rack-gpus 64 --gpus 128 %s -q --jobs 1 -o %s", job,
                  out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), 1);
    CU_ASSERT_STRING_EQUAL(field(csv, 0, "status"), "ok");
    CU_ASSERT_STRING_EQUAL(field(csv, 0, "nodes"), "2");
    step_equals_predict(
        csv, 0, run_ok("--topology %s --backend analytic --gpus 128 %s --dp 8 --json", topo, job));
}

/* Without --micro-batch each grid gets the model's micro-batch (Llama 3's 1, on a small shape)
 * rounded up to whole sequences per GPU of its grid: 1-D 1, 2-D q, 2.5-D q d, 3-D q^2, so every
 * mode has a row that runs, each equal to simpar predict of its configuration; with --micro-batch 1
 * the grid modes are refused, saying why. */
static void
test_micro_batch_per_mode(void)
{
    g_autofree char *out = tmp_path("modes.csv"), *fixed = tmp_path("modes-b1.csv");
    g_autofree char *summary = tmp_path("modes.json");
    g_free(run_ok("sweep --topology " TOPO " " SMALL_LLAMA " --tp-mode all --pp 1 -q -o %s "
                  "--summary %s",
                  out, summary));
    g_free(run_ok("sweep --topology " TOPO " " SMALL_LLAMA " --micro-batch 1 --tp-mode all --pp 1 "
                  "-q -o %s",
                  fixed));
    g_autoptr(SimparCsv) csv = read_csv(out);
    g_autoptr(SimparCsv) one = read_csv(fixed);
    CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(csv), simpar_csv_n_rows(one));
    guint runs[4] = {0}, refused_b1 = 0;
    const char *modes[] = {"1d", "2d", "2.5d", "3d"};
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        const char *mode = field(csv, i, "mode");
        gint64 q = g_ascii_strtoll(field(csv, i, "q"), NULL, 10);
        gint64 d = g_ascii_strtoll(field(csv, i, "depth"), NULL, 10);
        gint64 want = g_str_equal(mode, "1d")     ? 1
                      : g_str_equal(mode, "2d")   ? q
                      : g_str_equal(mode, "2.5d") ? q * d
                                                  : q * q;
        CU_ASSERT_EQUAL(g_ascii_strtoll(field(csv, i, "micro_batch"), NULL, 10), want);
        for (guint m = 0; m < 4; m++)
            runs[m] += g_str_equal(mode, modes[m]) && g_str_equal(field(csv, i, "status"), "ok");
        if (!g_str_equal(mode, "1d") && g_str_equal(field(one, i, "status"), "skipped") &&
            strstr(field(one, i, "reason"), "--micro-batch 1 is not divisible") != NULL)
            refused_b1++;
    }
    for (guint m = 0; m < 4; m++) {
        if (runs[m] == 0)
            printf("\n    no %s row ran", modes[m]);
        CU_ASSERT_TRUE(runs[m] > 0);
    }
    CU_ASSERT_TRUE(refused_b1 > 0);
    /* --summary: the counts, and per mode the row of least step time (one global batch, so the
     * most tokens per second) with its CSV figures */
    g_autoptr(JsonParser) sp = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(sp, summary, NULL));
    JsonObject *so = json_node_get_object(json_parser_get_root(sp));
    CU_ASSERT_EQUAL(json_object_get_int_member(so, "configurations"), simpar_csv_n_rows(csv));
    CU_ASSERT_EQUAL(json_object_get_int_member(so, "ok") +
                        json_object_get_int_member(so, "skipped"),
                    simpar_csv_n_rows(csv));
    JsonArray *best = json_object_get_array_member(so, "best_per_gpu_count_and_mode");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(best), 4);
    for (guint k = 0; k < 4; k++) {
        JsonObject *b = json_array_get_object_element(best, k);
        const char *mode = json_object_get_string_member(b, "mode");
        double least = G_MAXDOUBLE;
        for (guint i = 0; i < simpar_csv_n_rows(csv); i++)
            if (g_str_equal(field(csv, i, "mode"), mode) &&
                g_str_equal(field(csv, i, "status"), "ok"))
                least = MIN(least, number(csv, i, "step_time_s"));
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(b, "step_time_s"), least,
                               1e-12 * least);
        CU_ASSERT_EQUAL(json_node_get_value_type(json_object_get_member(b, "micro_batch")),
                        G_TYPE_INT64);
    }
    CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(so, "best_per_gpu_count")),
                    1);
    /* a 2-D row equals predict of its configuration */
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        if (!g_str_equal(field(csv, i, "mode"), "2d") ||
            !g_str_equal(field(csv, i, "status"), "ok"))
            continue;
        step_equals_predict(
            csv, i,
            run_ok("--topology " TOPO " --backend analytic " SMALL_LLAMA " --tp-mode 2d --tp %s "
                   "--pp 1 --dp %s --micro-batch %s --json",
                   field(csv, i, "tp"), field(csv, i, "dp"), field(csv, i, "micro_batch")));
        break;
    }
}

/* Rows whose SimGrid simulation would exceed --time-budget are skipped, saying so and how to go
 * faster, instead of running for hours; the budget is part of the sweep's identity. */
static void
test_rows_over_the_time_budget_are_skipped(void)
{
    g_autofree char *out = tmp_path("budget.csv");
    g_free(run_ok(SMALL " --backend simgrid --gpus 16 --time-budget 0.00001 -o %s", out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    guint over = 0;
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        CU_ASSERT_STRING_NOT_EQUAL(field(csv, i, "status"), "ok");
        if (strstr(field(csv, i, "reason"), "simulating it on SimGrid would take about") != NULL &&
            strstr(field(csv, i, "reason"), "more than --time-budget 1e-05 minutes") != NULL) {
            CU_ASSERT_STRING_EQUAL(field(csv, i, "status"), "skipped");
            over++;
        }
    }
    CU_ASSERT_TRUE(over > 0);
}

/* --refine K on an analytic sweep, and on a formula one (the same figures, from closed forms):
 * the K best rows re-simulated on SimGrid keep their first figure as analytic_step_time_s. */
static void
test_refine_resimulates_the_best_two(void)
{
    const char *backends[] = {"analytic", "formula"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        g_autofree char *out = tmp_path("refined.csv");
        g_free(run_ok(SMALL " --backend %s --refine 2 -o %s", backends[b], out));
        g_autoptr(SimparCsv) a = read_csv(small_csv());
        g_autoptr(SimparCsv) r = read_csv(out);
        CU_ASSERT_EQUAL_FATAL(simpar_csv_n_rows(a), simpar_csv_n_rows(r));
        guint refined = 0;
        for (guint i = 0; i < simpar_csv_n_rows(a); i++) {
            if (!g_str_equal(field(r, i, "backend"), "simgrid")) {
                CU_ASSERT_STRING_EQUAL(field(r, i, "backend"), backends[b]);
                CU_ASSERT_STRING_EQUAL(field(r, i, "step_time_s"), field(a, i, "step_time_s"));
                continue;
            }
            refined++;
            CU_ASSERT_TRUE(atoi(field(a, i, "rank")) <= 2); /* the first pass's best two */
            CU_ASSERT_STRING_EQUAL(field(r, i, "analytic_step_time_s"), field(a, i, "step_time_s"));
            CU_ASSERT_STRING_NOT_EQUAL(field(r, i, "step_time_s"), field(a, i, "step_time_s"));
            CU_ASSERT_STRING_EQUAL(field(r, i, "status"), "ok");
        }
        CU_ASSERT_EQUAL(refined, 2);
        g_unlink(out);
    }
}

static void
test_preset_platforms_and_spec_files(void)
{
    g_autofree char *out = tmp_path("preset.csv"), *spec = tmp_path("spec.ini");
    g_free(run_ok("sweep --preset v100-ac922 --gpus 4..8 --model default-4k --layers 4 "
                  "--tp-mode 1d -q -o %s",
                  out));
    g_autoptr(SimparCsv) csv = read_csv(out);
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        CU_ASSERT_STRING_EQUAL(field(csv, i, "preset"), "v100-ac922");
        CU_ASSERT_EQUAL(number(csv, i, "nodes"), number(csv, i, "gpus") / 4);
    }
    CU_ASSERT_TRUE(g_file_set_contents(spec,
                                       "[sweep]\ntopology = " TOPO "\nmodel = default-4k\n"
                                       "layers = 8\nquiet = true\n",
                                       -1, NULL));
    g_autofree char *from_spec = tmp_path("spec.csv");
    g_free(run_ok("sweep --spec %s --layers 4 -o %s", spec, from_spec)); /* the flag wins */
    CU_ASSERT_TRUE(same_file(from_spec, small_csv()));
    CU_ASSERT_TRUE(g_file_set_contents(spec, "[sweep]\ngpu = 64\n", -1, NULL));
    g_autofree char *bad = g_strdup_printf(SMALL " --spec %s -o %s", spec, from_spec);
    CU_ASSERT_TRUE(simpar_cli_refused(bad, 2, "gpu is not a sweep option"));
}

/* ------------------------------------------------------------------------------ refusals */

static void
test_bad_lists_and_options_are_refused(void)
{
    g_autofree char *out = tmp_path("bad.csv");
    const char *cases[][2] = {
        {"--gpus 0", "--gpus 0: 0 is out of range"},
        {"--gpus 64..8", "--gpus 64..8: in the range 64..8 the start must not exceed the end"},
        {"--gpus 8..64:+0", "--gpus 8..64:+0: the step of 8..64:+0"},
        {"--pp 1..8:*1", "--pp 1..8:*1: the step"},
        {"--q 2,x", "--q 2,x: 'x' is not a whole number"},
        {"--dp 1,,2", "--dp '1,,2': an empty item"},
        {"--hidden 4096,4096", "--hidden 4096,4096: 4096 appears twice"},
        {"--layers 1..100000:+1", "--layers 1..100000:+1: more than 4096 values"},
        {"--tp-mode 4d", "--tp-mode 4d: unknown tensor-parallel mode"},
        {"--summary /nonexistent/s.json",
         "--summary '/nonexistent/s.json': its folder does not exist (give the path of a JSON "
         "file to write)"},
        {"--summary /tmp", "--summary '/tmp': a folder"},
        {"--recompute some", "--recompute some: unknown"},
        {"--schedule local", "--schedule local"},
        {"--rank-by speed", "--rank-by speed"},
        {"--shard 3/3", "--shard 3/3"},
        {"--gpus 128", "--gpus 128: " TOPO " has only 64 GPUs"},
        {"--tp 4 --tp-mode 3d", "--tp 4: the 1-D tensor-parallel size needs 1d"},
        {"--depth 2 --tp-mode 2d", "--depth 2: the depth needs 2.5d"},
        {"--refine 2 --backend simgrid", "--refine 2"},
        {"--jobs 0", "--jobs 0"},
        {"--model nope", "--model nope: no such preset"},
        {"--zero 5", "--zero 5"},
        {"--heads 0", "--heads 0"},
        {"--kv-heads 0", "--kv-heads 0"},
        {"--mlp relu", "--mlp: mlp 'relu' is not one of gelu, swiglu"},
        {"--cp 0", "--cp 0"},
        {"--cp-mode ring,nope", "--cp-mode nope: valid are allgather and ring"},
        /* 4096^3 shapes: refused at once, before a million rows are counted one by one */
        {"--hidden 64..4096:+1 --layers 1..4096:+1 --seq 1..4096:+1",
         "more than 1000000 configurations"},
        /* 4096^6 = 2^72 shapes: counted in a double (a 64-bit count wrapped to 0 shapes and
         * said the lists gave no configuration) */
        {"--hidden 1..4096:+1 --layers 1..4096:+1 --seq 1..4096:+1 --micro-batch 1..4096:+1 "
         "--global-batch 1..4096:+1 --kv-heads 1..4096:+1",
         "more than 1000000 configurations"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *args = g_strdup_printf(SMALL " %s -o %s", cases[i][0], out);
        CU_ASSERT_TRUE(simpar_cli_refused(args, 2, cases[i][1]));
    }
    CU_ASSERT_TRUE(simpar_cli_refused("sweep --topology " TOPO, 2, "-o FILE is required"));
    /* an output that cannot be written is refused before any row runs */
    CU_ASSERT_TRUE(simpar_cli_refused(
        SMALL " -o /tmp", 2, "-o '/tmp': a folder (give the path of the CSV file to write)"));
    CU_ASSERT_TRUE(simpar_cli_refused(SMALL " -o /nonexistent/s.csv", 2,
                                      "-o '/nonexistent/s.csv': its folder does not exist"));
    CU_ASSERT_TRUE(simpar_cli_refused("sweep --gpus 8 -o x.csv", 2, "give either --preset"));
    CU_ASSERT_TRUE(
        simpar_cli_refused("sweep --preset nope --gpus 8 -o x.csv", 2, "--preset nope: unknown"));
    /* a journal of another sweep */
    g_autofree char *part = g_strconcat(out, ".part", NULL);
    CU_ASSERT_TRUE(
        g_file_set_contents(part, "# simpar-sweep 0123: 5 configurations\nindex\n", -1, NULL));
    g_autofree char *other = g_strdup_printf(SMALL " -o %s", out);
    CU_ASSERT_TRUE(simpar_cli_refused(other, 1, "is the journal of a different sweep"));
    g_remove(part);
}

/* Completions at `per_s` a second from `from_s` to `to_s` on a synthetic clock, the rate read
 * every 0.1 s as the progress line does; the completions so far in *done. */
static void
rate_feed(SimparSweepRate *r, double from_s, double to_s, double per_s, guint64 *done)
{
    double owed = 0;
    for (double t = from_s + 0.1; t <= to_s + 1e-9; t += 0.1) {
        owed += per_s * 0.1;
        while (owed >= 1)
            (*done)++, owed -= 1;
        simpar_sweep_rate_update(r, t, *done);
    }
}

/* The ETA from the recent rate: a steady rate reads as itself; the case that misled (96% done
 * at 10 a second, the rest at 0.5 a second) reads the slow tail within a few windows, where
 * the mean rate says a tenth of the truth; a stall lengthens the ETA. */
static void
test_eta_recent_rate(void)
{
    SimparSweepRate r;
    guint64 done = 0, total = 1010;
    simpar_sweep_rate_init(&r, SIMPAR_SWEEP_RATE_TAU_S, 0, 0);
    CU_ASSERT_TRUE(simpar_sweep_rate_eta(&r, total) < 0); /* nothing known yet */
    rate_feed(&r, 0, 5, 10, &done);
    CU_ASSERT_DOUBLE_EQUAL(simpar_sweep_rate_get(&r), 10, 0.5); /* before the window fills */
    rate_feed(&r, 5, 97, 10, &done);
    CU_ASSERT_DOUBLE_EQUAL(simpar_sweep_rate_get(&r), 10, 0.2);
    CU_ASSERT_DOUBLE_EQUAL(simpar_sweep_rate_eta(&r, total), (total - done) / 10.0, 1);
    /* the tail: 0.5 a second for 60 s (6 windows); the truth is the rest at 0.5 a second */
    rate_feed(&r, 97, 157, 0.5, &done);
    double eta = simpar_sweep_rate_eta(&r, total), truth = (total - done) / 0.5;
    double mean = (total - done) / (done / 157.0); /* what the progress line said before */
    printf("\n    after the tail: ETA %.0f s, truth %.0f s, mean-rate ETA %.0f s ", eta, truth,
           mean);
    CU_ASSERT_TRUE(eta > 0.85 * truth && eta < 1.15 * truth);
    CU_ASSERT_TRUE(mean < 0.1 * truth);
    /* a stall of 60 s: no completion, the ETA grows */
    rate_feed(&r, 157, 187, 0, &done);
    CU_ASSERT_TRUE(simpar_sweep_rate_eta(&r, total) > 10 * eta);
    /* the rate does not depend on how often it is read */
    SimparSweepRate a, b;
    simpar_sweep_rate_init(&a, 20, 0, 0);
    simpar_sweep_rate_init(&b, 20, 0, 0);
    simpar_sweep_rate_update(&a, 30, 300);
    simpar_sweep_rate_update(&b, 10, 300);
    simpar_sweep_rate_update(&b, 20, 300);
    simpar_sweep_rate_update(&b, 30, 300);
    CU_ASSERT_TRUE(simpar_sweep_rate_get(&b) < simpar_sweep_rate_get(&a)); /* older: less */
    SimparSweepRate c;
    simpar_sweep_rate_init(&c, 20, 0, 0);
    simpar_sweep_rate_update(&c, 10, 300);
    simpar_sweep_rate_update(&c, 30, 300);
    CU_ASSERT_DOUBLE_EQUAL(simpar_sweep_rate_get(&c), simpar_sweep_rate_get(&b), 1e-9);
}

static CU_TestInfo sweep_tests[] = {
    {"the progress ETA follows the recent rate (a synthetic clock): a slow tail, a stall",
     test_eta_recent_rate},
    {"--precision sweeps bf16 and the FP8 recipes, each row equal to simpar predict",
     test_precision_axis},
    {"--fp8-dot-product-attention runs the FP8 rows' attention in FP8, each row simpar predict's",
     test_precision_fp8_attention},
    {"--fp8-output-proj runs the MXFP8 rows' output layer in MXFP8, each row simpar predict's",
     test_precision_fp8_output_proj},
    {"the accounting flags run each pipelined row's accounted split, each row simpar predict's",
     test_accounted_split},
    {"--rack-gpus runs a rack-scale preset's rows on racks of that many GPUs", test_rack_gpus},
    {"a --kv-heads list sweeps grouped-query attention; rows equal predict", test_kv_heads_axis},
    {"--cp and --cp-mode lists sweep context parallelism; rows equal predict", test_cp_axis},
    {"--ep is a list axis; EP not dividing the experts or T x C x D is a skipped row",
     test_ep_axis},
    {"--etp applies to every row, each equal to simpar predict with it",
     test_etp_applies_to_every_row},
    {"--moe-dispatcher applies to every row, each equal to simpar predict with it",
     test_moe_dispatcher_applies_to_every_row},
    {"--tp-comm-overlap applies to every row, each equal to simpar predict with it",
     test_tp_comm_overlap_applies_to_every_row},
    {"without --micro-batch every mode gets whole sequences per GPU, so every mode runs",
     test_micro_batch_per_mode},
    {"--jobs 1 and --jobs 2 write the same bytes", test_jobs_do_not_change_the_output},
    {"rows over --time-budget are skipped, saying why", test_rows_over_the_time_budget_are_skipped},
    {"shards merge into the unsharded output; missing, duplicate, foreign parts are refused",
     test_shards_merge_into_the_unsharded_output},
    {"a journal with a torn last line resumes to the same output",
     test_a_torn_journal_resumes_to_the_same_output},
    {"a forged journal (a step of 1e-9 s, NaN, another configuration) is refused",
     test_a_forged_journal_is_refused},
    {"a sweep killed half-way leaves no worker and resumes to the same output",
     test_a_killed_sweep_leaves_no_worker_and_resumes},
    {"rows equal simpar predict --json of their configuration", test_rows_equal_predict},
    {"tokens/s, GPU-hours per token and ranks follow their definitions",
     test_closed_forms_and_ranks},
    {"--refine 2 re-simulates the best two rows of an analytic or formula sweep on SimGrid",
     test_refine_resimulates_the_best_two},
    {"preset platforms per GPU count; spec files", test_preset_platforms_and_spec_files},
    {"bad lists and options are refused with exit 2", test_bad_lists_and_options_are_refused},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sweep", NULL, suite_clean, NULL, NULL, sweep_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
