/* test-tp-overlap.c - --tp-comm-overlap (Transformer Engine's userbuffers, models/tp-1d.c) timed:
 * closed forms of one overlapped linear on an idle network, from the trace of a prediction.
 *
 * Ring exchange (fc1's forward): after the copy of the rank's own block (c), block i's GEMM (g)
 * starts when block i - 1's GEMM has ended and block i has arrived; the P - 1 ring steps (p each)
 * run back to back, the first after the copy. By induction, E_i = max(E_{i-1}, c + i p) + g
 * gives the linear's span
 *     c + g + (P - 1) max(g, p)
 * (serial: the all-gather, then one GEMM of all P blocks).
 * Pipeline (fc2's forward): S chunks, chunk s's reduce-scatter (r) after its GEMM (g) and after
 * chunk s - 1's reduce-scatter, the GEMMs back to back:
 *     g + (S - 1) max(g, r) + r
 */
#include "cli-run.h"
#include "simpar-test.h"
#include <json-glib/json-glib.h>
#include <math.h>

#define OVERLAP_JOB                                                                                \
    "--topology topologies/dgx-h100x64.xml --gpus 8 --json --model llama3-8b --layers 1 "          \
    "--seq 4096 --tp-mode 1d --tp 8 --sp --pp 1 --dp 1 --global-batch 1 --micro-batch 1 "          \
    "--backend analytic"

typedef struct {
    double start, end, dur;
} OverlapEvent;

static gint
overlap_by_start(gconstpointer a, gconstpointer b)
{
    const OverlapEvent *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* GPU 0's compute-or-communication events named `name`, by start (transfer full). */
static GArray *
overlap_events(JsonArray *ev, const char *name)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(OverlapEvent));
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (!g_str_equal(json_object_get_string_member(e, "ph"), "X") ||
            json_object_get_int_member(e, "pid") != 0 ||
            !g_str_equal(json_object_get_string_member(e, "name"), name))
            continue;
        double ts = json_object_get_double_member(e, "ts") * 1e-6;
        double dur = json_object_get_double_member(e, "dur") * 1e-6;
        OverlapEvent o = {ts, ts + dur, dur};
        g_array_append_val(out, o);
    }
    g_array_sort(out, overlap_by_start);
    return out;
}

/* The trace of a prediction with `extra` flags; *parser keeps it alive. */
static JsonArray *
overlap_trace(const char *dir, const char *extra, JsonParser **parser, double *tp_exposed)
{
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    g_autofree char *args = g_strdup_printf("%s --trace %s %s", OVERLAP_JOB, path, extra);
    SimparCliRun r = simpar_cli_run(args);
    if (r.status != 0)
        printf("\n    simpar %s -> %d: %s", args, r.status, r.err);
    g_assert(r.status == 0);
    g_autoptr(JsonParser) out = json_parser_new();
    g_assert(json_parser_load_from_data(out, r.out, -1, NULL));
    JsonNode *root = json_parser_get_root(out);
    JsonObject *row = json_array_get_object_element(json_node_get_array(root), 0);
    *tp_exposed = json_object_get_double_member(row, "tp_exposed_s");
    simpar_cli_run_clear(&r);
    *parser = json_parser_new();
    g_assert(json_parser_load_from_file(*parser, path, NULL));
    return json_object_get_array_member(json_node_get_object(json_parser_get_root(*parser)),
                                        "traceEvents");
}

#define EV(a, i) (&g_array_index((a), OverlapEvent, (i)))

/* Whether every event of `a` from `first` on lasts as long as the first of them (to `tol`). */
static gboolean
overlap_alike(GArray *a, guint first, double tol)
{
    for (guint i = first; i < a->len; i++)
        if (fabs(EV(a, i)->dur - EV(a, first)->dur) > tol)
            return FALSE;
    return a->len > first;
}

/* The closed forms above, on GPU 0 of a one-layer step of 8 H100s in one node (T = 8, SP) on the
 * analytic backend, to the trace's nanosecond; the overlapped fc1 forward is shorter than the
 * serial one's all-gather and GEMM, and the step's tensor-parallel exposed time drops. Fails
 * with a ring block's GEMM waiting for every block (the ring's receives on the compute
 * stream), or the pipeline's reduce-scatters on the compute stream. */
static void
test_an_overlapped_linear_takes_its_closed_form(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-tpov-XXXXXX", NULL);
    g_autoptr(JsonParser) p_on = NULL, p_off = NULL;
    double exposed[2];
    JsonArray *on = overlap_trace(dir, "--tp-comm-overlap", &p_on, &exposed[1]);
    const guint P = 8, S = 4;
    const double tol = 0.5e-9 * 4 * (P + S); /* the trace's nanoseconds */
    /* ring exchange: fc1's forward (the first layer's: the first copy, P GEMMs, P - 1 steps) */
    g_autoptr(GArray) copy = overlap_events(on, "fwd.fc1.ring-copy");
    g_autoptr(GArray) gemm = overlap_events(on, "fwd.fc1.gemm");
    g_autoptr(GArray) send = overlap_events(on, "fwd.fc1.ring-send");
    CU_ASSERT_FATAL(copy->len >= 1 && gemm->len >= P && send->len >= P - 1);
    g_array_set_size(gemm, P), g_array_set_size(send, P - 1);
    /* a send is a ring step (its receive is posted early and waits for it) */
    CU_ASSERT(overlap_alike(gemm, 0, tol) && overlap_alike(send, 0, tol));
    CU_ASSERT(fabs(EV(send, 0)->start - EV(copy, 0)->end) <= tol);
    double c = EV(copy, 0)->dur, g = EV(gemm, 0)->dur, step = EV(send, 0)->dur;
    double span = EV(gemm, P - 1)->end - EV(copy, 0)->start;
    double want = c + g + (P - 1) * MAX(g, step);
    printf("\n    ring exchange: copy %.3f us, GEMM block %.3f us, ring step %.3f us: fc1 forward "
           "%.3f us, closed form %.3f us",
           c * 1e6, g * 1e6, step * 1e6, span * 1e6, want * 1e6);
    CU_ASSERT(fabs(span - want) <= tol);
    /* pipeline: fc2's forward, S GEMM chunks and their reduce-scatters */
    g_autoptr(GArray) g2 = overlap_events(on, "fwd.fc2.gemm");
    g_autoptr(GArray) rs = overlap_events(on, "fwd.fc2.reduce-scatter-y");
    CU_ASSERT_FATAL(g2->len >= S && rs->len >= S);
    g_array_set_size(g2, S), g_array_set_size(rs, S);
    CU_ASSERT(overlap_alike(g2, 0, tol) && overlap_alike(rs, 0, tol));
    double gc = EV(g2, 0)->dur, r = EV(rs, 0)->dur;
    double span2 = EV(rs, S - 1)->end - EV(g2, 0)->start;
    double want2 = gc + (S - 1) * MAX(gc, r) + r;
    printf("\n    pipeline: GEMM chunk %.3f us, reduce-scatter %.3f us: fc2 forward %.3f us, "
           "closed form %.3f us",
           gc * 1e6, r * 1e6, span2 * 1e6, want2 * 1e6);
    CU_ASSERT(fabs(span2 - want2) <= tol);
    /* the serial linear: the all-gather, then the GEMM of all the rows */
    JsonArray *off = overlap_trace(dir, "", &p_off, &exposed[0]);
    g_autoptr(GArray) ag = overlap_events(off, "fwd.fc1.all-gather-x");
    g_autoptr(GArray) whole = overlap_events(off, "fwd.fc1.gemm");
    CU_ASSERT_FATAL(ag->len >= 1 && whole->len >= 1);
    double serial = EV(ag, 0)->dur + EV(whole, 0)->dur;
    printf("\n    serial fc1 forward %.3f us; tensor-parallel exposed %.6f -> %.6f s ",
           serial * 1e6, exposed[0], exposed[1]);
    CU_ASSERT(span < serial);
    CU_ASSERT(exposed[1] < exposed[0]);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

static CU_TestInfo overlap_tests[] = {
    {"an overlapped linear (ring exchange, pipeline) takes its closed form on an idle network",
     test_an_overlapped_linear_takes_its_closed_form},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"tp-comm-overlap", NULL, NULL, NULL, NULL, overlap_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
