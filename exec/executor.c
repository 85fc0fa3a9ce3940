/* executor.c - the executors of simpar-exec behind one interface, and the process world.
 *
 *   executors[]  host  simpar_host_*  every rank a thread of this process, doubles
 *                cuda  simpar_cuda_*  one GPU per rank (built with -Dcuda=enabled only)
 *
 *   threads: one process, ranks 0..n-1 on devices --devices or 0..n-1
 *   mpirun:  process r runs rank r on GPU OMPI_COMM_WORLD_LOCAL_RANK; rank 0 makes the NCCL id
 *            and broadcasts it; per-op times meet on every process by an all-reduce (MAX over
 *            arrays that hold -1 for other processes' ops)
 */
#include "host.h"
#include "inputs.h"
#include "measure.h"
#include <stdlib.h>
#include <string.h>
#ifdef SIMPAR_HAVE_CUDA
#include "cuda.h"
#endif
#ifdef SIMPAR_HAVE_MPI
#include <mpi.h>
#endif

G_DEFINE_QUARK(simpar_exec_error_quark, simpar_exec_error)

struct _SimparExecutor {
    const SimparExecutorClass *klass;
    const SimparSchedule *sched; /* borrowed */
    const SimparExecWorld *world;
    gpointer impl;
    char *device;
};

/* ---- the process world -------------------------------------------------------------------- */

static int
world_env_int(const char *name, int fallback)
{
    const char *v = g_getenv(name);
    return v != NULL ? atoi(v) : fallback;
}

gboolean
simpar_exec_world_init(SimparExecWorld *world, int *argc, char ***argv, GError **error)
{
    *world = (SimparExecWorld){FALSE, 0, 1, 0};
    int size = world_env_int("OMPI_COMM_WORLD_SIZE", 0);
    if (size <= 0)
        return TRUE;
#ifdef SIMPAR_HAVE_MPI
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_FAILED, "MPI_Init failed");
        return FALSE;
    }
    world->mpi = TRUE;
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    world->local_rank = world_env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    return TRUE;
#else
    (void) argc, (void) argv;
    if (size == 1)
        return TRUE;
    g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                "simpar-exec was started by mpirun (%d processes) but built without MPI: run it "
                "once without mpirun (threads, every rank in one process), or rebuild with "
                "meson -Dmpi=enabled",
                size);
    return FALSE;
#endif
}

/* A failed process takes the others down with it instead of leaving them in a collective. */
void
simpar_exec_world_finish(const SimparExecWorld *world, int status)
{
#ifdef SIMPAR_HAVE_MPI
    if (world->mpi && status != 0)
        MPI_Abort(MPI_COMM_WORLD, status);
    if (world->mpi)
        MPI_Finalize();
#else
    (void) world, (void) status;
#endif
}

void
simpar_exec_world_max(const SimparExecWorld *world, double *x, guint n)
{
#ifdef SIMPAR_HAVE_MPI
    if (world->mpi && n > 0)
        MPI_Allreduce(MPI_IN_PLACE, x, (int) n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#else
    (void) world, (void) x, (void) n;
#endif
}

void
simpar_exec_world_sum(const SimparExecWorld *world, double *x, guint n)
{
#ifdef SIMPAR_HAVE_MPI
    if (world->mpi && n > 0)
        MPI_Allreduce(MPI_IN_PLACE, x, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
    (void) world, (void) x, (void) n;
#endif
}

/* ---- host --------------------------------------------------------------------------------- */

typedef struct {
    SimparHost *host;
    const SimparSchedule *sched;
    double **saved; /* per buffer: its saved contents, or NULL */
} ExecHost;

static gpointer
exec_host_new(const SimparSchedule *sched, const SimparExecWorld *world,
              const SimparExecConfig *cfg, char **device, GError **error)
{
    (void) cfg;
    if (world->mpi) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "--executor host runs every rank as a thread of one process: run it without "
                    "mpirun");
        return NULL;
    }
    SimparHost *host = simpar_host_try_new(sched, error);
    if (host == NULL)
        return NULL;
    ExecHost *h = g_new0(ExecHost, 1);
    h->host = host;
    h->sched = sched;
    h->saved = g_new0(double *, simpar_schedule_n_buffers(sched));
    *device = g_strdup_printf("host CPU (%u threads)", g_get_num_processors());
    return h;
}

static SimparDtype
exec_host_input_type(gpointer impl, guint buf)
{
    (void) impl, (void) buf;
    return SIMPAR_DTYPE_FP64;
}

static gboolean
exec_host_write(gpointer impl, guint buf, const void *src, GError **error)
{
    ExecHost *h = impl;
    (void) error;
    gsize n = simpar_schedule_buffer(h->sched, buf)->elems;
    if (n > 0)
        memcpy(simpar_host_buffer(h->host, buf), src, n * sizeof(double));
    return TRUE;
}

static gboolean
exec_host_read(gpointer impl, guint buf, double *dst, GError **error)
{
    ExecHost *h = impl;
    (void) error;
    gsize n = simpar_schedule_buffer(h->sched, buf)->elems;
    if (n > 0)
        memcpy(dst, simpar_host_buffer(h->host, buf), n * sizeof(double));
    return TRUE;
}

static gboolean
exec_host_save(gpointer impl, guint buf, GError **error)
{
    ExecHost *h = impl;
    (void) error;
    gsize n = simpar_schedule_buffer(h->sched, buf)->elems;
    g_free(h->saved[buf]);
    h->saved[buf] = n > 0 ? g_memdup2(simpar_host_buffer(h->host, buf), n * sizeof(double)) : NULL;
    return TRUE;
}

static gboolean
exec_host_restore(gpointer impl, GError **error)
{
    ExecHost *h = impl;
    for (guint b = 0; b < simpar_schedule_n_buffers(h->sched); b++)
        if (h->saved[b] != NULL && !exec_host_write(h, b, h->saved[b], error))
            return FALSE;
    return TRUE;
}

static gboolean
exec_host_randomize(gpointer impl, guint buf, guint64 seed, guint64 ids, GError **error)
{
    ExecHost *h = impl;
    (void) error;
    simpar_inputs_random(simpar_host_buffer(h->host, buf),
                         simpar_schedule_buffer(h->sched, buf)->elems, seed, ids);
    return TRUE;
}

static gboolean
exec_host_run(gpointer impl, SimparSpan *spans, GError **error)
{
    return simpar_host_run_timed(((ExecHost *) impl)->host, spans, error);
}

static void
exec_host_free(gpointer impl)
{
    ExecHost *h = impl;
    for (guint b = 0; b < simpar_schedule_n_buffers(h->sched); b++)
        g_free(h->saved[b]);
    g_free(h->saved);
    simpar_host_free(h->host);
    g_free(h);
}

static gboolean
exec_host_gpus(guint *n, GError **error)
{
    (void) error;
    *n = 4;
    return TRUE;
}

/* ---- cuda --------------------------------------------------------------------------------- */

#ifdef SIMPAR_HAVE_CUDA

/* The GPU of each local rank: --devices (one per rank of the run) or 0, 1, ... (threads), the
 * local rank (mpirun). */
static gboolean
exec_cuda_devices(const SimparSchedule *sched, const SimparExecWorld *world,
                  const SimparExecConfig *cfg, guint n_local, int *devices, GError **error)
{
    int visible = 0;
    if (!simpar_cuda_devices(&visible, error))
        return FALSE;
    guint n_ranks = simpar_schedule_n_ranks(sched);
    if (cfg->devices != NULL && !world->mpi && cfg->n_devices != n_ranks) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "--devices lists %u GPUs but the schedule has %u ranks (one GPU each)",
                    cfg->n_devices, n_ranks);
        return FALSE;
    }
    if (cfg->devices == NULL && !world->mpi && (guint) visible < n_ranks) {
        g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                    "the schedule has %u ranks, one GPU each, but this machine has %d GPU%s: "
                    "choose a smaller job or run it over several nodes with mpirun",
                    n_ranks, visible, visible == 1 ? "" : "s");
        return FALSE;
    }
    for (guint i = 0; i < n_local; i++) {
        guint pick = world->mpi ? (guint) world->local_rank : i;
        if (cfg->devices != NULL && pick >= cfg->n_devices) {
            g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                        "--devices lists %u GPUs; local rank %u has none", cfg->n_devices, pick);
            return FALSE;
        }
        devices[i] = cfg->devices != NULL ? cfg->devices[pick] : (int) pick;
        if (devices[i] < 0 || devices[i] >= visible) {
            g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                        "GPU %d does not exist: this machine has %d (0..%d)", devices[i], visible,
                        visible - 1);
            return FALSE;
        }
    }
    return TRUE;
}

/* Rank 0 makes the id; the others learn it, or that rank 0 failed, from one broadcast. */
static gboolean
exec_cuda_id(const SimparExecWorld *world, guint8 id[SIMPAR_CUDA_ID_BYTES], GError **error)
{
    if (!world->mpi)
        return simpar_cuda_unique_id(id, error);
#ifdef SIMPAR_HAVE_MPI
    guint8 msg[SIMPAR_CUDA_ID_BYTES + 1] = {0};
    g_autoptr(GError) local = NULL;
    if (world->rank == 0)
        msg[SIMPAR_CUDA_ID_BYTES] = simpar_cuda_unique_id(msg, &local) ? 1 : 0;
    MPI_Bcast(msg, sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (local != NULL) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (msg[SIMPAR_CUDA_ID_BYTES] == 0) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_FAILED,
                    "rank 0 could not create the NCCL unique id");
        return FALSE;
    }
    memcpy(id, msg, SIMPAR_CUDA_ID_BYTES);
#endif
    return TRUE;
}

static gpointer
exec_cuda_new(const SimparSchedule *sched, const SimparExecWorld *world,
              const SimparExecConfig *cfg, char **device, GError **error)
{
    guint n_ranks = simpar_schedule_n_ranks(sched);
    if (world->mpi && (guint) world->size != n_ranks) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "mpirun started %d processes but the schedule has %u ranks: start one "
                    "process per rank (mpirun -np %u)",
                    world->size, n_ranks, n_ranks);
        return NULL;
    }
    guint n_local = world->mpi ? 1 : n_ranks;
    g_autofree guint *ranks = g_new(guint, n_local);
    g_autofree int *devices = g_new(int, n_local);
    guint8 id[SIMPAR_CUDA_ID_BYTES];
    for (guint i = 0; i < n_local; i++)
        ranks[i] = world->mpi ? (guint) world->rank : i;
    if (!exec_cuda_devices(sched, world, cfg, n_local, devices, error) ||
        !exec_cuda_id(world, id, error))
        return NULL;
    SimparCudaConfig cc = {n_local, ranks, devices, id, cfg->tf32, cfg->nccl_timeout_s};
    SimparCuda *cu = simpar_cuda_new(sched, &cc, error);
    if (cu != NULL)
        *device = simpar_cuda_device_name(devices[0]);
    return cu;
}

static SimparDtype
exec_cuda_input_type(gpointer impl, guint buf)
{
    return simpar_cuda_buffer_type(impl, buf);
}

static gboolean
exec_cuda_write(gpointer impl, guint buf, const void *src, GError **error)
{
    return simpar_cuda_write_typed(impl, buf, src, error);
}

static gboolean
exec_cuda_save(gpointer impl, guint buf, GError **error)
{
    return simpar_cuda_save(impl, buf, error);
}

static gboolean
exec_cuda_restore(gpointer impl, GError **error)
{
    return simpar_cuda_restore(impl, error);
}

static gboolean
exec_cuda_randomize(gpointer impl, guint buf, guint64 seed, guint64 ids, GError **error)
{
    return simpar_cuda_randomize(impl, buf, seed, ids, error);
}

static gboolean
exec_cuda_read(gpointer impl, guint buf, double *dst, GError **error)
{
    return simpar_cuda_read(impl, buf, dst, error);
}

static gboolean
exec_cuda_run(gpointer impl, SimparSpan *spans, GError **error)
{
    return simpar_cuda_run(impl, spans, error);
}

static void
exec_cuda_free(gpointer impl)
{
    simpar_cuda_free(impl);
}

static gboolean
exec_cuda_gpus(guint *n, GError **error)
{
    int visible = 0;
    if (!simpar_cuda_devices(&visible, error))
        return FALSE;
    *n = (guint) visible;
    return TRUE;
}

#endif /* SIMPAR_HAVE_CUDA */

/* ---- the table ---------------------------------------------------------------------------- */

static const SimparExecutorClass executors[] = {
    {"host", "every rank a thread of this process, double precision (the correctness oracle)",
     exec_host_new, exec_host_input_type, exec_host_write, exec_host_save, exec_host_restore,
     exec_host_randomize, exec_host_read, exec_host_run, exec_host_free, exec_host_gpus},
#ifdef SIMPAR_HAVE_CUDA
    {"cuda", "one GPU per rank: cuBLAS, CUDA kernels, NCCL", exec_cuda_new, exec_cuda_input_type,
     exec_cuda_write, exec_cuda_save, exec_cuda_restore, exec_cuda_randomize, exec_cuda_read,
     exec_cuda_run, exec_cuda_free, exec_cuda_gpus},
#endif
};

const SimparExecutorClass *
simpar_executor_lookup(const char *name, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(executors); i++)
        if (g_str_equal(name, executors[i].name))
            return &executors[i]; /* (transfer none) */
    if (g_str_equal(name, "cuda")) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "--executor cuda: this simpar-exec was built without CUDA (rebuild with "
                    "meson -Dcuda=enabled and nvcc on PATH); valid here: host");
        return NULL;
    }
    g_autofree char *valid = simpar_executor_help();
    g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                "--executor %s: unknown executor (valid: %s)", name, valid);
    return NULL;
}

const char *
simpar_executor_default(void)
{
    return executors[G_N_ELEMENTS(executors) - 1].name;
}

char *
simpar_executor_help(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(executors); i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", executors[i].name);
    return g_string_free(s, FALSE); /* (transfer full) */
}

/* ---- an executor over one schedule -------------------------------------------------------- */

SimparExecutor *
simpar_executor_new(const SimparExecutorClass *klass, const SimparSchedule *sched,
                    const SimparExecWorld *world, const SimparExecConfig *cfg, GError **error)
{
    g_return_val_if_fail(klass != NULL && sched != NULL && world != NULL && cfg != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    char *device = NULL;
    gpointer impl = klass->new (sched, world, cfg, &device, error);
    if (impl == NULL)
        return NULL;
    SimparExecutor *ex = g_new0(SimparExecutor, 1);
    *ex = (SimparExecutor){klass, sched, world, impl, device};
    return ex; /* (transfer full) */
}

void
simpar_executor_free(SimparExecutor *ex)
{
    if (ex == NULL)
        return;
    ex->klass->free(ex->impl);
    g_free(ex->device);
    g_free(ex);
}

const char *
simpar_executor_device(const SimparExecutor *ex)
{
    return ex->device; /* (transfer none) */
}

gboolean
simpar_executor_is_local(const SimparExecutor *ex, guint rank)
{
    return !ex->world->mpi || rank == (guint) ex->world->rank;
}

/* Buffer `buf` exists and belongs to a rank of this process. */
static gboolean
executor_owns(const SimparExecutor *ex, guint buf)
{
    return buf < simpar_schedule_n_buffers(ex->sched) &&
           simpar_executor_is_local(ex, simpar_schedule_buffer(ex->sched, buf)->rank);
}

SimparDtype
simpar_executor_input_type(const SimparExecutor *ex, guint buf)
{
    g_return_val_if_fail(executor_owns(ex, buf), SIMPAR_DTYPE_FP64);
    return ex->klass->input_type(ex->impl, buf);
}

gboolean
simpar_executor_write(SimparExecutor *ex, guint buf, const void *src, GError **error)
{
    g_return_val_if_fail(executor_owns(ex, buf), FALSE);
    return ex->klass->write(ex->impl, buf, src, error);
}

gboolean
simpar_executor_save(SimparExecutor *ex, guint buf, GError **error)
{
    g_return_val_if_fail(executor_owns(ex, buf), FALSE);
    return ex->klass->save(ex->impl, buf, error);
}

gboolean
simpar_executor_restore(SimparExecutor *ex, GError **error)
{
    return ex->klass->restore(ex->impl, error);
}

gboolean
simpar_executor_randomize(SimparExecutor *ex, guint buf, guint64 seed, guint64 ids, GError **error)
{
    g_return_val_if_fail(executor_owns(ex, buf), FALSE);
    return ex->klass->randomize(ex->impl, buf, seed, ids, error);
}

gboolean
simpar_executor_read(SimparExecutor *ex, guint buf, double *dst, GError **error)
{
    g_return_val_if_fail(executor_owns(ex, buf), FALSE);
    return ex->klass->read(ex->impl, buf, dst, error);
}

gboolean
simpar_executor_run(SimparExecutor *ex, SimparSpan *spans, GError **error)
{
    guint n_ops = simpar_schedule_n_ops(ex->sched);
    for (guint i = 0; spans != NULL && i < n_ops; i++)
        spans[i] = (SimparSpan){-1, -1};
    return ex->klass->run(ex->impl, spans, error);
}
