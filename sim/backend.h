/* backend.h - interpreters that predict how long a schedule takes.
 *
 * A run replays a schedule on its streams. With n_layers = 1 (a whole training step, or one
 * layer) every (rank, stream) runs its ops in program order. With n_layers = L > 1 the
 * schedule is one layer, stacked as a step without pipeline or data parallelism: the forward
 * ops of layers 1..L, then the backward ops of layers L..1, each stream in that order. An op
 * starts when the previous op of its stream and its deps (same layer) have finished; a
 * collective also waits for every member of its group. Ops left running at the end of a layer
 * (asynchronous reduce-scatters on the communication stream) overlap the next layer's compute,
 * as they do in the implementations.
 *
 * Compute ops (kernels, SIMPAR_OP_BLOCK timed spans) last compute_s[op]. A send and its recv
 * (paired FIFO per (sender, receiver, tag), as simpar_schedule_check pairs them) are one
 * rendezvous transfer of count * dtype-size bytes between their GPUs, as NCCL's send/recv: it
 * starts when both ops have started and lasts route latency + bytes / route bandwidth on an
 * idle network (latency alone for 0 bytes); both spans end when it ends, each starts at its own
 * op's start. The collective `red` field does not change timing.
 *
 *   analytic  no contention: closed form per collective from its last member's arrival (fused),
 *             or its expansion evaluated from each member's arrival (exact); p2p at idle route
 *             speed. Event-driven: linear in ops, deps and members.
 (The predictor adds a third way, formula: the analytic backend's figures for a whole training
 * step from closed forms per pipeline stage, predict/step-formula.h.)
 *   simgrid   one SimGrid actor per GPU stream; collectives as p2p transfers on mailboxes, every
 *             round of the algorithm (exact) or one transfer per peer (fused); send/recv as one
 *             mailbox transfer on the platform, sharing links with all other traffic; fused,
 *             on a file `simpar topology` wrote, the ranks of a few alike nodes where they
 *             provably stand for the rest (replay-quotient.c; every_rank turns it off)
 *
 * Both fill a span (start, end) for every op instance: instance = layer * n_ops + op. Both
 * expect a schedule that passed simpar_schedule_check; one that cannot run to completion ends
 * the process with g_error naming a blocked rank and op (never a hang).
 *
 * Ownership: a SimparRun borrows everything it points to; spans are the caller's array.
 */
#ifndef SIMPAR_BACKEND_H
#define SIMPAR_BACKEND_H
#include "collectives.h"
G_BEGIN_DECLS

#define SIMPAR_BACKEND_ERROR (simpar_backend_error_quark())
GQuark simpar_backend_error_quark(void);

typedef enum {
    SIMPAR_BACKEND_ERROR_OPTION, /* an unknown backend, collectives mode or protocol name */
} SimparBackendError;

typedef enum {
    SIMPAR_COLL_MODE_EXACT,
    SIMPAR_COLL_MODE_FUSED,
} SimparCollMode;

typedef struct {
    const SimparSchedule *sched;
    guint n_layers;
    const guint *gpus;          /* rank -> GPU id on the platform */
    const SimparNet *net;       /* routes between GPUs */
    const double *compute_s;    /* per op (simpar_compute_times; blocks: filled by the caller) */
    const SimparCollAlgo *algo; /* for the kinds it implements; others (and NULL): NCCL-like */
    SimparCollParams coll;
    SimparCollMode mode;
    /* exact mode: play every round on SimGrid even where the idle evaluation is proven equal
     * (a lone ring collective on links it cannot saturate: backend-simgrid.c) */
    gboolean play_all;
    /* fused mode: simulate every rank on SimGrid even where a quotient of alike ranks is proven
     * to give the same spans (replay-quotient.c) */
    gboolean every_rank;
    /* the run times the ends blocks (embedding, head: once per micro-batch): a quotient times
     * their collectives that do not fold on an idle network (replay-quotient.c) */
    gboolean ends;
    /* out, when not NULL: how many ranks the run simulated (a quotient's: fewer than the
     * schedule's); backends that simulate none leave it */
    guint *n_simulated;
} SimparRun;

typedef struct {
    const char *name;
    const char *description;
    void (*run)(const SimparRun *run, SimparSpan *spans);
    /* whether transfers of different collectives and sends slow each other down where they
     * share a link (SimGrid's flows); without, each is timed on an idle network */
    gboolean contention;
    /* what simulating one activity (simpar_replay_activities) costs, in wall seconds: base +
     * per_gpu times the GPUs of the run (SimGrid's sharing solver and routes grow with them),
     * times exact_factor with exact collectives (more flows share the links at once); fitted to
     * bench/predict-4096.sh on a 2-core x86-64 machine (within 4x: docs/speed.md);
     * 0 for closed forms */
    double activity_base_s, activity_per_gpu_s, activity_exact_factor;
} SimparBackend;

gboolean simpar_backend_lookup(const char *name, const SimparBackend **out, GError **error);
/* "simgrid, analytic": the backends' names, for help texts and errors (interned). */
const char *simpar_backend_names(void);
gboolean simpar_nccl_proto_parse(const char *name, SimparProto *out, GError **error);
/* "none", "ll", "ll128", "simple" or "auto" (transfer none). */
const char *simpar_nccl_proto_name(SimparProto proto);
gboolean simpar_coll_mode_parse(const char *name, SimparCollMode *out, GError **error);

/* The algorithm and protocol (into *proto, when not NULL) that collective op `op` of the run's
 * schedule runs with: run->algo where it implements the kind, else the NCCL-like choice, as
 * both backends choose them. With a SimGrid net, inside the platform's actor. */
const SimparCollAlgo *simpar_run_coll_algo(const SimparRun *run, const SimparOp *op,
                                           SimparProto *proto); /* (transfer none) */

void simpar_backend_analytic_run(const SimparRun *run, SimparSpan *spans);
void simpar_backend_simgrid_run(const SimparRun *run, SimparSpan *spans);

G_END_DECLS
#endif /* SIMPAR_BACKEND_H */
