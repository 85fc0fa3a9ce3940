/* test-bad-input.c - the bad-input matrix: model files, topology files, calibration files,
 * measured runs, sweep specs and the command line. Each case writes its files into a fresh
 * folder, runs the simpar binary (SIMPAR_BIN) and asserts the exit status, an empty stdout and
 * one stderr line holding every wanted piece: the file (or flag), the key or line where there
 * is one, the value, and what would be valid. A SimGrid parser abort (SimGrid ends the process
 * on some platform errors) must come back as that one line too, from predict and from sweep.
 *
 * "@" in the arguments, the files' contents and the wanted pieces stands for the case's folder;
 * "LINK" as a file's content makes it a symbolic link to @/target; "VICTIM" a symbolic link to
 * "@.victim", a file outside the folder that every case must leave as it was; "FIFO" a named
 * pipe; "NODE" a device node (mknod, as /dev/null; the case is skipped where mknod is not
 * allowed); "DEEP" as a file's content for 100,000 nested arrays; "RUN" in a file's content for
 * a measured run that simpar-exec (SIMPAR_EXEC_BIN) wrote, edited by `edit` (a sed-like
 * "old|new" substitution of its first occurrence). `more` names more files and their contents,
 * in pairs. Arguments that begin with "EXEC " run simpar-exec instead of simpar.
 */
#include "cli-run.h"
#include "simpar-test.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define V100 "topologies/v100x64.xml"
#define HOST "topologies/host.xml"
#define XML_HEAD                                                                                   \
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"      \
    "<platform version=\"4.1\">\n<zone id=\"w\" routing=\"Full\">\n"
#define XML_TAIL "</zone>\n</platform>\n"
/* XML_HEAD with a zone of another routing */
#define XML_ZONE(routing)                                                                          \
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"      \
    "<platform version=\"4.1\">\n<zone id=\"w\" routing=\"" routing "\">\n"
/* A platform whose line 4 is `top` (a top-level element before the zone), line 5 its zone, then
 * two GPUs (lines 6, 7) and the link `link` between them (line 8). */
#define XML_TOP(top, link)                                                                         \
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"      \
    "<platform version=\"4.1\">\n" top "\n<zone id=\"w\" routing=\"Full\">\n" GPU(0, 0) GPU(       \
        1,                                                                                         \
        0) "<link id=\"l\" bandwidth=\"10GBps\" latency=\"1us\"" link "/>\n"                       \
           "<route src=\"node0-gpu0\" dst=\"node1-gpu0\"><link_ctn id=\"l\"/></route>\n" XML_TAIL
#define GPU_PROPS                                                                                  \
    "<prop id=\"peak_fp32_flops\" value=\"15e12\"/><prop id=\"mem_bandwidth_Bps\" "                \
    "value=\"900e9\"/><prop id=\"mem_bytes\" value=\"17179869184\"/>"
/* An nccl-tests header: all_reduce_perf on 8 ranks of one host (lines 1-3). */
#define NCCL_RANKS                                                                                 \
    "# Collective test starting: all_reduce_perf\n#  Rank 0 Group 0 Pid 1 on h device 0\n#  Rank " \
    "1 Group 0 Pid 1 on h device 1\n#  Rank 2 Group 0 Pid 1 on h device 2\n#  Rank 3 Group 0 "     \
    "Pid 1 on h device 3\n#  Rank 4 Group 0 Pid 1 on h device 4\n#  Rank 5 Group 0 Pid 1 on h "    \
    "device 5\n#  Rank 6 Group 0 Pid 1 on h device 6\n#  Rank 7 Group 0 Pid 1 on h device 7\n"
#define GPU(n, g) "<host id=\"node" #n "-gpu" #g "\" speed=\"15Tf\">" GPU_PROPS "</host>\n"

typedef struct {
    const char *category;
    const char *file;    /* written into the case's folder as "f" (NULL: none) */
    const char *content; /* of the file; "RUN" = simpar-exec's run edited by `edit` */
    const char *edit;
    const char *args;
    int status;
    const char *want[4]; /* every piece must be in the message */
} BadCase;

#define BAD_MORE 8

/* A case with more files in its folder: name, content (as file and content), ... */
typedef struct {
    BadCase c;
    const char *more[BAD_MORE];
} BadFilesCase;

/* a multi-head latent attention for the tiny preset (h = 64, a = 4) */
#define MLA_TINY                                                                                   \
    "--kv-lora-rank 8 --q-lora-rank 16 --qk-head-dim 8 --qk-pos-emb-head-dim 4 --v-head-dim 8"

static const BadCase cases[] = {
    /* ---- model files: schedule --model FILE */
    {"model",
     "m.json",
     "{\"hidden\": 1024, \"heads\": 16",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json:1:", "Parse error"}},
    /* what JSON-GLib lets through: nesting that overflows its recursive parser, a member
     * given twice (it keeps the last), a second value after the first */
    {"model",
     "m.json",
     "DEEP",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json:1:", "nested deeper than 128 levels"}},
    {"model",
     "m.json",
     "{\"hidden\": 1024,\n \"hidden\": 2048}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json:2:", "member \"hidden\" is given twice"}},
    {"model",
     "m.json",
     "{\"hidden\": 1024} {\"heads\": 8}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json:1:", "more after the top value"}},
    {"calibration",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --calibration /dev/zero",
     1,
     {"/dev/zero", "larger than 16 MiB"}},
    {"calibration",
     "c.json",
     "{\"gemm_eff_max\": 0.5, \"gemm_eff_max\": 0.9}",
     NULL,
     "--topology " V100 " --model tiny --calibration @/c.json",
     1,
     {"@/c.json:1:", "member \"gemm_eff_max\" is given twice"}},
    /* every JSON file given as one object is read by one loader, with one message */
    {"calibration",
     "c.json",
     "[0.5]",
     NULL,
     "--topology " V100 " --model tiny --calibration @/c.json",
     1,
     {"@/c.json: the file must hold one JSON object"}},
    {"measured",
     "r.json",
     "DEEP",
     NULL,
     "validate --measured @/r.json --topology " V100,
     1,
     {"--measured @/r.json:1:", "nested deeper"}},
    {"trace",
     "t.json",
     "DEEP",
     NULL,
     "plot timeline @/t.json -o @/t.png",
     1,
     {"@/t.json:1:", "nested deeper"}},
    {"topology",
     NULL,
     NULL,
     NULL,
     "--topology /dev/zero --model tiny",
     1,
     {"--topology /dev/zero", "not a regular file"}},
    {"model",
     "m.json",
     "{\"hidden\": \"big\"}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"hidden\" must be an integer"}},
    {"model",
     "m.json",
     "{\"hidden\": 1024, \"colour\": 3}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "unknown key \"colour\"", "(valid: name, base, hidden, heads"}},
    {"model",
     "m.json",
     "{\"kv_heads\": 0}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"kv_heads\" 0 is out of range", "between 1 and \"heads\""}},
    {"model",
     "m.json",
     "{\"heads\": 4, \"kv_heads\": 3}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"heads\" 4 is not divisible by \"kv_heads\" 3"}},
    {"model",
     "m.json",
     "{\"mlp\": \"relu\"}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"mlp\"", "not one of gelu, swiglu"}},
    {"model",
     "m.json",
     "{\"norm\": 2}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"norm\" must be a string"}},
    {"model",
     "m.json",
     "{\"hidden\": -4}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"hidden\" -4 is out of range", "between 1 and 16777216"}},
    {"model",
     "m.json",
     "{\"hidden\": 1000000000}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"hidden\" 1000000000 is out of range", "between 1 and 16777216"}},
    {"model",
     "m.json",
     "[1, 2]",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "must hold one JSON object"}},
    {"model",
     "m.json",
     "",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "must hold one JSON object"}},
    {"model",
     "m.json",
     "\x01\xff\xfe garbage",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "UTF-8"}},
    {"model",
     "m.json",
     "{\"base\": \"gpt9\"}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"base\"", "gpt9", "valid: tiny, paper-3d"}},
    {"model",
     "m.json",
     "{\"dtype\": \"fp7\"}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"dtype\"", "'fp7'", "fp16, bf16, fp32, fp64"}},
    {"model",
     "m.json",
     "{\"hidden\": 1000, \"heads\": 16}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"hidden\" 1000 is not divisible by \"heads\" 16"}},
    {"model",
     "m.json",
     "{\"hidden\": 64.5}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"hidden\" must be an integer"}},
    {"model",
     "m.json",
     "{\"dropout\": 0.1}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"dropout\" must be true or false"}},
    {"model", NULL, NULL, NULL, "schedule --tp 4 --model @/none.json", 1, {"@/none.json"}},

    /* ---- topology files: predict --topology FILE */
    /* host names that look like a GPU's but are not node<N>-gpu<G> exactly: an alias of
     * another GPU, a sign, a number past 32 bits, a blank */
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(00, 0) XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "host \"node00-gpu0\" is not a GPU's name", "node<N>-gpu<G>"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(-1, 0) XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "host \"node-1-gpu0\" is not a GPU's name"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(4294967296, 0) XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "host \"node4294967296-gpu0\""}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0 \" speed=\"15Tf\">" GPU_PROPS "</host>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "host \"node0-gpu0 \" is not a GPU's name"}},
    /* outputs are written beside and renamed over their path: never over a link or a device
     * (as root, /dev/null became a regular file), never through a link for a journal, never
     * a name a sweep's journal takes */
    {"output",
     "t.json",
     "LINK",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --trace @/t.json",
     2,
     {"--trace '@/t.json'", "a symbolic link"}},
    {"output",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --trace /dev/null",
     2,
     {"--trace '/dev/null'", "not a regular file"}},
    {"output",
     NULL,
     NULL,
     NULL,
     "topology --preset dgx-a100 --nodes 2 -o /dev/null",
     2,
     {"-o '/dev/null'", "not a regular file"}},
    {"command line",
     NULL,
     NULL,
     NULL,
     "sweep --preset dgx-h100 --rack-gpus 64 --gpus 128 --model tiny -o @/s.csv",
     2,
     {"--rack-gpus is for a rack-scale --preset such as gb200-nvl72"}},
    {"command line",
     NULL,
     NULL,
     NULL,
     "sweep --preset gb200-nvl72 --rack-gpus 62 --gpus 128 --model tiny -o @/s.csv",
     2,
     {"--rack-gpus 62 is not a rack of preset gb200-nvl72", "multiple of its compute tray's 4"}},
    {"output",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --tp-mode 1d --model tiny -o @/s.csv.part",
     2,
     {"-o '@/s.csv.part'", "journal"}},
    {"output",
     "s.csv.part",
     "LINK",
     NULL,
     "sweep --topology " V100 " --tp-mode 1d --model tiny -o @/s.csv",
     1,
     {"@/s.csv.part", "cannot open the journal"}},
    /* a step of millions of micro-batches: refused before it is built (it grew a worker to
     * 24 GB) */
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --pp 2 --tp 4 --dp 8 --global-batch 16777216 "
     "--micro-batch 1",
     2,
     {"--global-batch 16777216", "2097152 micro-batches per replica", "at most 4096"}},
    /* a batch the pipeline schedule refuses, with the split given whole: refused before the
     * platform loads (a 32,768-GPU platform took a minute to load before saying so) */
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology @/none.xml --model tiny --tp-mode 1d --pp 4 --tp 4 --dp 4 --schedule "
     "interleaved --virtual-stages 2 --micro-batch 1 --global-batch 8",
     2,
     {"--schedule interleaved", "multiple of --pp 4", "got 2"}},
    /* and a plan its mode refuses, with the mode and --tp given (a 16,384-GPU platform took
     * 9 s to load first) */
    /* expert parallelism folded onto the stage's T x C x D GPUs */
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100
     " --gpus 12 --model mixtral-8x7b --dtype fp16 --layers 2 --tp-mode 1d --tp 1 "
     "--dp 12 "
     "--ep 8",
     2,
     {"--ep 8 x --etp 1 = 8", "does not divide --tp x --cp x --dp = 12",
      "valid: EP x ETP a divisor of 12"}},
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100
     " --gpus 12 --model mixtral-8x7b --dtype fp16 --layers 2 --tp-mode 1d --tp 1 "
     "--dp 12 "
     "--ep 2 --etp 3 --moe-ffn 1000",
     2,
     {"--etp 3 does not divide --moe-ffn 1000", "valid: a divisor of 1000"}},
    /* experts beside 2-D and 3-D attention: each GPU's B s / T tokens must be whole */
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --gpus 16 --model mixtral-8x7b --dtype fp16 --layers 2 --tp-mode 2d "
     "--tp 4 --dp 4 --micro-batch 2 --global-batch 8 --seq 4095",
     2,
     {"--tp 4 with a mixture of experts in --tp-mode 2d", "8190 is not a multiple of 4",
      "valid: --micro-batch and --seq making it one"}},
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --gpus 16 --model mixtral-8x7b --dtype fp16 --layers 2 --tp-mode 3d "
     "--tp 8 --dp 2 --micro-batch 4 --global-batch 8 --seq 1023",
     2,
     {"--tp 8 with a mixture of experts in --tp-mode 3d", "4092 is not a multiple of 8"}},
    /* 1-D without sequence parallelism keeps its refusal: every GPU holds every token */
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --gpus 16 --model mixtral-8x7b --dtype fp16 --layers 2 --tp-mode 1d "
     "--tp 4 --dp 4 --micro-batch 2 --global-batch 8",
     2,
     {"--ep 1 with --tp 4 needs --sp", "each GPU's own tokens"}},
    {"command line",
     NULL,
     NULL,
     NULL,
     "--topology @/none.xml --model tiny --tp-mode 3d --tp 64 --micro-batch 8",
     2,
     {"--micro-batch 8 is not divisible by 16", "q^2 = 16 GPUs"}},
    /* figures that make times infinite or outlast the deadlock watch: refused where they
     * enter (a worker wrote "inf" into its report, and the parent aborted) */
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(
         1,
         0) "<link id=\"l\" bandwidth=\"1e-300Bps\" latency=\"1us\"/>\n"
            "<route src=\"node0-gpu0\" dst=\"node1-gpu0\"><link_ctn id=\"l\"/></route>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "link l has bandwidth 1e-300 B/s", "from 1e+06"}},
    {"calibration",
     "c.json",
     "{\"peak_fp32_flops\": 4e-320}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"peak_fp32_flops\"", "out of range", "from 1e+06"}},
    {"calibration",
     "c.json",
     "{\"inter_node_bandwidth_Bps\": 1}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"inter_node_bandwidth_Bps\" must be a number from 1e+06"}},
    /* two GPUs and no route between them: refused naming both, not an assertion in a worker
     * reported as a platform SimGrid cannot use */
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0)
         GPU(1, 0) "<link id=\"l\" bandwidth=\"10GBps\" latency=\"1us\"/>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d",
     1,
     {"--topology @/t.xml", "no route from node0-gpu0 to node1-gpu0", "needs a route"}},
    {"topology",
     "t.xml",
     "<platform><zone>\n</platform>\n",
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "not well-formed XML", "line 2"}},
    {"topology",
     "t.xml",
     "",
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "not well-formed XML", "empty"}},
    {"topology",
     "t.xml",
     "\x01\x02 binary",
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "not well-formed XML", "line 1"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(0, 0) XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "SimGrid cannot use this platform",
      "Refusing to create a second host named 'node0-gpu0'"}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"fast\"/>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "SimGrid cannot use this platform", "t.xml:5", "fast"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(0, 1) "<link id=\"l\" bandwidth=\"-5GBps\" latency=\"1us\"/>\n"
                                  "<route src=\"node0-gpu0\" dst=\"node0-gpu1\"><link_ctn "
                                  "id=\"l\"/></route>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "link l has bandwidth -5e+09 B/s",
      "a bandwidth from 1e+06 to 1e+16 B/s"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(0, 1) "<route src=\"node0-gpu0\" dst=\"node0-gpu1\"><link_ctn "
                                  "id=\"nolink\"/></route>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "SimGrid cannot use this platform", "nolink"}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"1Gf\"/>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "node0-gpu0 lacks the property", "e.g. <prop id="}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"1Gf\">" GPU_PROPS
              "<prop id=\"nvls_efficiency\" value=\"1.5\"/><prop id=\"nvls_latency_s\" "
              "value=\"1e-4\"/></host>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "node0-gpu0 has nvls_efficiency 1.5", "(0, 1]"}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"1Gf\">" GPU_PROPS
              "<prop id=\"nvls_efficiency\" value=\"0.85\"/></host>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "node0-gpu0 lacks the property nvls_latency_s", "seconds"}},
    {"topology",
     "t.xml",
     XML_HEAD "<host id=\"gpu0\" speed=\"1Gf\"/>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "no host is named node<N>-gpu<G>"}},
    {"topology", NULL, NULL, NULL, "--topology @/none.xml --model tiny", 1, {"@/none.xml"}},
    {"topology", NULL, NULL, NULL, "--topology @ --model tiny", 1, {"@", "directory"}},
    {"topology",
     "t.xml",
     XML_HEAD GPU(0, 0) GPU(0, 0) XML_TAIL,
     NULL,
     "sweep --topology @/t.xml --model tiny -q -o @/s.csv",
     1,
     {"--topology @/t.xml", "Refusing to create a second host named 'node0-gpu0'"}},
    {"topology",
     "t.xml",
     "<platform><zone>\n</platform>\n",
     NULL,
     "sweep --topology @/t.xml --model tiny -q -o @/s.csv",
     1,
     {"--topology @/t.xml", "not well-formed XML"}},

    /* ---- calibration files: predict --calibration FILE */
    {"calibration",
     "c.json",
     "{\"gemm_eff_max\": 2.5}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"gemm_eff_max\" = 2.5 is out of range", "from 0.001 to 1"}},
    {"calibration",
     "c.json",
     "{\"gemm_eff_max\": \"x\"}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"gemm_eff_max\" must be a number"}},
    {"calibration",
     "c.json",
     "{\"links\": {}}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "unknown key \"links\"", "(valid: gemm_eff_max"}},
    {"calibration",
     "c.json",
     "{\"gemm_eff_max\": 0.5,",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json:1:", "Parse error"}},
    {"calibration",
     "c.json",
     "\xff\xfe",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "UTF-8"}},
    {"calibration",
     "c.json",
     "{\"intra_node_bandwidth_Bps\": -1}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"intra_node_bandwidth_Bps\" must be a number from 1e+06"}},
    {"calibration",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/none.json",
     1,
     {"@/none.json"}},

    /* ---- nccl-tests logs: calibrate --nccl-tests LOG */
    {"nccl-tests",
     "l.txt",
     "# Collective test starting: all_reduce_perf\n   1024 256 float sum -1 10.00 0.10 0.18 0 "
     "10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " V100 " -o @/c.json",
     1,
     {"--nccl-tests @/l.txt", "it lacks two \"#  Rank R ... on HOST\" lines or more"}},
    {"nccl-tests",
     "l.txt",
     "# Collective test starting: all_to_all_perf\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " V100 " -o @/c.json",
     1,
     {"--nccl-tests @/l.txt", "line 1 names the test \"all_to_all_perf\"", "alltoall_perf"}},
    {"nccl-tests",
     "l.txt",
     NCCL_RANKS "   1024 256 float sum -1 10.00 9.00 0.18 0 10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " V100 " -o @/c.json",
     1,
     {"--nccl-tests @/l.txt", "line 10 is not a row", "time and algbw must agree"}},
    {"nccl-tests",
     "l.txt",
     NCCL_RANKS "   1024 256 float sum -1 10.00 0.10 0.18 0 10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " V100 " -o @/c.json",
     2,
     {"--nccl-tests @/l.txt", "8 ranks on 1 node,", "8 GPUs per node"}},
    {"nccl-tests",
     "l.txt",
     NCCL_RANKS "   1024 256 float sum -1 10.00 0.10 0.18 0 10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --measured @/l.txt -o @/c.json",
     2,
     {"--measured BENCH.json or --nccl-tests LOG (one of them)"}},
    {"nccl-tests",
     "l.txt",
     NCCL_RANKS "   1024 256 float sum -1 10.00 0.10 0.18 0 10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt -o @/c.json",
     2,
     {"--topology FILE", "are required"}},

    /* ---- measured runs: validate --measured RUN.json */
    {"measured",
     "r.json",
     "{\"format\": \"simpar-run\",",
     NULL,
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "Parse error"}},
    {"measured",
     "r.json",
     "[]",
     NULL,
     "validate --measured @/r.json --topology " HOST,
     1,
     {"--measured @/r.json: the file must hold one JSON object"}},
    {"measured",
     "r.json",
     "{\"format\": \"simpar-run\"}",
     NULL,
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "version is missing"}},
    {"measured",
     "r.json",
     "{\"format\": \"simpar-run\", \"version\": 99}",
     NULL,
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "\"version\" is 99", "reads version 1"}},
    {"measured",
     "r.json",
     "RUN",
     "\"ranks\" : 2|\"ranks\" : 0",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "ranks is 0", "at least 1"}},
    {"measured",
     "r.json",
     "RUN",
     "\"ranks\" : 2|\"ranks\" : 7",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "7 ranks, the schedule has 2", "does not match"}},
    {"measured",
     "r.json",
     "RUN",
     "\"start_s\" : |\"start_s\" : \"soon\", \"x\" : ",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "ops[0].start_s is \"soon\"", "must be a number"}},
    {"measured",
     "r.json",
     "RUN",
     "\"--tp=2\"|\"--tpx=2\"",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "job_args", "--tpx=2"}},
    /* job_args that contradict the ops: the same layer of twice the hidden size (the op kinds
     * and ranks agree; the bytes do not): refused, not a +15,000,000% error */
    {"measured",
     "r.json",
     "RUN",
     "\"--tp=2\"|\"--tp=2\", \"--hidden=128\"",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "moves", "the schedule's", "does not match"}},
    {"measured",
     "r.json",
     "RUN",
     "\"ops\" :|\"opz\" :",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "ops is missing"}},
    {"measured",
     "r.json",
     "RUN",
     "\"format\" : \"simpar-run\"|\"format\" : \"simpar-bench\"",
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json", "\"format\" is \"simpar-bench\"", "reads \"simpar-run\""}},

    /* ---- sweep specs: sweep --spec FILE */
    {"sweep spec",
     "s.ini",
     "gpus=16\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini", "a key file with a [sweep] group"}},
    {"sweep spec",
     "s.ini",
     "[sweep]\ncolour=3\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini", "colour is not a sweep option", "long flag names"}},
    {"sweep spec",
     "s.ini",
     "[other]\ngpus=16\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini", "no [sweep] group"}},
    {"sweep spec",
     "s.ini",
     "[sweep]\ngpus=abc\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini: [sweep] gpus: --gpus abc", "'abc' is not a whole number", "N, A..B"}},
    {"sweep spec",
     "s.ini",
     "[sweep]\nlayers=0\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini: [sweep] layers: --layers 0", "out of range", "from 1 to 16777216"}},
    {"sweep spec",
     "s.ini",
     "[sweep]\njobs=many\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini", "jobs", "many"}},
    {"sweep spec",
     "s.ini",
     "[sweep]\ntp-mode = 1d\ngpus = 8\ntp-mode = 2d\n",
     NULL,
     "sweep --topology " V100 " --spec @/s.ini -o @/s.csv",
     2,
     {"--spec @/s.ini:4:", "tp-mode", "given twice"}},
    {"sweep spec",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --spec @/none.ini -o @/s.csv",
     2,
     {"--spec @/none.ini", "No such file"}},

    /* ---- the measured compute figures of a calibration */
    {"calibration",
     "c.json",
     "{\"gemm_table\": [{\"dtype\": \"bf16\", \"m\": 64, \"n\": 64, \"k\": 64, \"batch\": "
     "1, \"time_s\": 1e-5}, {\"dtype\": \"bf16\", \"m\": 0, \"n\": 64, \"k\": 64, \"batch\": 1, "
     "\"time_s\": 1e-5}]}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"gemm_table\" row 1 must be", "each from 1 to 1e9"}},
    {"calibration",
     "c.json",
     "{\"gemm_table\": {}}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"gemm_table\" must be a non-empty array"}},
    {"calibration",
     "c.json",
     "{\"kernel_bw_norm_Bps\": 5}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"kernel_bw_norm_Bps\"", "out of range", "from 1e+06"}},
    {"calibration",
     "c.json",
     "{\"kernel_bw_Bps\": {\"softmax\": 1e12}}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"kernel_bw_Bps\" member \"softmax\"", "op kind", "from 1e+06 to 1e+14"}},
    {"calibration",
     "c.json",
     "{\"kernel_eff_dropout\": 1.5}",
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --calibration @/c.json",
     1,
     {"@/c.json", "\"kernel_eff_dropout\"", "out of range", "to 1"}},

    /* ---- the command line */
    /* a GB200 NVL72 rack of whole compute trays of 4 GPUs, at most the preset's 72 */
    {"cli",
     NULL,
     NULL,
     NULL,
     "topology -p gb200-nvl72 --racks 4 --rack-gpus 62 -o @/t.xml",
     2,
     {"--rack-gpus 62", "a multiple of its compute tray's 4 GPUs from 4 to 72"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "topology -p gb200-nvl72 --racks 4 --rack-gpus 76 -o @/t.xml",
     2,
     {"--rack-gpus 76", "gb200-nvl72", "from 4 to 72"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "topology -p gb200-nvl72 --racks 4 --rack-gpus 0 -o @/t.xml",
     2,
     {"--rack-gpus 0", "from 4 to 72"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "topology -p dgx-h100 --nodes 4 --rack-gpus 64 -o @/t.xml",
     2,
     {"--rack-gpus is for rack-scale presets such as gb200-nvl72", "dgx-h100"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --kernels apex",
     2,
     {"--kernels apex: unknown", "megatron", "pytorch", "unfused"}},
    /* Megatron-Core's accounted pipeline split: L + e + l over the P v chunks, not mixed with
     * the first and last stages' counts, a pipeline of 2 or more stages */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split",
     2,
     {"--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split",
      "--layers 24 + 2 = 26", "not divisible by --pp 4 x --virtual-stages 1 = 4 chunks"}},
    /* Megatron-Core's pipeline layout (--pipeline-model-parallel-layout): its syntax, by
     * position; its stages against --pp x --virtual-stages, its decoder layers against --layers,
     * E first, L last, the MTP layers after the decoder layers, with the loss and as many as the
     * model's; not mixed with the other split flags or local parallelism */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*3|(tt",
     2,
     {"--pipeline-model-parallel-layout \"Et*3|(tt\": at position 6", "'(' has no closing ')'",
      "valid: E embedding, t decoder layer"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|tx*6|t*6L",
     2,
     {"at position 11, 'x' is not a layer symbol"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|t*|t*6L",
     2,
     {"at position 11, '*' needs a count after it"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout E(t*3|(t)*2)*2|L",
     2,
     {"at position 7, '(' inside a group: groups do not nest"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout (tt|)|L",
     2,
     {"at position 5, a group needs a repetition count"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*12|t*12L",
     2,
     {"2 virtual stages ('|'-separated), but --pp 4 x --virtual-stages 1 = 4 chunks",
      "--virtual-stages that divides it by --pp"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|t*6|t*5L",
     2,
     {"23 decoder layers (t), but --layers 24"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout tEt*5|t*6|t*6|t*6L",
     2,
     {"the embedding (E) must be the first symbol and appear once"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|t*6|Lt*6",
     2,
     {"the loss (L) must be the last symbol and appear once"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|t*6|t*6L|",
     2,
     {"the embedding (E) must sit in the first virtual stage and the loss (L) in the last"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--pipeline-model-parallel-layout Et*6|t*6|t*6|t*6mL",
     2,
     {"1 MTP layers (m), but the model has --mtp-layers 0"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--mtp-layers 2 --pipeline-model-parallel-layout Et*6|t*6|t*6|t*6mL",
     2,
     {"1 MTP layers (m), but the model has --mtp-layers 2"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--mtp-layers 1 --pipeline-model-parallel-layout Et*8|t*8|t*8m|L",
     2,
     {"the MTP layers (m) must sit in the last virtual stage, with the loss"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--mtp-layers 1 --pipeline-model-parallel-layout Et*6|t*6|mt*6|t*6L",
     2,
     {"a decoder layer (t) follows an MTP layer (m)"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--last-stage-layers 8 --pipeline-model-parallel-layout E|t*8|t*8|t*8L",
     2,
     {"--pipeline-model-parallel-layout: not combinable with --first-stage-layers"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 24 --tp-mode 1d --gpus 4 --pp 4 "
     "--account-for-embedding-in-pipeline-split --pipeline-model-parallel-layout E|t*8|t*8|t*8L",
     2,
     {"not combinable with", "--account-for-embedding-in-pipeline-split"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 23 --tp-mode 1d --gpus 4 --pp 4 "
     "--account-for-loss-in-pipeline-split --first-stage-layers 5",
     2,
     {"--account-for-loss-in-pipeline-split: not combinable with --first-stage-layers",
      "Megatron-Core refuses the mix too"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 23 --tp-mode 1d --gpus 4 "
     "--account-for-embedding-in-pipeline-split",
     2,
     {"--account-for-embedding-in-pipeline-split: valid only with a pipeline schedule and --pp 2 "
      "or more (got --pp 1)"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 4 --vp-group 3",
     2,
     {"--vp-group applies to --schedule interleaved only"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --layers 4 --tp-mode 1d --gpus 4 --pp 2 --schedule "
     "interleaved --micro-batch 1 --global-batch 6 --vp-group 5",
     2,
     {"--vp-group 5", "the last group would hold 1", "fewer than --pp 2"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model llama3-8b --tp-mode 1d --tp 16 --seq 64 --layers 1",
     2,
     {"--kv-heads 8 is not divisible by 16", "use --kv-heads a multiple of 16"}},
    /* multi-head latent attention: one clear error per impossible setting */
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --q-lora-rank 16",
     2,
     {"--q-lora-rank 16 needs --kv-lora-rank between 1 and", "not MLA"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model deepseek-v3 --kv-lora-rank 0 --tp-mode 1d "
     "--tp 1 --ep 8 --pp 4 --dp 16",
     2,
     {"--q-lora-rank 1536 needs --kv-lora-rank"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --kv-lora-rank -8 --q-lora-rank 16",
     2,
     {"--kv-lora-rank -8 is out of range", "0 for no MLA"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 " MLA_TINY " --v-head-dim 0",
     2,
     {"--v-head-dim 0 is out of range", "between 1 and"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 " MLA_TINY " --kv-heads 2",
     2,
     {"--kv-lora-rank 8 with --kv-heads 2", "kv heads must equal heads"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp-mode 2d --tp 4 " MLA_TINY,
     2,
     {"--tp-mode 2d: multi-head latent attention (--kv-lora-rank 8)", "valid: 1d"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp-mode 1d --tp 2 --cp 2 " MLA_TINY,
     2,
     {"--cp 2: multi-head latent attention", "valid: --cp 1"}},
    /* mixtures of experts: one clear error per impossible expert setting */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 6 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 4",
     2,
     {"--experts 6 is not divisible by --ep 4", "whole experts", "a divisor of 6"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --num-experts 6 --moe-router-topk 2 --moe-ffn-hidden-size "
     "64 --tp-mode 1d --gpus 8 --dp 8 --expert-model-parallel-size 4",
     2,
     {"--experts 6 is not divisible by --ep 4", "a divisor of 6"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 4 --topk 5 --moe-ffn 64",
     2,
     {"--topk 5 is out of range", "between 1 and 4"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 4 --etp 4",
     2,
     {"--ep 4 x --etp 4 = 16 does not divide --tp x --cp x --dp = 8", "EP x ETP a divisor of 8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 4 --topk 2 --moe-ffn 64 --capacity-factor 0",
     2,
     {"--capacity-factor 0", "above 0", "leave it out for dropless"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 4 --topk 2 --moe-ffn 64 --capacity-factor -0.5",
     2,
     {"--capacity-factor -0.5", "above 0"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 8 --topk 2 --moe-ffn 64 --expert-groups 4 "
     "--group-limit 5",
     2,
     {"--group-limit 5 is out of range", "between 1 and 4", "--expert-groups"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --moe-dispatcher deepep",
     2,
     {"--moe-dispatcher deepep", "--ep 2 or more", "--moe-dispatcher alltoall"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 2 --tp-mode 1d --gpus 8 --dp 8 --ep 8 "
     "--moe-shared-expert-overlap",
     2,
     {"--moe-shared-expert-overlap", "mixtral-8x7b has none", "--shared-ffn above 0"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --moe-shared-expert-overlap",
     2,
     {"--moe-shared-expert-overlap", "tiny has none"}},
    /* multi-token prediction (--mtp-layers, model key mtp_layers): 0 to 64 modules; not with
     * local parallelism, not in an executable step, at most one with the merged 1F1B */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --mtp-layers -1",
     2,
     {"--mtp-layers -1", "valid is 0", "to 64"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --mtp-layers 65",
     2,
     {"--mtp-layers 65", "valid is 0", "to 64"}},
    {"model",
     "m.json",
     "{\"mtp_layers\": -2}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"mtp_layers\" -2", "valid is 0"}},
    {"model",
     "m.json",
     "{\"mtp_layers\": \"one\"}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"mtp_layers\" must be an integer"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --tp 1 --local-chunks 2 --dp 32 "
     "--mtp-layers 1",
     2,
     {"--mtp-layers 1", "local parallelism (--local-chunks)", "valid: --mtp-layers 0"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --ep 8 --global-batch 8 --overlap-moe-expert-parallel-comm --mtp-layers 2",
     2,
     {"--overlap-moe-expert-parallel-comm with --mtp-layers 2", "at most one",
      "valid: --mtp-layers 0 or 1"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "EXEC --executor host --tp-mode 1d --tp 2 --model tiny --mtp-layers 1 --run step "
     "--repeats 1 --warmup 0",
     2,
     {"--mtp-layers (multi-token prediction) is modelled from timed blocks only"}},
    /* --tp-comm-overlap: 1-D with sequence parallelism only (Megatron asserts --sequence-parallel)
     */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 2d --tp 4 --gpus 8 --tp-comm-overlap",
     2,
     {"--tp-comm-overlap applies to --tp-mode 1d with --sp only", "not --tp-mode 2d"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --tp 4 --gpus 8 --tp-comm-overlap",
     2,
     {"--tp-comm-overlap applies to --tp-mode 1d with --sp only", "without --sp"}},
    /* --overlap-moe-expert-parallel-comm: what Megatron-Core's transformer_config.py refuses
     * with it, and ZeRO 2 and 3, which simpar does not model with it */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100
     " --model tiny --tp-mode 1d --gpus 8 --dp 8 --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm", "there are none",
      "--ep 2 or more"}}, /* a dense model: nothing to hide */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm", "--ep 2 or more"}}, /* EP 1 */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --ep 8 --global-batch 8 --overlap-moe-expert-parallel-comm --recompute selective "
     "--recompute-modules layernorm,moe",
     2,
     {"--overlap-moe-expert-parallel-comm with --recompute-modules layernorm,moe",
      "Megatron-Core refuses moe with it"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--pp 2 --dp 4 --ep 4 --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm with --pp 2 and --schedule 1f1b", "virtual pipeline",
      "--pp 1, or --schedule interleaved"}}, /* PP 2 without a virtual pipeline */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--pp 2 --dp 4 --ep 4 --schedule gpipe --overlap-moe-expert-parallel-comm",
     2,
     {"--schedule gpipe", "--pp 1, or --schedule interleaved"}}, /* GPipe */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --ep 8 --recompute full --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm with --recompute full",
      "none or selective"}}, /* full recomputation */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 8 --dtype fp32 --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm with --dtype fp32", "bf16 or fp16"}}, /* fp32 */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100
     " --model tiny --experts 8 --topk 2 --moe-ffn 64 --shared-ffn 64 --tp-mode 1d --gpus 8 --dp 8 "
     "--ep 8 --dtype fp16 --moe-shared-expert-overlap --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm with --moe-shared-expert-overlap",
      "one of them"}}, /* with the shared experts' overlap */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --ep 8 --zero 3 --overlap-moe-expert-parallel-comm",
     2,
     {"--overlap-moe-expert-parallel-comm with --zero 3",
      "--zero 0 or 1"}}, /* ZeRO 3 (not modelled) */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --experts 12 --topk 2 --moe-ffn 64 "
     "--tp-mode 1d --gpus 48 --dp 48 --ep 12 --moe-dispatcher deepep --backend analytic",
     2,
     {"--moe-dispatcher deepep", "(--ep 12) spans 2 nodes unevenly", "fills whole nodes"}},
    /* expert tensor parallelism with DeepEP's hops: the TP x EP group (EP 6 x ETP 2 = 12
     * ranks) holds 8 ranks of one node and 4 of the next, where DeepEP's rail needs equal ones */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --experts 12 --topk 2 --moe-ffn 64 "
     "--tp-mode 1d --gpus 48 --dp 48 --ep 6 --etp 2 --moe-dispatcher deepep --backend analytic",
     2,
     {"--moe-dispatcher deepep", "(--ep 6 x --etp 2 = 12 ranks) spans 2 nodes unevenly",
      "an --ep x --etp that fills whole nodes"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 2 --moe-dispatcher nccl",
     2,
     {"--moe-dispatcher nccl", "valid are alltoall, deepep and allgather"}},
    /* --moe-flex-backend: a library of the flex dispatcher, simpar's deepep, and one it knows */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 2 --moe-dispatcher deepep --moe-flex-backend nccl",
     2,
     {"--moe-flex-backend nccl", "valid are deepep and hybridep"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --tp-mode 1d --gpus 8 "
     "--dp 8 --ep 2 --moe-flex-backend hybridep",
     2,
     {"--moe-flex-backend hybridep", "the dispatcher is alltoall",
      "--moe-dispatcher deepep with it"}},
    /* the all-gather dispatcher with what Megatron-Core's transformer_config.py runs with the
     * alltoall and flex dispatchers only */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --experts 8 --topk 2 --moe-ffn 64 --shared-ffn 64 "
     "--tp-mode 1d --gpus 8 --dp 8 --ep 4 --moe-dispatcher allgather --moe-shared-expert-overlap",
     2,
     {"--moe-shared-expert-overlap with --moe-dispatcher allgather", "all-to-all and flex",
      "--moe-dispatcher alltoall"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model mixtral-8x7b --layers 4 --tp-mode 1d --gpus 8 --dtype fp16 "
     "--dp 8 --ep 8 --global-batch 8 --overlap-moe-expert-parallel-comm --moe-dispatcher "
     "allgather",
     2,
     {"--overlap-moe-expert-parallel-comm with --moe-dispatcher allgather", "all-to-all and flex",
      "--moe-dispatcher alltoall or deepep"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 4 --topk 2 --moe-ffn 64 --router relu",
     2,
     {"--router", "'relu'", "softmax, sigmoid"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --ep 2",
     2,
     {"--ep 2", "needs a model with experts"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --topk 2",
     2,
     {"--topk 2 needs --experts", "dense"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --experts 8 --topk 2 --moe-ffn 64",
     2,
     {"--model tiny has 8 routed experts", "simpar schedule summarises dense layers"}},
    {"model",
     "m.json",
     "{\"base\": \"mixtral-8x7b\", \"top_k\": 9}",
     NULL,
     "schedule --tp 4 --model @/m.json",
     1,
     {"@/m.json", "\"top_k\" 9 is out of range", "between 1 and 8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --kv-heads 3",
     2,
     {"--heads 4 is not divisible by --kv-heads 3"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --head-dim -3",
     2,
     {"--head-dim -3: valid is a head's columns from 1 to", "(0: h/a)"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 " MLA_TINY " --head-dim 4",
     2,
     {"--head-dim 4: valid is", "without multi-head latent attention"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --hidden 30",
     2,
     {"--hidden 30 is not divisible by --heads 4", "give the heads' width, --head-dim"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --kv-heads -1",
     2,
     {"--kv-heads -1 is out of range", "between 1 and --heads 4"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --zero 3 --shard-group 3",
     2,
     {"--shard-group 3: must divide --dp 8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --shard-group 2",
     2,
     {"--shard-group applies to --zero 1, 2 or 3"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --zero 2 --no-reshard",
     2,
     {"--no-reshard applies to --zero 3"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --overlap-param-gather",
     2,
     {"--overlap-param-gather with --zero 0: valid with --zero 1 or 2"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --zero 3 "
     "--overlap-param-gather",
     2,
     {"--overlap-param-gather with --zero 3", "ZeRO 3 gathers each layer's before its use"}},
    /* FP8: a GPU without FP8 tensor cores (V100, A100), MXFP8 on Hopper, a recipe without FP8,
     * an unknown recipe, FP8 parameters without FP8 or ZeRO */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 4 --dtype fp8",
     2,
     {"--dtype fp8: GPU V100-SXM2-16GB has no FP8 tensor cores", "Hopper or Blackwell"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-a100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8",
     2,
     {"--dtype fp8: GPU A100-SXM4-80GB has no FP8 tensor cores"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--fp8-recipe mxfp8",
     2,
     {"--fp8-recipe mxfp8: GPU H100-SXM5-80GB has no block-scaled FP8 tensor cores",
      "valid here: delayed, current"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --fp8-recipe "
     "current",
     2,
     {"--fp8-recipe current needs --dtype fp8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--fp8-recipe e4m3",
     2,
     {"--fp8-recipe: FP8 recipe 'e4m3' is not one of delayed", "mxfp8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--fp8-param-gather",
     2,
     {"--fp8-param-gather needs --dtype fp8 and --zero 1, 2 or 3"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--fp8-recipe current --fp8-output-proj",
     2,
     {"--fp8-output-proj needs --dtype fp8 --fp8-recipe mxfp8", "trains in fp8 (current)"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --fp8-output-proj",
     2,
     {"--fp8-output-proj needs --dtype fp8 --fp8-recipe mxfp8", "the model trains in fp32"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --attention "
     "flash --fp8-dot-product-attention",
     2,
     {"--fp8-dot-product-attention needs --dtype fp8", "the model trains in fp32"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-h100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--attention unfused --fp8-dot-product-attention",
     2,
     {"--fp8-dot-product-attention needs --attention flash", "--attention unfused"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology topologies/dgx-a100x64.xml --model tiny --tp-mode 1d --gpus 4 --dtype fp8 "
     "--attention flash --fp8-dot-product-attention",
     2,
     {"--fp8-dot-product-attention: GPU A100-SXM4-80GB has no FP8 tensor cores",
      "Hopper or Blackwell"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --grad-reduce-dtype fp16",
     2,
     {"--grad-reduce-dtype fp16 with --dtype fp32", "valid are fp32"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --dp 8 --grad-reduce-dtype fp8",
     2,
     {"--grad-reduce-dtype fp8: valid are fp32"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --seq 36 --tp-mode 1d --gpus 8 --tp 2 --cp 4",
     2,
     {"--seq 36 is not divisible by 2 x --cp 4", "use a multiple of 8"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --tp 2 --cp 3",
     2,
     {"--tp 2 x --cp 3 x --pp 1 = 6 GPUs does not divide the 8 used"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --cp 0",
     2,
     {"--cp 0: must be between 1 and 65536"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --cp 2 --cp-mode alltoall",
     2,
     {"--cp-mode alltoall: valid are allgather and ring"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --bias maybe",
     2,
     {"--bias maybe: valid are on and off"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --dropout 0.1",
     2,
     {"--dropout 0.1: valid are on and off"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --gpus 8 --tp 2 --cp 2 --pp 2 "
     "--scatter-gather",
     2,
     {"--scatter-gather does not combine with --cp"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --model tiny --tp 2 --norm batchnorm",
     2,
     {"--norm: norm 'batchnorm' is not one of layernorm, rmsnorm"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --gpus 1000000000000",
     2,
     {"--gpus 1000000000000", "between 1"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "schedule --tp 4 --hidden 1000000000",
     2,
     {"--hidden 1000000000", "out of range"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "topology --preset dgx-a100 --nodes 1000000 -o @/t.xml",
     2,
     {"--nodes 1000000"}},
    {"cli", NULL, NULL, NULL, "--topology " V100 " --jobs 5000", 2, {"--jobs 5000", "1 to 1024"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --time-budget never",
     2,
     {"--time-budget never", "(0, 10080]"}},
    {"cli", NULL, NULL, NULL, "sweep --topology " V100 " --gpus 0 -o @/s.csv", 2, {"--gpus 0"}},
    /* sizes and lists: one grammar for every command (app/cli-values.h), each refusal naming
     * the flag, the value and the valid forms */
    {"cli",
     NULL,
     NULL,
     NULL,
     "collective --topology " V100 " --op allreduce --gpus 4 --bytes 1X",
     2,
     {"--bytes 1X", "a size in bytes from 1 to 64G", "K, M, G or T", "1GiB"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "collective --topology " V100 " --op allreduce --gpus 4 --max-bytes 65G",
     2,
     {"--max-bytes 65G", "a size in bytes from 1 to 64G"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "collective --topology " V100 " --op allreduce --gpus 4 --min-bytes -8",
     2,
     {"--min-bytes -8", "a size in bytes"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --gpus 16-8 -o @/s.csv",
     2,
     {"--gpus 16-8", "the start must not exceed the end", "A..B (or A-B), A..B:+S or A..B:*F"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --gpus 8..64:x2 -o @/s.csv",
     2,
     {"--gpus 8..64:x2", "the step of 8..64:x2 must be :+S (S >= 1) or :*F (F >= 2)"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --trace @/t.json --trace-ranks 0..3:*2",
     2,
     {"--trace-ranks 0..3:*2", "a range that doubles", "must start at 1"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --trace @/t.json --trace-ranks 1.5",
     2,
     {"--trace-ranks 1.5", "'1.5' is not a whole number", "A..B (or A-B)", "or all"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "plot timeline @/t.json -o @/t.png --ranks 3..",
     2,
     {"--ranks 3..", "'' is not a whole number", "A..B (or A-B), A..B:+S or A..B:*F"}},
    /* a platform reconfigures SimGrid or makes it open files only through what simpar checks:
     * <config> wrote SimGrid's trace over any file, its bandwidth factor slipped past the link
     * checks (a step 23x slower), a FIFO as a link's bandwidth_file blocked forever */
    {"platform",
     "t.xml",
     XML_TOP("<config><prop id=\"tracing\" value=\"yes\"/><prop id=\"tracing/platform\" "
             "value=\"yes\"/><prop id=\"tracing/filename\" value=\"@.victim\"/></config>",
             ""),
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <config> is not accepted", "simpar accepts platform, zone",
      "docs/usage.md"}},
    {"platform",
     "t.xml",
     XML_TOP("<config><prop id=\"network/bandwidth-factor\" value=\"1e-3\"/></config>", ""),
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <config> is not accepted", "SimGrid options"}},
    {"output",
     "p-memory.png",
     "VICTIM",
     NULL,
     "sweep --topology " V100 " --model tiny --tp-mode 1d --gpus 8 -o @/s.csv --plot @/p.png",
     2,
     {"--plot '@/p-memory.png'", "a symbolic link"}},
    {"output",
     "run.json",
     "VICTIM",
     NULL,
     "EXEC --executor host --tp-mode 1d --tp 2 --model tiny --repeats 1 --warmup 0 -o "
     "@/run.json",
     2,
     {"-o '@/run.json'", "a symbolic link"}},
    /* simpar-exec has no FP8 GEMMs: an FP8 run would be a bf16 step under an FP8 name */
    {"cli",
     NULL,
     NULL,
     NULL,
     "EXEC --executor host --tp-mode 1d --tp 2 --model tiny --dtype fp8 --repeats 1 --warmup 0",
     2,
     {"--dtype fp8: simpar-exec has no FP8 GEMMs", "run --dtype bf16"}},
    {"output",
     "null",
     "NODE",
     NULL,
     "EXEC --executor host --tp-mode 1d --tp 2 --model tiny --repeats 1 --warmup 0 -o @/null",
     2,
     {"-o '@/null'", "not a regular file"}},
    {"output",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --model tiny --tp-mode 1d --gpus 8 -o @/s.csv --summary @/s.csv",
     2,
     {"-o @/s.csv and --summary @/s.csv name the same file"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --tp-mode 2d --gpus 48",
     2,
     {"--tp 48 is not a square"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --frobnicate",
     2,
     {"Unknown option --frobnicate"}},
    /* flags checked where they enter, before anything is sized by them: --tp 2^40 searched
     * 2.5-D depths up to it (a hang, under 2.5d and the default --tp-mode all), --tp 2^32
     * wrapped to a group of 0 GPUs (a division by zero), more local chunks than GPUs left a
     * tensor-parallel group of 0, a count past 2^53 printed wrong and negative step counts */
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 2.5d --tp 1099511627776",
     2,
     {"--tp 1099511627776 is out of range", "between 1 and 65536"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp 1099511627776",
     2,
     {"--tp 1099511627776 is out of range", "between 1 and 65536"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --tp 4294967296",
     2,
     {"--tp 4294967296 is out of range", "between 1 and 65536"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --depth 100000000 --tp-mode 2.5d",
     2,
     {"--depth 100000000: must be between 1 and 65536"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --local-chunks 128",
     2,
     {"--local-chunks 128 x --dp 1 x --cp 1 = 128 GPUs", "more than the 64 used"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --pp 128 --layers 128",
     2,
     {"--pp 128 x --dp 1 x --cp 1 = 128 GPUs", "more than the 64 used"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --tp 4 --gpus 4 --steps-to-target "
     "18014398509481985",
     2,
     {"--steps-to-target 18014398509481985", "at most 2^53 = 9007199254740992"}},
    {"cli",
     NULL,
     NULL,
     NULL,
     "sweep --topology " V100 " --model tiny --tp-mode 1d --virtual-stages 4096 -o @/s.csv",
     2,
     {"--virtual-stages 4096: must be between 1 and 1024"}},
};

#define LINK_L "<link id=\"l\" bandwidth=\"10GBps\" latency=\"1us\"/>\n"
#define ROUTE_01(attrs)                                                                            \
    "<route src=\"node0-gpu0\" dst=\"node1-gpu0\"" attrs "><link_ctn id=\"l\"/></route>\n"

/* Platforms SimGrid hangs on, crashes on or exhausts memory with, refused before it reads them:
 * its Dijkstra follows predecessors without checking that a route was found (a route one way
 * only looped forever in predict, collective and sweep; an unlinked GPU crashed), routings
 * whose routes it aborts on, a cluster of 10^8 hosts, a Full zone's n^2 route table (30,000
 * hosts took 7 GB); a trace that turns a GPU off stays refused. */
static const BadCase platform_cases[] = {
    {"platform",
     "t.xml",
     XML_ZONE("DijkstraCache") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01(" symmetrical=\"NO\"") XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"DijkstraCache\"> has no route from "
      "node1-gpu0 to node0-gpu0",
      "both ways", "symmetrical=\"NO\" goes one way only"}},
    {"platform",
     "t.xml",
     XML_ZONE("Dijkstra") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01(" symmetrical=\"NO\"") XML_TAIL,
     NULL,
     "collective --topology @/t.xml --op allreduce --bytes 1M --gpus 2",
     1,
     {"--topology @/t.xml:4:", "has no route from node1-gpu0 to node0-gpu0"}},
    {"platform",
     "t.xml",
     XML_ZONE("DijkstraCache") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01(" symmetrical=\"NO\"") XML_TAIL,
     NULL,
     "sweep --topology @/t.xml --model tiny --tp-mode 1d -o @/s.csv",
     1,
     {"--topology @/t.xml:4:", "has no route from node1-gpu0 to node0-gpu0"}},
    {"platform",
     "t.xml",
     XML_ZONE("Dijkstra") GPU(0, 0) GPU(1, 0) GPU(2, 0) LINK_L ROUTE_01("") XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 1 --dp 3",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"Dijkstra\"> has no route from "
      "node0-gpu0 to node2-gpu0"}},
    {"platform",
     "t.xml",
     XML_ZONE("Floyd") GPU(0, 0) GPU(1, 0) GPU(2, 0) LINK_L ROUTE_01("") XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 1 --dp 3",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"Floyd\"> has no route from "
      "node0-gpu0 to node2-gpu0"}},
    /* a zone route's gateway its GPUs do not reach: SimGrid's Dijkstra crashed */
    {"platform",
     "t.xml",
     XML_ZONE("DijkstraCache") "<zone id=\"a\" routing=\"Dijkstra\">\n" GPU(0, 0) GPU(
         0,
         1) "<router id=\"a-gw\"/>\n<link id=\"la\" bandwidth=\"10GBps\" latency=\"1us\"/>\n"
            "<route src=\"node0-gpu0\" dst=\"node0-gpu1\"><link_ctn id=\"la\"/></route>\n"
            "</zone>\n<zone id=\"b\" routing=\"Full\">\n" GPU(
                1,
                0) "</zone>\n" LINK_L
                   "<zoneRoute src=\"a\" dst=\"b\" gw_src=\"a-gw\" gw_dst=\"node1-gpu0\"><link_ctn "
                   "id=\"l\"/></zoneRoute>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 1 --dp 3",
     1,
     {"--topology @/t.xml:5: <zone id=\"a\" routing=\"Dijkstra\"> has no route from node0-gpu0 "
      "to a-gw"}},
    {"platform",
     "t.xml",
     XML_ZONE("Wifi") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01("") XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"Wifi\"> is not accepted",
      "Full, Floyd, Dijkstra or DijkstraCache"}},
    {"platform",
     "t.xml",
     XML_ZONE("None") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01("") XML_TAIL,
     NULL,
     "collective --topology @/t.xml --op allreduce --bytes 1M --gpus 2",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"None\"> is not accepted"}},
    {"platform",
     "t.xml",
     "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
     "<platform version=\"4.1\">\n<cluster id=\"c\" prefix=\"node\" suffix=\"-gpu0\" "
     "radical=\"0-99999999\" speed=\"15Tf\" bw=\"10GBps\" lat=\"1us\">" GPU_PROPS
     "</cluster>\n</platform>\n",
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <cluster id=\"c\" radical=\"0-99999999\"> declares 100000000 hosts",
      "at most 524288 hosts and routers"}},
    {"platform",
     "t.xml",
     "WIDE",
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:4: <zone id=\"w\" routing=\"Full\"> holds 5002 hosts, routers and zones",
      "at most 4096 in a Full zone", "n^2"}},
    {"platform",
     "t.xml",
     XML_ZONE("Full") GPU(0, 0) GPU(1, 0) LINK_L ROUTE_01("") "<trace id=\"off\" "
                                                              "periodicity=\"1\">\n0 0\n</trace>\n"
                                                              "<trace_connect kind=\"HOST_AVAIL\" "
                                                              "trace=\"off\" "
                                                              "element=\"node0-gpu0\"/>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny --tp-mode 1d --tp 2",
     1,
     {"--topology @/t.xml:9: <trace> is not accepted", "figures over time"}},
};

/* In-range options whose run would exhaust memory or take hours: refused with the number
 * before anything is allocated (the formula asked for 32 GiB at once, the replay more; a
 * played all-reduce over 4,096 GPUs for 8 GiB; the all-to-all ran for hours). */
static const BadCase memory_cases[] = {
    {"memory",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --tp 4 --pp 16 --schedule interleaved "
     "--virtual-stages 1024 --layers 16384 --micro-batch 1 --global-batch 4096 --backend formula",
     2,
     {"1d T=4: the formula's ops (4096 micro-batches x 1024 model chunks x 16 stages) would need "
      "about 32.5 GiB of memory",
      "simpar allows here", "fewer micro-batches (--global-batch)"}},
    {"memory",
     NULL,
     NULL,
     NULL,
     "--topology " V100 " --model tiny --tp-mode 1d --tp 4 --pp 16 --schedule interleaved "
     "--virtual-stages 1024 --layers 16384 --micro-batch 1 --global-batch 4096 --backend analytic",
     2,
     {"1d T=4: its step's ops on 16 simulated ranks (4096 micro-batches x 1024 model chunks x 16 "
      "stages) would need about 165.0 GiB of memory"}},
    {"memory",
     "a.xml",
     "TOPOLOGY dgx-a100 512",
     NULL,
     "collective --topology @/a.xml --op allreduce --bytes 1G --gpus 4096 --collectives played",
     2,
     {"--op allreduce on --gpus 4096: its played expansion holds up to 5.37e+08 transfers",
      "about 64.0 GiB of memory", "--collectives fused"}},
    /* --trace-ranks all on the README's 1024-GPU step wrote 8 GB: refused with the size */
    {"memory",
     "a.xml",
     "TOPOLOGY dgx-a100 128",
     NULL,
     "--topology @/a.xml --model gpt3-175b --tp-mode 1d --tp 8 --sp --pp 8 --dp 16 --schedule "
     "interleaved --micro-batch 1 --global-batch 1536 --recompute selective --trace @/t.json "
     "--trace-ranks all",
     2,
     {"1d T=8+SP: --trace-ranks all: the trace of 1024 ranks would hold about 6.61e+07 events, "
      "about 8.6 GiB, more than the 2 GiB simpar writes",
      "--trace-ranks 0-63"}},
    {"memory",
     "a.xml",
     "TOPOLOGY dgx-a100 512",
     NULL,
     "collective --topology @/a.xml --op alltoall --bytes 1G --gpus 4096",
     2,
     {"--op alltoall on --gpus 4096: playing its 1.68e+07 transfers on SimGrid would take about "
      "38 minutes, more than --time-budget 10 minutes"}},
};

#define DGX_A100 "topologies/dgx-a100x64.xml"

/* Figures taken unchecked, fits that failed and were written anyway: NVLink SHARP figures of
 * 300 digits, a run of ops that all take 0 s (validate aborted), nccl-tests rows that report
 * wrong results or none large enough to fit (a fit of 0 rows was written), a host bench whose
 * GEMM fit found no peak (its fit was recorded, its peak dropped). */
static const BadCase figure_cases[] = {
    {"figures",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"1Gf\">" GPU_PROPS
              "<prop id=\"nvls_efficiency\" value=\"0.85\"/><prop id=\"nvls_latency_s\" "
              "value=\"1e300\"/></host>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "node0-gpu0 has nvls_latency_s 1e+300", "from 0 to 1 s"}},
    {"figures",
     "t.xml",
     XML_HEAD "<host id=\"node0-gpu0\" speed=\"1Gf\">" GPU_PROPS
              "<prop id=\"nvls_efficiency\" value=\"1e-300\"/><prop id=\"nvls_latency_s\" "
              "value=\"1e-5\"/></host>\n" XML_TAIL,
     NULL,
     "--topology @/t.xml --model tiny",
     1,
     {"--topology @/t.xml", "node0-gpu0 has nvls_efficiency 1e-300", "at least 0.001"}},
    {"figures",
     "r.json",
     "RUNZERO",
     NULL,
     "validate --measured @/r.json --topology " HOST,
     1,
     {"@/r.json: ops all start and end at one instant", "the run spans 0 s"}},
    {"figures",
     "l.txt",
     NCCL_RANKS "   1048576 262144 float sum -1 100.0 10.49 18.35 3 100.0 10.49 18.35 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " DGX_A100 " -o @/c.json",
     1,
     {"--nccl-tests @/l.txt: line 10 reports #wrong 3", "wrong results"}},
    {"figures",
     "l.txt",
     NCCL_RANKS "   1024 256 float sum -1 10.00 0.10 0.18 0 10.00 0.10 0.18 0\n",
     NULL,
     "calibrate --nccl-tests @/l.txt --topology " DGX_A100 " -o @/c.json",
     1,
     {"--nccl-tests @/l.txt: no row of 65536 bytes or more, so nothing to fit"}},
    {"figures",
     "b.json",
     "{\"format\": \"simpar-bench\", \"version\": 1, \"executor\": \"host\", \"device\": "
     "\"host CPU\", \"dtype\": \"fp64\", \"gpus\": 1, \"gemm\": [{\"m\": 64, \"n\": 64, "
     "\"k\": 64, \"time_s\": 1e-2}, {\"m\": 256, \"n\": 256, \"k\": 256, \"time_s\": 1e-3}, "
     "{\"m\": 1024, \"n\": 1024, \"k\": 1024, \"time_s\": 1e-4}], \"kernels\": [], "
     "\"collectives\": []}",
     NULL,
     "calibrate --measured @/b.json -o @/c.json",
     1,
     {"--measured @/b.json: the GEMM fit failed: no positive peak (FLOP/s) fits its 3 GEMM times",
      "no calibration is written"}},
};

/* Outputs over inputs the earlier check did not list: a model file under --trace or a sweep's
 * -o (each wrote over the model, exit 0), a report file over the platform, the journal over an
 * input. */
static const BadCase collision_cases[] = {
    {"output",
     "m.json",
     "{\"hidden\": 64, \"heads\": 4}",
     NULL,
     "--topology " V100 " --model @/m.json --tp-mode 1d --tp 4 --gpus 4 --trace @/m.json",
     2,
     {"--model @/m.json and --trace @/m.json name the same file"}},
    {"output",
     "m.json",
     "{\"hidden\": 64, \"heads\": 4}",
     NULL,
     "sweep --topology " V100 " --model tiny,@/m.json --tp-mode 1d -o @/m.json",
     2,
     {"-o @/m.json and --model @/m.json name the same file"}},
    {"output",
     "s.csv.part",
     "x",
     NULL,
     "sweep --topology @/s.csv.part --model tiny --tp-mode 1d -o @/s.csv",
     2,
     {"--topology @/s.csv.part and the journal @/s.csv.part name the same file"}},
};

static const BadFilesCase files_cases[] = {
    /* a shard's row edited into another configuration: resume refuses it, --merge merged it */
    {{"sweep",
      "a.csv",
      "SHARD 0/2 EDITED",
      NULL,
      "sweep --merge -o @/all.csv @/a.csv @/b.csv",
      1,
      {"@/a.csv:5: the row is not the configuration of its index 0 in the shards' sweep"}},
     {"b.csv", "SHARD 1/2"}},
    {{"output",
      "prediction.txt",
      XML_TOP("", ""),
      NULL,
      "--topology @/prediction.txt --model tiny --tp-mode 1d --tp 2 --report @",
      2,
      {"--topology @/prediction.txt and --report @/prediction.txt name the same file"}},
     {"README.md", "# simpar prediction report\n"}},
    {{"platform",
      "t.xml",
      XML_TOP("", " bandwidth_file=\"@/fifo\""),
      NULL,
      "sweep --topology @/t.xml --model tiny --tp-mode 1d -o @/s.csv",
      1,
      {"--topology @/t.xml:8: <link bandwidth_file=\"@/fifo\"> is not accepted",
       "open another file"}},
     {"fifo", "FIFO"}},
    /* outputs under names simpar derives pass the same check as named ones: a report folder
     * that says it is simpar's, a sweep's memory picture, simpar-exec's -o */
    {{"output",
      NULL,
      NULL,
      NULL,
      "--topology " V100 " --model tiny --tp-mode 1d --tp 2 --gpus 2 --report @",
      2,
      {"--report '@/trace.json'", "a symbolic link"}},
     {"README.md", "# simpar prediction report\n", "trace.json", "VICTIM", "breakdown.png",
      "VICTIM"}},
};

static char *run_json; /* a measured run of simpar-exec, written once */

static const char *
measured_run(void)
{
    if (run_json != NULL)
        return run_json;
    g_autofree char *cmd =
        g_strdup_printf("%s --executor host --run layer --tp-mode 1d --tp 2 --model tiny "
                        "--repeats 1 --warmup 0",
                        g_getenv("SIMPAR_EXEC_BIN"));
    g_autofree char *dir = g_dir_make_tmp("simpar-bad-run-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "run.json", NULL);
    g_autofree char *full = g_strdup_printf("%s -o %s", cmd, path);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(full, NULL, &argv, NULL));
    int wait = 0;
    g_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                          &wait, NULL));
    g_assert(g_spawn_check_wait_status(wait, NULL));
    g_assert(g_file_get_contents(path, &run_json, NULL, NULL));
    g_remove(path);
    g_rmdir(dir);
    return run_json;
}

/* `text` with "@" replaced by `dir` (transfer full). */
static char *
at_dir(const char *text, const char *dir)
{
    g_auto(GStrv) parts = g_strsplit(text, "@", -1);
    return g_strjoinv(dir, parts);
}

#define VICTIM_TEXT "simpar must not write here\n"

/* A special file of a case: FALSE when this system does not allow it (mknod as non-root). */
static gboolean
bad_special(const char *file, const char *kind, const char *dir)
{
    if (g_str_equal(kind, "VICTIM")) {
        g_autofree char *victim = g_strconcat(dir, ".victim", NULL);
        g_assert(symlink(victim, file) == 0);
    } else if (g_str_equal(kind, "FIFO")) {
        g_assert(mkfifo(file, 0600) == 0);
    } else if (mknod(file, S_IFCHR | 0666, makedev(1, 3)) != 0) { /* NODE: /dev/null's */
        printf("\n    (skipped: mknod %s: %s)", file, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

/* Writes file `name` of a case into `dir`; FALSE when the case cannot be made here. */
static gboolean
bad_file(const BadCase *c, const char *dir, const char *name, const char *text)
{
    g_autofree char *file = g_build_filename(dir, name, NULL);
    const char *special[] = {"VICTIM", "FIFO", "NODE"};
    for (guint i = 0; i < G_N_ELEMENTS(special); i++)
        if (g_str_equal(text, special[i]))
            return bad_special(file, text, dir);
    g_autofree char *content = NULL;
    if (g_str_equal(text, "RUN")) {
        g_auto(GStrv) edit = g_strsplit(c->edit, "|", 2);
        const char *run = measured_run(), *at = strstr(run, edit[0]);
        g_assert(at != NULL); /* the edit must apply */
        content = g_strdup_printf("%.*s%s%s", (int) (at - run), run, edit[1], at + strlen(edit[0]));
    } else if (g_str_equal(text, "RUNZERO")) { /* every op of the run at 0 s */
        g_autoptr(GRegex) at = g_regex_new("\"(start|end)_s\" : [0-9.e+-]+", 0, 0, NULL);
        content = g_regex_replace(at, measured_run(), -1, 0, "\"\\1_s\" : 0", 0, NULL);
    } else if (g_str_equal(text, "LINK")) { /* a symbolic link to @/target */
        g_autofree char *target = g_build_filename(dir, "target", NULL);
        g_assert(symlink(target, file) == 0);
    } else if (g_str_has_prefix(text, "TOPOLOGY ")) { /* "TOPOLOGY PRESET NODES": generated */
        g_auto(GStrv) w = g_strsplit(text, " ", 3);
        g_autofree char *args =
            g_strdup_printf("topology --preset %s --nodes %s -o %s", w[1], w[2], file);
        SimparCliRun r = simpar_cli_run(args);
        g_assert_cmpint(r.status, ==, 0);
        simpar_cli_run_clear(&r);
    } else if (g_str_has_prefix(text, "SHARD ")) { /* "SHARD i/n [EDITED]": a sweep's shard */
        g_autofree char *args = g_strdup_printf("sweep --topology " V100 " --model tiny --gpus 16 "
                                                "--tp-mode 1d -q --shard %.3s -o %s",
                                                text + strlen("SHARD "), file);
        SimparCliRun r = simpar_cli_run(args);
        g_assert_cmpint(r.status, ==, 0);
        simpar_cli_run_clear(&r);
        g_autofree char *csv = NULL;
        g_assert(g_file_get_contents(file, &csv, NULL, NULL));
        char *row = strstr(csv, "\n0,tiny,64,"); /* index 0's hidden size, edited */
        if (strstr(text, "EDITED") != NULL && row != NULL)
            content = g_strdup_printf("%.*s\n0,tiny,128,%s", (int) (row - csv), csv,
                                      row + strlen("\n0,tiny,64,"));
        else
            content = g_steal_pointer(&csv);
    } else if (g_str_equal(text, "WIDE")) { /* a Full zone of two GPUs and 5,000 hosts */
        GString *wide = g_string_new(XML_HEAD GPU(0, 0) GPU(1, 0));
        for (guint i = 0; i < 5000; i++)
            g_string_append_printf(wide, "<host id=\"h%u\" speed=\"1f\"/>\n", i);
        g_string_append(wide, LINK_L ROUTE_01("") XML_TAIL);
        content = g_string_free(wide, FALSE);
    } else if (g_str_equal(text, "DEEP")) { /* 100,000 arrays in one another */
        GString *deep = g_string_new(NULL);
        for (guint i = 0; i < 100000; i++)
            g_string_append_c(deep, '[');
        for (guint i = 0; i < 100000; i++)
            g_string_append_c(deep, ']');
        content = g_string_free(deep, FALSE);
    } else {
        content = at_dir(text, dir);
    }
    if (content != NULL)
        g_assert(g_file_set_contents(file, content, -1, NULL));
    return TRUE;
}

static gboolean
bad_case(const BadCase *c, const char *const *more)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-bad-XXXXXX", NULL);
    g_autofree char *victim = g_strconcat(dir, ".victim", NULL);
    g_assert(g_file_set_contents(victim, VICTIM_TEXT, -1, NULL));
    gboolean made = c->file == NULL || bad_file(c, dir, c->file, c->content);
    for (guint i = 0; made && more != NULL && i + 1 < BAD_MORE && more[i] != NULL; i += 2)
        made = bad_file(c, dir, more[i], more[i + 1]);
    if (!made) {
        g_remove(victim);
        simpar_test_tmpdir_remove(g_steal_pointer(&dir));
        return TRUE;
    }
    g_autofree char *args = at_dir(c->args, dir);
    gboolean exec = g_str_has_prefix(args, "EXEC ");
    SimparCliRun r = exec ? simpar_cli_run_bin("SIMPAR_BAD_EXEC", args + strlen("EXEC "))
                          : simpar_cli_run_bin("SIMPAR_BAD_BIN", args);
    g_autofree char *left = NULL;
    gboolean kept =
        g_file_get_contents(victim, &left, NULL, NULL) && g_str_equal(left, VICTIM_TEXT);
    if (!kept)
        printf("\n    %s was written over", victim);
    g_remove(victim);
    gboolean ok = kept && r.status == c->status && r.out[0] == '\0' && r.err[0] != '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    for (guint i = 0; i < G_N_ELEMENTS(c->want) && c->want[i] != NULL; i++) {
        g_autofree char *want = at_dir(c->want[i], dir);
        ok = ok && strstr(r.err, want) != NULL;
    }
    if (!ok)
        printf("\n    [%s] simpar %s -> status %d (want %d), stdout %zu bytes, stderr: %s",
               c->category, args, r.status, c->status, strlen(r.out), r.err);
    simpar_cli_run_clear(&r);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
    return ok;
}

/* A case that hangs is one failure, not the suite's timeout: each run ends after BAD_LIMIT_S
 * (timeout(1) then exits 124, or 137 when it had to kill). */
#define BAD_LIMIT_S "120"

static void
test_matrix(void)
{
    const struct {
        const char *bounded, *bin;
    } bins[] = {{"SIMPAR_BAD_BIN", "SIMPAR_BIN"}, {"SIMPAR_BAD_EXEC", "SIMPAR_EXEC_BIN"}};

    g_autofree char *timeout = g_find_program_in_path("timeout");
    g_assert(timeout != NULL);
    for (guint i = 0; i < G_N_ELEMENTS(bins); i++) {
        const char *limit = g_getenv("SIMPAR_BAD_LIMIT_S"); /* shorter, to run an old build */
        g_autofree char *cmd = g_strdup_printf(
            "%s -k 5 %s %s", timeout, limit != NULL ? limit : BAD_LIMIT_S, g_getenv(bins[i].bin));
        g_setenv(bins[i].bounded, cmd, TRUE);
    }
    guint failed = 0;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        failed += !bad_case(&cases[i], NULL);
    for (guint i = 0; i < G_N_ELEMENTS(platform_cases); i++)
        failed += !bad_case(&platform_cases[i], NULL);
    for (guint i = 0; i < G_N_ELEMENTS(memory_cases); i++)
        failed += !bad_case(&memory_cases[i], NULL);
    for (guint i = 0; i < G_N_ELEMENTS(figure_cases); i++)
        failed += !bad_case(&figure_cases[i], NULL);
    for (guint i = 0; i < G_N_ELEMENTS(collision_cases); i++)
        failed += !bad_case(&collision_cases[i], NULL);
    for (guint i = 0; i < G_N_ELEMENTS(files_cases); i++)
        failed += !bad_case(&files_cases[i].c, files_cases[i].more);
    CU_ASSERT_EQUAL(failed, 0);
    CU_ASSERT_TRUE(G_N_ELEMENTS(cases) >= 40);
}

static int
suite_clean(void)
{
    g_clear_pointer(&run_json, g_free);
    return 0;
}

static CU_TestInfo bad_input_tests[] = {
    {"every bad input: one line naming the file or flag, the key, the value, what is valid",
     test_matrix},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"bad inputs", NULL, suite_clean, NULL, NULL, bad_input_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
