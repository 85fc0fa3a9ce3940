/* platform-graph.c - in the parent, before SimGrid sees a platform file: its zones, what they
 * hold and their routes, bounded and checked where SimGrid would hang, crash or exhaust memory.
 *
 *   - routing: Full, Floyd, Dijkstra and DijkstraCache zones, and clusters (flat, torus, fat tree,
 *     dragonfly); SimGrid aborts on the others' routes (None, Star, Vivaldi, Wifi, Cluster zones)
 *   - sizes: hosts (a cluster's radical counts each) and routers, routes; a Full zone holds an
 *     n x n route table (8 bytes each: 30,000 hosts took 8 GB), a Floyd zone three of them and
 *     n^3 steps to fill them
 *   - reachability: SimGrid's Dijkstra follows predecessors from the destination without
 *     checking that one was found, so a GPU with no route to another (an unlinked GPU, a
 *     symmetrical="NO" route without its way back) loops forever or crashes; so every two of a
 *     Dijkstra or Floyd zone's endpoints (its GPU hosts, the zones and clusters in it that hold
 *     GPUs, and the gateways of zone routes) must reach each other over its routes, both ways.
 *
 * Every netpoint (host, router, zone, cluster) is a node of the zone it is declared in; a route
 * or zone route of that zone an edge (both ways unless symmetrical="NO").
 */
#include "platform-private.h"
#include "topology.h"
#include <string.h>

/* Hosts (a cluster's members included) and routers a platform may declare: the largest file
 * `simpar topology` writes, 16,384 nodes of 8 GPUs, has about 300,000. */
#define GRAPH_MAX_POINTS (1u << 19)
/* Routes and zone routes: that file has about 400,000. */
#define GRAPH_MAX_ROUTES (1u << 22)
/* Netpoints of one Full zone (a 4096^2 route table is 128 MiB) and of one Floyd zone (3 tables
 * and 1024^3 steps). */
#define GRAPH_MAX_FULL  4096u
#define GRAPH_MAX_FLOYD 1024u

typedef struct {
    char *id;
    const char *routing; /* interned; "Cluster" for a <cluster> */
    int line;
    guint parent;    /* zone index, G_MAXUINT for the top one */
    guint in_parent; /* its node in the parent zone */
    guint n_nodes;
    GArray *edges;      /* guint pairs (from, to) */
    GArray *ends;       /* nodes that must reach each other */
    GByteArray *is_end; /* per node: in `ends` */
    GPtrArray *names;   /* node -> id */
    gboolean gpus;      /* holds a GPU, directly or below */
} GraphZone;

typedef struct {
    guint zone, declared_in; /* the zone route's zone */
    char *id;
} GraphGateway;

struct _PlatformGraph {
    GPtrArray *zones;  /* GraphZone */
    GArray *open;      /* indices of the zones being read, innermost last */
    GHashTable *where; /* netpoint id -> zone << 32 | node (+1) */
    GArray *gateways;  /* GraphGateway */
    guint64 points, routes;
};

static void
graph_zone_free(gpointer data)
{
    GraphZone *z = data;
    g_free(z->id);
    g_array_unref(z->edges);
    g_array_unref(z->ends);
    g_byte_array_unref(z->is_end);
    g_ptr_array_unref(z->names);
    g_free(z);
}

PlatformGraph *
platform_graph_new(void)
{
    PlatformGraph *g = g_new0(PlatformGraph, 1);
    g->zones = g_ptr_array_new_with_free_func(graph_zone_free);
    g->open = g_array_new(FALSE, FALSE, sizeof(guint));
    g->where = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g->gateways = g_array_new(FALSE, FALSE, sizeof(GraphGateway));
    return g; /* (transfer full) */
}

void
platform_graph_free(PlatformGraph *g)
{
    if (g == NULL)
        return;
    for (guint i = 0; i < g->gateways->len; i++)
        g_free(g_array_index(g->gateways, GraphGateway, i).id);
    g_array_unref(g->gateways);
    g_hash_table_unref(g->where);
    g_array_unref(g->open);
    g_ptr_array_unref(g->zones);
    g_free(g);
}

static const char *
graph_attr(const char **names, const char **values, const char *name)
{
    for (guint i = 0; names[i] != NULL; i++)
        if (g_str_equal(names[i], name))
            return values[i];
    return NULL;
}

static GraphZone *
graph_current(const PlatformGraph *g)
{
    return g->open->len == 0
               ? NULL
               : g_ptr_array_index(g->zones, g_array_index(g->open, guint, g->open->len - 1));
}

/* `id` as a node of the current zone (an id given twice: SimGrid says so); its index. */
static guint
graph_node(PlatformGraph *g, const char *id)
{
    GraphZone *z = graph_current(g);
    guint zi = g_array_index(g->open, guint, g->open->len - 1);
    gpointer old = g_hash_table_lookup(g->where, id);
    if (old != NULL && (guint64) GPOINTER_TO_SIZE(old) >> 32 == zi)
        return (guint) (GPOINTER_TO_SIZE(old) & G_MAXUINT32) - 1;
    guint n = z->n_nodes++;
    if (old == NULL) /* else a name given twice, which SimGrid refuses */
        g_hash_table_insert(g->where, g_strdup(id), GSIZE_TO_POINTER((gsize) zi << 32 | (n + 1)));
    g_ptr_array_add(z->names, g_strdup(id));
    guint8 no = 0;
    g_byte_array_append(z->is_end, &no, 1);
    return n;
}

static void
graph_end(GraphZone *z, guint node)
{
    if (z->is_end->data[node])
        return;
    z->is_end->data[node] = 1;
    g_array_append_val(z->ends, node);
}

/* The node of `id` in the current zone when it is one of its netpoints; else G_MAXUINT. */
static guint
graph_lookup(const PlatformGraph *g, const char *id)
{
    gpointer at = id != NULL ? g_hash_table_lookup(g->where, id) : NULL;
    guint zi = g_array_index(g->open, guint, g->open->len - 1);
    if (at == NULL || (guint64) GPOINTER_TO_SIZE(at) >> 32 != zi)
        return G_MAXUINT;
    return (guint) (GPOINTER_TO_SIZE(at) & G_MAXUINT32) - 1;
}

/* Members of a cluster's radical ("0-99", "1,3-5"), counted up to G_MAXUINT32; G_MAXUINT64
 * when it does not read as one. */
static guint64
graph_radical(const char *radical)
{
    g_auto(GStrv) parts = g_strsplit(radical, ",", -1);
    guint64 n = 0;
    for (guint i = 0; parts[i] != NULL && n <= G_MAXUINT32; i++) {
        g_auto(GStrv) ab = g_strsplit(parts[i], "-", 2);
        guint64 a, b;
        if (ab[0] == NULL || /* an empty part: "0-1,,2" */
            !g_ascii_string_to_unsigned(g_strstrip(ab[0]), 10, 0, G_MAXUINT64, &a, NULL))
            return G_MAXUINT64;
        b = a;
        if (ab[1] != NULL &&
            !g_ascii_string_to_unsigned(g_strstrip(ab[1]), 10, 0, G_MAXUINT64, &b, NULL))
            return G_MAXUINT64;
        if (b < a)
            return G_MAXUINT64;
        n += MIN(b - a, G_MAXUINT32) + 1;
    }
    return n;
}

/* The product of the numbers in a cluster's topo_parameters (at most `cap` + 1). */
static guint64
graph_topo_size(const char *params, guint64 cap)
{
    guint64 size = 1;
    for (const char *p = params; *p != '\0' && size <= cap; p++) {
        if (!g_ascii_isdigit(*p))
            continue;
        char *end;
        guint64 v = g_ascii_strtoull(p, &end, 10);
        size = v == 0 ? size : size * MIN(v, cap + 1);
        p = end - 1;
    }
    return MIN(size, cap + 1);
}

static char *
graph_open_zone(PlatformGraph *g, const char *element, const char *id, const char *routing,
                int line)
{
    static const char *const routings[] = {"Full", "Floyd", "Dijkstra", "DijkstraCache"};
    gboolean known = g_str_equal(element, "cluster") || routing == NULL; /* SimGrid's error */
    for (guint i = 0; i < G_N_ELEMENTS(routings) && !known; i++)
        known = g_strcmp0(routing, routings[i]) == 0;
    if (!known)
        return g_strdup_printf("<%s id=\"%s\" routing=\"%s\"> is not accepted: simpar routes "
                               "over zones of routing Full, Floyd, Dijkstra or DijkstraCache "
                               "(SimGrid aborts on the others' routes)",
                               element, id != NULL ? id : "", routing != NULL ? routing : "");
    GraphZone *z = g_new0(GraphZone, 1);
    z->id = g_strdup(id != NULL ? id : "");
    z->routing = g_intern_string(g_str_equal(element, "cluster") ? "Cluster"
                                 : routing != NULL               ? routing
                                                                 : "");
    z->line = line;
    z->parent = z->in_parent = G_MAXUINT;
    z->edges = g_array_new(FALSE, FALSE, sizeof(guint));
    z->ends = g_array_new(FALSE, FALSE, sizeof(guint));
    z->names = g_ptr_array_new_with_free_func(g_free);
    z->is_end = g_byte_array_new();
    if (g->open->len > 0 && id != NULL) {
        z->parent = g_array_index(g->open, guint, g->open->len - 1);
        z->in_parent = graph_node(g, id);
    }
    guint zi = g->zones->len;
    g_ptr_array_add(g->zones, z);
    g_array_append_val(g->open, zi);
    return NULL;
}

/* A <cluster>: its members counted (not made), its topology one simpar routes. */
static char *
graph_cluster(PlatformGraph *g, const char **names, const char **values, int line)
{
    const char *id = graph_attr(names, values, "id");
    const char *radical = graph_attr(names, values, "radical");
    const char *topology = graph_attr(names, values, "topology");
    const char *params = graph_attr(names, values, "topo_parameters");
    static const char *const topologies[] = {"FLAT", "TORUS", "FAT_TREE", "DRAGONFLY"};
    gboolean known = topology == NULL;
    for (guint i = 0; i < G_N_ELEMENTS(topologies) && !known; i++)
        known = g_str_equal(topology, topologies[i]);
    if (!known)
        return g_strdup_printf("<cluster id=\"%s\" topology=\"%s\"> is not accepted: valid "
                               "topologies are FLAT, TORUS, FAT_TREE and DRAGONFLY",
                               id != NULL ? id : "", topology);
    guint64 members = radical != NULL ? graph_radical(radical) : 0;
    guint64 fabric = params != NULL ? graph_topo_size(params, GRAPH_MAX_POINTS) : 0;
    if (members == G_MAXUINT64)
        return NULL; /* SimGrid says what is wrong with it */
    g->points += members + fabric;
    if (members > GRAPH_MAX_POINTS || fabric > GRAPH_MAX_POINTS || g->points > GRAPH_MAX_POINTS)
        return g_strdup_printf("<cluster id=\"%s\" radical=\"%s\"> declares %s%" G_GUINT64_FORMAT
                               " hosts%s: simpar accepts at most %u hosts and routers in a "
                               "platform",
                               id != NULL ? id : "", radical != NULL ? radical : "",
                               members > G_MAXUINT32 ? "more than " : "", MIN(members, G_MAXUINT32),
                               fabric > GRAPH_MAX_POINTS ? " and a topology of more switches" : "",
                               GRAPH_MAX_POINTS);
    char *why = graph_open_zone(g, "cluster", id, NULL, line);
    if (why != NULL)
        return why;
    const char *prefix = graph_attr(names, values, "prefix");
    const char *suffix = graph_attr(names, values, "suffix");
    g_auto(GStrv) first = g_strsplit_set(radical != NULL ? radical : "", ",-", 2);
    g_autofree char *host =
        g_strconcat(prefix != NULL ? prefix : "", first[0] != NULL ? first[0] : "",
                    suffix != NULL ? suffix : "", NULL);
    guint node, gpu;
    graph_current(g)->gpus = simpar_topology_gpu_name(host, &node, &gpu) > 0;
    return NULL;
}

/* A route or zone route of the current zone: its edges; a zone route's gateways. */
static char *
graph_route(PlatformGraph *g, const char *element, const char **names, const char **values)
{
    if (++g->routes > GRAPH_MAX_ROUTES)
        return g_strdup_printf("<%s> is one route too many: simpar accepts at most %u routes "
                               "and zone routes in a platform",
                               element, GRAPH_MAX_ROUTES);
    GraphZone *z = graph_current(g);
    const char *symmetrical = graph_attr(names, values, "symmetrical");
    guint a = graph_lookup(g, graph_attr(names, values, "src"));
    guint b = graph_lookup(g, graph_attr(names, values, "dst"));
    if (a != G_MAXUINT && b != G_MAXUINT) { /* else SimGrid says what is wrong */
        guint e[4] = {a, b, b, a};
        gboolean both = symmetrical == NULL || g_ascii_strcasecmp(symmetrical, "no") != 0;
        g_array_append_vals(z->edges, e, both ? 4 : 2);
    }
    const char *gw[] = {graph_attr(names, values, "gw_src"), graph_attr(names, values, "gw_dst")};
    for (guint i = 0; i < G_N_ELEMENTS(gw); i++)
        if (gw[i] != NULL) {
            GraphGateway x = {0, g_array_index(g->open, guint, g->open->len - 1), g_strdup(gw[i])};
            g_array_append_val(g->gateways, x);
        }
    return NULL;
}

char *
platform_graph_start(PlatformGraph *g, const char *element, const char **names, const char **values,
                     int line)
{
    gboolean zone = g_str_equal(element, "zone") || g_str_equal(element, "AS");
    if (zone)
        return graph_open_zone(g, element, graph_attr(names, values, "id"),
                               graph_attr(names, values, "routing"), line);
    if (g_str_equal(element, "cluster"))
        return graph_cluster(g, names, values, line);
    if (g->open->len == 0)
        return NULL; /* outside any zone: SimGrid says what is wrong */
    const char *id = graph_attr(names, values, "id");
    GraphZone *z = graph_current(g);
    if ((g_str_equal(element, "host") || g_str_equal(element, "router")) && id != NULL &&
        !g_str_equal(z->routing, "Cluster")) {
        if (++g->points > GRAPH_MAX_POINTS)
            return g_strdup_printf("<%s id=\"%s\"> is one too many: simpar accepts at most %u "
                                   "hosts and routers in a platform",
                                   element, id, GRAPH_MAX_POINTS);
        guint n = graph_node(g, id), node, gpu;
        if (g_str_equal(element, "host") && simpar_topology_gpu_name(id, &node, &gpu) > 0) {
            graph_end(z, n);
            z->gpus = TRUE;
        }
        return NULL;
    }
    if (g_str_equal(element, "route") || g_str_equal(element, "zoneRoute") ||
        g_str_equal(element, "ASroute"))
        return graph_route(g, element, names, values);
    return NULL;
}

char *
platform_graph_end(PlatformGraph *g, const char *element, int *line)
{
    if (!g_str_equal(element, "zone") && !g_str_equal(element, "AS") &&
        !g_str_equal(element, "cluster"))
        return NULL;
    if (g->open->len == 0)
        return NULL;
    GraphZone *z = graph_current(g);
    g_array_set_size(g->open, g->open->len - 1);
    if (z->parent != G_MAXUINT && z->gpus) {
        GraphZone *up = g_ptr_array_index(g->zones, z->parent);
        graph_end(up, z->in_parent);
        up->gpus = TRUE;
    }
    guint max = g_str_equal(z->routing, "Full")    ? GRAPH_MAX_FULL
                : g_str_equal(z->routing, "Floyd") ? GRAPH_MAX_FLOYD
                                                   : G_MAXUINT;
    if (z->n_nodes <= max)
        return NULL;
    *line = z->line;
    return g_strdup_printf("<zone id=\"%s\" routing=\"%s\"> holds %u hosts, routers and zones: "
                           "simpar accepts at most %u in a %s zone (SimGrid %s; Dijkstra or "
                           "DijkstraCache routing holds only the routes given)",
                           z->id, z->routing, z->n_nodes, max, z->routing,
                           max == GRAPH_MAX_FULL
                               ? "allocates a route table of n^2 entries"
                               : "allocates three tables of n^2 entries and takes n^3 steps");
}

/* The nodes of `z` that `from` reaches over its edges (reversed: that reach `from`). */
static guint8 *
graph_reach(const GraphZone *z, const guint *first, const guint *to, guint from)
{
    guint8 *seen = g_new0(guint8, z->n_nodes);
    g_autofree guint *stack = g_new(guint, z->n_nodes);
    guint n = 0;
    seen[from] = 1, stack[n++] = from;
    while (n > 0) {
        guint v = stack[--n];
        for (guint k = first[v]; k < first[v + 1]; k++)
            if (!seen[to[k]])
                seen[to[k]] = 1, stack[n++] = to[k];
    }
    return seen;
}

/* The first endpoint of `z` that its first endpoint does not reach (or is not reached from:
 * *back), or G_MAXUINT. */
static guint
graph_unreached(const GraphZone *z, gboolean *back)
{
    guint n = z->n_nodes, m = z->edges->len / 2, e0 = g_array_index(z->ends, guint, 0);
    const guint *edges = (const guint *) z->edges->data;
    for (guint dir = 0; dir < 2; dir++) {
        g_autofree guint *first = g_new0(guint, n + 1);
        g_autofree guint *to = g_new(guint, MAX(m, 1));
        for (guint k = 0; k < m; k++)
            first[edges[2 * k + dir] + 1]++;
        for (guint v = 0; v < n; v++)
            first[v + 1] += first[v];
        g_autofree guint *fill = g_memdup2(first, (n + 1) * sizeof(guint));
        for (guint k = 0; k < m; k++)
            to[fill[edges[2 * k + dir]]++] = edges[2 * k + 1 - dir];
        g_autofree guint8 *seen = graph_reach(z, first, to, e0);
        for (guint i = 1; i < z->ends->len; i++)
            if (!seen[g_array_index(z->ends, guint, i)]) {
                *back = dir == 1;
                return g_array_index(z->ends, guint, i);
            }
    }
    return G_MAXUINT;
}

char *
platform_graph_finish(PlatformGraph *g, int *line)
{
    for (guint i = 0; i < g->gateways->len; i++) { /* a gateway and the zones it lies in */
        const GraphGateway *gw = &g_array_index(g->gateways, GraphGateway, i);
        gpointer at = g_hash_table_lookup(g->where, gw->id);
        if (at == NULL)
            continue;
        guint zi = (guint) ((guint64) GPOINTER_TO_SIZE(at) >> 32);
        guint node = (guint) (GPOINTER_TO_SIZE(at) & G_MAXUINT32) - 1;
        while (zi != gw->declared_in && zi != G_MAXUINT) {
            GraphZone *z = g_ptr_array_index(g->zones, zi);
            graph_end(z, node);
            node = z->in_parent, zi = z->parent;
        }
    }
    for (guint i = 0; i < g->zones->len; i++) {
        const GraphZone *z = g_ptr_array_index(g->zones, i);
        gboolean searched = g_str_equal(z->routing, "Floyd") ||
                            g_str_equal(z->routing, "Dijkstra") ||
                            g_str_equal(z->routing, "DijkstraCache");
        if (!searched || z->ends->len < 2)
            continue;
        gboolean back = FALSE;
        guint lost = graph_unreached(z, &back);
        if (lost == G_MAXUINT)
            continue;
        const char *a = g_ptr_array_index(z->names, g_array_index(z->ends, guint, 0));
        const char *b = g_ptr_array_index(z->names, lost);
        *line = z->line;
        return g_strdup_printf(
            "<zone id=\"%s\" routing=\"%s\"> has no route from %s to %s: every two GPUs (and "
            "the zones and gateways that lead to them) need routes both ways in a %s zone, "
            "where SimGrid loops forever or crashes on a missing one (a route with "
            "symmetrical=\"NO\" goes one way only)",
            z->id, z->routing, back ? b : a, back ? a : b, z->routing);
    }
    return NULL;
}
