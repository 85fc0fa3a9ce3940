/* backend.c - the backend table and the collective-mode names. */
#include "backend.h"

G_DEFINE_QUARK(simpar_backend_error_quark, simpar_backend_error)

static const SimparBackend backends[] = {
    {"simgrid", "SimGrid flow model: contention on shared links (one actor per GPU stream)",
     simpar_backend_simgrid_run, TRUE, 7e-6, 6.5e-9, 4},
    {"analytic", "closed form per collective, dependencies and streams honoured, no contention",
     simpar_backend_analytic_run, FALSE, 0, 0, 0},
};

const char *
simpar_backend_names(void)
{
    return simpar_intern_names(backends, G_N_ELEMENTS(backends), sizeof backends[0]);
}

gboolean
simpar_backend_lookup(const char *name, const SimparBackend **out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(backends); i++)
        if (g_strcmp0(name, backends[i].name) == 0) {
            *out = &backends[i];
            return TRUE;
        }
    g_set_error(error, SIMPAR_BACKEND_ERROR, SIMPAR_BACKEND_ERROR_OPTION,
                "--backend %s: unknown (valid: %s)", name, simpar_backend_names());
    return FALSE;
}

gboolean
simpar_coll_mode_parse(const char *name, SimparCollMode *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (g_strcmp0(name, "exact") == 0 || g_strcmp0(name, "fused") == 0) {
        *out = g_str_equal(name, "exact") ? SIMPAR_COLL_MODE_EXACT : SIMPAR_COLL_MODE_FUSED;
        return TRUE;
    }
    g_set_error(error, SIMPAR_BACKEND_ERROR, SIMPAR_BACKEND_ERROR_OPTION,
                "--collectives %s: unknown (valid: exact (every round of every collective on "
                "SimGrid), fused (one transfer per peer))",
                name);
    return FALSE;
}

static const char *const nccl_proto_names[] = {"none", "ll", "ll128", "simple", "auto"};
G_STATIC_ASSERT(G_N_ELEMENTS(nccl_proto_names) == SIMPAR_PROTO_AUTO + 1);

const char *
simpar_nccl_proto_name(SimparProto proto)
{
    g_return_val_if_fail(proto <= SIMPAR_PROTO_AUTO, "?");
    return nccl_proto_names[proto];
}

gboolean
simpar_nccl_proto_parse(const char *name, SimparProto *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(nccl_proto_names); i++) {
        if (g_strcmp0(name, nccl_proto_names[i]) == 0) {
            *out = (SimparProto) i;
            return TRUE;
        }
    }
    g_set_error(error, SIMPAR_BACKEND_ERROR, SIMPAR_BACKEND_ERROR_OPTION,
                "--nccl-proto %s: unknown (valid: auto, none, ll, ll128, simple)", name);
    return FALSE;
}
