/* platform-calibrate.c - a calibration file's network figures on a loaded platform's links, in
 * the child (simpar_platform_calibrate_links, simpar_platform_set_net_figures).
 */
#include "collectives.h"
#include "platform-private.h"
#include <json-glib/json-glib.h>
#include <string.h>

/* ------------------------------------------------------------ link calibration, in the child */

/* A route figure `key` of the calibration file, or 0 when it is not given. */
/* The link keys of a calibration file and their largest values. */
static const struct {
    const char *key;
    double max;
} platform_link_keys[] = {
    {"intra_node_bandwidth_Bps", 1e14}, {"intra_node_latency_s", 1},
    {"inter_node_bandwidth_Bps", 1e14}, {"inter_node_latency_s", 1},
    {"fabric_bandwidth_Bps", 1e16},     {"nvls_latency_s", 1},
};

/* The smallest value of a link key. */
static double
platform_link_min(const char *key)
{
    /* a bandwidth below 1 MB/s makes a step's transfers outlast any simulated step (1e6 s);
     * a latency below 1 ps is a unit slip */
    return g_str_has_suffix(key, "_Bps") ? SIMPAR_PLATFORM_MIN_BW_BPS : 1e-12;
}

gboolean
simpar_platform_link_figure_valid(const char *key, double v, char **range)
{
    for (guint i = 0; i < G_N_ELEMENTS(platform_link_keys); i++)
        if (g_str_equal(key, platform_link_keys[i].key)) {
            double min = platform_link_min(key), max = platform_link_keys[i].max;
            if (v >= min && v <= max)
                return TRUE;
            *range = g_strdup_printf("from %g to %g", min, max);
            return FALSE;
        }
    return TRUE;
}

static gboolean
platform_link_figure(JsonObject *o, const char *path, const char *key, double max, double *out,
                     GError **error)
{
    double min = platform_link_min(key);
    *out = 0;
    JsonNode *node = json_object_get_member(o, key);
    if (node == NULL)
        return TRUE;
    GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    double v = type == G_TYPE_INT64 || type == G_TYPE_DOUBLE ? json_node_get_double(node) : -1;
    if (!(v >= min && v <= max)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--calibration %s: \"%s\" must be a number from %g to %g", path, key, min, max);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* Sets bandwidth `bw` and latency `lat` / `hops` on the links `intra` holds (or lacks); with
 * `fabric_scale` > 0, a generated file's fabric links are scaled by it instead; < 0, only the
 * fabric links are set. */
static void
platform_set_links(GHashTable *intra, gboolean want_intra, double bw, double lat, guint hops,
                   double fabric_scale)
{
    sg_link_t *all = sg_link_list();
    size_t n_links = sg_link_count(); /* builds the link list: call it once */
    for (size_t i = 0; i < n_links; i++) {
        if (g_hash_table_contains(intra, all[i]) != want_intra)
            continue;
        gboolean fabric = platform_fabric_link(sg_link_get_name(all[i]));
        if (fabric_scale < 0 && !fabric)
            continue; /* the fabric's links alone */
        if (bw > 0 && fabric_scale > 0 && fabric)
            sg_link_set_bandwidth(all[i], sg_link_get_bandwidth(all[i]) * fabric_scale);
        else if (bw > 0)
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
    JsonObject *o = simpar_json_load_object(parser, path, SIMPAR_JSON_SMALL_MAX, error);
    SimparNetFigures f;
    if (o == NULL ||
        !platform_link_figure(o, path, "intra_node_bandwidth_Bps", 1e14, &f.intra_bw_Bps, error) ||
        !platform_link_figure(o, path, "intra_node_latency_s", 1, &f.intra_lat_s, error) ||
        !platform_link_figure(o, path, "inter_node_bandwidth_Bps", 1e14, &f.inter_bw_Bps, error) ||
        !platform_link_figure(o, path, "inter_node_latency_s", 1, &f.inter_lat_s, error) ||
        !platform_link_figure(o, path, "fabric_bandwidth_Bps", 1e16, &f.fabric_bw_Bps, error) ||
        !platform_link_figure(o, path, "nvls_latency_s", 1, &f.nvls_lat_s, error))
        return FALSE;
    simpar_platform_set_net_figures(p, &f);
    return TRUE;
}

/* The first GPU on another node than GPU 0 (n_gpus when there is none). */
static guint
platform_second_node(const SimparPlatform *p)
{
    guint second = 0;
    while (second < p->n_gpus && p->nodes[second] == p->nodes[0])
        second++;
    return second;
}

void
simpar_platform_set_net_figures(const SimparPlatform *p, const SimparNetFigures *f)
{
    if (f->nvls_lat_s > 0 && p->nvls != NULL)
        for (guint gpu = 0; gpu < p->n_gpus; gpu++)
            if (p->nvls[2 * gpu] > 0)
                p->nvls[2 * gpu + 1] = f->nvls_lat_s;
    if (f->intra_bw_Bps == 0 && f->intra_lat_s == 0 && f->inter_bw_Bps == 0 &&
        f->inter_lat_s == 0 && f->fabric_bw_Bps == 0) {
        simpar_net_memo_clear(p->net.memo);
        return;
    }
    g_autoptr(GHashTable) intra = platform_intra_links(p);
    /* route latencies: split evenly over the links of the route between a node's first two
     * GPUs (intra), and over the inter-node links between the first GPUs of nodes 0 and 1 */
    guint intra_hops = 0, inter_hops = 0, second_node = platform_second_node(p);
    if (p->n_gpus > 1 && p->nodes[1] == p->nodes[0])
        intra_hops = platform_count_links(p, 0, 1, intra, TRUE);
    /* a generated fabric's trunks ("spine-...") carry nodes x the port rate, a Clos fabric's
     * uplinks a rack's or a pod's ports (over the oversubscription): they follow the port's new
     * rate in proportion, so that the fabric stays as (non-)blocking as it was */
    double fabric_scale = 0;
    if (second_node < p->n_gpus) {
        inter_hops = platform_count_links(p, 0, second_node, intra, FALSE);
        fabric_scale =
            f->inter_bw_Bps / sg_host_get_route_bandwidth(p->hosts[0], p->hosts[second_node]);
    }
    platform_set_links(intra, TRUE, f->intra_bw_Bps, f->intra_lat_s, intra_hops, 0);
    platform_set_links(intra, FALSE, f->inter_bw_Bps, f->inter_lat_s, inter_hops, fabric_scale);
    if (f->fabric_bw_Bps > 0) /* a generated fabric's trunks, given outright */
        platform_set_links(intra, FALSE, f->fabric_bw_Bps, 0, 0, -1);
    g_hash_table_remove_all(p->routes); /* routes seen before now are stale */
    memset(p->route_memo, 0, PLATFORM_ROUTE_MEMO * sizeof *p->route_memo);
    simpar_net_memo_clear(p->net.memo); /* and so are the collectives' plans */
}

void
simpar_platform_net_figures(const SimparPlatform *p, SimparNetFigures *out)
{
    *out = (SimparNetFigures){0};
    guint second_node = platform_second_node(p);
    if (p->n_gpus > 1 && p->nodes[1] == p->nodes[0]) {
        out->intra_bw_Bps = sg_host_get_route_bandwidth(p->hosts[0], p->hosts[1]);
        out->intra_lat_s = sg_host_get_route_latency(p->hosts[0], p->hosts[1]);
    }
    if (second_node < p->n_gpus) { /* the inter-node links of the route, as calibration sets */
        g_autoptr(GHashTable) intra = platform_intra_links(p);
        g_autoptr(GPtrArray) route = g_ptr_array_new();
        platform_route_links(p, 0, second_node, route);
        out->inter_bw_Bps = G_MAXDOUBLE;
        for (guint i = 0; i < route->len; i++)
            if (!g_hash_table_contains(intra, route->pdata[i])) {
                out->inter_bw_Bps = MIN(out->inter_bw_Bps, sg_link_get_bandwidth(route->pdata[i]));
                out->inter_lat_s += sg_link_get_latency(route->pdata[i]);
            }
        if (out->inter_bw_Bps == G_MAXDOUBLE)
            out->inter_bw_Bps = 0;
    }
    if (p->nvls != NULL && p->nvls[0] > 0)
        out->nvls_lat_s = p->nvls[1];
}
