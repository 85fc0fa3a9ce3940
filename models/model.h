/* model.h - the shapes of the transformer being trained.
 *
 * A SimparModel is plain data: hidden size h, heads a, sequence length s, micro-batch b, layers L,
 * FFN width f, vocabulary V and the element type. It comes from a named preset
 * (simpar_model_preset) or from a JSON file (simpar_model_load_json), and command-line flags
 * override single fields. simpar_model_validate() refuses shapes no split could use (zero or
 * negative sizes, h not divisible by a, absurd sizes that would overflow byte counts).
 *
 *   preset "gpt3-175b" --> SimparModel { h=12288 a=96 s=2048 b=1 L=96 f=49152 V=51200 fp16 }
 *   model.json --------/
 *
 * Ownership: SimparModel is a value type; the name string is owned by the GLib string pool
 * (g_intern_string) and never freed.
 */
#ifndef SIMPAR_MODEL_H
#define SIMPAR_MODEL_H
#include <glib.h>
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_MODEL_ERROR (simpar_model_error_quark())
GQuark simpar_model_error_quark(void);

typedef enum {
    SIMPAR_MODEL_ERROR_UNKNOWN_PRESET, /* no preset of that name */
    SIMPAR_MODEL_ERROR_PARSE,          /* the model file is not the documented JSON */
    SIMPAR_MODEL_ERROR_INVALID,        /* a size is zero, negative, absurd or inconsistent */
} SimparModelError;

typedef enum {
    SIMPAR_DTYPE_FP16,
    SIMPAR_DTYPE_BF16,
    SIMPAR_DTYPE_FP32,
    SIMPAR_DTYPE_FP64,
} SimparDtype;

/* The largest value any size field may take; bigger ones are refused as absurd. */
#define SIMPAR_MODEL_MAX_DIM (G_GINT64_CONSTANT(1) << 24)

typedef struct {
    const char *name;   /* interned */
    gint64 hidden;      /* h */
    gint64 heads;       /* a */
    gint64 seq;         /* s */
    gint64 micro_batch; /* b */
    gint64 layers;      /* L */
    gint64 ffn;         /* f, usually 4h */
    gint64 vocab;       /* V */
    SimparDtype dtype;
} SimparModel;

typedef struct {
    const char *name;
    const char *description;
    SimparModel model;
} SimparModelPreset;

const SimparModelPreset *simpar_model_presets(guint *n_presets); /* (transfer none) */
gboolean simpar_model_preset(const char *name, SimparModel *out, GError **error);
gboolean simpar_model_load_json(const char *path, SimparModel *out, GError **error);
/* json_parser_load_from_file, with an error that always names the file (JSON-GLib's parse errors
 * do, its encoding and I/O errors do not). */
gboolean simpar_json_load_file(JsonParser *parser, const char *path, GError **error);
/* "a, b, c": the names of a table's n rows of `row_size` bytes whose first member is their
 * `const char *` name, for help texts and errors (interned: lives as long as the process). */
const char *simpar_intern_names(gconstpointer rows, guint n, gsize row_size);
/* The builder's root (pretty-printed) into `path`; an error prefixed with "`flag` path: ". */
gboolean simpar_json_write_file(JsonBuilder *b, const char *flag, const char *path, GError **error);
gboolean simpar_model_validate(const SimparModel *model, GError **error);

guint simpar_dtype_size(SimparDtype dtype);
const char *simpar_dtype_name(SimparDtype dtype);
gboolean simpar_dtype_parse(const char *name, SimparDtype *out, GError **error);

G_END_DECLS
#endif /* SIMPAR_MODEL_H */
