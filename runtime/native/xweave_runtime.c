/*
 * The runtime of a model library (see xweave.h): linked by `export_library` with the
 * model's object code (kernels, @main, its ABI description, parameter table) and its
 * weights (`xweave_weights`, written by the export step) into one shared library.
 *
 * It reads the model's own description, the JSON of `xweave_abi` (the same record
 * the Python runtime reads from the object: inputs, outputs, call state, parameters,
 * target), binds the parameter table of the object to the weights, and calls @main
 * through `xweave_entry(void **args)` (inputs, outputs, then one buffer per call-state
 * global, each call with its own). Nothing here depends on the model: the same source
 * serves every model and every architecture.
 */
#define _GNU_SOURCE
#define XWEAVE_BUILDING_LIBRARY
#include "xweave.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__riscv)
#include <sys/auxv.h>
#endif

#define HIDDEN __attribute__((visibility("hidden")))
#define OBJECT_ABI_VERSION 1 /* runtime/module.py's ABI_VERSION: the JSON's abi_version */

/* --- what the model's object and the export step define --------------------------- */

extern const char xweave_abi[] HIDDEN;
extern const int64_t xweave_abi_nbytes HIDDEN;
extern const int64_t xweave_param_count HIDDEN;
extern void *xweave_param_table[] __attribute__((weak)) HIDDEN;
extern const char xweave_param_names[] __attribute__((weak)) HIDDEN;
extern const int64_t xweave_param_nbytes[] __attribute__((weak)) HIDDEN;
extern int32_t xweave_num_threads __attribute__((weak)) HIDDEN;
extern void xweave_entry(void **args) __attribute__((weak)) HIDDEN;
extern const unsigned char xweave_weights[] HIDDEN;
extern const uint64_t xweave_weights_offsets[] HIDDEN; /* count + 1 entries */
extern const uint64_t xweave_weights_count HIDDEN;

/* --- errors ---------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int fail(xweave_error *error, int code, const char *format, ...) {
    if (error != NULL) {
        va_list args;
        va_start(args, format);
        error->code = code;
        vsnprintf(error->message, sizeof error->message, format, args);
        va_end(args);
    }
    return code;
}

static int ok(xweave_error *error) {
    if (error != NULL) {
        error->code = XWEAVE_OK;
        error->message[0] = '\0';
    }
    return XWEAVE_OK;
}

/* --- a small JSON reader (the ABI description) ------------------------------------- */

enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

typedef struct json {
    int type;
    int is_int;     /* a number without fraction or exponent that fits int64 */
    int64_t integer;
    char *string;   /* J_STRING: decoded, NUL-terminated */
    size_t count;   /* J_ARRAY, J_OBJECT: items */
    struct json *items;
    char **keys;    /* J_OBJECT */
} json;

typedef struct reader {
    const char *at, *end;
    int depth;
} reader;

static void json_free(json *v) {
    if (v == NULL)
        return;
    free(v->string);
    for (size_t i = 0; i < v->count; i++) {
        json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static void skip_space(reader *r) {
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\n' || *r->at == '\r' || *r->at == '\t'))
        r->at++;
}

static int parse_value(reader *r, json *out);

static int hex4(const char *p, unsigned *value) {
    *value = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        *value = *value << 4 | (unsigned)d;
    }
    return 1;
}

static int parse_string(reader *r, char **out) {
    if (r->at >= r->end || *r->at != '"')
        return 0;
    r->at++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (s == NULL)
        return 0;
    while (r->at < r->end && *r->at != '"') {
        unsigned c = (unsigned char)*r->at++;
        if (c < 0x20)
            goto bad;
        if (n + 5 > cap) {
            char *grown = realloc(s, cap *= 2);
            if (grown == NULL)
                goto bad;
            s = grown;
        }
        if (c != '\\') {
            s[n++] = (char)c;
            continue;
        }
        if (r->at >= r->end)
            goto bad;
        c = (unsigned char)*r->at++;
        switch (c) {
        case '"': case '\\': case '/': s[n++] = (char)c; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (r->end - r->at < 4 || !hex4(r->at, &cp))
                goto bad;
            r->at += 4;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
                unsigned low;
                if (r->end - r->at < 6 || r->at[0] != '\\' || r->at[1] != 'u'
                    || !hex4(r->at + 2, &low) || low < 0xdc00 || low >= 0xe000)
                    goto bad;
                r->at += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                goto bad;
            }
            if (cp == 0)
                goto bad; /* names are C strings */
            if (cp < 0x80) {
                s[n++] = (char)cp;
            } else if (cp < 0x800) {
                s[n++] = (char)(0xc0 | cp >> 6);
                s[n++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                s[n++] = (char)(0xe0 | cp >> 12);
                s[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
                s[n++] = (char)(0x80 | (cp & 0x3f));
            } else {
                s[n++] = (char)(0xf0 | cp >> 18);
                s[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
                s[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
                s[n++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            goto bad;
        }
    }
    if (r->at >= r->end)
        goto bad;
    r->at++;
    s[n] = '\0';
    *out = s;
    return 1;
bad:
    free(s);
    return 0;
}

static int parse_number(reader *r, json *out) {
    const char *start = r->at;
    int is_int = 1, negative = 0;
    int64_t value = 0;
    if (r->at < r->end && *r->at == '-') {
        negative = 1;
        r->at++;
    }
    if (r->at >= r->end || *r->at < '0' || *r->at > '9')
        return 0;
    while (r->at < r->end && *r->at >= '0' && *r->at <= '9') {
        int digit = *r->at++ - '0';
        if (value > (INT64_MAX - digit) / 10)
            is_int = 0;
        else
            value = value * 10 + digit;
    }
    while (r->at < r->end && *r->at != '\0' && strchr("0123456789.eE+-", *r->at) != NULL) {
        is_int = 0;
        r->at++;
    }
    if (r->at == start)
        return 0;
    out->type = J_NUMBER;
    out->is_int = is_int;
    out->integer = negative ? -value : value;
    return 1;
}

static int parse_literal(reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->at) < n || memcmp(r->at, word, n) != 0)
        return 0;
    r->at += n;
    return 1;
}

static int append(json *v, json *item, char *key) {
    json *items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (items == NULL)
        return 0;
    v->items = items;
    if (v->type == J_OBJECT) {
        char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (keys == NULL)
            return 0;
        v->keys = keys;
        keys[v->count] = key;
    }
    items[v->count++] = *item;
    return 1;
}

static int parse_container(reader *r, json *out, char close) {
    out->type = close == ']' ? J_ARRAY : J_OBJECT;
    r->at++;
    skip_space(r);
    if (r->at < r->end && *r->at == close) {
        r->at++;
        return 1;
    }
    for (;;) {
        char *key = NULL;
        json item = {0};
        skip_space(r);
        if (out->type == J_OBJECT) {
            if (!parse_string(r, &key))
                return 0;
            skip_space(r);
            if (r->at >= r->end || *r->at++ != ':') {
                free(key);
                return 0;
            }
        }
        if (!parse_value(r, &item) || !append(out, &item, key)) {
            json_free(&item);
            free(key);
            return 0;
        }
        skip_space(r);
        if (r->at < r->end && *r->at == ',') {
            r->at++;
            continue;
        }
        if (r->at < r->end && *r->at == close) {
            r->at++;
            return 1;
        }
        return 0;
    }
}

static int parse_value(reader *r, json *out) {
    memset(out, 0, sizeof *out);
    skip_space(r);
    if (r->at >= r->end || ++r->depth > 32)
        return 0;
    int done;
    switch (*r->at) {
    case '{': done = parse_container(r, out, '}'); break;
    case '[': done = parse_container(r, out, ']'); break;
    case '"': out->type = J_STRING; done = parse_string(r, &out->string); break;
    case 't': out->type = J_BOOL; out->integer = 1; done = parse_literal(r, "true"); break;
    case 'f': out->type = J_BOOL; done = parse_literal(r, "false"); break;
    case 'n': out->type = J_NULL; done = parse_literal(r, "null"); break;
    default: done = parse_number(r, out); break;
    }
    r->depth--;
    return done;
}

static const json *member(const json *object, const char *key) {
    if (object == NULL || object->type != J_OBJECT)
        return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0)
            return &object->items[i];
    return NULL;
}

static int as_count(const json *v, int64_t *out) {
    if (v == NULL || v->type != J_NUMBER || !v->is_int || v->integer < 0)
        return 0;
    *out = v->integer;
    return 1;
}

/* --- the model --------------------------------------------------------------------- */

typedef struct tensor_spec {
    char *name;
    int dtype;
    int32_t ndim;
    int64_t *shape;
    size_t nbytes;
} tensor_spec;

typedef struct call_state {
    struct call_state *next;
    void **buffers;  /* one per call-state global */
    void **mappings; /* what to munmap */
    size_t *lengths;
} call_state;

typedef struct model {
    size_t num_inputs, num_outputs, num_state;
    tensor_spec *inputs, *outputs;
    size_t *state_nbytes;
    pthread_mutex_t lock;
    call_state *idle;
    int threads;
    char *triple, *target, *features;
    int64_t peak_memory_bytes;
} model;

static const char *const DTYPE_NAMES[] = {NULL, "float16", "float32", "float64", "int8",
                                          "int16", "int32", "int64", "uint8", "bool"};

static int dtype_of(const char *name) {
    for (int i = 1; i <= 9; i++)
        if (strcmp(DTYPE_NAMES[i], name) == 0)
            return i;
    return 0;
}

static void free_specs(tensor_spec *specs, size_t count) {
    for (size_t i = 0; specs != NULL && i < count; i++) {
        free(specs[i].name);
        free(specs[i].shape);
    }
    free(specs);
}

/* A list of {name, shape, dtype} objects into tensor specs (a message on failure). */
static int read_specs(const json *list, const char *what, tensor_spec **out, size_t *count,
                      xweave_error *error) {
    *out = NULL;
    *count = 0;
    if (list == NULL || list->type != J_ARRAY)
        return fail(error, XWEAVE_ERROR_INTERNAL, "the model's description has no '%s' list", what);
    tensor_spec *specs = calloc(list->count ? list->count : 1, sizeof *specs);
    if (specs == NULL)
        return fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < list->count; i++) {
        const json *name = member(&list->items[i], "name");
        const json *shape = member(&list->items[i], "shape");
        const json *dtype = member(&list->items[i], "dtype");
        int code = 0;
        if (name == NULL || name->type != J_STRING || shape == NULL || shape->type != J_ARRAY
            || shape->count > 64 || dtype == NULL || dtype->type != J_STRING
            || (code = dtype_of(dtype->string)) == 0) {
            free_specs(specs, list->count);
            return fail(error, XWEAVE_ERROR_INTERNAL, "the model's description of %s %zu is "
                        "malformed", what, i);
        }
        specs[i].name = strdup(name->string);
        specs[i].dtype = code;
        specs[i].ndim = (int32_t)shape->count;
        specs[i].shape = calloc(shape->count ? shape->count : 1, sizeof(int64_t));
        if (specs[i].name == NULL || specs[i].shape == NULL) {
            free_specs(specs, list->count);
            return fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        size_t nbytes = xweave_dtype_size(code);
        for (size_t d = 0; d < shape->count; d++) {
            int64_t extent;
            if (!as_count(&shape->items[d], &extent)
                || (extent && nbytes > SIZE_MAX / (uint64_t)extent)) {
                free_specs(specs, list->count);
                return fail(error, XWEAVE_ERROR_INTERNAL, "the shape of %s '%s' is malformed",
                            what, name->string);
            }
            specs[i].shape[d] = extent;
            nbytes *= (size_t)extent;
        }
        specs[i].nbytes = nbytes;
    }
    *out = specs;
    *count = list->count;
    return XWEAVE_OK;
}

/* --- the CPU the code needs ------------------------------------------------------- */

/* Whether this CPU has `feature` (an LLVM feature name of the target's architecture;
 * names this runtime does not know are not checked). */
static int has_feature(const char *feature) {
#if defined(__x86_64__)
    unsigned a, b, c, d, ecx1 = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    unsigned long long xcr0 = 0;
    if (__get_cpuid(1, &a, &b, &c, &d))
        ecx1 = c;
    if (ecx1 & (1u << 27)) { /* OSXSAVE: the OS saves the vector registers it enabled */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (unsigned long long)hi << 32 | lo;
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        b7 = b;
        c7 = c;
        d7 = d;
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
        a71 = a;
    int avx = (xcr0 & 6) == 6, avx512 = (xcr0 & 0xe6) == 0xe6;
    static const struct { const char *name; int reg; unsigned bit; int state; } table[] = {
        {"sse4.2", 0, 20, 0}, {"avx", 0, 28, 1}, {"fma", 0, 12, 1}, {"f16c", 0, 29, 1},
        {"avx2", 1, 5, 1}, {"avx512f", 1, 16, 2}, {"avx512dq", 1, 17, 2},
        {"avx512cd", 1, 28, 2}, {"avx512bw", 1, 30, 2}, {"avx512vl", 1, 31, 2},
        {"avx512vnni", 2, 11, 2}, {"avx512fp16", 3, 23, 2}, {"avxvnni", 4, 4, 1},
        {"avx512bf16", 4, 5, 2},
    };
    unsigned regs[5] = {ecx1, b7, c7, d7, a71};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, feature) != 0)
            continue;
        int os = table[i].state == 0 || (table[i].state == 1 ? avx : avx512);
        return os && (regs[table[i].reg] >> table[i].bit & 1);
    }
    return 1;
#elif defined(__aarch64__)
    unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    if (strcmp(feature, "neon") == 0) return hwcap >> 1 & 1;
    if (strcmp(feature, "fullfp16") == 0) return hwcap >> 10 & 1;
    if (strcmp(feature, "dotprod") == 0) return hwcap >> 20 & 1;
    if (strcmp(feature, "sve") == 0) return hwcap >> 22 & 1;
    if (strcmp(feature, "i8mm") == 0) return hwcap2 >> 13 & 1;
    if (strcmp(feature, "bf16") == 0) return hwcap2 >> 14 & 1;
    return 1;
#elif defined(__riscv)
    unsigned long hwcap = getauxval(AT_HWCAP);
    if (strcmp(feature, "v") == 0) return hwcap >> ('V' - 'A') & 1;
    return 1;
#else
    (void)feature;
    return 1;
#endif
}

/* --- parameters -------------------------------------------------------------------- */

static pthread_once_t params_once = PTHREAD_ONCE_INIT;
static xweave_error params_error;

/* Point the object's parameter table at the weights: entry i (named by the object)
 * at the weights of the parameter of that name in the description (whose order the
 * export step wrote them in), after checking its size. Once per process: the table
 * belongs to the library, shared by every open model of it. */
static void bind_params_once(void) {
    json abi = {0};
    reader r = {xweave_abi, xweave_abi + xweave_abi_nbytes, 0};
    ok(&params_error);
    if (!parse_value(&r, &abi)) {
        fail(&params_error, XWEAVE_ERROR_INTERNAL, "the model's description is not valid JSON");
        return;
    }
    const json *params = member(&abi, "params");
    int64_t count = xweave_param_count;
    if (params == NULL || params->type != J_ARRAY || params->count != xweave_weights_count) {
        fail(&params_error, XWEAVE_ERROR_INTERNAL, "the library's weights do not match the "
             "model's parameters (%llu weights)", (unsigned long long)xweave_weights_count);
        goto done;
    }
    if (count > 0 && (xweave_param_table == NULL || xweave_param_names == NULL
                      || xweave_param_nbytes == NULL)) {
        fail(&params_error, XWEAVE_ERROR_INTERNAL, "the object has no parameter table");
        goto done;
    }
    tensor_spec *specs;
    size_t n;
    if (read_specs(params, "parameter", &specs, &n, &params_error) != XWEAVE_OK)
        goto done;
    const char *name = xweave_param_names;
    for (int64_t i = 0; i < count; i++, name += strlen(name) + 1) {
        size_t j = 0;
        while (j < n && strcmp(specs[j].name, name) != 0)
            j++;
        if (j == n) {
            fail(&params_error, XWEAVE_ERROR_INTERNAL, "no weights for parameter '%s'", name);
            break;
        }
        uint64_t begin = xweave_weights_offsets[j], end = xweave_weights_offsets[j + 1];
        if (specs[j].nbytes != (uint64_t)xweave_param_nbytes[i] || begin > end
            || end - begin < specs[j].nbytes || end > xweave_weights_offsets[n]) {
            fail(&params_error, XWEAVE_ERROR_INTERNAL, "the weights of parameter '%s' have "
                 "the wrong size (%lld bytes expected)", name, (long long)xweave_param_nbytes[i]);
            break;
        }
        xweave_param_table[i] = (void *)(xweave_weights + begin);
    }
    free_specs(specs, n);
done:
    json_free(&abi);
}

/* --- open / close ------------------------------------------------------------------- */

static int default_threads(int *threads, xweave_error *error) {
    const char *text = getenv("XWEAVE_NUM_THREADS");
    if (text != NULL && *text != '\0') {
        char *end;
        errno = 0;
        long value = strtol(text, &end, 10);
        while (*end == ' ')
            end++;
        if (errno || *end != '\0' || value < 1 || value > 4096)
            return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT,
                        "XWEAVE_NUM_THREADS='%.40s': expected a positive number of threads", text);
        *threads = (int)value;
        return XWEAVE_OK;
    }
    cpu_set_t set;
    *threads = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0
                   ? CPU_COUNT(&set) : 1;
    return XWEAVE_OK;
}

static void close_model(void *state);
static void governor_start(void);

static char *join_strings(const json *list) {
    size_t length = 1;
    for (size_t i = 0; list != NULL && list->type == J_ARRAY && i < list->count; i++)
        if (list->items[i].type == J_STRING)
            length += strlen(list->items[i].string) + 1;
    char *joined = calloc(length, 1);
    if (joined == NULL || list == NULL || list->type != J_ARRAY)
        return joined;
    for (size_t i = 0; i < list->count; i++) {
        if (list->items[i].type != J_STRING)
            continue;
        if (*joined)
            strcat(joined, ",");
        strcat(joined, list->items[i].string);
    }
    return joined;
}

static int open_model(void **state, xweave_error *error) {
    if (state == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "open: state is NULL");
    *state = NULL;
    if (xweave_entry == NULL)
        return fail(error, XWEAVE_ERROR_INTERNAL, "the library has no entry point (xweave_entry)");
    json abi = {0};
    reader r = {xweave_abi, xweave_abi + xweave_abi_nbytes, 0};
    if (xweave_abi_nbytes <= 0 || !parse_value(&r, &abi) || abi.type != J_OBJECT) {
        json_free(&abi);
        return fail(error, XWEAVE_ERROR_INTERNAL, "the model's description is not valid JSON");
    }
    int status = XWEAVE_OK;
    model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        json_free(&abi);
        return fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_init(&m->lock, NULL);
    int64_t version = -1;
    if (!as_count(member(&abi, "abi_version"), &version) || version != OBJECT_ABI_VERSION) {
        status = fail(error, XWEAVE_ERROR_ABI_VERSION, "the model's code has description "
                      "version %lld, this runtime reads version %d",
                      (long long)version, OBJECT_ABI_VERSION);
        goto done;
    }
    const json *target = member(&abi, "target");
    const json *triple = member(target, "triple"), *cpu = member(target, "cpu");
    const json *features = member(target, "features");
    if (triple == NULL || triple->type != J_STRING || cpu == NULL || cpu->type != J_STRING) {
        status = fail(error, XWEAVE_ERROR_INTERNAL, "the model's description names no target");
        goto done;
    }
    m->triple = strdup(triple->string);
    m->target = strdup(cpu->string);
    m->features = join_strings(features);
    if (m->triple == NULL || m->target == NULL || m->features == NULL) {
        status = fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; features != NULL && features->type == J_ARRAY && i < features->count; i++) {
        const json *f = &features->items[i];
        if (f->type == J_STRING && !has_feature(f->string)) {
            status = fail(error, XWEAVE_ERROR_WRONG_TARGET, "the model was compiled for '%s', "
                          "and this CPU lacks %s", m->target, f->string);
            goto done;
        }
    }
    if ((status = read_specs(member(&abi, "inputs"), "input", &m->inputs, &m->num_inputs, error))
        || (status = read_specs(member(&abi, "outputs"), "output", &m->outputs, &m->num_outputs,
                                error)))
        goto done;
    const json *call_state = member(&abi, "call_state");
    if (call_state == NULL || call_state->type != J_ARRAY) {
        status = fail(error, XWEAVE_ERROR_INTERNAL, "the model's description has no call state");
        goto done;
    }
    m->num_state = call_state->count;
    m->state_nbytes = calloc(m->num_state ? m->num_state : 1, sizeof(size_t));
    if (m->state_nbytes == NULL) {
        status = fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < m->num_state; i++) {
        int64_t nbytes;
        if (!as_count(member(&call_state->items[i], "nbytes"), &nbytes)) {
            status = fail(error, XWEAVE_ERROR_INTERNAL, "the call state's size is malformed");
            goto done;
        }
        m->state_nbytes[i] = (size_t)nbytes;
    }
    int64_t peak = -1;
    m->peak_memory_bytes = as_count(member(&abi, "peak_memory_bytes"), &peak) ? peak : -1;
    if ((status = default_threads(&m->threads, error)) != XWEAVE_OK)
        goto done;
    governor_start();
    pthread_once(&params_once, bind_params_once);
    if (params_error.code != XWEAVE_OK) {
        status = fail(error, params_error.code, "%s", params_error.message);
        goto done;
    }
done:
    json_free(&abi);
    if (status != XWEAVE_OK) {
        close_model(m);
        return status;
    }
    *state = m;
    return ok(error);
}

static void free_call_state(call_state *s, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (s->mappings[i] != NULL)
            munmap(s->mappings[i], s->lengths[i]);
    free(s->buffers);
    free(s->mappings);
    free(s->lengths);
    free(s);
}

static void close_model(void *state) {
    model *m = state;
    if (m == NULL)
        return;
    while (m->idle != NULL) {
        call_state *next = m->idle->next;
        free_call_state(m->idle, m->num_state);
        m->idle = next;
    }
    free_specs(m->inputs, m->num_inputs);
    free_specs(m->outputs, m->num_outputs);
    free(m->state_nbytes);
    free(m->triple);
    free(m->target);
    free(m->features);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* --- description --------------------------------------------------------------------- */

static size_t num_inputs(const void *state) { return state ? ((const model *)state)->num_inputs : 0; }
static size_t num_outputs(const void *state) { return state ? ((const model *)state)->num_outputs : 0; }

static int tensor_info(const tensor_spec *specs, size_t count, const char *what, size_t index,
                       xweave_tensor_info *info, xweave_error *error) {
    if (info == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_%s_info: info is NULL", what);
    if (index >= count)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_%s_info: no %s %zu (the "
                    "model has %zu)", what, what, index, count);
    info->name = specs[index].name;
    info->dtype = (xweave_dtype)specs[index].dtype;
    info->ndim = specs[index].ndim;
    info->shape = specs[index].shape;
    info->nbytes = specs[index].nbytes;
    return ok(error);
}

static int input_info(const void *state, size_t index, xweave_tensor_info *info, xweave_error *error) {
    const model *m = state;
    if (m == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_input_info: model is NULL");
    return tensor_info(m->inputs, m->num_inputs, "input", index, info, error);
}

static int output_info(const void *state, size_t index, xweave_tensor_info *info, xweave_error *error) {
    const model *m = state;
    if (m == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_output_info: model is NULL");
    return tensor_info(m->outputs, m->num_outputs, "output", index, info, error);
}

static int target_info(const void *state, xweave_target_info *info, xweave_error *error) {
    const model *m = state;
    if (m == NULL || info == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_get_target: %s is NULL",
                    m == NULL ? "model" : "info");
    info->triple = m->triple;
    info->target = m->target;
    info->features = m->features;
    info->peak_memory_bytes = m->peak_memory_bytes;
    return ok(error);
}

/* --- threads ------------------------------------------------------------------------- */

static int set_num_threads(void *state, int threads, xweave_error *error) {
    model *m = state;
    if (m == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_set_num_threads: model is NULL");
    if (threads < 1)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_set_num_threads: threads must "
                    "be a positive integer, got %d", threads);
    __atomic_store_n(&m->threads, threads, __ATOMIC_RELAXED);
    return ok(error);
}

static int num_threads(const void *state) {
    return state ? __atomic_load_n(&((const model *)state)->threads, __ATOMIC_RELAXED) : 0;
}

/* --- running ------------------------------------------------------------------------- */

/* The thread count that does not oversubscribe the machine now (runtime/threads.py's
 * ThreadGovernor): a parallel region waits for its slowest thread, and a worker whose
 * core another process keeps busy makes every call wait for the scheduler. Every
 * CHECK_SECONDS at most, the runnable tasks of the machine (/proc/loadavg) less those
 * of the caller's own team give the cores free; the larger of the last two samples
 * counts. It only ever lowers the count asked for. */
#define CHECK_SECONDS 0.01

static struct {
    pthread_mutex_t lock;
    int fd, cores, online, cap, last;
    double next_check;
} governor = {PTHREAD_MUTEX_INITIALIZER, -2, 1, 1, 1, 1, 0.0};

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* One sample of the cores free for a team of `team` threads (the lock held). */
static void governor_sample(double now, int team) {
    char text[128];
    ssize_t n = pread(governor.fd, text, sizeof text - 1, 0);
    governor.next_check = now + CHECK_SECONDS;
    if (n <= 0)
        return;
    text[n] = '\0';
    const char *field = text;
    for (int spaces = 0; *field && spaces < 3; field++)
        spaces += *field == ' ';
    long running = strtol(field, NULL, 10);
    int sample = governor.online - (int)running + team;
    sample = sample < 1 ? 1 : sample > governor.cores ? governor.cores : sample;
    governor.cap = sample > governor.last ? sample : governor.last;
    governor.last = sample;
}

/* Start the governor (once per process, at the first open): its first sample is taken
 * now, so that a model's first call, which also samples, can already see a busy
 * machine (two samples agreeing), where the Python runtime's first call cannot. */
static void governor_start(void) {
    pthread_mutex_lock(&governor.lock);
    if (governor.fd == -2) {
        cpu_set_t set;
        governor.cores = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0
                             ? CPU_COUNT(&set) : 1;
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        governor.online = online > 0 ? (int)online : governor.cores;
        governor.cap = governor.last = governor.cores;
        governor.fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        if (governor.fd >= 0) {
            governor_sample(seconds(), 1);
            governor.cap = governor.cores;
            governor.next_check = 0.0;
        }
    }
    pthread_mutex_unlock(&governor.lock);
}

static int governed_threads(int wanted, int team) {
    if (__atomic_load_n(&governor.fd, __ATOMIC_RELAXED) < 0)
        return wanted;
    double now = seconds();
    pthread_mutex_lock(&governor.lock);
    if (now >= governor.next_check)
        governor_sample(now, team);
    int cap = governor.cap;
    pthread_mutex_unlock(&governor.lock);
    return wanted < cap ? wanted : cap;
}

#define HUGE_PAGE (2u << 20)

/* A new call state: one zero-filled, page-aligned buffer per call-state global (from
 * 2 MB on, 2 MB-aligned and advised to transparent huge pages, as runtime/arena.py). */
static call_state *new_call_state(const model *m) {
    call_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    size_t n = m->num_state ? m->num_state : 1;
    s->buffers = calloc(n, sizeof(void *));
    s->mappings = calloc(n, sizeof(void *));
    s->lengths = calloc(n, sizeof(size_t));
    if (s->buffers == NULL || s->mappings == NULL || s->lengths == NULL) {
        free_call_state(s, 0);
        return NULL;
    }
    for (size_t i = 0; i < m->num_state; i++) {
        size_t nbytes = m->state_nbytes[i] ? m->state_nbytes[i] : 1;
        int huge = nbytes >= HUGE_PAGE;
        size_t length = huge ? nbytes + HUGE_PAGE : nbytes;
        if (length < nbytes) {
            free_call_state(s, i);
            return NULL;
        }
        void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            free_call_state(s, i);
            return NULL;
        }
        s->mappings[i] = p;
        s->lengths[i] = length;
        uintptr_t start = (uintptr_t)p;
        if (huge) {
            start = (start + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
#ifdef MADV_HUGEPAGE
            madvise((void *)start, (nbytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1),
                    MADV_HUGEPAGE);
#endif
        }
        s->buffers[i] = (void *)start;
    }
    return s;
}

static int check_tensors(const tensor_spec *specs, size_t expected, const xweave_tensor *given,
                         size_t count, const char *what, xweave_error *error) {
    if (count != expected)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: %zu %ss given, the "
                    "model has %zu", count, what, expected);
    if (given == NULL && count > 0)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: the %ss are NULL", what);
    for (size_t i = 0; i < count; i++) {
        const tensor_spec *spec = &specs[i];
        if ((int)given[i].dtype != spec->dtype) {
            const char *name = xweave_dtype_name(given[i].dtype);
            char unknown[32];
            if (name == NULL) {
                snprintf(unknown, sizeof unknown, "dtype code %d", (int)given[i].dtype);
                name = unknown;
            }
            return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: %s %zu '%s': expected "
                        "dtype %s, got %s", what, i, spec->name, DTYPE_NAMES[spec->dtype], name);
        }
        if (given[i].nbytes != spec->nbytes)
            return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: %s %zu '%s': expected "
                        "%zu bytes, got %zu", what, i, spec->name, spec->nbytes, given[i].nbytes);
        if (given[i].data == NULL && spec->nbytes > 0)
            return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: %s %zu '%s': data is "
                        "NULL", what, i, spec->name);
    }
    return XWEAVE_OK;
}

static int overlap(const xweave_tensor *a, const xweave_tensor *b) {
    uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a->nbytes && b->nbytes && a0 < b0 + b->nbytes && b0 < a0 + a->nbytes;
}

static int run(void *state, const xweave_tensor *inputs, size_t n_inputs,
               const xweave_tensor *outputs, size_t n_outputs, xweave_error *error) {
    model *m = state;
    if (m == NULL)
        return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: model is NULL");
    int status;
    if ((status = check_tensors(m->inputs, m->num_inputs, inputs, n_inputs, "input", error))
        || (status = check_tensors(m->outputs, m->num_outputs, outputs, n_outputs, "output", error)))
        return status;
    for (size_t i = 0; i < n_outputs; i++) {
        for (size_t j = 0; j < n_inputs; j++)
            if (overlap(&outputs[i], &inputs[j]))
                return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: output %zu '%s' "
                            "overlaps input %zu '%s'", i, m->outputs[i].name, j, m->inputs[j].name);
        for (size_t j = 0; j < i; j++)
            if (overlap(&outputs[i], &outputs[j]))
                return fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: output %zu '%s' "
                            "overlaps output %zu '%s'", i, m->outputs[i].name, j, m->outputs[j].name);
    }
    call_state *s = NULL;
    if (m->num_state) {
        pthread_mutex_lock(&m->lock);
        s = m->idle;
        if (s != NULL)
            m->idle = s->next;
        pthread_mutex_unlock(&m->lock);
        if (s == NULL && (s = new_call_state(m)) == NULL)
            return fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "xweave_run: cannot allocate the "
                        "call's memory (%lld bytes)", (long long)m->peak_memory_bytes);
    }
    size_t count = n_inputs + n_outputs + m->num_state;
    void *fixed[64], **args = count <= 64 ? fixed : malloc(count * sizeof(void *));
    if (args == NULL) {
        status = fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "xweave_run: out of memory");
        goto give_back;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_inputs; i++)
        args[k++] = inputs[i].data;
    for (size_t i = 0; i < n_outputs; i++)
        args[k++] = outputs[i].data;
    for (size_t i = 0; i < m->num_state; i++)
        args[k++] = s->buffers[i];
    if (&xweave_num_threads != NULL) { /* the object's parallel loops read it at each region */
        int team = __atomic_load_n(&xweave_num_threads, __ATOMIC_RELAXED);
        int threads = governed_threads(__atomic_load_n(&m->threads, __ATOMIC_RELAXED),
                                       team > 0 ? team : 1);
        if (team != threads)
            __atomic_store_n(&xweave_num_threads, threads, __ATOMIC_RELAXED);
    }
    xweave_entry(args);
    if (args != fixed)
        free(args);
    status = ok(error);
give_back:
    if (s != NULL) {
        pthread_mutex_lock(&m->lock);
        s->next = m->idle;
        m->idle = s;
        pthread_mutex_unlock(&m->lock);
    }
    return status;
}

/* --- the table ------------------------------------------------------------------------ */

__attribute__((visibility("default")))
const xweave_library_table xweave_library = {
    XWEAVE_LIBRARY_MAGIC, XWEAVE_ABI_VERSION, (uint32_t)sizeof(xweave_library_table), 0,
    open_model, close_model, num_inputs, num_outputs, input_info, output_info, run,
    set_num_threads, num_threads, target_info,
};
