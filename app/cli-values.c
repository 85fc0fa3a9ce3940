/* cli-values.c - sizes and lists on the command line (cli-values.h). */
#include "cli-values.h"
#include "cli.h"
#include <stdlib.h>
#include <string.h>

#define CLI_LIST_FORMS "a list is comma-separated items N, A..B (or A-B), A..B:+S or A..B:*F"

/* ------------------------------------------------------------------------------------- sizes */

/* The multiplier of a size's unit ("", "K", "Ki", "KiB", "kb", "B", ...); 0 when not one. */
static guint64
cli_size_unit(const char *u)
{
    static const char units[] = "KMGT";
    guint64 mult = 1;
    const char *at = *u != '\0' ? strchr(units, g_ascii_toupper(*u)) : NULL;
    if (at != NULL)
        mult = 1ull << (10 * (at - units + 1)), u++;
    if (at != NULL && (*u == 'i' || *u == 'I'))
        u++;
    if (*u == 'B' || *u == 'b')
        u++;
    return *u == '\0' ? mult : 0;
}

/* A size as the grammar writes it: "64G", "8". */
static void
cli_size_text(guint64 v, char *buf, gsize len)
{
    static const char *const units[] = {"", "K", "M", "G", "T"};
    guint k = 0;
    while (k < 4 && v >= 1024 && v % 1024 == 0)
        v /= 1024, k++;
    g_snprintf(buf, len, "%" G_GUINT64_FORMAT "%s", v, units[k]);
}

gboolean
simpar_cli_parse_size(const char *flag, const char *text, guint64 min, guint64 max, guint64 *out,
                      GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    const char *p = text;
    while (g_ascii_isdigit(*p))
        p++;
    g_autofree char *digits = g_strndup(text, (gsize) (p - text));
    guint64 v = 0, unit = cli_size_unit(p);
    gboolean ok = p != text && unit != 0 &&
                  g_ascii_string_to_unsigned(digits, 10, 0, G_MAXUINT64, &v, NULL) &&
                  v <= max / unit && v * unit >= min && v * unit <= max;
    if (ok) {
        *out = v * unit;
        return TRUE;
    }
    char lo[32], hi[32];
    cli_size_text(min, lo, sizeof lo);
    cli_size_text(max, hi, sizeof hi);
    return simpar_cli_usage(error,
                            "%s %s: a size in bytes from %s to %s: N with an optional unit K, M, G "
                            "or T (powers of 1024; also Ki, KiB, k, ...), e.g. 8, 64K, 1M, 1GiB",
                            flag, text, lo, hi);
}

/* ------------------------------------------------------------------------------------- lists */

static gboolean
cli_list_number(const char *flag, const char *text, const char *s, gint64 min, gint64 max,
                gint64 *out, GError **error)
{
    gint64 v;
    if (!g_ascii_string_to_signed(s, 10, G_MININT64, G_MAXINT64, &v, NULL))
        return simpar_cli_usage(error, "%s %s: '%s' is not a whole number (" CLI_LIST_FORMS ")",
                                flag, text, s);
    if (v < min || v > max)
        return simpar_cli_usage(error,
                                "%s %s: %" G_GINT64_FORMAT
                                " is out of range (from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                                ")",
                                flag, text, v, min, max);
    *out = v;
    return TRUE;
}

/* Where an item's range sign is: "..", or a '-' past its first character; NULL for a number. */
static const char *
cli_list_range_at(const char *item, gsize *sign_len)
{
    const char *dots = strstr(item, "..");
    const char *dash = item[0] != '\0' ? strchr(item + 1, '-') : NULL;
    *sign_len = dots != NULL ? 2 : 1;
    return dots != NULL ? dots : dash;
}

/* "A..B", "A-B", "A..B:+S" or "A..B:*F" into its values. */
static gboolean
cli_list_range(const char *flag, const char *text, const char *item, const char *sign,
               gsize sign_len, gint64 min, gint64 max, guint max_values, SimparCliListFlags flags,
               GArray *out, GError **error)
{
    g_autofree char *a_text = g_strndup(item, (gsize) (sign - item));
    g_auto(GStrv) tail = g_strsplit(sign + sign_len, ":", 2);
    gboolean times = (flags & SIMPAR_CLI_LIST_DOUBLING) != 0;
    gint64 a, b, step = times ? 2 : 1;
    if (!cli_list_number(flag, text, a_text, min, max, &a, error) ||
        !cli_list_number(flag, text, tail[0] != NULL ? tail[0] : "", min, max, &b, error))
        return FALSE;
    if (a > b)
        return simpar_cli_usage(
            error, "%s %s: in the range %s the start must not exceed the end (" CLI_LIST_FORMS ")",
            flag, text, item);
    if (tail[1] != NULL) {
        times = tail[1][0] == '*';
        if ((tail[1][0] != '*' && tail[1][0] != '+') ||
            !g_ascii_string_to_signed(tail[1] + 1, 10, times ? 2 : 1, 1 << 20, &step, NULL))
            return simpar_cli_usage(error,
                                    "%s %s: the step of %s must be :+S (S >= 1) or :*F (F >= 2)",
                                    flag, text, item);
    }
    if (times && a < 1)
        return simpar_cli_usage(error, "%s %s: a range that doubles (%s) must start at 1 or more",
                                flag, text, item);
    for (gint64 v = a; v <= b; v = times ? v * step : v + step) {
        if (out->len >= max_values)
            return simpar_cli_usage(error, "%s %s: more than %u values", flag, text, max_values);
        g_array_append_val(out, v);
    }
    return TRUE;
}

static gint
cli_int64_cmp(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
    return (x > y) - (x < y);
}

/* A value given twice: an error, or (REPEATS_OK) kept at its first place only. */
static gboolean
cli_list_repeats(const char *flag, const char *text, guint from, SimparCliListFlags flags,
                 GArray *out, GError **error)
{
    guint n = out->len - from;
    g_autofree gint64 *sorted = g_new(gint64, MAX(n, 1));
    memcpy(sorted, &g_array_index(out, gint64, from), n * sizeof(gint64));
    qsort(sorted, n, sizeof(gint64), cli_int64_cmp);
    g_autoptr(GHashTable) seen = NULL;
    for (guint i = 1; i < n; i++) {
        if (sorted[i] != sorted[i - 1])
            continue;
        if (!(flags & SIMPAR_CLI_LIST_REPEATS_OK))
            return simpar_cli_usage(error, "%s %s: %" G_GINT64_FORMAT " appears twice", flag, text,
                                    sorted[i]);
        seen = g_hash_table_new(g_int64_hash, g_int64_equal);
    }
    if (seen == NULL)
        return TRUE;
    guint k = from;
    for (guint i = from; i < out->len; i++) {
        gint64 *v = &g_array_index(out, gint64, i);
        if (g_hash_table_contains(seen, v))
            continue;
        g_hash_table_add(seen, v);
        g_array_index(out, gint64, k++) = *v;
    }
    g_array_set_size(out, k);
    return TRUE;
}

gboolean
simpar_cli_parse_list(const char *flag, const char *text, gint64 min, gint64 max, guint max_values,
                      SimparCliListFlags flags, GArray *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    guint from = out->len;
    for (guint i = 0; items[0] == NULL || items[i] != NULL; i++) {
        char *item = items[0] != NULL ? g_strstrip(items[i]) : NULL;
        if (item == NULL || item[0] == '\0')
            return simpar_cli_usage(error, "%s '%s': an empty item (" CLI_LIST_FORMS ")", flag,
                                    text);
        gsize sign_len;
        const char *sign = cli_list_range_at(item, &sign_len);
        gint64 v;
        if (sign != NULL) {
            if (!cli_list_range(flag, text, item, sign, sign_len, min, max, max_values, flags, out,
                                error))
                return FALSE;
        } else if (!cli_list_number(flag, text, item, min, max, &v, error)) {
            return FALSE;
        } else {
            g_array_append_val(out, v);
        }
        if (out->len - from > max_values)
            return simpar_cli_usage(error, "%s %s: more than %u values", flag, text, max_values);
    }
    return cli_list_repeats(flag, text, from, flags, out, error);
}
