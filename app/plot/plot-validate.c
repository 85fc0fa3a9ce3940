/* plot-validate.c - predicted against measured busy time per op class (plots/validate.gp), from
 * one `simpar validate --json` object; `simpar validate --plot` and `simpar plot validate` both
 * come here.
 *
 *   .dat block 0: "class" measured_s predicted_s      one line per class (op kind, collective)
 *   .dat block 1: "step" measured_s predicted_s
 *
 * Points that log axes cannot show (a zero time) are left out.
 */
#include "plot-private.h"
#include <math.h>

static gboolean
validate_plot_check(JsonObject *o, const char *input, GError **error)
{
    static const char *const objects[] = {"measured", "predicted"};
    JsonNode *classes = json_object_get_member(o, "classes");
    gboolean ok = classes != NULL && JSON_NODE_HOLDS_ARRAY(classes);
    for (guint i = 0; ok && i < G_N_ELEMENTS(objects); i++) {
        JsonNode *n = json_object_get_member(o, objects[i]);
        ok = n != NULL && JSON_NODE_HOLDS_OBJECT(n);
    }
    for (guint i = 0; ok && i < json_array_get_length(json_node_get_array(classes)); i++)
        ok = JSON_NODE_HOLDS_OBJECT(json_array_get_element(json_node_get_array(classes), i)) &&
             simpar_plot_json_string(json_array_get_object_element(json_node_get_array(classes), i),
                                     "class") != NULL;
    if (!ok)
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: not a simpar validate --json object (it needs \"classes\", an array of "
                    "objects with \"class\", and \"measured\" and \"predicted\")",
                    input);
    return ok;
}

static void
validate_plot_data(JsonObject *o, GString *out)
{
    g_string_append(out, "# class measured_s predicted_s\n");
    JsonArray *classes = json_object_get_array_member(o, "classes");
    for (guint i = 0; i < json_array_get_length(classes); i++) {
        JsonObject *c = json_array_get_object_element(classes, i);
        double p = simpar_plot_json_number(c, "predicted_s");
        double m = simpar_plot_json_number(c, "measured_s");
        if (p > 0 && m > 0) {
            simpar_plot_append_label(out, simpar_plot_json_string(c, "class"),
                                     SIMPAR_PLOT_LABEL_MAX);
            g_string_append_printf(out, " %.9e %.9e\n", m, p);
        }
    }
    g_string_append_printf(
        out, "\n\n\"step\" %.9e %.9e\n",
        simpar_plot_json_number(json_object_get_object_member(o, "measured"), "step_time_s"),
        simpar_plot_json_number(json_object_get_object_member(o, "predicted"), "step_time_s"));
}

/* "job, host executor: predicted (simgrid on topologies/host.xml) against measured\nMAPE ..." */
static char *
validate_plot_title(JsonObject *o)
{
    const char *keys[] = {"job", "executor", "backend", "topology"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
        keys[i] = simpar_plot_json_string(o, keys[i]);
        keys[i] = keys[i] != NULL ? keys[i] : "?";
    }
    double mape = simpar_plot_json_number(o, "mape");
    double step = simpar_plot_json_number(o, "step_error");
    g_autofree char *m = isfinite(mape) ? g_strdup_printf("%.1f%%", 100 * mape) : g_strdup("-");
    g_autofree char *s = isfinite(step) ? g_strdup_printf("%+.1f%%", 100 * step) : g_strdup("-");
    return g_strdup_printf("%s, %s executor: predicted (%s on %s) against measured\n"
                           "MAPE %s, step error %s",
                           keys[0], keys[1], keys[2], keys[3], m, s); /* (transfer full) */
}

static void
validate_plot_fill(JsonObject *o, SimparPlotOut *out)
{
    validate_plot_data(o, out->data);
    out->title = validate_plot_title(o);
}

gboolean
simpar_plot_validate_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                          GError **error)
{
    (void) opt;
    g_autoptr(JsonNode) root = simpar_plot_load_json(input, error);
    if (root == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: not a simpar validate --json object (a JSON array: predict --json? "
                    "try the breakdown kind)",
                    input);
        return FALSE;
    }
    if (!validate_plot_check(json_node_get_object(root), input, error))
        return FALSE;
    validate_plot_fill(json_node_get_object(root), out);
    return TRUE;
}

gboolean
simpar_plot_validate(JsonObject *result, const char *title, const char *output, GError **error)
{
    g_return_val_if_fail(result != NULL && output != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SimparPlotOut out = {g_string_new(NULL), g_string_new(NULL), NULL};
    validate_plot_fill(result, &out);
    simpar_plot_var_string(&out, "title_text", title != NULL ? title : out.title);
    gboolean ok = simpar_plot_run("validate.gp", out.data->str, out.vars->str, output, error);
    simpar_plot_out_clear(&out);
    return ok;
}
