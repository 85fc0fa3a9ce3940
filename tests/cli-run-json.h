/* cli-run-json.h - run the simpar binary from a CUnit test where it must succeed, and read its
 * stdout as JSON (cli-run.h runs it). */
#ifndef SIMPAR_CLI_RUN_JSON_H
#define SIMPAR_CLI_RUN_JSON_H
#include "cli-run.h"
#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>

/* Runs simpar `args`, which must succeed; its stdout parsed as JSON (NULL when `json` is FALSE)
 * (transfer full). */
static inline JsonNode *
simpar_cli_run_ok(const char *args, gboolean json)
{
    SimparCliRun r = simpar_cli_run(args);
    if (r.status != 0)
        printf("\n    simpar %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    JsonNode *root = NULL;
    if (json) {
        g_autoptr(JsonParser) p = json_parser_new();
        CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, r.out, -1, NULL));
        root = json_node_copy(json_parser_get_root(p));
    }
    simpar_cli_run_clear(&r);
    return root;
}

#endif /* SIMPAR_CLI_RUN_JSON_H */
