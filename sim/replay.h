/* replay.h - what both backends need to replay a schedule (private to sim/ and predict/: the
 * step slice and a configuration's count of simulated ranks read it too).
 *
 * For every (rank, stream) the op instances in issue order: with one layer (n_layers = 1, a
 * whole-step schedule) program order; with L stacked layers the forward of layers 0..L-1, then
 * the backward of layers L-1..0. For every collective instance its sequence number in its group
 * (the k-th collective a member calls on that group: members agree, the schedule check proves
 * it); for every distinct collective (group, kind, count, root) its algorithm, group GPUs and
 * closed-form time, shared by the members' ops.
 *
 * Point-to-point: every send is paired with its recv (FIFO per (sender, receiver, tag), as
 * simpar_schedule_check pairs them; an instance's partner is in the same layer). A channel is
 * (sender stream, receiver stream): both ends issue a channel's messages in the same order (a
 * crossing would deadlock, which the check refuses), so one FIFO mailbox per channel carries
 * them.
 *
 *   instance = layer * n_ops + op        seq[rank * n_streams + stream] = [instance, ...]
 *   p2p_peer[send op] = its recv op, p2p_peer[recv op] = its send op
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
    guint sched_group;     /* the schedule's group */
    SimparCollKind kind;
    double bytes; /* nccl-tests S */
    guint root;
    double time_s;        /* closed form */
    gboolean idle;        /* its group's (SimparGroup.idle): timed at time_s, no transfers */
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
    guint *p2p_peer;    /* per op: a send's recv, a recv's send; G_MAXUINT for other kinds */
    guint *p2p_chan;    /* per op: channel of a send or recv; G_MAXUINT for other kinds */
    guint n_chans;
} SimparReplay;

/* Builds the instance order and the collective table; closed forms need the routes, so with a
 * SimGrid network it must run inside an actor. */
SimparReplay *simpar_replay_new(const SimparRun *run); /* (transfer full) */
void simpar_replay_free(SimparReplay *r);
const SimparOp *simpar_replay_op(const SimparReplay *r, guint instance); /* (transfer none) */
/* The (rank, stream) index into seq of an op instance. */
guint simpar_replay_stream(const SimparReplay *r, guint instance);
/* Bytes a send or recv moves: count * dtype size. */
double simpar_replay_p2p_bytes(const SimparReplay *r, const SimparOp *op);
/* The collective's expansion, built on first use. */
const SimparExpansion *simpar_replay_expansion(SimparReplay *r, guint coll); /* (transfer none) */
/* Member m's transfers of the collective summed per (peer, direction), in first-use order:
 * from the algorithm's fuse() when it has one (no expansion built), else the expansion's. */
GArray *simpar_replay_member_xfers(SimparReplay *r, guint coll, guint m); /* (transfer full) */
/* How many activities the SimGrid backend simulates for the run: one per compute op and per
 * point-to-point transfer, and per member's call of a collective one per transfer it sends
 * (exact: in every round of its algorithm; fused: one per peer), on the ranks it simulates
 * (*n_sim of them, when not NULL: a quotient's, or every rank). What the run costs grows with
 * it (predict's --time-budget). */
double simpar_replay_activities(SimparReplay *r, guint *n_sim);

/* Ranks of a fused run that SimGrid may simulate once for many (replay-quotient.c says why
 * that is exact for what maps, and which collectives it times idle instead): rep[rank] is the
 * rank simulated in its place (itself when simulated); n_sim ranks are simulated, each for
 * `fiber` ranks. */
typedef struct {
    guint *rep;
    gboolean *idle; /* per collective entry: timed at its closed form, no transfers */
    guint n_sim, fiber;
    /* how the links must be set while it runs: NULL, the fabric links ("spine-...") at
     * 1/fiber of their bandwidth (route shapes); else these links (sg_link_t) at these
     * bandwidths (links mode) */
    GPtrArray *scaled;
    GArray *scaled_bw;
} SimparQuotient;

/* A quotient of the run's ranks with fiber > 1, when one checks (fused mode, run->every_rank
 * unset, a SimGrid platform); else FALSE and the identity. */
gboolean simpar_replay_quotient(SimparReplay *r, SimparQuotient *out);
void simpar_quotient_clear(SimparQuotient *q);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparReplay, simpar_replay_free)
G_END_DECLS
#endif /* SIMPAR_REPLAY_H */
