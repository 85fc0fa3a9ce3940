/* backend.h - interpreters that predict how long a schedule takes.
 *
 * A run replays one layer's schedule for `n_layers` layers as a training step without pipeline
 * or data parallelism: the forward ops of layers 1..L, then the backward ops of layers L..1,
 * each rank's streams in that order. An op starts when the previous op of its stream and its
 * deps (same layer) have finished; a collective also waits for every member of its group. Ops
 * left running at the end of a layer (asynchronous reduce-scatters on the communication stream)
 * overlap the next layer's compute, as they do in the implementations.
 *
 *   analytic  no contention: closed form per collective from its last member's arrival (fused),
 *             or its expansion evaluated from each member's arrival (exact)
 *   simgrid   one SimGrid actor per GPU stream; collectives as p2p transfers on mailboxes, every
 *             round of the algorithm (exact) or one transfer per peer (fused)
 *
 * Both fill a span (start, end) for every op instance: instance = layer * n_ops + op.
 *
 * Ownership: a SimparRun borrows everything it points to; spans are the caller's array.
 */
#ifndef SIMPAR_BACKEND_H
#define SIMPAR_BACKEND_H
#include "collectives.h"
G_BEGIN_DECLS

typedef enum {
    SIMPAR_COLL_MODE_EXACT,
    SIMPAR_COLL_MODE_FUSED,
} SimparCollMode;

typedef struct {
    double start, end;
} SimparSpan;

typedef struct {
    const SimparSchedule *sched;
    guint n_layers;
    const guint *gpus;          /* rank -> GPU id on the platform */
    const SimparNet *net;       /* routes between GPUs */
    const double *compute_s;    /* per op (simpar_compute_times) */
    const SimparCollAlgo *algo; /* for the kinds it implements; others (and NULL): NCCL-like */
    SimparCollParams coll;
    SimparCollMode mode;
} SimparRun;

typedef struct {
    const char *name;
    const char *description;
    void (*run)(const SimparRun *run, SimparSpan *spans);
} SimparBackend;

gboolean simpar_backend_lookup(const char *name, const SimparBackend **out, GError **error);
gboolean simpar_nccl_proto_parse(const char *name, SimparProto *out, GError **error);
gboolean simpar_coll_mode_parse(const char *name, SimparCollMode *out, GError **error);

void simpar_backend_analytic_run(const SimparRun *run, SimparSpan *spans);
void simpar_backend_simgrid_run(const SimparRun *run, SimparSpan *spans);

G_END_DECLS
#endif /* SIMPAR_BACKEND_H */
