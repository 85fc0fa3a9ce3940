/* platform.c - check a platform file, load it with SimGrid in a child process, run a job. */
#include "collectives.h"
#include "platform-private.h"
#include "topology.h"
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/log.h>

/* The layout of the child's SimGrid log: one record a line (platform_simgrid_message) */
#define PLATFORM_LOG_TAG    "simpar-log|"
#define PLATFORM_LOG_FORMAT "root.fmt:" PLATFORM_LOG_TAG "%c|%p|%m%n"

/* An actor per GPU stream runs a short loop (backend-simgrid.c) on SimGrid's own calls: a
 * quarter of a MiB of stack is room to spare, where SimGrid's default 8 MiB each reserved 63 GB
 * of address space for 16,384 GPUs (and failed under an 8 GB limit at 4,096); the sanitizers'
 * frames are larger. */
#if defined(__SANITIZE_ADDRESS__)
#define PLATFORM_STACK_KIB 4096
#else
#define PLATFORM_STACK_KIB 256
#endif

G_DEFINE_QUARK(simpar_platform_error_quark, simpar_platform_error)

/* ------------------------------------------------------------------ well-formed XML, in parent */

/* The elements simpar reads from a platform file: the rest (SimGrid's <config>, <include>,
 * <trace>, actors, storage, disks, peers, ...) would reconfigure SimGrid after simpar's checks,
 * make it open other files, or add what simpar does not model; docs/usage.md lists them. */
static const char *const platform_allowed[] = {
    "platform", "zone",   "AS",        "host",    "prop",    "link",     "link_ctn",
    "route",    "router", "zoneRoute", "ASroute", "cluster", "backbone",
};
#define PLATFORM_ALLOWED_NAMES                                                                     \
    "platform, zone, AS, host, prop, link, link_ctn, route, router, zoneRoute, ASroute, cluster, " \
    "backbone"

/* Why an element outside the allow-list is refused. */
static const char *
platform_refused_why(const char *element)
{
    static const struct {
        const char *element, *why;
    } whys[] = {
        {"config", "it sets SimGrid options (output files, network factors) past simpar's checks"},
        {"include", "it makes SimGrid read another file"},
        {"trace", "it changes figures over time from trace data or another file"},
        {"trace_connect", "it changes figures over time from trace data or another file"},
        {"actor", "it starts programs simpar does not run"},
        {"process", "it starts programs simpar does not run"},
        {"argument", "it starts programs simpar does not run"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(whys); i++)
        if (g_str_equal(element, whys[i].element))
            return whys[i].why;
    return "simpar does not model it";
}

/* What the check of a platform file finds: whether the root is <platform>, the first host
 * whose name looks like a GPU's but is not one, and the first construct refused (with its
 * line). */
typedef struct {
    gboolean root;
    char *bad_host;
    char *refused;        /* "FILE:LINE: <x> is not accepted: ..." */
    PlatformGraph *graph; /* its zones and routes (platform-graph.c) */
} PlatformScan;

/* The element nesting simpar accepts (SimGrid's parser corrupts its heap 500 zones deep). */
#define PLATFORM_MAX_DEPTH 64

/* The line of the tag GMarkup has just read. */
static int
platform_line(GMarkupParseContext *ctx)
{
    int line, col;
    g_markup_parse_context_get_position(ctx, &line, &col);
    return col <= 1 && line > 1 ? line - 1 : line; /* it stands on the newline after the '>' */
}

/* What simpar refuses at `line` (transfer full `what`) into scan->refused. */
static void
platform_refuse_at(PlatformScan *scan, int line, char *what)
{
    scan->refused = g_strdup_printf("%d: %s (simpar accepts " PLATFORM_ALLOWED_NAMES
                                    ", without *_file attributes, within its limits; see "
                                    "docs/usage.md)",
                                    line, what);
    g_free(what);
}

/* An element or attribute simpar refuses: the message, and a markup error to stop the parse. */
static void platform_refuse(GMarkupParseContext *ctx, PlatformScan *scan, GError **error,
                            const char *format, ...) G_GNUC_PRINTF(4, 5);

static void
platform_refuse(GMarkupParseContext *ctx, PlatformScan *scan, GError **error, const char *format,
                ...)
{
    va_list ap;
    va_start(ap, format);
    platform_refuse_at(scan, platform_line(ctx), g_strdup_vprintf(format, ap));
    va_end(ap);
    g_set_error_literal(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT, "");
}

/* The element is one simpar reads, not nested too deep, and names no file for SimGrid. */
static gboolean
platform_allowed_element(GMarkupParseContext *ctx, PlatformScan *scan, const char *element,
                         const char **names, const char **values, GError **error)
{
    gboolean known = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(platform_allowed) && !known; i++)
        known = g_str_equal(element, platform_allowed[i]);
    if (!known) {
        platform_refuse(ctx, scan, error, "<%s> is not accepted: %s", element,
                        platform_refused_why(element));
        return FALSE;
    }
    if (g_slist_length((GSList *) g_markup_parse_context_get_element_stack(ctx)) >
        PLATFORM_MAX_DEPTH) {
        platform_refuse(ctx, scan, error, "<%s> is nested deeper than %d elements", element,
                        PLATFORM_MAX_DEPTH);
        return FALSE;
    }
    for (guint i = 0; names[i] != NULL; i++)
        if (g_str_has_suffix(names[i], "_file")) {
            platform_refuse(ctx, scan, error,
                            "<%s %s=\"%s\"> is not accepted: it makes SimGrid open another file",
                            element, names[i], values[i]);
            return FALSE;
        }
    return TRUE;
}

static void
platform_start_element(GMarkupParseContext *ctx, const char *element, const char **names,
                       const char **values, gpointer data, GError **error)
{
    PlatformScan *scan = data;
    if (g_markup_parse_context_get_element_stack(ctx)->next == NULL) /* the root element */
        scan->root = g_str_equal(element, "platform");
    if (scan->root && !platform_allowed_element(ctx, scan, element, names, values, error))
        return; /* another root: the check after the parse says what it must be */
    char *why = scan->root
                    ? platform_graph_start(scan->graph, element, names, values, platform_line(ctx))
                    : NULL;
    if (why != NULL) {
        platform_refuse(ctx, scan, error, "%s", why);
        g_free(why);
        return;
    }
    if (!g_str_equal(element, "host") || scan->bad_host != NULL)
        return;
    for (guint i = 0; names[i] != NULL; i++) {
        guint node, gpu;
        if (g_str_equal(names[i], "id") && simpar_topology_gpu_name(values[i], &node, &gpu) < 0) {
            scan->bad_host = g_strdup(values[i]);
            g_set_error_literal(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT, "");
            return; /* once: an element may repeat an attribute */
        }
    }
}

static void
platform_end_element(GMarkupParseContext *ctx, const char *element, gpointer data, GError **error)
{
    (void) ctx;
    PlatformScan *scan = data;
    int line = 0;
    char *why = scan->root ? platform_graph_end(scan->graph, element, &line) : NULL;
    if (why != NULL) {
        platform_refuse_at(scan, line, why);
        g_set_error_literal(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT, "");
    }
}

/* Whether `simpar topology` wrote `text` (topologies/topology.c reads its own header back). */
void
platform_generated(const char *text, gsize len, PlatformGenerated *out)
{
    guint nodes;
    SimparFabricSpec fabric;
    const SimparTopologyPreset *preset = simpar_topology_recognise(text, len, &nodes, &fabric);
    guint node_gpus = preset != NULL ? simpar_topology_node_gpus(preset, &fabric) : 0;
    *out = preset == NULL ? (PlatformGenerated){0, 0, 0, 0}
                          : (PlatformGenerated){node_gpus, nodes, fabric.rack_nodes,
                                                fabric.pod_gpus / node_gpus};
}

/* Checks the file and finds whether `simpar topology` wrote it, once for every child. */
static gboolean
platform_check_xml(const char *path, PlatformGenerated *generated, GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    GStatBuf st;
    if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: not a regular file (a device or a pipe; the platform file "
                    "is read once here and once by SimGrid)",
                    path);
        return FALSE;
    }
    if (!simpar_file_read(path, SIMPAR_PLATFORM_MAX_BYTES, &text, &len, error)) {
        g_prefix_error(error, "--topology ");
        return FALSE;
    }
    PlatformScan scan = {FALSE, NULL, NULL, platform_graph_new()};
    GMarkupParser parser = {platform_start_element, platform_end_element, NULL, NULL, NULL};
    g_autoptr(GMarkupParseContext) ctx =
        g_markup_parse_context_new(&parser, G_MARKUP_IGNORE_QUALIFIED, &scan, NULL);
    gboolean parsed = g_markup_parse_context_parse(ctx, text, (gssize) len, error) &&
                      g_markup_parse_context_end_parse(ctx, error);
    int line = 0;
    char *unrouted = parsed && scan.root && scan.refused == NULL && scan.bad_host == NULL
                         ? platform_graph_finish(scan.graph, &line)
                         : NULL;
    if (unrouted != NULL)
        platform_refuse_at(&scan, line, unrouted);
    platform_graph_free(scan.graph);
    g_autofree char *bad = scan.bad_host, *refused = scan.refused;
    if (refused != NULL) {
        g_clear_error(error);
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID, "--topology %s:%s",
                    path, refused);
        return FALSE;
    }
    if (bad != NULL) {
        g_clear_error(error);
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: host \"%s\" is not a GPU's name: GPUs are named "
                    "node<N>-gpu<G>, N and G decimal numbers without sign, blank or leading "
                    "zero, below 2^31 (node0-gpu0; another host's name must not look like one)",
                    path, bad);
        return FALSE;
    }
    if (!parsed) {
        g_prefix_error(error, "--topology %s: not well-formed XML: ", path);
        return FALSE;
    }
    if (!scan.root) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: the root element must be <platform> (a SimGrid platform, "
                    "DTD 4.1)",
                    path);
        return FALSE;
    }
    platform_generated(text, len, generated);
    return TRUE;
}

gboolean
simpar_platform_check(const char *path, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    PlatformGenerated generated;
    return platform_check_xml(path, &generated, error);
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

/* Every link carries data and takes no negative time (SimGrid accepts "-5GBps"). */
static gboolean
platform_check_links(const SimparPlatform *p, GError **error)
{
    sg_link_t *links = sg_link_list();
    size_t n = sg_link_count();
    gboolean ok = TRUE;
    for (size_t i = 0; i < n && ok; i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        ok = bw >= SIMPAR_PLATFORM_MIN_BW_BPS && bw <= SIMPAR_PLATFORM_MAX_BW_BPS && lat >= 0 &&
             lat <= SIMPAR_PLATFORM_MAX_LAT_S; /* NaN fails every comparison */
        if (!ok)
            g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                        "--topology %s: link %s has bandwidth %g B/s and latency %g s; a link "
                        "needs a bandwidth from %g to %g B/s and a latency from 0 to %g s",
                        p->path, sg_link_get_name(links[i]), bw, lat, SIMPAR_PLATFORM_MIN_BW_BPS,
                        SIMPAR_PLATFORM_MAX_BW_BPS, SIMPAR_PLATFORM_MAX_LAT_S);
    }
    free(links);
    return ok;
}

/* The reply: 'O' and the output, or 'E' and the error's domain name, code and message. */
static G_NORETURN void
platform_reply(const SimparPlatform *p)
{
    /* an error goes back whole: its domain's name and code, then the message, so that the
     * parent's caller tells a bad option from a bad file as if the job had run there */
    g_autofree char *failed =
        p->error != NULL ? g_strdup_printf("%s\n%d\n%s", g_quark_to_string(p->error->domain),
                                           p->error->code, p->error->message)
                         : NULL;
    const char *text = p->error != NULL ? failed : p->out->str;
    char status = p->error != NULL ? 'E' : 'O';
    gboolean ok = platform_write_all(p->reply_fd, &status, 1) &&
                  platform_write_all(p->reply_fd, text, strlen(text));
    _exit(ok ? 0 : 1);
}

/* Memory mappings this process holds (the lines of /proc/self/maps), or 0 when unknown. */
static guint64
platform_maps_held(void)
{
    g_autofree char *maps = NULL;
    if (!g_file_get_contents("/proc/self/maps", &maps, NULL, NULL))
        return 0;
    guint64 n = 0;
    for (const char *c = maps; *c != '\0'; c++)
        n += *c == '\n';
    return n;
}

/* The kernel's limit on a process's memory mappings (Linux's default when unreadable). */
static guint64
platform_maps_limit(void)
{
    g_autofree char *text = NULL;
    guint64 limit = 65530;
    if (g_file_get_contents("/proc/sys/vm/max_map_count", &text, NULL, NULL))
        (void) g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXUINT64, &limit, NULL);
    return limit;
}

/* The actors' stacks, for a platform of `gpus` GPUs, before the first actor starts (SimGrid
 * frees a stack by the guard size of the moment: it is one for the process). SimGrid protects a
 * guard page below each stack: two memory mappings per actor, and past the kernel's limit
 * (vm.max_map_count, 65,530 by default) it aborts ("Failed to protect stack"). A step runs up
 * to one actor per GPU stream (models/step.c's six); where that many could pass the limit the
 * stacks go without guard pages and come from the heap, no mapping each. */
static void
platform_stacks(guint gpus)
{
    guint64 need = platform_maps_held() + 2 * 6 * (guint64) gpus + 4096;
    gboolean guards = need <= platform_maps_limit();
    if (guards)
        return; /* SimGrid's default: a page */
    sg_cfg_set_int("contexts/guard-size", 0);
    /* SimGrid then callocs each stack: from the heap when below glibc's threshold for mapping
     * an allocation apart (by default 128 KiB, below a stack) */
    mallopt(M_MMAP_THRESHOLD, 2 * PLATFORM_STACK_KIB * 1024);
}

void
platform_fatal(SimparPlatform *p, GError *error)
{
    g_clear_error(&p->error);
    p->error = error;
    platform_reply(p);
}

static G_NORETURN void
platform_child(SimparPlatform *p, int out, int err)
{
    /* SimGrid's log and anything else the child prints go to the log file: the parent's
     * stdout carries only what the parent prints */
    dup2(err, STDERR_FILENO);
    dup2(err, STDOUT_FILENO);
    p->reply_fd = out;
    int argc = 1;
    char *argv[] = {(char *) "simpar", NULL};
    xbt_log_control_set("xbt_cfg.thres:warning");
    simgrid_init(&argc, argv);
    xbt_log_control_set(PLATFORM_LOG_FORMAT); /* one record a line (platform_simgrid_message) */
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0);
    sg_cfg_set_int("contexts/stack-size", PLATFORM_STACK_KIB);
    simgrid_load_platform(p->path);
    platform_find_gpus(p);
    platform_stacks(p->n_gpus);
    platform_find_generated(p);
    p->net = (SimparNet){
        platform_route,   platform_node, p->hosts,           simpar_platform_route_links,
        platform_link_bw, platform_nvls, platform_nvls_tree, simpar_net_memo_new()};
    p->routes = g_hash_table_new_full(platform_route_hash, g_int64_equal, g_free, g_free);
    p->route_memo = g_new0(PlatformRouteSlot, PLATFORM_ROUTE_MEMO);
    p->route_links = g_hash_table_new_full(platform_route_hash, g_int64_equal, g_free,
                                           (GDestroyNotify) g_ptr_array_unref);
    if (p->n_gpus == 0) {
        g_set_error(&p->error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: no host is named node<N>-gpu<G>, so no GPU was found (see "
                    "docs/topologies.md)",
                    p->path);
    } else if (platform_check_links(p, &p->error) && platform_read_nvls(p, &p->error)) {
        sg_actor_t driver = sg_actor_init("simpar", p->hosts[0]);
        sg_actor_set_data(driver, p);
        sg_actor_start(driver, platform_driver, 0, NULL);
        simgrid_run();
    }
    platform_reply(p);
}

/* SimGrid 3.32's C API reports no error: simgrid_load_platform() returns nothing, and a bad
 * platform raises a C++ exception (simgrid::ParseError, simgrid::AssertionError, ...) that C
 * cannot catch; SimGrid's terminate handler logs it (xbt_exception, CRITICAL: "Uncaught
 * exception TYPE by ACTOR: MESSAGE") and the process ends, or xbt_die() logs and aborts. The
 * appender a C program could give is an opaque type. So the child's log is the only account,
 * and its layout is set to one record per line, its fields apart (PLATFORM_LOG_FORMAT):
 * "simpar-log|CATEGORY|PRIORITY|MESSAGE", read here by field, not by searching the text. */
typedef struct {
    const char *category, *priority, *message; /* into the line */
} PlatformLogRecord;

/* A line of the log as a record; FALSE for a line of no record (a backtrace's, GLib's). */
static gboolean
platform_log_record(char *line, PlatformLogRecord *r)
{
    if (!g_str_has_prefix(line, PLATFORM_LOG_TAG))
        return FALSE;
    char *cat = line + strlen(PLATFORM_LOG_TAG), *prio = strchr(cat, '|');
    char *msg = prio != NULL ? strchr(prio + 1, '|') : NULL;
    if (msg == NULL)
        return FALSE;
    *prio++ = '\0', *msg++ = '\0';
    *r = (PlatformLogRecord){cat, prio, msg};
    return TRUE;
}

/* Whether a record is SimGrid's complaint about the platform (its parser's, its platform
 * builder's, or an exception it raised). */
static gboolean
platform_log_is_platform(const PlatformLogRecord *r)
{
    static const char *const cats[] = {"xbt_exception", "surf_parse", "ker_platform"};
    for (guint i = 0; i < G_N_ELEMENTS(cats); i++)
        if (g_str_equal(r->category, cats[i]))
            return TRUE;
    return strstr(r->message, "Parse error") != NULL;
}

/* SimGrid's complaint, one line: the first ERROR record's message, else the first CRITICAL
 * one's ("Uncaught exception simgrid::AssertionError by maestro/0: Refusing to create a second
 * host named 'x'." gives what follows the actor), leaving out "Exiting now." and the
 * backtrace's head; else GLib's "Bail out!" line; else the first line. *platform: whether it is
 * SimGrid's complaint about the platform. */
static char *
platform_simgrid_message(const char *log, gboolean *platform)
{
    static const char *const prios[] = {"ERROR", "CRITICAL"};
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    *platform = FALSE;
    for (guint i = 0; lines[i] != NULL; i++) {
        g_autofree char *copy = g_strdup(lines[i]);
        PlatformLogRecord r;
        *platform = *platform || (platform_log_record(copy, &r) && platform_log_is_platform(&r));
    }
    for (guint t = 0; t < G_N_ELEMENTS(prios); t++)
        for (guint i = 0; lines[i] != NULL; i++) {
            g_autofree char *copy = g_strdup(lines[i]);
            PlatformLogRecord r;
            if (!platform_log_record(copy, &r) || !g_str_equal(r.priority, prios[t]) ||
                strstr(r.message, "Exiting now") != NULL ||
                g_str_has_suffix(r.message, "acktrace:"))
                continue;
            const char *m = r.message, *by = strstr(m, "Uncaught exception ");
            if (by != NULL && (by = strstr(by, " by ")) != NULL && (by = strstr(by, ": ")) != NULL)
                m = by + 2;
            return g_strdup(m);
        }
    for (guint i = 0; lines[i] != NULL; i++) /* GLib's: "Bail out! simpar:ERROR:file:..." */
        if (strstr(lines[i], "ERROR") != NULL || strstr(lines[i], "CRITICAL") != NULL)
            return g_strdup(g_strstrip(lines[i]));
    for (guint i = 0; lines[i] != NULL; i++)
        if (g_strstrip(lines[i])[0] != '\0' && strspn(lines[i], "*") != strlen(lines[i]))
            return g_strdup(lines[i]);
    return g_strdup("it ended without a message");
}

/* One child: its reply and SimGrid log files, and how it ended. */
struct _SimparPlatformChild {
    pid_t pid;
    int status;
    char *reply_path, *log_path;
    char *path; /* simpar_platform_spawn's children only */
};
typedef struct _SimparPlatformChild PlatformChild;

/* A temporary file for the child, on a descriptor above 2: with stdin, stdout or stderr
 * closed, it would take their number, and the child's log redirection (or its output) would
 * write over the reply. */
static int
platform_tmp(const char *tmpl, char **path, GError **error)
{
    int fd = g_file_open_tmp(tmpl, path, error);
    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    int high = fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
    int e = errno;
    close(fd);
    if (high < 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", *path,
                    g_strerror(e));
        g_unlink(*path);
        g_clear_pointer(path, g_free);
    }
    return high;
}

static gboolean
platform_spawn(const char *path, const PlatformGenerated *generated, SimparPlatformJob job,
               gpointer data, PlatformChild *c, GError **error)
{
    int reply_fd = platform_tmp("simpar-reply-XXXXXX", &c->reply_path, error);
    if (reply_fd < 0)
        return FALSE;
    int log_fd = platform_tmp("simpar-simgrid-XXXXXX.log", &c->log_path, error);
    if (log_fd < 0) {
        close(reply_fd);
        return FALSE;
    }
    fflush(NULL);
    pid_t parent = getpid();
    c->pid = fork();
    if (c->pid < 0)
        g_error("fork: %s", g_strerror(errno));
    if (c->pid == 0) {
        /* die with the parent: a killed sweep or prediction leaves no worker behind */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        SimparPlatform p = {.path = path,
                            .generated = generated,
                            .job = job,
                            .data = data,
                            .out = g_string_new(NULL)};
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
    if (exited) { /* "domain\ncode\nmessage" */
        g_auto(GStrv) part = g_strsplit(reply + 1, "\n", 3);
        gboolean whole = part[0] != NULL && part[1] != NULL && part[2] != NULL;
        gint64 code = whole ? g_ascii_strtoll(part[1], NULL, 10) : 0;
        if (whole && part[0][0] != '\0' && code >= G_MININT && code <= G_MAXINT)
            g_set_error_literal(error, g_quark_from_string(part[0]), (gint) code, part[2]);
        else
            g_set_error_literal(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB, reply + 1);
        return FALSE;
    }
    gboolean platform;
    g_autofree char *msg = platform_simgrid_message(log, &platform);
    if (platform) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: SimGrid cannot use this platform: %s", path, g_strstrip(msg));
        return FALSE;
    }
    /* not SimGrid's complaint about the file: say how the worker ended, and what it said */
    g_autofree char *how =
        WIFSIGNALED(c->status)
            ? g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(c->status),
                              g_strsignal(WTERMSIG(c->status)))
        : WIFEXITED(c->status) && WEXITSTATUS(c->status) != 0
            ? g_strdup_printf("exited with code %d", WEXITSTATUS(c->status))
            : g_strdup("ended without a reply");
    g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB,
                "the simulation of %s %s: %s", path, how, g_strstrip(msg));
    return FALSE;
}

static void
platform_child_clear(PlatformChild *c)
{
    if (c->reply_path != NULL)
        g_unlink(c->reply_path);
    if (c->log_path != NULL)
        g_unlink(c->log_path);
    g_clear_pointer(&c->reply_path, g_free);
    g_clear_pointer(&c->log_path, g_free);
    g_clear_pointer(&c->path, g_free);
}

gboolean
simpar_platform_run_many(const char *path, guint n, guint parallel, SimparPlatformJob job,
                         gpointer *data, const guint *order, GString **outs, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(n >= 1 && parallel >= 1, FALSE);
    PlatformGenerated generated;
    if (!platform_check_xml(path, &generated, error))
        return FALSE;
    g_autofree PlatformChild *children = g_new0(PlatformChild, n);
    gboolean ok = TRUE;
    guint running = 0;
    for (guint k = 0; k < n && ok; k++) {
        guint i = order != NULL ? order[k] : k;
        g_assert(i < n && children[i].reply_path == NULL);
        if (running == parallel)
            platform_reap(children, n), running--;
        ok = platform_spawn(path, &generated, job, data[i], &children[i], error);
        running += ok;
    }
    for (; running > 0; running--)
        platform_reap(children, n);
    for (guint i = 0; i < n; i++) {
        if (ok && children[i].reply_path != NULL)
            ok = platform_collect(path, &children[i], outs[i], error);
        platform_child_clear(&children[i]);
    }
    return ok;
}

gboolean
simpar_platform_run(const char *path, SimparPlatformJob job, gpointer data, GString *out,
                    GError **error)
{
    return simpar_platform_run_many(path, 1, 1, job, &data, NULL, &out, error);
}

/* ------------------------------------------------------------- children the caller schedules */

SimparPlatformChild *
simpar_platform_spawn(const char *path, SimparPlatformJob job, gpointer data, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    PlatformChild *c = g_new0(PlatformChild, 1);
    if (!platform_spawn(path, NULL, job, data, c, error)) {
        g_free(c);
        return NULL;
    }
    c->path = g_strdup(path);
    return c; /* (transfer full) */
}

gboolean
simpar_platform_child_ended(SimparPlatformChild *c, gboolean wait)
{
    while (c->pid > 0) {
        pid_t pid = waitpid(c->pid, &c->status, wait ? 0 : WNOHANG);
        if (pid == c->pid)
            c->pid = 0;
        else if (pid == 0 || errno != EINTR)
            break;
    }
    return c->pid == 0;
}

gboolean
simpar_platform_child_finish(SimparPlatformChild *c, GString *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_platform_child_ended(c, TRUE);
    gboolean ok = platform_collect(c->path, c, out, error);
    platform_child_clear(c);
    g_free(c);
    return ok;
}
