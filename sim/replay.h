/* replay.h - what both backends need to replay a layer schedule as L stacked layers
 * (private to sim/).
 *
 * For every (rank, stream) the op instances in issue order (forward of layers 0..L-1, then
 * backward of layers L-1..0); for every collective instance its sequence number in its group
 * (the k-th collective a member calls on that group: members agree, the schedule check proves
 * it); for every distinct collective (group, kind, count, root) its algorithm, group GPUs and
 * closed-form time, shared by the members' ops.
 *
 *   instance = layer * n_ops + op        seq[rank * n_streams + stream] = [instance, ...]
 *
 * Ownership: a SimparReplay owns its arrays and borrows the run.
 */
#ifndef SIMPAR_REPLAY_H
#define SIMPAR_REPLAY_H
#include "backend.h"
G_BEGIN_DECLS

typedef struct {
    const SimparCollAlgo *algo;
    SimparCollGroup group; /* gpus owned by the replay */
    SimparCollKind kind;
    double bytes; /* nccl-tests S */
    guint root;
    double time_s;        /* closed form */
    SimparExpansion *exp; /* built on demand (simgrid backend) */
} SimparReplayColl;

typedef struct {
    const SimparRun *run;
    guint n_ops, n_streams, n_ranks, n_instances;
    GArray **seq;       /* n_ranks * n_streams arrays of guint instances */
    guint *coll_k;      /* per instance: sequence number of a collective in its group */
    guint *coll_of_op;  /* per op: index into colls, G_MAXUINT for other kinds */
    GArray *colls;      /* SimparReplayColl */
    guint *group_calls; /* per group: collectives each member calls in the whole run */
} SimparReplay;

/* Builds the instance order and the collective table; closed forms need the routes, so with a
 * SimGrid network it must run inside an actor. */
SimparReplay *simpar_replay_new(const SimparRun *run); /* (transfer full) */
void simpar_replay_free(SimparReplay *r);
const SimparOp *simpar_replay_op(const SimparReplay *r, guint instance); /* (transfer none) */
/* The collective's expansion, built on first use. */
const SimparExpansion *simpar_replay_expansion(SimparReplay *r, guint coll); /* (transfer none) */

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparReplay, simpar_replay_free)
G_END_DECLS
#endif /* SIMPAR_REPLAY_H */
