/* platform.c - check a platform file, load it with SimGrid in a child process, run a job. */
#include "platform.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/log.h>

G_DEFINE_QUARK(simpar_platform_error_quark, simpar_platform_error)

struct _SimparPlatform {
    const char *path;
    guint n_gpus, n_nodes;
    sg_host_t *hosts; /* by GPU id */
    guint *nodes;     /* node index (0-based, dense) by GPU id */
    SimparNet net;
    GHashTable *routes; /* (src << 32 | dst) -> SimparRoute */
    SimparPlatformJob job;
    gpointer data;
    GString *out;
    GError *error;
};

/* ------------------------------------------------------------------ well-formed XML, in parent */

static void
platform_start_element(GMarkupParseContext *ctx, const char *element, const char **names,
                       const char **values, gpointer data, GError **error)
{
    (void) names, (void) values, (void) error;
    gboolean *seen_root = data;
    if (g_markup_parse_context_get_element_stack(ctx)->next == NULL) /* the root element */
        *seen_root = g_str_equal(element, "platform");
}

static gboolean
platform_check_xml(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!g_file_get_contents(path, &text, &len, error)) {
        g_prefix_error(error, "--topology: ");
        return FALSE;
    }
    gboolean root = FALSE;
    GMarkupParser parser = {platform_start_element, NULL, NULL, NULL, NULL};
    g_autoptr(GMarkupParseContext) ctx =
        g_markup_parse_context_new(&parser, G_MARKUP_IGNORE_QUALIFIED, &root, NULL);
    if (!g_markup_parse_context_parse(ctx, text, (gssize) len, error) ||
        !g_markup_parse_context_end_parse(ctx, error)) {
        g_prefix_error(error, "--topology %s: not well-formed XML: ", path);
        return FALSE;
    }
    if (!root) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: the root element must be <platform> (a SimGrid platform, "
                    "DTD 4.1)",
                    path);
        return FALSE;
    }
    return TRUE;
}

/* ------------------------------------------------------------------------- GPUs, in the child */

typedef struct {
    unsigned node, gpu;
    sg_host_t host;
} PlatformHost;

static gint
platform_host_cmp(gconstpointer a, gconstpointer b)
{
    const PlatformHost *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

/* GPUs are the hosts named node<N>-gpu<G>, sorted by (N, G); nodes renumbered densely. */
static void
platform_find_gpus(SimparPlatform *p)
{
    sg_host_t *all = sg_host_list();
    g_autoptr(GArray) gpus = g_array_new(FALSE, FALSE, sizeof(PlatformHost));
    for (size_t i = 0; i < sg_host_count(); i++) {
        PlatformHost h = {0, 0, all[i]};
        char tail;
        if (sscanf(sg_host_get_name(all[i]), "node%u-gpu%u%c", &h.node, &h.gpu, &tail) == 2)
            g_array_append_val(gpus, h);
    }
    free(all);
    g_array_sort(gpus, platform_host_cmp);
    p->n_gpus = gpus->len;
    p->hosts = g_new(sg_host_t, MAX(1, gpus->len));
    p->nodes = g_new(guint, MAX(1, gpus->len));
    for (guint i = 0; i < gpus->len; i++) {
        const PlatformHost *h = &g_array_index(gpus, PlatformHost, i);
        p->hosts[i] = h->host;
        if (i > 0 && h->node != g_array_index(gpus, PlatformHost, i - 1).node)
            p->n_nodes++;
        p->nodes[i] = p->n_nodes;
    }
    p->n_nodes += gpus->len > 0;
}

static void
platform_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    SimparPlatform *p = (SimparPlatform *) ((char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    guint64 key = (guint64) src << 32 | dst;
    SimparRoute *r = g_hash_table_lookup(p->routes, &key);
    if (r == NULL) {
        r = g_new(SimparRoute, 1);
        r->lat_s = sg_host_get_route_latency(p->hosts[src], p->hosts[dst]);
        r->bw_Bps = sg_host_get_route_bandwidth(p->hosts[src], p->hosts[dst]);
        g_hash_table_insert(p->routes, g_memdup2(&key, sizeof key), r);
    }
    *out = *r;
}

static guint
platform_node(const SimparNet *net, guint gpu)
{
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    return p->nodes[gpu];
}

static gboolean
platform_prop(const SimparPlatform *p, guint gpu, const char *key, gboolean required, double *out,
              GError **error)
{
    const char *v = sg_host_get_property_value(p->hosts[gpu], key);
    char *end = NULL;
    if (v == NULL && !required)
        return TRUE;
    double d = v == NULL ? 0 : g_ascii_strtod(v, &end);
    if (v == NULL || end == v || *end != '\0' || !isfinite(d) || d < 0) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: host %s %s property %s (a number of %s, e.g. <prop id=\"%s\" "
                    "value=\"125e12\"/>; see README, Topologies)",
                    p->path, sg_host_get_name(p->hosts[gpu]), v == NULL ? "lacks the" : "has a bad",
                    key, g_str_has_suffix(key, "flops") ? "FLOP/s" : "bytes (per second)", key);
        return FALSE;
    }
    *out = d;
    return TRUE;
}

gboolean
simpar_platform_gpu(const SimparPlatform *p, guint gpu, SimparGpu *out, GError **error)
{
    g_return_val_if_fail(gpu < p->n_gpus, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    static const char *const peaks[] = {"peak_fp16_flops", "peak_bf16_flops", "peak_fp32_flops",
                                        "peak_fp64_flops"};
    simpar_gpu_init(out);
    const char *model = sg_host_get_property_value(p->hosts[gpu], "gpu_model");
    out->model = g_intern_string(model != NULL ? model : sg_host_get_name(p->hosts[gpu]));
    for (guint d = 0; d < G_N_ELEMENTS(peaks); d++)
        if (!platform_prop(p, gpu, peaks[d], FALSE, &out->peak_flops[d], error))
            return FALSE;
    return platform_prop(p, gpu, "mem_bandwidth_Bps", TRUE, &out->mem_bw_Bps, error) &&
           platform_prop(p, gpu, "mem_bytes", TRUE, &out->mem_bytes, error);
}

const char *
simpar_platform_path(const SimparPlatform *p)
{
    return p->path;
}

guint
simpar_platform_n_gpus(const SimparPlatform *p)
{
    return p->n_gpus;
}

const SimparNet *
simpar_platform_net(const SimparPlatform *p)
{
    return &p->net; /* (transfer none) */
}

/* ------------------------------------------------------------ link calibration, in the child */

/* A link is intra-node when it lies on a route between two GPUs of the same node (NVLink,
 * NVSwitch, X-bus, host memory); every other link (NIC PCIe, InfiniBand, switches) is
 * inter-node. */
static void
platform_route_links(const SimparPlatform *p, guint a, guint b, GPtrArray *out)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(p->hosts[a], p->hosts[b], links);
    for (unsigned long i = 0; i < xbt_dynar_length(links); i++)
        g_ptr_array_add(out, xbt_dynar_get_as(links, i, sg_link_t));
    xbt_dynar_free(&links);
}

static GHashTable *
platform_intra_links(const SimparPlatform *p)
{
    GHashTable *intra = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) route = g_ptr_array_new();
    for (guint a = 0; a < p->n_gpus; a++)
        for (guint b = a + 1; b < p->n_gpus && p->nodes[b] == p->nodes[a]; b++) {
            g_ptr_array_set_size(route, 0);
            platform_route_links(p, a, b, route);
            for (guint i = 0; i < route->len; i++)
                g_hash_table_add(intra, route->pdata[i]);
        }
    return intra; /* (transfer full) */
}

/* Links of `intra` (or, with `want_intra` FALSE, of none) on the route a -> b. */
static guint
platform_count_links(const SimparPlatform *p, guint a, guint b, GHashTable *intra,
                     gboolean want_intra)
{
    g_autoptr(GPtrArray) route = g_ptr_array_new();
    platform_route_links(p, a, b, route);
    guint n = 0;
    for (guint i = 0; i < route->len; i++)
        n += g_hash_table_contains(intra, route->pdata[i]) == want_intra;
    return n;
}

/* A route figure `key` of the calibration file, or 0 when it is not given. */
static gboolean
platform_link_figure(JsonObject *o, const char *path, const char *key, double max, double *out,
                     GError **error)
{
    *out = 0;
    JsonNode *node = json_object_get_member(o, key);
    if (node == NULL)
        return TRUE;
    GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    double v = type == G_TYPE_INT64 || type == G_TYPE_DOUBLE ? json_node_get_double(node) : -1;
    if (!(v > 0 && v <= max)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--calibration %s: \"%s\" must be a number > 0 and at most %g", path, key, max);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* Sets bandwidth `bw` and latency `lat` / `hops` on the links `intra` holds (or lacks). */
static void
platform_set_links(GHashTable *intra, gboolean want_intra, double bw, double lat, guint hops)
{
    sg_link_t *all = sg_link_list();
    for (size_t i = 0; i < sg_link_count(); i++) {
        if (g_hash_table_contains(intra, all[i]) != want_intra)
            continue;
        if (bw > 0)
            sg_link_set_bandwidth(all[i], bw);
        if (lat > 0 && hops > 0)
            sg_link_set_latency(all[i], lat / hops);
    }
    free(all);
}

gboolean
simpar_platform_calibrate_links(const SimparPlatform *p, const char *path, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_file(parser, path, error))
        return FALSE;
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--calibration %s: a calibration file holds one JSON object", path);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(root);
    double f[4]; /* intra bandwidth, latency; inter bandwidth, latency */
    if (!platform_link_figure(o, path, "intra_node_bandwidth_Bps", 1e14, &f[0], error) ||
        !platform_link_figure(o, path, "intra_node_latency_s", 1, &f[1], error) ||
        !platform_link_figure(o, path, "inter_node_bandwidth_Bps", 1e14, &f[2], error) ||
        !platform_link_figure(o, path, "inter_node_latency_s", 1, &f[3], error))
        return FALSE;
    if (f[0] == 0 && f[1] == 0 && f[2] == 0 && f[3] == 0)
        return TRUE;
    g_autoptr(GHashTable) intra = platform_intra_links(p);
    /* route latencies: split evenly over the links of the route between a node's first two
     * GPUs (intra), and over the inter-node links between the first GPUs of nodes 0 and 1 */
    guint intra_hops = 0, inter_hops = 0, second_node = 0;
    if (p->n_gpus > 1 && p->nodes[1] == p->nodes[0])
        intra_hops = platform_count_links(p, 0, 1, intra, TRUE);
    while (second_node < p->n_gpus && p->nodes[second_node] == p->nodes[0])
        second_node++;
    if (second_node < p->n_gpus)
        inter_hops = platform_count_links(p, 0, second_node, intra, FALSE);
    platform_set_links(intra, TRUE, f[0], f[1], intra_hops);
    platform_set_links(intra, FALSE, f[2], f[3], inter_hops);
    g_hash_table_remove_all(p->routes); /* routes seen before now are stale */
    return TRUE;
}

/* ------------------------------------------------------------------------------ the child */

static void
platform_driver(int argc, char **argv)
{
    (void) argc, (void) argv;
    SimparPlatform *p = sg_actor_self_get_data();
    if (!p->job(p, p->data, p->out, &p->error) && p->error == NULL)
        g_set_error(&p->error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB, "failed");
}

static gboolean
platform_write_all(int fd, const char *buf, gsize len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w <= 0 && errno != EINTR)
            return FALSE;
        if (w > 0)
            buf += w, len -= (gsize) w;
    }
    return TRUE;
}

static G_NORETURN void
platform_child(SimparPlatform *p, int out, int err)
{
    dup2(err, STDERR_FILENO);
    int argc = 1;
    char *argv[] = {(char *) "simpar", NULL};
    xbt_log_control_set("xbt_cfg.thres:warning");
    simgrid_init(&argc, argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0);
    simgrid_load_platform(p->path);
    platform_find_gpus(p);
    p->net = (SimparNet){platform_route, platform_node, p->hosts};
    p->routes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    if (p->n_gpus == 0) {
        g_set_error(&p->error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: no host is named node<N>-gpu<G>, so no GPU was found (see "
                    "README, Topologies)",
                    p->path);
    } else {
        sg_actor_t driver = sg_actor_init("simpar", p->hosts[0]);
        sg_actor_set_data(driver, p);
        sg_actor_start(driver, platform_driver, 0, NULL);
        simgrid_run();
    }
    const char *text = p->error != NULL ? p->error->message : p->out->str;
    char status = p->error != NULL ? 'E' : 'O';
    gboolean ok =
        platform_write_all(out, &status, 1) && platform_write_all(out, text, strlen(text));
    _exit(ok ? 0 : 1);
}

/* SimGrid's complaint, from its log lines on stderr ("... [xbt_exception/ERROR] Parse error ...").
 */
static char *
platform_simgrid_message(const char *log)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *tag = strstr(lines[i], "ERROR] ");
        if (tag != NULL && strstr(tag, "Exiting now") == NULL)
            return g_strdup(tag + strlen("ERROR] "));
    }
    return g_strdup(log[0] != '\0' ? log : "it ended without a message");
}

/* One child: its reply and SimGrid log files, and how it ended. */
typedef struct {
    pid_t pid;
    int status;
    char *reply_path, *log_path;
} PlatformChild;

static gboolean
platform_spawn(const char *path, SimparPlatformJob job, gpointer data, PlatformChild *c,
               GError **error)
{
    int reply_fd = g_file_open_tmp("simpar-reply-XXXXXX", &c->reply_path, error);
    if (reply_fd < 0)
        return FALSE;
    int log_fd = g_file_open_tmp("simpar-simgrid-XXXXXX.log", &c->log_path, error);
    if (log_fd < 0) {
        close(reply_fd);
        return FALSE;
    }
    fflush(NULL);
    c->pid = fork();
    if (c->pid < 0)
        g_error("fork: %s", g_strerror(errno));
    if (c->pid == 0) {
        SimparPlatform p = {.path = path, .job = job, .data = data, .out = g_string_new(NULL)};
        platform_child(&p, reply_fd, log_fd);
    }
    close(reply_fd);
    close(log_fd);
    return TRUE;
}

/* Waits for one running child and records how it ended. */
static void
platform_reap(PlatformChild *children, guint n)
{
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, 0)) < 0 && errno == EINTR)
        ;
    for (guint i = 0; pid > 0 && i < n; i++)
        if (children[i].pid == pid)
            children[i].status = status, children[i].pid = 0;
}

/* The child's output, or its error: the job's own, or SimGrid's complaint when it died. */
static gboolean
platform_collect(const char *path, PlatformChild *c, GString *out, GError **error)
{
    g_autofree char *reply = NULL, *log = NULL;
    gsize len = 0;
    if (!g_file_get_contents(c->reply_path, &reply, &len, NULL))
        reply = g_strdup(""), len = 0;
    if (!g_file_get_contents(c->log_path, &log, NULL, NULL))
        log = g_strdup("");
    gboolean exited = WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0 && len > 0;
    if (exited && reply[0] == 'O') {
        g_string_append(out, reply + 1);
        return TRUE;
    }
    if (exited) {
        g_set_error_literal(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB, reply + 1);
        return FALSE;
    }
    g_autofree char *msg = platform_simgrid_message(log);
    g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                "--topology %s: SimGrid cannot use this platform: %s", path, g_strstrip(msg));
    return FALSE;
}

gboolean
simpar_platform_run_many(const char *path, guint n, guint parallel, SimparPlatformJob job,
                         gpointer *data, GString **outs, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(n >= 1 && parallel >= 1, FALSE);
    if (!platform_check_xml(path, error))
        return FALSE;
    g_autofree PlatformChild *children = g_new0(PlatformChild, n);
    gboolean ok = TRUE;
    guint running = 0, started = 0;
    for (; started < n && ok; started++) {
        if (running == parallel)
            platform_reap(children, started), running--;
        ok = platform_spawn(path, job, data[started], &children[started], error);
        running += ok;
    }
    for (; running > 0; running--)
        platform_reap(children, started);
    for (guint i = 0; i < started; i++) {
        if (ok && children[i].reply_path != NULL)
            ok = platform_collect(path, &children[i], outs[i], error);
        if (children[i].reply_path != NULL)
            g_unlink(children[i].reply_path);
        if (children[i].log_path != NULL)
            g_unlink(children[i].log_path);
        g_free(children[i].reply_path);
        g_free(children[i].log_path);
    }
    return ok;
}

gboolean
simpar_platform_run(const char *path, SimparPlatformJob job, gpointer data, GString *out,
                    GError **error)
{
    return simpar_platform_run_many(path, 1, 1, job, &data, &out, error);
}
