/*
 * xweave.h - the C API of a model compiled by xweave into a shared library.
 *
 *     xweave compile model.onnx -o model.so        (or module.export_library("model.so"))
 *     cc app.c -I"$(xweave include-dir)" -o app    (glibc < 2.34: add -ldl)
 *
 *     xweave_error err;
 *     xweave_model *model;
 *     if (xweave_open("model.so", &model, &err) != XWEAVE_OK) { puts(err.message); ... }
 *     xweave_tensor in = {x, sizeof x, XWEAVE_FLOAT32}, out = {y, sizeof y, XWEAVE_FLOAT32};
 *     if (xweave_run(model, &in, 1, &out, 1, &err) != XWEAVE_OK) { puts(err.message); ... }
 *     xweave_close(model);
 *
 * A model library holds the model's kernels, weights, call plan and signature, and the
 * runtime below; it needs libc, libm and libgomp (its parallel loops), nothing else.
 * The functions of this header are the loader, compiled into the program that uses
 * the library: `xweave_open` checks the file (a whole ELF shared library for this
 * machine, carrying a model of this ABI version) before the dynamic loader maps it,
 * then every call goes through the library's own function table (`xweave_library`).
 * One program can open several models, and one model several times.
 *
 * Threads: `xweave_run` may be called from any number of threads at once on one
 * model; every call takes its own memory for intermediate results (from a pool the
 * model keeps, one block per call ever in flight at once). Parallel loops run on
 * `xweave_set_num_threads` threads (default: $XWEAVE_NUM_THREADS, else every core the
 * process may run on).
 *
 * Errors: every function that can fail returns an `xweave_status` and, when given an
 * `xweave_error`, writes the same code and a one-line message into it. No input
 * (NULL pointers, a wrong count, size or dtype of a buffer, a file that is not a
 * model library, truncated, for another architecture or ABI) makes them crash.
 */
#ifndef XWEAVE_H
#define XWEAVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API and of the `xweave_library` table a library exports. A
 * library of another version is refused by `xweave_open`. */
#define XWEAVE_ABI_VERSION 1
#define XWEAVE_LIBRARY_MAGIC 0x6c777878u /* "xxwl" */

typedef enum xweave_status {
    XWEAVE_OK = 0,
    XWEAVE_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, index, count, size, dtype, overlap */
    XWEAVE_ERROR_IO = 2,               /* the file cannot be opened or read */
    XWEAVE_ERROR_NOT_A_MODEL = 3,      /* not an xweave model library, damaged, truncated */
    XWEAVE_ERROR_WRONG_TARGET = 4,     /* for another architecture, or CPU features missing */
    XWEAVE_ERROR_ABI_VERSION = 5,      /* built for another version of this API */
    XWEAVE_ERROR_OUT_OF_MEMORY = 6,
    XWEAVE_ERROR_INTERNAL = 7          /* the library's description of itself is inconsistent */
} xweave_status;

/* Element types (numpy's names). */
typedef enum xweave_dtype {
    XWEAVE_FLOAT16 = 1,
    XWEAVE_FLOAT32 = 2,
    XWEAVE_FLOAT64 = 3,
    XWEAVE_INT8 = 4,
    XWEAVE_INT16 = 5,
    XWEAVE_INT32 = 6,
    XWEAVE_INT64 = 7,
    XWEAVE_UINT8 = 8,
    XWEAVE_BOOL = 9
} xweave_dtype;

#define XWEAVE_MESSAGE_SIZE 512

/* Where a failing call says what went wrong (pass NULL not to be told). */
typedef struct xweave_error {
    int code; /* an xweave_status */
    char message[XWEAVE_MESSAGE_SIZE];
} xweave_error;

/* A model input or output: its name, element type and static shape (C order). The
 * pointers stay valid until the model is closed. */
typedef struct xweave_tensor_info {
    const char *name;
    xweave_dtype dtype;
    int32_t ndim;
    const int64_t *shape;
    size_t nbytes; /* the product of the shape times the element's size */
} xweave_tensor_info;

/* A caller-owned buffer given to xweave_run: contiguous, C order, `nbytes` long, of
 * the model's element type. Outputs must not overlap each other or the inputs. */
typedef struct xweave_tensor {
    void *data;
    size_t nbytes;
    xweave_dtype dtype;
} xweave_tensor;

/* What a library was compiled for. */
typedef struct xweave_target_info {
    const char *triple;   /* LLVM triple, e.g. "aarch64-linux-gnu" */
    const char *target;   /* the resolved xweave target, "llvm -mtriple=... -mcpu=cortex-a72" */
    const char *features; /* the CPU features the code uses, comma-separated */
    int64_t peak_memory_bytes; /* memory of one call's intermediate results */
} xweave_target_info;

/* The table every model library exports under the name `xweave_library`; the
 * functions below call through it. Its layout is fixed for an ABI version. */
typedef struct xweave_library_table {
    uint32_t magic;       /* XWEAVE_LIBRARY_MAGIC */
    uint32_t abi_version; /* XWEAVE_ABI_VERSION of the library */
    uint32_t size;        /* sizeof(xweave_library_table) of the library */
    uint32_t reserved;
    int (*open)(void **state, xweave_error *error);
    void (*close)(void *state);
    size_t (*num_inputs)(const void *state);
    size_t (*num_outputs)(const void *state);
    int (*input_info)(const void *state, size_t index, xweave_tensor_info *info,
                      xweave_error *error);
    int (*output_info)(const void *state, size_t index, xweave_tensor_info *info,
                       xweave_error *error);
    int (*run)(void *state, const xweave_tensor *inputs, size_t num_inputs,
               const xweave_tensor *outputs, size_t num_outputs, xweave_error *error);
    int (*set_num_threads)(void *state, int threads, xweave_error *error);
    int (*num_threads)(const void *state);
    int (*target_info)(const void *state, xweave_target_info *info, xweave_error *error);
} xweave_library_table;

/* An open model (from xweave_open, until xweave_close). */
typedef struct xweave_model {
    const xweave_library_table *library;
    void *state;
    void *handle; /* the dynamic loader's */
} xweave_model;

/* The name of a status ("XWEAVE_ERROR_IO", ...). */
static inline const char *xweave_status_name(int status) {
    switch (status) {
    case XWEAVE_OK: return "XWEAVE_OK";
    case XWEAVE_ERROR_INVALID_ARGUMENT: return "XWEAVE_ERROR_INVALID_ARGUMENT";
    case XWEAVE_ERROR_IO: return "XWEAVE_ERROR_IO";
    case XWEAVE_ERROR_NOT_A_MODEL: return "XWEAVE_ERROR_NOT_A_MODEL";
    case XWEAVE_ERROR_WRONG_TARGET: return "XWEAVE_ERROR_WRONG_TARGET";
    case XWEAVE_ERROR_ABI_VERSION: return "XWEAVE_ERROR_ABI_VERSION";
    case XWEAVE_ERROR_OUT_OF_MEMORY: return "XWEAVE_ERROR_OUT_OF_MEMORY";
    case XWEAVE_ERROR_INTERNAL: return "XWEAVE_ERROR_INTERNAL";
    default: return "XWEAVE_ERROR_UNKNOWN";
    }
}

/* The size of one element of `dtype` (0: not a dtype). */
static inline size_t xweave_dtype_size(int dtype) {
    switch (dtype) {
    case XWEAVE_FLOAT16: case XWEAVE_INT16: return 2;
    case XWEAVE_FLOAT32: case XWEAVE_INT32: return 4;
    case XWEAVE_FLOAT64: case XWEAVE_INT64: return 8;
    case XWEAVE_INT8: case XWEAVE_UINT8: case XWEAVE_BOOL: return 1;
    default: return 0;
    }
}

/* numpy's name of `dtype` ("float32", ...; NULL: not a dtype). */
static inline const char *xweave_dtype_name(int dtype) {
    static const char *const names[] = {NULL, "float16", "float32", "float64", "int8",
                                        "int16", "int32", "int64", "uint8", "bool"};
    return dtype >= 1 && dtype <= 9 ? names[dtype] : NULL;
}

#ifndef XWEAVE_BUILDING_LIBRARY /* the loader: compiled into the program */

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__x86_64__)
#define XWEAVE__MACHINE 62
#elif defined(__aarch64__)
#define XWEAVE__MACHINE 183
#elif defined(__riscv) && __riscv_xlen == 64
#define XWEAVE__MACHINE 243
#else
#define XWEAVE__MACHINE 0
#endif

static inline int xweave__fail(xweave_error *error, int code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline int xweave__fail(xweave_error *error, int code, const char *format, ...) {
    if (error != NULL) {
        va_list args;
        va_start(args, format);
        error->code = code;
        vsnprintf(error->message, sizeof error->message, format, args);
        va_end(args);
    }
    return code;
}

static inline int xweave__ok(xweave_error *error) {
    if (error != NULL) {
        error->code = XWEAVE_OK;
        error->message[0] = '\0';
    }
    return XWEAVE_OK;
}

static inline const char *xweave__machine_name(unsigned machine) {
    switch (machine) {
    case 62: return "x86_64";
    case 183: return "aarch64";
    case 243: return "riscv64";
    default: return NULL;
    }
}

static inline uint64_t xweave__u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static inline uint32_t xweave__u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int xweave__read_at(FILE *file, uint64_t offset, void *buffer, size_t size) {
    return fseek(file, (long)offset, SEEK_SET) == 0 && fread(buffer, 1, size, file) == size;
}

static inline size_t xweave__strnlen(const char *s, size_t limit) {
    size_t n = 0;
    while (n < limit && s[n] != '\0')
        n++;
    return n;
}

/* Check `path` before the dynamic loader maps it: a whole 64-bit little-endian ELF
 * shared library for this machine, with an xweave note of this ABI version. */
static inline int xweave__check_file(const char *path, xweave_error *error) {
    struct stat st;
    if (stat(path, &st) != 0)
        return xweave__fail(error, XWEAVE_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return xweave__fail(error, XWEAVE_ERROR_IO, "%s: not a regular file", path);
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return xweave__fail(error, XWEAVE_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char head[64];
    int status = XWEAVE_OK, found = 0;
    unsigned char *phdrs = NULL, *note = NULL;
    uint64_t size = 0, phoff, shoff;
    unsigned type, machine, phentsize, phnum, shentsize, shnum;
    uint32_t version = 0;
    char triple[128] = "", target[256] = "";
    if (fseek(file, 0, SEEK_END) == 0 && ftell(file) > 0)
        size = (uint64_t)ftell(file);
    if (size < 64 || !xweave__read_at(file, 0, head, 64) || memcmp(head, "\177ELF", 4) != 0) {
        status = xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                              "%s: not a model library (not an ELF file)", path);
        goto done;
    }
    if (head[4] != 2 || head[5] != 1) {
        status = xweave__fail(error, XWEAVE_ERROR_WRONG_TARGET,
                              "%s: not a 64-bit little-endian library", path);
        goto done;
    }
    type = head[16] | head[17] << 8;
    machine = head[18] | head[19] << 8;
    phoff = xweave__u64(head + 32);
    shoff = xweave__u64(head + 40);
    phentsize = head[54] | head[55] << 8;
    phnum = head[56] | head[57] << 8;
    shentsize = head[58] | head[59] << 8;
    shnum = head[60] | head[61] << 8;
    if (type != 3) {
        status = xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                              "%s: not a model library (not a shared library)", path);
        goto done;
    }
    if (phnum == 0 || phentsize < 56 || phoff > size || (uint64_t)phnum * phentsize > size - phoff
        || shoff > size || (uint64_t)shnum * shentsize > size - shoff) {
        status = xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                              "%s: the file is truncated or damaged (its headers end past the "
                              "end of the file, %llu bytes)", path, (unsigned long long)size);
        goto done;
    }
    phdrs = (unsigned char *)malloc((size_t)phnum * phentsize);
    if (phdrs == NULL) {
        status = xweave__fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    if (!xweave__read_at(file, phoff, phdrs, (size_t)phnum * phentsize)) {
        status = xweave__fail(error, XWEAVE_ERROR_IO, "%s: cannot read the file", path);
        goto done;
    }
    for (unsigned i = 0; i < phnum && status == XWEAVE_OK; i++) {
        const unsigned char *ph = phdrs + (size_t)i * phentsize;
        uint32_t p_type = xweave__u32(ph);
        uint64_t offset = xweave__u64(ph + 8), filesz = xweave__u64(ph + 32);
        if (offset > size || filesz > size - offset) {
            status = xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                                  "%s: the file is truncated (a segment ends past the end of "
                                  "the file, %llu bytes)", path, (unsigned long long)size);
            break;
        }
        if (p_type != 4 || found || filesz > (1u << 20))
            continue;
        free(note);
        note = (unsigned char *)malloc(filesz + 1);
        if (note == NULL || !xweave__read_at(file, offset, note, filesz))
            continue;
        for (uint64_t at = 0; at + 12 <= filesz;) {
            uint32_t namesz = xweave__u32(note + at), descsz = xweave__u32(note + at + 4);
            uint32_t kind = xweave__u32(note + at + 8);
            uint64_t name_at = at + 12, desc_at = name_at + ((namesz + 3ull) & ~3ull);
            uint64_t next = desc_at + ((descsz + 3ull) & ~3ull);
            if (next > filesz)
                break;
            if (kind == 1 && namesz == 7 && memcmp(note + name_at, "xweave", 7) == 0
                && descsz >= 8) {
                found = 1;
                version = xweave__u32(note + desc_at);
                /* the strings: triple, target, features, NUL-terminated */
                const char *s = (const char *)note + desc_at + 8, *end = s + (descsz - 8);
                size_t n = xweave__strnlen(s, (size_t)(end - s));
                snprintf(triple, sizeof triple, "%.*s", (int)n, s);
                if (s + n < end) {
                    s += n + 1;
                    n = xweave__strnlen(s, (size_t)(end - s));
                    snprintf(target, sizeof target, "%.*s", (int)n, s);
                }
                break;
            }
            at = next;
        }
    }
    if (status != XWEAVE_OK)
        goto done;
    if (machine != XWEAVE__MACHINE) {
        const char *name = xweave__machine_name(machine);
        const char *here = xweave__machine_name(XWEAVE__MACHINE);
        if (found)
            status = xweave__fail(error, XWEAVE_ERROR_WRONG_TARGET,
                                  "%s: the model was compiled for %s ('%s'), this program "
                                  "runs on %s", path, triple, target, here ? here : "another machine");
        else if (name != NULL)
            status = xweave__fail(error, XWEAVE_ERROR_WRONG_TARGET,
                                  "%s: a library for %s, this program runs on %s", path, name,
                                  here ? here : "another machine");
        else
            status = xweave__fail(error, XWEAVE_ERROR_WRONG_TARGET,
                                  "%s: a library for ELF machine %u, this program runs on %s",
                                  path, machine, here ? here : "another machine");
        goto done;
    }
    if (!found) {
        status = xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                              "%s: not an xweave model library (no xweave note)", path);
        goto done;
    }
    if (version != XWEAVE_ABI_VERSION) {
        status = xweave__fail(error, XWEAVE_ERROR_ABI_VERSION,
                              "%s: the library has xweave ABI version %u, this program was "
                              "built for version %d (compile the model with a matching xweave, "
                              "or rebuild the program with its xweave.h)",
                              path, (unsigned)version, XWEAVE_ABI_VERSION);
        goto done;
    }
done:
    free(phdrs);
    free(note);
    fclose(file);
    return status;
}

/* Open the model library at `path` into `*model` (set to NULL on failure). */
static inline int xweave_open(const char *path, xweave_model **model, xweave_error *error) {
    if (model != NULL)
        *model = NULL;
    if (path == NULL || model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT,
                            "xweave_open: %s is NULL", path == NULL ? "path" : "model");
    int status = xweave__check_file(path, error);
    if (status != XWEAVE_OK)
        return status;
    /* A name without a slash would be looked up in the library path, not opened. */
    char *relative = NULL;
    if (strchr(path, '/') == NULL) {
        relative = (char *)malloc(strlen(path) + 3);
        if (relative == NULL)
            return xweave__fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        memcpy(relative, "./", 2);
        memcpy(relative + 2, path, strlen(path) + 1);
    }
    dlerror();
    void *handle = dlopen(relative ? relative : path, RTLD_NOW | RTLD_LOCAL);
    free(relative);
    if (handle == NULL) {
        const char *why = dlerror();
        return xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL, "%s: cannot load: %s", path,
                            why ? why : "unknown error");
    }
    /* The library's worker threads (libgomp's) may outlive its last xweave_close: keep
     * their code mapped for good. */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    const xweave_library_table *library = (const xweave_library_table *)dlsym(handle, "xweave_library");
    if (library == NULL || library->magic != XWEAVE_LIBRARY_MAGIC) {
        dlclose(handle);
        return xweave__fail(error, XWEAVE_ERROR_NOT_A_MODEL,
                            "%s: not an xweave model library (no xweave_library table)", path);
    }
    if (library->abi_version != XWEAVE_ABI_VERSION || library->size < sizeof(xweave_library_table)) {
        unsigned version = library->abi_version;
        dlclose(handle);
        return xweave__fail(error, XWEAVE_ERROR_ABI_VERSION,
                            "%s: the library has xweave ABI version %u, this program was "
                            "built for version %d", path, version, XWEAVE_ABI_VERSION);
    }
    xweave_model *opened = (xweave_model *)malloc(sizeof *opened);
    if (opened == NULL) {
        dlclose(handle);
        return xweave__fail(error, XWEAVE_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    opened->library = library;
    opened->handle = handle;
    opened->state = NULL;
    status = library->open(&opened->state, error);
    if (status != XWEAVE_OK) {
        if (error != NULL) { /* name the file */
            char message[XWEAVE_MESSAGE_SIZE];
            snprintf(message, sizeof message, "%.200s: %.300s", path, error->message);
            memcpy(error->message, message, sizeof message);
        }
        dlclose(handle);
        free(opened);
        return status;
    }
    *model = opened;
    return xweave__ok(error);
}

/* Close a model (NULL: nothing). No call may be running on it. */
static inline void xweave_close(xweave_model *model) {
    if (model == NULL)
        return;
    model->library->close(model->state);
    dlclose(model->handle);
    free(model);
}

/* The number of inputs (outputs) of the model (0 for NULL). */
static inline size_t xweave_num_inputs(const xweave_model *model) {
    return model == NULL ? 0 : model->library->num_inputs(model->state);
}

static inline size_t xweave_num_outputs(const xweave_model *model) {
    return model == NULL ? 0 : model->library->num_outputs(model->state);
}

/* Name, dtype and shape of input (output) `index`, in the model's order. */
static inline int xweave_input_info(const xweave_model *model, size_t index,
                                    xweave_tensor_info *info, xweave_error *error) {
    if (model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_input_info: model is NULL");
    return model->library->input_info(model->state, index, info, error);
}

static inline int xweave_output_info(const xweave_model *model, size_t index,
                                     xweave_tensor_info *info, xweave_error *error) {
    if (model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_output_info: model is NULL");
    return model->library->output_info(model->state, index, info, error);
}

/* Run the model: one buffer per input and per output, in the model's order. Safe
 * from several threads at once. */
static inline int xweave_run(xweave_model *model, const xweave_tensor *inputs, size_t num_inputs,
                             const xweave_tensor *outputs, size_t num_outputs,
                             xweave_error *error) {
    if (model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_run: model is NULL");
    return model->library->run(model->state, inputs, num_inputs, outputs, num_outputs, error);
}

/* Run the parallel loops of this model's later calls on `threads` threads (>= 1). */
static inline int xweave_set_num_threads(xweave_model *model, int threads, xweave_error *error) {
    if (model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT,
                            "xweave_set_num_threads: model is NULL");
    return model->library->set_num_threads(model->state, threads, error);
}

/* The thread count of the model's parallel loops (0 for NULL). */
static inline int xweave_num_threads(const xweave_model *model) {
    return model == NULL ? 0 : model->library->num_threads(model->state);
}

/* What the library was compiled for (strings valid until the model is closed). */
static inline int xweave_get_target(const xweave_model *model, xweave_target_info *info,
                                    xweave_error *error) {
    if (model == NULL)
        return xweave__fail(error, XWEAVE_ERROR_INVALID_ARGUMENT, "xweave_get_target: model is NULL");
    return model->library->target_info(model->state, info, error);
}

#endif /* XWEAVE_BUILDING_LIBRARY */

#ifdef __cplusplus
}
#endif

#endif /* XWEAVE_H */
