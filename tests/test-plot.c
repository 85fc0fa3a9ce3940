/* test-plot.c - `simpar plot` and app/plot/plot.c against hand-made inputs whose pictures are
 * known.
 *
 *   aggregation  simpar_plot_data() of each kind, in-process: the smallest step and largest
 *                throughput per (mode, GPUs) over the ok rows, the smallest memory per (mode,
 *                q or T) over the ok and skipped rows, the breakdown's parts adding up to the
 *                step, a trace's boxes per track and class in ms;
 *   rendering    every kind to PNG and SVG through the binary (skipped without gnuplot): the
 *                PNG signature, the SVG's title and legend entries;
 *   refusals     each bad input or option: exit status and one line naming the file, line,
 *                column or option.
 *
 * Fixtures are written to a temporary folder; the binary's path comes from SIMPAR_BIN.
 */
#include "app/plot/plot.h"
#include "cli-run.h"
#include "simpar-test.h"
#include <math.h>
#include <stdlib.h>

static char *tmpdir;

/* The sweep CSV header (simpar sweep writes it; plot reads columns by name). */
static const char sweep_header[] =
    "index,model,hidden,heads,layers,seq,dtype,preset,nodes,gpus,mode,grid,tp,q,depth,pp,dp,"
    "schedule,virtual_stages,micro_batch,global_batch,recompute,zero,backend,status,reason,"
    "step_time_s,tokens_per_s,gpu_hours_per_btok,tflops_per_gpu,mfu,compute_s,tp_exposed_s,"
    "tp_exposed_intra_s,tp_exposed_inter_s,bubble_s,pp_p2p_s,dp_exposed_s,optimizer_s,mem_GiB,"
    "mem_capacity_GiB,states_GiB,activations_GiB,transient_GiB,analytic_step_time_s,rank";

/* The rows, "column=value ..."; the others are empty. Step times: row 5 < 3 < 4 < 2 < 1 < 0. */
static const char *const sweep_rows[] = {
    "mode=1d gpus=8 tp=8 pp=1 dp=1 status=ok step_time_s=2.0 tokens_per_s=1000 compute_s=1.0 "
    "tp_exposed_intra_s=0.2 tp_exposed_inter_s=0.3 bubble_s=0 pp_p2p_s=0 dp_exposed_s=0.1 "
    "optimizer_s=0.1 mem_GiB=10 mem_capacity_GiB=16 rank=6",
    "mode=1d gpus=8 tp=4 pp=2 dp=1 status=ok step_time_s=1.5 tokens_per_s=1500 compute_s=1.0 "
    "tp_exposed_intra_s=0.1 tp_exposed_inter_s=0 bubble_s=0.2 pp_p2p_s=0.05 dp_exposed_s=0 "
    "optimizer_s=0.05 mem_GiB=12 mem_capacity_GiB=16 rank=5",
    "mode=1d gpus=16 tp=16 pp=1 dp=1 status=ok step_time_s=1.2 tokens_per_s=2000 compute_s=0.5 "
    "tp_exposed_intra_s=0.2 tp_exposed_inter_s=0.3 bubble_s=0 pp_p2p_s=0 dp_exposed_s=0.1 "
    "optimizer_s=0.1 mem_GiB=6 mem_capacity_GiB=16 rank=4",
    "mode=3d gpus=8 tp=8 q=2 depth=2 pp=1 dp=1 schedule=1f1b status=ok step_time_s=1.0 "
    "tokens_per_s=1800 compute_s=0.6 tp_exposed_intra_s=0.1 tp_exposed_inter_s=0.1 bubble_s=0 "
    "pp_p2p_s=0 dp_exposed_s=0.1 optimizer_s=0.1 mem_GiB=4 mem_capacity_GiB=16 rank=2",
    "mode=3d gpus=8 tp=8 q=2 depth=2 pp=1 dp=1 schedule=gpipe status=ok step_time_s=1.1 "
    "tokens_per_s=2100 compute_s=0.6 tp_exposed_intra_s=0.1 tp_exposed_inter_s=0.2 bubble_s=0 "
    "pp_p2p_s=0 dp_exposed_s=0.1 optimizer_s=0.1 mem_GiB=4.5 mem_capacity_GiB=16 rank=3",
    "mode=2d gpus=16 tp=16 q=4 pp=1 dp=1 status=ok step_time_s=0.9 tokens_per_s=3000 "
    "compute_s=0.5 tp_exposed_intra_s=0.1 tp_exposed_inter_s=0.2 bubble_s=0 pp_p2p_s=0 "
    "dp_exposed_s=0 optimizer_s=0.1 mem_GiB=5 mem_capacity_GiB=16 rank=1",
    "mode=3d gpus=64 tp=64 q=4 depth=4 pp=1 dp=1 status=skipped reason=does_not_fit mem_GiB=40 "
    "mem_capacity_GiB=16",
    "mode=2d gpus=64 tp=64 q=8 pp=1 dp=1 status=failed reason=crashed",
    "mode=1d gpus=64 tp=64 pp=1 dp=1 status=skipped reason=heads",
};

static const char predict_json[] =
    "[{\"mode\": \"1d\", \"grid\": \"P=4\", \"gpus\": 8, \"simulated\": true, \"step_time_s\": 2.0,"
    " \"compute_s\": 1.0, \"bubble_s\": 0.3, \"optimizer_s\": 0.1, \"split\": \"T=4 P=2 D=1 1f1b\","
    " \"exposed_comm_by_axis\": [{\"axis\": \"tp\", \"scope\": \"intra-node\", \"exposed_s\": 0.2},"
    " {\"axis\": \"pp\", \"scope\": \"inter-node\", \"exposed_s\": 0.05},"
    " {\"axis\": \"dp\", \"scope\": \"inter-node\", \"exposed_s\": 0.15}]},"
    " {\"mode\": \"2d\", \"grid\": \"q=2\", \"gpus\": 8, \"simulated\": true, \"step_time_s\": 1.5,"
    " \"compute_s\": 0.8, \"bubble_s\": 0.2, \"optimizer_s\": 0.1,"
    " \"exposed_comm_by_axis\": [{\"axis\": \"row\", \"scope\": \"intra-node\", \"exposed_s\": "
    "0.1},"
    " {\"axis\": \"col\", \"scope\": \"inter-node\", \"exposed_s\": 0.3}]},"
    " {\"mode\": \"3d\", \"grid\": \"-\", \"gpus\": 8, \"simulated\": false, \"reason\": "
    "\"cube\"}]";

static const char validate_json[] =
    "{\"job\": \"--model=tiny --tp=2\", \"executor\": \"host\", \"backend\": \"simgrid\","
    " \"topology\": \"topologies/host.xml\","
    " \"measured\": {\"mode\": \"1d\", \"step_time_s\": 0.1, \"compute_s\": 0.08,"
    " \"exposed_comm_by_axis\": [{\"axis\": \"tp\", \"scope\": \"intra-node\", \"exposed_s\": "
    "0.02}]},"
    " \"predicted\": {\"mode\": \"1d\", \"step_time_s\": 0.125, \"compute_s\": 0.1,"
    " \"exposed_comm_by_axis\": [{\"axis\": \"tp\", \"scope\": \"intra-node\", \"exposed_s\": "
    "0.025}]},"
    " \"classes\": [{\"class\": \"gemm\", \"predicted_s\": 0.05, \"measured_s\": 0.04},"
    " {\"class\": \"optimizer\", \"predicted_s\": 0, \"measured_s\": 0.001},"
    " {\"class\": \"all-reduce tp\", \"predicted_s\": 0.025, \"measured_s\": 0.02}],"
    " \"step_error\": 0.25, \"mape\": 0.25}";

/* Two modes, A (ranks 0 and 1) and B (rank 0); streams compute, comm and p2p. */
static const char trace_json[] =
    "{\"traceEvents\": ["
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0,"
    " \"args\": {\"name\": \"A rank 0 (GPU 0)\"}},"
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0,"
    " \"args\": {\"name\": \"A rank 1 (GPU 1)\"}},"
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 100000, \"tid\": 0,"
    " \"args\": {\"name\": \"B rank 0 (GPU 0)\"}},"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": "
    "\"compute\"}},"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 1, \"args\": {\"name\": "
    "\"comm\"}},"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": "
    "\"compute\"}},"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": "
    "\"p2p\"}},"
    "{\"ph\": \"X\", \"name\": \"layer.bwd\", \"cat\": \"block\", \"pid\": 0, \"tid\": 0,"
    " \"ts\": 1500, \"dur\": 2000},"
    "{\"ph\": \"X\", \"name\": \"fwd.gemm\", \"cat\": \"gemm\", \"pid\": 0, \"tid\": 0,"
    " \"ts\": 0, \"dur\": 1000},"
    "{\"ph\": \"X\", \"name\": \"fwd.all-reduce\", \"cat\": \"collective\", \"pid\": 0, \"tid\": 1,"
    " \"ts\": 1000, \"dur\": 500},"
    "{\"ph\": \"X\", \"name\": \"fwd.gemm\", \"cat\": \"gemm\", \"pid\": 1, \"tid\": 0,"
    " \"ts\": 100, \"dur\": 1000},"
    "{\"ph\": \"X\", \"name\": \"p2p.send-act\", \"cat\": \"send\", \"pid\": 1, \"tid\": 2,"
    " \"ts\": 1100, \"dur\": 100},"
    "{\"ph\": \"X\", \"name\": \"fwd.gemm\", \"cat\": \"gemm\", \"pid\": 100000, \"tid\": 0,"
    " \"ts\": 0, \"dur\": 2000}"
    "]}";

static char *
tmp_path(const char *name)
{
    return g_build_filename(tmpdir, name, NULL); /* (transfer full) */
}

/* The value of `key` in "k=v k=v ...", or "". */
static char *
row_value(const char *row, const char *key)
{
    g_auto(GStrv) pairs = g_strsplit(row, " ", -1);
    for (guint i = 0; pairs[i] != NULL; i++) {
        const char *eq = strchr(pairs[i], '=');
        if (eq != NULL && strlen(key) == (gsize) (eq - pairs[i]) &&
            strncmp(pairs[i], key, strlen(key)) == 0)
            return g_strdup(eq + 1);
    }
    return g_strdup("");
}

/* `s` as a CSV field: between double quotes, a quote inside doubled. */
static char *
csv_quote(const char *s)
{
    g_auto(GStrv) parts = g_strsplit(s, "\"", -1);
    g_autofree char *body = g_strjoinv("\"\"", parts);
    return g_strdup_printf("\"%s\"", body); /* (transfer full) */
}

/* The sweep CSV of `n` rows; with `modes`, row r's mode and model are modes[r]. */
static char *
sweep_csv_of(const char *const *rows, guint n, const char *const *modes)
{
    g_auto(GStrv) columns = g_strsplit(sweep_header, ",", -1);
    GString *out = g_string_new("# a hand-made sweep\n");
    g_string_append_printf(out, "%s\n", sweep_header);
    for (guint r = 0; r < n; r++)
        for (guint c = 0; columns[c] != NULL; c++) {
            gboolean named = g_str_equal(columns[c], "mode") || g_str_equal(columns[c], "model");
            g_autofree char *v = g_str_equal(columns[c], "index") ? g_strdup_printf("%u", r)
                                 : modes != NULL && named         ? csv_quote(modes[r])
                                                                  : row_value(rows[r], columns[c]);
            g_string_append_printf(out, "%s%s", v, columns[c + 1] != NULL ? "," : "\n");
        }
    return g_string_free(out, FALSE); /* (transfer full) */
}

static char *
sweep_csv(void)
{
    return sweep_csv_of(sweep_rows, G_N_ELEMENTS(sweep_rows), NULL); /* (transfer full) */
}

static void
write_fixture(const char *name, const char *text)
{
    g_autofree char *path = tmp_path(name);
    g_assert(g_file_set_contents(path, text, -1, NULL));
}

static int
suite_init(void)
{
    tmpdir = g_dir_make_tmp("simpar-plot-XXXXXX", NULL);
    if (tmpdir == NULL)
        return 1;
    g_autofree char *sweep = sweep_csv();
    write_fixture("sweep.csv", sweep);
    write_fixture("predict.json", predict_json);
    write_fixture("validate.json", validate_json);
    write_fixture("trace.json", trace_json);
    write_fixture("nocol.csv", "status,mode,gpus\nok,3d,8\n");
    write_fixture("short.csv",
                  "status,mode,gpus,step_time_s,tokens_per_s\nok,3d,8,1,2\nok,3d,8,1\n");
    write_fixture("nook.csv", "status,mode,gpus,step_time_s,tokens_per_s\nskipped,3d,8,,\n");
    write_fixture("nan.csv", "status,mode,gpus,step_time_s,tokens_per_s\nok,3d,8,abc,2\n");
    write_fixture("bad.json", "{\"traceEvents\": [\n");
    /* one op whose name is too long for its box: no label drawn */
    g_autofree char *name = g_strnfill(200, 'a');
    g_autofree char *unlabelled = g_strdup_printf(
        "{\"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0,"
        " \"args\": {\"name\": \"1d rank 0\"}}, {\"ph\": \"X\", \"name\": \"%s\", \"cat\": "
        "\"gemm\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1000}]}",
        name);
    write_fixture("unlabelled.json", unlabelled);
    write_fixture("bigpid.json",
                  "{\"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, "
                  "\"tid\": 0, \"args\": {\"name\": \"1d rank 0\"}}, {\"ph\": \"X\", \"pid\": "
                  "4294967296, \"tid\": 0, \"ts\": 0, \"dur\": 1}]}");
    return 0;
}

static int
suite_clean(void)
{
    simpar_test_tmpdir_remove(tmpdir);
    return 0;
}

/* simpar_plot_data() of `kind` on the fixture `name`; NULL (with the message printed) if it
 * failed. */
static char *
plot_data(const char *kind, const char *name, const SimparPlotOptions *opt)
{
    g_autofree char *path = tmp_path(name);
    g_autoptr(GError) error = NULL;
    char *data = simpar_plot_data(kind, path, opt, &error);
    if (data == NULL)
        printf("\n    plot %s %s: %s", kind, name, error->message);
    return data; /* (transfer full) */
}

static gboolean
have_gnuplot(void)
{
    g_autofree char *path = g_find_program_in_path("gnuplot");
    return path != NULL;
}

/* ------------------------------------------------------------------------------ aggregation */

static void
test_scaling_data(void)
{
    g_autofree char *data = plot_data("scaling", "sweep.csv", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* 1-D at 8 GPUs: the step of row 1 (1.5 < 2.0), the throughput of row 1 (1500 > 1000);
     * 3-D at 8: the step of row 3, the throughput of row 4; skipped and failed rows nowhere */
    CU_ASSERT_STRING_EQUAL(data, "# gpus best_step_time_s best_tokens_per_s (status ok rows)\n"
                                 "# mode 1d\n8 1.5 1500\n16 1.2 2000\n\n\n"
                                 "# mode 2d\n16 0.9 3000\n\n\n"
                                 "# mode 3d\n8 1 2100\n");
}

static void
test_memory_data(void)
{
    g_autofree char *data = plot_data("memory", "sweep.csv", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* x = T for 1-D, q for the grids; the skipped 3-D q=4 row keeps its 40 GiB; the skipped
     * 1-D row without a memory figure is left out */
    CU_ASSERT_STRING_EQUAL(data, "# x min_mem_GiB (x = q; 1-D: T)\n"
                                 "# mode 1d\n4 12\n8 10\n16 6\n\n\n"
                                 "# mode 2d\n4 5\n\n\n"
                                 "# mode 3d\n2 4\n4 40\n");
}

/* Each bar's parts (columns 3...) add up to its step (column 2). */
static void
check_bars_sum(const char *data, guint want_bars)
{
    g_auto(GStrv) lines = g_strsplit(data, "\n", -1);
    guint bars = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *end = lines[i][0] == '"' ? strchr(lines[i] + 1, '"') : NULL;
        if (end == NULL)
            continue;
        char *p;
        double step = g_ascii_strtod(end + 1, &p), sum = 0;
        for (char *q = p;; q = p) {
            double v = g_ascii_strtod(q, &p);
            if (p == q)
                break;
            CU_ASSERT_TRUE(v >= 0);
            sum += v;
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, step, 1e-9);
        bars++;
    }
    CU_ASSERT_EQUAL(bars, want_bars);
}

static void
test_breakdown_sweep(void)
{
    SimparPlotOptions opt;
    simpar_plot_options_init(&opt);
    opt.top = 3;
    g_autofree char *data = plot_data("breakdown", "sweep.csv", &opt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* ranks 1, 2, 3 in that order; the two 3-D rows with equal labels told apart by the field
     * in which they differ */
    const char *a = strstr(data, "\"2d q=4 P=1 D=1 G=16\" 0.9 0.5 0.1 0.2 0 0.1\n");
    const char *b = strstr(data, "\"3d q=2 P=1 D=1 G=8 1f1b\" 1 0.6 0.1 0.1 0.1 0.1\n");
    const char *c = strstr(data, "\"3d q=2 P=1 D=1 G=8 gpipe\" 1.1 0.6 0.1 0.2 0.1 0.1\n");
    CU_ASSERT_TRUE(a != NULL && b != NULL && c != NULL && a < b && b < c);
    /* no pipeline in these three, nothing left over: no bubble, p2p or other column */
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "# label step_s 'compute' 'TP comm. intra-node' "
                                        "'TP comm. inter-node' 'DP comm.' 'optimizer'\n"));
    check_bars_sum(data, 3);
    g_autofree char *all = plot_data("breakdown", "sweep.csv", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(all);
    CU_ASSERT_PTR_NOT_NULL(strstr(all, "\"1d T=8 P=1 D=1 G=8\" 2 1 0.2 0.3 0 0 0.1 0.1 0.3\n"));
    check_bars_sum(all, 6); /* the ok rows; "other" fills the 0.3 s that row 0's parts leave */
}

static void
test_breakdown_json(void)
{
    g_autofree char *data = plot_data("breakdown", "predict.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* axes: tp -> intra-node, pp -> pipeline p2p, dp -> DP; the unsimulated 3-D has no bar */
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "\"1d T=4\" 2 1 0.2 0 0.3 0.05 0.15 0.1 0.2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "\"2d q=2\" 1.5 0.8 0.1 0.3 0.2 0 0 0.1 0\n"));
    CU_ASSERT_PTR_NULL(strstr(data, "3d"));
    check_bars_sum(data, 2);
    g_autofree char *v = plot_data("breakdown", "validate.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_PTR_NOT_NULL(strstr(v, "\"measured (host)\" 0.1 0.08 0.02\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v, "\"predicted (simgrid)\" 0.125 0.1 0.025\n"));
}

static void
test_validate_data(void)
{
    g_autofree char *data = plot_data("validate", "validate.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* the optimizer's zero prediction has no place on log axes */
    CU_ASSERT_STRING_EQUAL(data, "# class measured_s predicted_s\n"
                                 "\"gemm\" 4.000000000e-02 5.000000000e-02\n"
                                 "\"all-reduce tp\" 2.000000000e-02 2.500000000e-02\n"
                                 "\n\n\"step\" 1.000000000e-01 1.250000000e-01\n");
}

static void
test_timeline_data(void)
{
    g_autofree char *data = plot_data("timeline", "trace.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* mode A (the first); tracks rank 0 compute 0, comm 1, rank 1 compute 2, p2p 3; ms */
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "# backward (layer blocks)\n0 1.5 3.5\n\n\n"
                                        "# GEMM\n0 0 1\n2 0.1 1.1\n\n\n"
                                        "# TP collective\n1 1 1.5\n\n\n"
                                        "# pipeline p2p\n3 1.1 1.2\n\n\n"));
    SimparPlotOptions opt;
    simpar_plot_options_init(&opt);
    opt.rank_first = opt.rank_last = 1, opt.ranks_given = TRUE;
    g_autofree char *r1 = plot_data("timeline", "trace.json", &opt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r1);
    /* rank 1 alone, from its first op */
    CU_ASSERT_PTR_NOT_NULL(strstr(r1, "# GEMM\n0 0 1\n\n\n# pipeline p2p\n1 1 1.1\n"));
    simpar_plot_options_init(&opt);
    opt.mode = "B";
    g_autofree char *b = plot_data("timeline", "trace.json", &opt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "# GEMM\n0 0 2\n\n\n"));
    CU_ASSERT_PTR_NULL(strstr(b, "# TP collective"));
    /* a trace of one rank per role (ranks 0, 128, 256): drawn by default, all three */
    write_fixture("roles.json",
                  "{\"traceEvents\":["
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,"
                  "\"args\":{\"name\":\"1d rank 0 (GPU 0)\"}},"
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":128,\"tid\":0,"
                  "\"args\":{\"name\":\"1d rank 128 (GPU 128)\"}},"
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":256,\"tid\":0,"
                  "\"args\":{\"name\":\"1d rank 256 (GPU 256)\"}},"
                  "{\"ph\":\"X\",\"name\":\"g\",\"cat\":\"gemm\",\"pid\":0,\"tid\":0,"
                  "\"ts\":0,\"dur\":1000},"
                  "{\"ph\":\"X\",\"name\":\"g\",\"cat\":\"gemm\",\"pid\":128,\"tid\":0,"
                  "\"ts\":0,\"dur\":2000},"
                  "{\"ph\":\"X\",\"name\":\"g\",\"cat\":\"gemm\",\"pid\":256,\"tid\":0,"
                  "\"ts\":0,\"dur\":3000}]}");
    g_autofree char *roles = plot_data("timeline", "roles.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(roles);
    CU_ASSERT_PTR_NOT_NULL(strstr(roles, "# GEMM\n0 0 1\n1 0 2\n2 0 3\n"));
}

/* The trace with its process and thread names after its events, as `name` ("late.json"), and
 * with one process first named otherwise and renamed at the end ("renamed.json"). */
static void
write_late_traces(void)
{
    const char *x = strstr(trace_json, "{\"ph\": \"X\"");
    const char *m = trace_json + strlen("{\"traceEvents\": [");
    g_autofree char *names = g_strndup(m, (gsize) (x - m - 1)); /* without the comma */
    g_autofree char *events = g_strndup(x, strlen(x) - 2);      /* without "]}" */
    g_autofree char *late = g_strconcat("{\"traceEvents\": [", events, ",", names, "]}", NULL);
    g_autofree char *renamed = g_strconcat(
        "{\"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0, "
        "\"args\": {\"name\": \"B rank 5\"}},",
        events, ",", names, "]}", NULL);
    write_fixture("late.json", late);
    write_fixture("renamed.json", renamed);
}

static void
test_timeline_names_late(void)
{
    write_late_traces();
    SimparPlotOptions opts[3];
    for (guint i = 0; i < 3; i++)
        simpar_plot_options_init(&opts[i]);
    opts[1].mode = "B";
    opts[2].rank_first = opts[2].rank_last = 1, opts[2].ranks_given = TRUE;
    for (guint i = 0; i < 3; i++) {
        g_autofree char *first = plot_data("timeline", "trace.json", &opts[i]);
        g_autofree char *late = plot_data("timeline", "late.json", &opts[i]);
        g_autofree char *renamed = plot_data("timeline", "renamed.json", &opts[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(first);
        CU_ASSERT_STRING_EQUAL(late != NULL ? late : "", first);
        CU_ASSERT_STRING_EQUAL(renamed != NULL ? renamed : "", first);
    }
}

/* -------------------------------------------------------------------------------- rendering */

/* simpar plot KIND FIXTURE -o OUT.png and .svg: a PNG, and an SVG holding every one of `want`. */
static void
renders(const char *kind, const char *fixture, const char *extra, const char *const *want)
{
    static const guchar png_magic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    g_autofree char *in = tmp_path(fixture);
    for (guint f = 0; f < 2; f++) {
        g_autofree char *name = g_strdup_printf("%s.%s", kind, f == 0 ? "png" : "svg");
        g_autofree char *out = tmp_path(name);
        g_autofree char *args = g_strdup_printf("plot %s %s -o %s %s", kind, in, out, extra);
        SimparCliRun r = simpar_cli_run(args);
        if (r.status != 0)
            printf("\n    simpar %s -> status %d: %s", args, r.status, r.err);
        CU_ASSERT_EQUAL(r.status, 0);
        simpar_cli_run_clear(&r);
        g_autofree char *text = NULL;
        gsize len = 0;
        CU_ASSERT_TRUE_FATAL(g_file_get_contents(out, &text, &len, NULL));
        if (f == 0)
            CU_ASSERT_TRUE(len > 1000 && memcmp(text, png_magic, sizeof png_magic) == 0);
        for (guint i = 0; f == 1 && want[i] != NULL; i++) {
            g_autofree char *tag = g_strdup_printf(">%s<", want[i]);
            if (strstr(text, tag) == NULL)
                printf("\n    %s: no text %s", name, tag);
            CU_ASSERT_PTR_NOT_NULL(strstr(text, tag));
        }
    }
}

static void
test_render(void)
{
    if (!have_gnuplot()) {
        printf("\n    gnuplot missing: rendering not checked ");
        return;
    }
    static const char *const scaling[] = {
        "Scaling: the best configuration of each mode per GPU count",
        "1-D (Megatron)",
        "2-D (SUMMA)",
        "3-D",
        "linear scaling from 8 GPUs",
        "step time (s)",
        "throughput (tokens/s)",
        NULL};
    static const char *const memory[] = {"Memory per GPU: the smallest of each mode per size",
                                         "1-D (x = T)",
                                         "3-D (x = q)",
                                         "device memory (16 GiB)",
                                         "memory per GPU (GiB), best configuration",
                                         NULL};
    static const char *const breakdown[] = {"compute",
                                            "TP comm. inter-node",
                                            "pipeline bubble",
                                            "2d q=4 P=1 D=1 G=16",
                                            "time per training step (s)",
                                            NULL};
    static const char *const predict[] = {
        "Where the step goes, per tensor-parallel mode: 8 GPUs P=2 D=1 1f1b (not simulated: 3d)",
        "1d T=4", "DP comm.", "pipeline p2p", NULL};
    static const char *const validate[] = {"op classes", "step", "MAPE 25.0%, step error +25.0%",
                                           NULL};
    static const char *const timeline[] = {"Timeline of trace.json: A, ranks 0..1 (the trace "
                                           "holds A, B)",
                                           "GEMM",
                                           "TP collective",
                                           "rank 1 p2p",
                                           "time from the first op drawn (ms)",
                                           NULL};
    static const char *const titled[] = {"my title", NULL};
    static const char *const unlabelled[] = {"rank 0 stream 0", "GEMM", NULL};
    renders("scaling", "sweep.csv", "", scaling);
    renders("memory", "sweep.csv", "", memory);
    renders("breakdown", "sweep.csv", "", breakdown);
    renders("breakdown", "predict.json", "", predict);
    renders("validate", "validate.json", "", validate);
    renders("timeline", "trace.json", "", timeline);
    renders("timeline", "trace.json", "--ranks 1..1 --mode A --title 'my title'", titled);
    renders("timeline", "unlabelled.json", "", unlabelled);
}

/* ------------------------------------------------------------------------- hostile strings */

/* Strings that would run `touch DIR/ran-N` if gnuplot interpreted them anywhere: backquotes
 * (gnuplot's command substitution), a shell's $(...), quotes that would end a gnuplot string
 * and call system(), newlines and carriage returns that would end a command line, a macro, a
 * label of 4,000 characters. {} is the folder, # the payload's number. */
static const char *const hostile_templates[] = {
    "`touch {}/ran-#`",
    "$(touch {}/ran-#)",
    "x'; system('touch {}/ran-#'); y='",
    "x\"; system(\"touch {}/ran-#\"); y=\"",
    "x\nsystem('touch {}/ran-#')\ny",
    "x\r\nsystem(\"touch {}/ran-#\")\r\n",
    "'.system('touch {}/ran-#').'",
    "\".system(\"touch {}/ran-#\").\"",
    "\\`touch {}/ran-#\\` @x",
    "x\n`touch {}/ran-#`\n",
};
#define N_HOSTILE (G_N_ELEMENTS(hostile_templates) + 1)

/* The payloads, the last one long; NULL-terminated. */
static char **
hostile_strings(void)
{
    char **out = g_new0(char *, N_HOSTILE + 1);
    for (guint i = 0; i < N_HOSTILE; i++) {
        const char *t = i < G_N_ELEMENTS(hostile_templates) ? hostile_templates[i]
                                                            : "`touch {}/ran-#` and more";
        g_auto(GStrv) a = g_strsplit(t, "{}", -1);
        g_autofree char *in_dir = g_strjoinv(tmpdir, a);
        g_auto(GStrv) b = g_strsplit(in_dir, "#", -1);
        g_autofree char *num = g_strdup_printf("%u", i);
        out[i] = g_strjoinv(num, b);
    }
    g_autofree char *head = out[N_HOSTILE - 1], *tail = g_strnfill(4000, 'W');
    out[N_HOSTILE - 1] = g_strconcat(head, tail, NULL);
    return out; /* (transfer full) */
}

/* A JSON string literal of `s` (ASCII). */
static char *
json_quote(const char *s)
{
    g_autofree char *e = g_strescape(s, NULL);
    return g_strdup_printf("\"%s\"", e); /* (transfer full) */
}

/* A trace of one mode named by payload 0 whose rank 0 has a track per payload (the thread's
 * name), each with one op named and classed by the payload, wide enough for its label. */
static char *
hostile_trace(char **pay)
{
    g_autofree char *mode = json_quote(pay[0]);
    GString *t = g_string_new("{\"traceEvents\": [");
    g_string_append_printf(t,
                           "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, "
                           "\"args\": {\"name\": %s}}",
                           mode);
    for (guint i = 0; pay[i] != NULL; i++) {
        g_autofree char *q = json_quote(pay[i]);
        g_string_append_printf(t,
                               ", {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, "
                               "\"tid\": %u, \"args\": {\"name\": %s}}"
                               ", {\"ph\": \"X\", \"name\": %s, \"cat\": %s, \"pid\": 0, "
                               "\"tid\": %u, \"ts\": 0, \"dur\": 1000}",
                               i, q, q, q, i);
    }
    g_string_append(t, "]}");
    return g_string_free(t, FALSE); /* (transfer full) */
}

/* predict --json bars and a validate --json object whose names are the payloads. */
static char *
hostile_predict(char **pay)
{
    GString *t = g_string_new("[");
    for (guint i = 0; pay[i] != NULL; i++) {
        g_autofree char *q = json_quote(pay[i]);
        g_string_append_printf(t,
                               "%s{\"mode\": %s, \"grid\": %s, \"gpus\": 8, \"simulated\": true, "
                               "\"step_time_s\": 1, \"compute_s\": 0.5, \"split\": %s}",
                               i > 0 ? ", " : "", q, q, q);
    }
    g_string_append(t, "]");
    return g_string_free(t, FALSE); /* (transfer full) */
}

static char *
hostile_validate(char **pay)
{
    GString *t = g_string_new(NULL);
    g_autofree char *q0 = json_quote(pay[0]), *q1 = json_quote(pay[2]), *q2 = json_quote(pay[4]);
    g_string_append_printf(t,
                           "{\"job\": %s, \"executor\": %s, \"backend\": %s, \"topology\": %s,"
                           " \"measured\": {\"mode\": %s, \"step_time_s\": 0.1},"
                           " \"predicted\": {\"mode\": %s, \"step_time_s\": 0.125}, \"classes\": [",
                           q0, q1, q2, q0, q1, q2);
    for (guint i = 0; pay[i] != NULL; i++) {
        g_autofree char *q = json_quote(pay[i]);
        g_string_append_printf(t, "%s{\"class\": %s, \"predicted_s\": %u, \"measured_s\": 1}",
                               i > 0 ? ", " : "", q, i + 1);
    }
    g_string_append(t, "], \"step_error\": 0.25, \"mape\": 0.25}");
    return g_string_free(t, FALSE); /* (transfer full) */
}

/* Files named ran-* in the folder: what a payload would have made. */
static guint
hostile_ran(void)
{
    g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
    guint n = 0;
    for (const char *name; d != NULL && (name = g_dir_read_name(d)) != NULL;)
        if (g_str_has_prefix(name, "ran-") || g_str_equal(name, "piped")) {
            printf("\n    a payload ran: %s made", name);
            n++;
        }
    return n;
}

/* simpar plot KIND INPUT -o OUT [--title TITLE] in the folder: exit 0 and a PNG or SVG; the
 * SVG's text when `svg` is given (transfer full). */
static void
hostile_render(const char *kind, const char *input, const char *output, const char *title,
               char **svg)
{
    static const guchar png_magic[] = {0x89, 'P', 'N', 'G'};
    const char *argv[] = {
        g_getenv("SIMPAR_BIN"), "plot", kind, input, "-o", output, "--title", title, NULL};
    if (title == NULL)
        argv[6] = NULL;
    g_autofree char *sout = NULL, *serr = NULL;
    int wait = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_sync(tmpdir, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                      &sout, &serr, &wait, NULL));
    gboolean ok = g_spawn_check_wait_status(wait, NULL);
    if (!ok)
        printf("\n    plot %s %s -o %s: %s", kind, input, output, serr);
    CU_ASSERT_TRUE(ok);
    g_autofree char *path = g_build_filename(tmpdir, output, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    gboolean made = g_file_get_contents(path, &text, &len, NULL);
    CU_ASSERT_TRUE(made);
    if (!made)
        return;
    gboolean png = g_str_has_suffix(output, ".png");
    CU_ASSERT_TRUE(png ? len > 1000 && memcmp(text, png_magic, sizeof png_magic) == 0
                       : strstr(text, "</svg>") != NULL);
    g_unlink(path);
    if (svg != NULL)
        *svg = g_steal_pointer(&text);
}

/* Every kind plots inputs whose every name is a payload, with a payload as --title and output
 * names gnuplot would read as a pipe: the pictures are made and nothing ran. */
static void
test_hostile_labels(void)
{
    if (!have_gnuplot()) {
        printf("\n    gnuplot missing: hostile labels not checked ");
        return;
    }
    g_auto(GStrv) pay = hostile_strings();
    g_autofree char *trace = hostile_trace(pay), *predict = hostile_predict(pay);
    g_autofree char *validate = hostile_validate(pay);
    const char *rows[N_HOSTILE]; /* a 3-D row (q=2) per payload */
    for (guint i = 0; i < N_HOSTILE; i++)
        rows[i] = sweep_rows[3];
    g_autofree char *sweep = sweep_csv_of(rows, N_HOSTILE, (const char *const *) pay);
    write_fixture("hostile-trace.json", trace);
    write_fixture("`touch ran-file`.json", trace);
    write_fixture("hostile-predict.json", predict);
    write_fixture("hostile-validate.json", validate);
    write_fixture("hostile-sweep.csv", sweep);
    g_autofree char *svg = NULL;
    hostile_render("timeline", "hostile-trace.json", "t.svg", NULL, &svg);
    /* the track names are drawn as they are (cut at 40 characters): "rank 0 `touch DIR/r..." */
    CU_ASSERT_PTR_NOT_NULL(svg != NULL ? strstr(svg, ">rank 0 `touch /") : NULL);
    hostile_render("timeline", "hostile-trace.json", "t.png", NULL, NULL);
    hostile_render("timeline", "`touch ran-file`.json", "t.png", NULL, NULL);
    for (guint i = 0; pay[i] != NULL; i++)
        hostile_render("timeline", "hostile-trace.json", "t.png", pay[i], NULL);
    hostile_render("timeline", "hostile-trace.json", "|touch piped;cat>p.png", NULL, NULL);
    hostile_render("timeline", "hostile-trace.json", "it's.png", NULL, NULL);
    hostile_render("scaling", "hostile-sweep.csv", "s.png", NULL, NULL);
    hostile_render("memory", "hostile-sweep.csv", "m.png", NULL, NULL);
    hostile_render("breakdown", "hostile-sweep.csv", "b.png", NULL, NULL);
    hostile_render("breakdown", "hostile-predict.json", "b.svg", NULL, NULL);
    hostile_render("breakdown", "hostile-validate.json", "b.png", NULL, NULL);
    hostile_render("validate", "hostile-validate.json", "v.png", NULL, NULL);
    hostile_render("validate", "hostile-validate.json", "v.png", pay[4], NULL);
    CU_ASSERT_EQUAL(hostile_ran(), 0);
}

/* -------------------------------------------------------------------------------- refusals */

static void
test_refusals(void)
{
    static const struct {
        const char *args; /* {} is the temporary folder */
        int status;
        const char *want;
    } cases[] = {
        {"plot bogus {}/sweep.csv -o {}/x.png", 2,
         "unknown plot kind 'bogus' (valid: scaling, memory, breakdown, validate, timeline)"},
        {"plot scaling {}/sweep.csv -o {}/x.jpg", 2,
         "x.jpg: the file name must end in .png or .svg"},
        {"plot scaling {}/sweep.csv", 2, "expected KIND INPUT -o OUT.png|OUT.svg"},
        {"plot timeline {}/trace.json -o '{}/a\tb.png'", 2,
         "a\\tb.png: the file name holds a control character (byte 0x09)"},
        {"plot scaling {}/none.csv -o {}/x.png", 1, "none.csv"},
        {"plot scaling {}/nocol.csv -o {}/x.png", 1, "nocol.csv: no column \"step_time_s\""},
        {"plot scaling {}/short.csv -o {}/x.png", 1, "short.csv:3: 4 fields, the header has 5"},
        {"plot scaling {}/nook.csv -o {}/x.png", 1,
         "nook.csv: nothing to plot: no row with status ok"},
        {"plot scaling {}/nan.csv -o {}/x.png", 1, "nan.csv:2: column step_time_s: \"abc\""},
        {"plot timeline {}/bad.json -o {}/x.png", 1, "bad.json:2:"},
        {"plot validate {}/predict.json -o {}/x.png", 1, "not a simpar validate --json object"},
        {"plot timeline {}/sweep.csv -o {}/x.png", 1, "sweep.csv:1:"},
        {"plot timeline {}/trace.json -o {}/x.png --ranks 5..2", 2,
         "--ranks 5..2: in the range 5..2 the start must not exceed the end"},
        {"plot timeline {}/bigpid.json -o {}/x.png", 1,
         "bigpid.json: traceEvents[1]: a complete event (\"ph\": \"X\") needs pid and tid "
         "(integers of 32 bits)"},
        {"plot timeline {}/trace.json -o {}/x.png --mode C", 2, "--mode C: not in"},
        {"plot timeline {}/trace.json -o {}/x.png --ranks 7..9", 1,
         "nothing to plot: no event of mode A on ranks 7..9"},
        {"plot breakdown {}/sweep.csv -o {}/x.png --top 0", 2, "--top 0: must be 1 to 1000"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(GStrv) parts = g_strsplit(cases[i].args, "{}", -1);
        g_autofree char *args = g_strjoinv(tmpdir, parts);
        CU_ASSERT_TRUE(simpar_cli_refused(args, cases[i].status, cases[i].want));
    }
}

/* Without gnuplot on PATH: exit 1 and the package to install. */
static void
test_no_gnuplot(void)
{
    g_autofree char *in = tmp_path("sweep.csv"), *out = tmp_path("x.png");
    const char *argv[] = {g_getenv("SIMPAR_BIN"), "plot", "scaling", in, "-o", out, NULL};
    const char *envp[] = {"PATH=/nonexistent", NULL};
    g_autofree char *sout = NULL, *serr = NULL;
    int wait = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, (char **) envp, G_SPAWN_DEFAULT, NULL,
                                      NULL, &sout, &serr, &wait, NULL));
    CU_ASSERT_TRUE(WIFEXITED(wait) && WEXITSTATUS(wait) == 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(serr, "gnuplot is not installed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(serr, "gnuplot-nox"));
}

/* In a fake gnuplot (sh builtins only): $out, the picture vars.gp ($1) names. */
#define GNUPLOT_OUTFILE "IFS= read -r vars < \"$1\"\nrest=${vars#*outfile=\\'}\nout=${rest%%\\'*}\n"

/* A gnuplot that dies by a signal, or fails with lines on stderr: exit 1 and one stderr line
 * with how it ended and what it said. */
static void
test_gnuplot_fails(void)
{
    g_autofree char *bin = tmp_path("bin"), *gp = tmp_path("bin/gnuplot");
    g_autofree char *in = tmp_path("sweep.csv"), *out = tmp_path("x.png");
    g_assert(g_mkdir_with_parents(bin, 0700) == 0);

    static const struct {
        const char *script, *want;
    } cases[] = {
        {"#!/bin/sh\nkill -SEGV $$\n", "failed (Child process killed by signal 11): it printed "
                                       "nothing\n"},
        {"#!/bin/sh\necho 'line 3: bad' >&2\necho more >&2\nexit 3\n",
         "failed (Child process exited with code 3): line 3: bad more\n"},
        /* on a full disk gnuplot exits 0 with an empty or cut picture: refused, not copied */
        {"#!/bin/sh\n" GNUPLOT_OUTFILE ": > \"$out\"\n",
         "gnuplot exited 0 but its picture is empty (0 bytes; a full disk where it draws"},
        {"#!/bin/sh\n" GNUPLOT_OUTFILE "printf '\\211PNG\\r\\n\\032\\n0000IHDR' > \"$out\"\n",
         "gnuplot exited 0 but its picture is cut short (16 bytes"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_assert(g_file_set_contents(gp, cases[i].script, -1, NULL) && g_chmod(gp, 0700) == 0);
        const char *argv[] = {g_getenv("SIMPAR_BIN"), "plot", "scaling", in, "-o", out, NULL};
        g_autofree char *path = g_strdup_printf("PATH=%s", bin);
        const char *envp[] = {path, NULL};
        g_autofree char *sout = NULL, *serr = NULL;
        int wait = 0;
        CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, (char **) envp, G_SPAWN_DEFAULT,
                                          NULL, NULL, &sout, &serr, &wait, NULL));
        gboolean said = g_str_has_suffix(serr, cases[i].want) || strstr(serr, cases[i].want);
        CU_ASSERT_TRUE(WIFEXITED(wait) && WEXITSTATUS(wait) == 1);
        CU_ASSERT_TRUE(said);
        CU_ASSERT_PTR_EQUAL(strchr(serr, '\n'), serr + strlen(serr) - 1);
        CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS));
        if (!said)
            printf("\n    %s", serr);
    }
    g_remove(gp);
    g_rmdir(bin);
}

/* An installed simpar finds the scripts installed beside it (bin/../share/simpar/plots, wherever
 * the install was moved) before the source tree's: a copy of the binary under a fresh prefix
 * whose scaling.gp only prints a marker into the output file. */
static void
test_installed_scripts(void)
{
    if (!have_gnuplot()) {
        printf("\n    gnuplot missing: installed scripts not checked ");
        return;
    }
    g_autofree char *bin = tmp_path("prefix/bin"), *plots = tmp_path("prefix/share/simpar/plots");
    g_assert(g_mkdir_with_parents(bin, 0700) == 0 && g_mkdir_with_parents(plots, 0700) == 0);
    g_autofree char *exe = g_build_filename(bin, "simpar", NULL);
    g_autofree char *script = g_build_filename(plots, "scaling.gp", NULL);
    g_autofree char *binary = NULL;
    gsize len = 0;
    g_assert(g_file_get_contents(g_getenv("SIMPAR_BIN"), &binary, &len, NULL));
    g_assert(g_file_set_contents(exe, binary, (gssize) len, NULL) && g_chmod(exe, 0700) == 0);
    g_assert(
        g_file_set_contents(script, "set print outfile\nprint \"installed scripts\"\n", -1, NULL));
    g_autofree char *in = tmp_path("sweep.csv"), *out = tmp_path("installed.png");
    const char *argv[] = {exe, "plot", "scaling", in, "-o", out, NULL};
    int wait = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                                      NULL, NULL, NULL, &wait, NULL));
    CU_ASSERT_TRUE(g_spawn_check_wait_status(wait, NULL));
    g_autofree char *made = NULL;
    CU_ASSERT_TRUE(g_file_get_contents(out, &made, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(made != NULL ? made : "", "installed scripts\n");
    g_remove(script), g_remove(exe), g_remove(out);
    g_rmdir(plots);
    g_autofree char *share = tmp_path("prefix/share/simpar"), *share0 = tmp_path("prefix/share");
    g_autofree char *prefix = tmp_path("prefix");
    g_rmdir(share), g_rmdir(share0), g_rmdir(bin), g_rmdir(prefix);
}

/* -------------------------------------------------------------------- simpar predict --report */

static void
test_report(void)
{
    if (!have_gnuplot()) {
        printf("\n    gnuplot missing: --report not checked ");
        return;
    }
    g_autofree char *dir = tmp_path("report");
    g_autofree char *args = g_strdup_printf(
        "--topology topologies/v100x64.xml --gpus 8 --backend analytic --tp-mode 1d --layers 4 "
        "--micro-batch 4 --report %s",
        dir);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    static const char *const files[] = {"README.md",  "prediction.txt", "prediction.json",
                                        "trace.json", "breakdown.png",  "timeline-1d.png",
                                        NULL};
    for (guint i = 0; files[i] != NULL; i++) {
        g_autofree char *path = g_build_filename(dir, files[i], NULL);
        g_autofree char *text = NULL;
        CU_ASSERT_TRUE(g_file_get_contents(path, &text, NULL, NULL));
        if (text != NULL && i == 1) /* the table is what simpar printed */
            CU_ASSERT_TRUE(g_str_has_prefix(r.out, text));
        if (text != NULL && i == 0)
            for (guint j = 1; files[j] != NULL; j++) {
                g_autofree char *entry = g_strdup_printf("`%s`", files[j]);
                CU_ASSERT_PTR_NOT_NULL(strstr(text, entry));
            }
        if (text != NULL && i == 0)
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "simpar --topology topologies/v100x64.xml"));
    }
    simpar_cli_run_clear(&r);
    /* every mode's timeline from one reading of the trace: each the same bytes as simpar plot
     * timeline draws of that mode alone */
    g_autofree char *all_dir = tmp_path("report-all");
    g_autofree char *all = g_strdup_printf("--topology topologies/v100x64.xml --gpus 8 --backend "
                                           "analytic --layers 4 --micro-batch 4 --report %s",
                                           all_dir);
    r = simpar_cli_run(all);
    CU_ASSERT_EQUAL(r.status, 0);
    simpar_cli_run_clear(&r);
    guint compared = 0;
    static const char *const modes[] = {"1d", "2d", "2.5d", "3d"};
    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree char *name = g_strdup_printf("timeline-%s.png", modes[i]);
        g_autofree char *made = g_build_filename(all_dir, name, NULL);
        g_autofree char *made_text = NULL, *alone_text = NULL;
        gsize made_len = 0, alone_len = 0;
        if (!g_file_get_contents(made, &made_text, &made_len, NULL))
            continue; /* a mode 8 GPUs do not allow */
        g_autofree char *alone = g_strdup_printf("%s/alone-%s.png", all_dir, modes[i]);
        g_autofree char *plot = g_strdup_printf("plot timeline %s/trace.json --mode %s -o %s",
                                                all_dir, modes[i], alone);
        r = simpar_cli_run(plot);
        CU_ASSERT_EQUAL(r.status, 0);
        simpar_cli_run_clear(&r);
        CU_ASSERT_TRUE(g_file_get_contents(alone, &alone_text, &alone_len, NULL) &&
                       alone_len == made_len && memcmp(alone_text, made_text, made_len) == 0);
        compared++;
    }
    CU_ASSERT_TRUE(compared >= 2);
    simpar_test_tmpdir_remove(g_steal_pointer(&all_dir));
    g_autofree char *both = g_strdup_printf(
        "--topology topologies/v100x64.xml --report %s --trace %s/t.json", dir, dir);
    CU_ASSERT_TRUE(simpar_cli_refused(both, 2, "drop --trace"));
    /* an earlier report is rewritten; a folder with a file of the report's names that simpar
     * did not write is refused, the file untouched */
    r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    simpar_cli_run_clear(&r);
    g_autofree char *readme = g_build_filename(dir, "README.md", NULL);
    g_assert(g_file_set_contents(readme, "my notes\n", -1, NULL));
    CU_ASSERT_TRUE(simpar_cli_refused(
        args, 2, "README.md is there and the folder is not a report simpar wrote"));
    g_autofree char *kept = NULL;
    CU_ASSERT_TRUE(g_file_get_contents(readme, &kept, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(kept, "my notes\n");
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

static CU_TestInfo plot_tests[] = {
    {"scaling keeps the best step and throughput per mode and GPU count", test_scaling_data},
    {"memory keeps the smallest per mode and q (T for 1-D), skipped rows included",
     test_memory_data},
    {"a sweep's breakdown: the best by rank, parts adding up to the step", test_breakdown_sweep},
    {"predict and validate JSON breakdowns split communication by axis and scope",
     test_breakdown_json},
    {"validate's plot data leaves out what log axes cannot show", test_validate_data},
    {"a trace's timeline: tracks per rank and stream, boxes per class, --ranks and --mode",
     test_timeline_data},
    {"a trace naming its processes after their events, or renaming one, draws the same timeline",
     test_timeline_names_late},
    {"every kind renders PNG and SVG with its title and legend", test_render},
    {"hostile names in every input, title and output name: pictures made, nothing run",
     test_hostile_labels},
    {"bad kinds, inputs and options are refused with the file, line or option", test_refusals},
    {"without gnuplot the error names gnuplot-nox", test_no_gnuplot},
    {"an installed simpar uses the scripts installed beside it, wherever it was moved",
     test_installed_scripts},
    {"gnuplot's death or failure is reported with how it ended and what it said",
     test_gnuplot_fails},
    {"simpar predict --report writes the table, JSON, trace, plots and a README", test_report},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"plot", suite_init, suite_clean, NULL, NULL, plot_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
