/* cmd-topology.c - `simpar topology`: write a SimGrid platform for N nodes of a preset. */
#include "cli.h"
#include "topology.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TOPOLOGY_UNSET G_MININT64

/* "v100-ac922, dgx-a100, ..." */
static char *
topology_preset_names(void)
{
    guint n;
    const SimparTopologyPreset *p = simpar_topology_presets(&n);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? ", " : "", p[i].name);
    return g_string_free(s, FALSE);
}

static void
topology_print_list(void)
{
    guint n;
    const SimparTopologyPreset *p = simpar_topology_presets(&n);
    for (guint i = 0; i < n; i++)
        printf("%-12s %2u GPUs/%s  %s\n", p[i].name, p[i].gpus_per_node,
               p[i].racks ? "rack" : "node", p[i].description);
}

static const SimparTopologyPreset *
topology_check_preset(const char *name, GError **error)
{
    g_autofree char *valid = topology_preset_names();
    if (name == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: --preset NAME is required (valid: %s)", valid);
        return NULL;
    }
    const SimparTopologyPreset *p = simpar_topology_lookup(name);
    if (p == NULL)
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: --preset %s: unknown preset (valid: %s; see --list)", name,
                    valid);
    return p;
}

/* The most nodes (racks) of `node_gpus` GPUs: the node and the GPU limits. */
static gint64
topology_max_nodes(guint node_gpus)
{
    return MIN(SIMPAR_TOPOLOGY_MAX_NODES, SIMPAR_TOPOLOGY_MAX_GPUS / node_gpus);
}

/* The count of nodes of `node_gpus` GPUs: --nodes, or --racks for a rack-scale preset (whose
 * node is a rack). */
static gboolean
topology_check_count(const SimparTopologyPreset *p, guint node_gpus, gint64 nodes, gint64 racks,
                     gint64 *out, GError **error)
{
    const char *flag = p->racks ? "--racks" : "--nodes";
    const char *what = p->racks ? "racks" : "nodes";
    gint64 most = topology_max_nodes(node_gpus);
    if (p->racks ? nodes != TOPOLOGY_UNSET : racks != TOPOLOGY_UNSET) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: --preset %s counts %s: give %s N, not %s (%s)", p->name, what,
                    flag, p->racks ? "--nodes" : "--racks",
                    p->racks ? "each rack is one NVLink domain of its GPUs"
                             : "--racks is for rack-scale presets such as gb200-nvl72");
        return FALSE;
    }
    *out = p->racks ? racks : nodes;
    if (*out == TOPOLOGY_UNSET) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: %s N is required (1 to %" G_GINT64_FORMAT ")", flag, most);
        return FALSE;
    }
    if (*out < 1 || *out > most) {
        g_autofree char *why = most < SIMPAR_TOPOLOGY_MAX_NODES
                                   ? g_strdup_printf(": %s of %u GPUs, at most %d GPUs in a file",
                                                     what, node_gpus, SIMPAR_TOPOLOGY_MAX_GPUS)
                                   : g_strdup("");
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: %s %" G_GINT64_FORMAT
                    " is out of range (1 to %" G_GINT64_FORMAT ")%s",
                    flag, *out, most, why);
        return FALSE;
    }
    return TRUE;
}

static gboolean
topology_check_args(const char *output, GError **error)
{
    if (output == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: -o FILE is required (where to write the platform XML)");
        return FALSE;
    }
    return simpar_output_check("-o", output, "the platform XML file", error);
}

/* The fabric options given (unset: TOPOLOGY_UNSET, or NULL for the rates). */
typedef struct {
    gint64 rack_nodes, pod_gpus;
    const char *oversubscription, *nic_gbps;
} TopologyFabricArgs;

/* A whole-number option's value in 0 .. G_MAXUINT; a value beyond is kept out of range for the
 * checks that name it. */
static guint
topology_count(const char *flag, gint64 v, GError **error)
{
    if (v >= 0 && v <= G_MAXUINT)
        return (guint) v;
    g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                "simpar topology: %s %" G_GINT64_FORMAT " is out of range (a positive count)", flag,
                v);
    return 0;
}

/* A rate option's finite value; FALSE with an error naming the flag otherwise. */
static gboolean
topology_rate(const char *flag, const char *text, double *out, GError **error)
{
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar topology: %s %s is not a number (give a finite decimal, such as 7 or "
                    "2.5)",
                    flag, text);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* --rack-gpus G over the preset's racks (unset: the preset's). */
static gboolean
topology_rack_gpus(const SimparTopologyPreset *p, gint64 rack_gpus, SimparFabricSpec *out,
                   GError **error)
{
    *out = p->fabric;
    if (rack_gpus == TOPOLOGY_UNSET)
        return TRUE;
    g_autofree char *why = simpar_topology_rack_gpus_invalid(p, rack_gpus);
    if (why != NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, "simpar topology: %s", why);
        return FALSE;
    }
    out->rack_gpus = (guint) rack_gpus;
    return TRUE;
}

/* The preset's Clos fabric with the options given over it (out: its racks' GPUs already). */
static gboolean
topology_fabric(const SimparTopologyPreset *p, const TopologyFabricArgs *a, SimparFabricSpec *out,
                GError **error)
{
    gboolean given = a->rack_nodes != TOPOLOGY_UNSET || a->pod_gpus != TOPOLOGY_UNSET ||
                     a->oversubscription != NULL || a->nic_gbps != NULL;
    GError *bad = NULL;
    if (a->rack_nodes != TOPOLOGY_UNSET)
        out->rack_nodes = topology_count("--rack-nodes", a->rack_nodes, &bad);
    if (bad == NULL && a->pod_gpus != TOPOLOGY_UNSET)
        out->pod_gpus = topology_count("--pod-gpus", a->pod_gpus, &bad);
    if (bad == NULL && a->oversubscription != NULL)
        topology_rate("--oversubscription", a->oversubscription, &out->oversubscription, &bad);
    if (bad == NULL && a->nic_gbps != NULL)
        topology_rate("--nic-gbps", a->nic_gbps, &out->nic_gbps, &bad);
    if (bad != NULL) {
        g_propagate_error(error, bad);
        return FALSE;
    }
    g_autofree char *why = given ? simpar_topology_fabric_invalid(p, out) : NULL;
    if (why != NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, "simpar topology: %s", why);
        return FALSE;
    }
    return TRUE;
}

static gboolean
topology_write(const SimparTopologyPreset *p, guint nodes, const SimparFabricSpec *fabric,
               const char *output, GError **error)
{
    g_autofree char *xml = simpar_topology_has_fabric(p) || p->racks
                               ? simpar_topology_generate_fabric(p, nodes, fabric)
                               : simpar_topology_generate(p, nodes);
    return simpar_output_write("-o", output, xml, strlen(xml), error);
}

gboolean
simpar_cmd_topology(int argc, char **argv, GError **error)
{
    g_autofree char *preset = NULL, *output = NULL;
    gint64 nodes = TOPOLOGY_UNSET, racks = TOPOLOGY_UNSET, rack_gpus = TOPOLOGY_UNSET, count = 0;
    gboolean list = FALSE;
    g_autofree char *over = NULL, *nic = NULL;
    TopologyFabricArgs fa = {TOPOLOGY_UNSET, TOPOLOGY_UNSET, NULL, NULL};
    const GOptionEntry entries[] = {
        {"preset", 'p', 0, G_OPTION_ARG_STRING, &preset, "Node design (see --list)", "NAME"},
        {"nodes", 'n', 0, G_OPTION_ARG_INT64, &nodes,
         "Number of nodes (1 to 16384, at most 262144 GPUs)", "N"},
        {"racks", 'r', 0, G_OPTION_ARG_INT64, &racks,
         "Rack-scale presets (gb200-nvl72): number of racks, each one NVLink domain", "N"},
        {"rack-gpus", 0, 0, G_OPTION_ARG_INT64, &rack_gpus,
         "Rack-scale presets: GPUs per rack, whole compute trays of 4 (gb200-nvl72: 72; 64 = 16 "
         "trays, the others spares)",
         "G"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Platform XML file to write", "FILE"},
        {"list", 0, 0, G_OPTION_ARG_NONE, &list, "Print the presets and exit", NULL},
        {"rack-nodes", 0, 0, G_OPTION_ARG_INT64, &fa.rack_nodes,
         "Clos presets: servers behind one top-of-rack switch (clos-h100: 2)", "N"},
        {"pod-gpus", 0, 0, G_OPTION_ARG_INT64, &fa.pod_gpus,
         "Clos presets: GPUs per pod of full bisection, whole racks (clos-h100: 3072)", "N"},
        {"oversubscription", 0, 0, G_OPTION_ARG_STRING, &over,
         "Clos presets: a pod's GPU ports over its uplink to the aggregation tier (clos-h100: 7)",
         "X"},
        {"nic-gbps", 0, 0, G_OPTION_ARG_STRING, &nic,
         "Clos presets: line rate of each GPU's NIC port in Gb/s, 12 GB/s reached per 100 "
         "(clos-h100: 400)",
         "R"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- write a SimGrid cluster platform");
    g_option_context_set_summary(ctx, "Writes a SimGrid platform (DTD 4.1) of N nodes of a preset: "
                                      "one host per GPU, named node<N>-gpu<G>.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!simpar_cli_parse(ctx, "simpar topology", &argc, &argv, error))
        return FALSE;
    if (list) {
        topology_print_list();
        return TRUE;
    }
    const SimparTopologyPreset *p = topology_check_preset(preset, error);
    SimparFabricSpec fabric;
    fa.oversubscription = over;
    fa.nic_gbps = nic;
    return p != NULL && topology_rack_gpus(p, rack_gpus, &fabric, error) &&
           topology_check_count(p, simpar_topology_node_gpus(p, &fabric), nodes, racks, &count,
                                error) &&
           topology_check_args(output, error) && topology_fabric(p, &fa, &fabric, error) &&
           topology_write(p, (guint) count, &fabric, output, error);
}
