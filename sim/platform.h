/* platform.h - a SimGrid platform file as simpar sees it: how many GPUs it has.
 *
 * The file is checked for well-formed XML (GMarkup, with line numbers), then SimGrid loads it in
 * a child process, since SimGrid ends the process on input it cannot use; its complaint becomes
 * the GError. GPUs are hosts named node<N>-gpu<G>.
 */
#ifndef SIMPAR_PLATFORM_H
#define SIMPAR_PLATFORM_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_PLATFORM_ERROR (simpar_platform_error_quark())
GQuark simpar_platform_error_quark(void);

typedef enum {
    SIMPAR_PLATFORM_ERROR_INVALID, /* not a SimGrid platform simpar can use */
} SimparPlatformError;

gboolean simpar_platform_count_gpus(const char *path, guint *n_gpus, GError **error);

G_END_DECLS
#endif /* SIMPAR_PLATFORM_H */
