/* test-cli.c - the simpar binary: bad plans and inputs get one clear message and a non-zero
 * exit; good ones print the summary (text and JSON) and the main job reads a platform.
 *
 * The binary's path comes from SIMPAR_BIN (set by tests/meson.build); the working directory is
 * the source root.
 */
#include "simpar-test.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

typedef struct {
    int status;
    char *out, *err;
} Run;

static Run
cli_run(const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv("SIMPAR_BIN"), args);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    Run r = {0};
    int wait = 0;
    g_assert(
        g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err, &wait, NULL));
    r.status = g_spawn_check_wait_status(wait, NULL) ? 0 : WEXITSTATUS(wait);
    return r;
}

/* Exits non-zero, prints nothing on stdout, and one stderr line containing `want`. */
static void
cli_refuses(const char *args, const char *want)
{
    Run r = cli_run(args);
    gboolean ok = r.status != 0 && strstr(r.err, want) != NULL && r.out[0] == '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    if (!ok)
        printf("\n    simpar %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_TRUE(ok);
    g_free(r.out);
    g_free(r.err);
}

static void
test_grids(void)
{
    cli_refuses("schedule --tp-mode 2d --tp 8", "--tp 8 is not a square");
    cli_refuses("schedule --tp-mode 3d --tp 9", "--tp 9 is not a cube");
    cli_refuses("schedule --tp-mode 3d --tp 16", "--tp 16 is not a cube");
    cli_refuses("schedule --tp-mode 2.5d --tp 12 --depth 2", "--tp 12 is not q*q*d");
    cli_refuses("schedule --tp-mode 2.5d --tp 8", "needs --depth");
    cli_refuses("schedule --tp-mode 2d --tp 4 --depth 2", "--depth applies to --tp-mode 2.5d");
    cli_refuses("schedule --tp-mode 3d --tp 8 --sp", "--sp (sequence parallelism) applies");
    cli_refuses("schedule --tp-mode 5d --tp 8", "--tp-mode 5d: unknown tensor-parallel mode");
    cli_refuses("schedule --tp 0", "--tp 0 is out of range");
    cli_refuses("schedule --tp -4", "--tp -4 is out of range");
    cli_refuses("schedule --tp 100000000", "is out of range");
    cli_refuses("schedule --tp-mode 2d --tp 4 --variant later", "--variant later: valid only");
}

static void
test_divisibility(void)
{
    cli_refuses("schedule --tp-mode 1d --tp 3", "--heads 32 is not divisible by 3");
    cli_refuses("schedule --tp-mode 1d --tp 2 --sp --seq 511", "--seq 511 is not divisible by 2");
    cli_refuses("schedule --tp-mode 2d --tp 4 --hidden 2049 --heads 3",
                "--hidden 2049 is not divisible by 2");
    cli_refuses("schedule --tp-mode 2d --tp 9 --hidden 2304 --heads 36 --ffn 9216 --micro-batch 4",
                "--micro-batch 4 is not divisible");
    cli_refuses("schedule --tp-mode 3d --tp 8 --hidden 2050 --heads 2", "--hidden 2050 is not "
                                                                        "divisible by 4");
    cli_refuses("schedule --tp-mode 3d --tp 8 --micro-batch 6", "--micro-batch 6 is not divisible "
                                                                "by 4");
    cli_refuses("schedule --tp-mode 3d --tp 27 --hidden 2304 --ffn 9216 --heads 32",
                "--heads 32 is not divisible by 3");
    cli_refuses("schedule --tp 4 --hidden 100 --heads 7",
                "--hidden 100 is not divisible by --heads 7");
}

static void
test_values(void)
{
    cli_refuses("schedule --tp 4 --hidden 0", "--hidden 0 is out of range");
    cli_refuses("schedule --tp 4 --seq -8", "--seq -8 is out of range");
    cli_refuses("schedule --tp 4 --micro-batch 1000000000000",
                "--micro-batch 1000000000000 is out");
    cli_refuses("schedule --tp 4 --hidden big", "Cannot parse integer value");
    cli_refuses("schedule --tp 4 --dtype fp8", "dtype 'fp8' is not one of");
    cli_refuses("schedule --tp 4 --frobnicate", "Unknown option --frobnicate");
    cli_refuses("schedule --tp 4 extra", "unexpected argument 'extra'");
    cli_refuses("schedule", "--tp N is required");
    cli_refuses("frobnicate", "unknown command 'frobnicate'");
    cli_refuses("schedule --tp 4 --model gpt5", "--model gpt5: no such preset");
    cli_refuses("schedule --tp 4 --model /nonexistent/m.json", "/nonexistent/m.json");
}

static void
test_topology(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad.xml", NULL);
    g_autofree char *odd = g_build_filename(dir, "odd.xml", NULL);
    g_assert(g_file_set_contents(bad, "<platform><zone>\n</platform>\n", -1, NULL));
    g_assert(
        g_file_set_contents(odd, "<?xml version='1.0'?>\n<platform version=\"4.1\"/>\n", -1, NULL));
    g_autofree char *a1 = g_strdup_printf("--topology %s", bad);
    g_autofree char *a2 = g_strdup_printf("--topology %s", odd);
    cli_refuses(a1, "not well-formed XML");
    cli_refuses(a2, "SimGrid cannot load this platform");
    cli_refuses("--topology /nonexistent/p.xml", "/nonexistent/p.xml");
    cli_refuses("--topology meson.build", "not well-formed XML");
    cli_refuses("", "--topology FILE is required");
    g_remove(bad);
    g_remove(odd);
    g_rmdir(dir);
}

static void
test_main_job(void)
{
    Run r = cli_run("--topology topologies/v100x64.xml");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "topologies/v100x64.xml: 64 GPUs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "3d tensor parallelism, 64 GPUs (q=4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "2d tensor parallelism, 64 GPUs (q=8)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "2.5d tensor parallelism, 64 GPUs (q=4 d=4)"));
    g_free(r.out);
    g_free(r.err);
}

/* JSON parses with json-glib and carries the 1-D numbers: 2 all-reduces of B*h forward. */
static void
test_json(void)
{
    Run r = cli_run("schedule --tp-mode 1d --tp 4 --model tiny --json");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, r.out, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonArray *rows = json_object_get_array_member(o, "collectives");
    CU_ASSERT_EQUAL(json_array_get_length(rows), 2);
    JsonObject *fwd = json_array_get_object_element(rows, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(fwd, "kind"), "all-reduce");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(fwd, "phase"), "forward");
    CU_ASSERT_EQUAL(json_object_get_int_member(fwd, "calls"), 2);
    CU_ASSERT_EQUAL(json_object_get_int_member(fwd, "bytes"), 2 * 8 * 32 * 64 * 4); /* fp32 */
    Run again = cli_run("schedule --tp-mode 1d --tp 4 --model tiny --json");
    CU_ASSERT_STRING_EQUAL(again.out, r.out); /* same input, same output */
    g_free(r.out), g_free(r.err), g_free(again.out), g_free(again.err);
}

static CU_TestInfo cli_tests[] = {
    {"GPU counts a mode cannot use are refused with the valid ones", test_grids},
    {"sizes not divisible by the grid are refused naming flag and divisor", test_divisibility},
    {"zero, negative, absurd and malformed values and unknown flags are refused", test_values},
    {"missing, malformed and unusable platform files are refused", test_topology},
    {"the main job reads v100x64.xml and plans every mode on 64 GPUs", test_main_job},
    {"--json output parses and carries the summary numbers", test_json},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"simpar command line", NULL, NULL, NULL, NULL, cli_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
