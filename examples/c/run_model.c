/*
 * run_model: run a model library of xweave from C, on inputs and outputs in numpy's
 * .npy format.
 *
 *     run_model MODEL.so IN.npy [IN2.npy ...] -o OUT.npy [--repeat N] [--threads T]
 *
 * One .npy per model input, in the model's input order (C order, the dtype the model
 * declares); the first output is written to OUT.npy. With --repeat N, the model runs
 * N more times and the median time per run is printed (with the time xweave_open and
 * the first run took). Build it with any C compiler:
 *
 *     cc -O2 -I"$(xweave include-dir)" examples/c/run_model.c -o run_model
 *     aarch64-linux-gnu-gcc -O2 -I"$(xweave include-dir)" examples/c/run_model.c -o run_model.arm64
 *
 * (add -ldl with a glibc older than 2.34).
 */
#define _POSIX_C_SOURCE 200809L
#include "xweave.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *format, const char *a, const char *b) {
    fprintf(stderr, "run_model: error: ");
    fprintf(stderr, format, a, b);
    fputc('\n', stderr);
    exit(1);
}

static const char *const DESCRS[] = {NULL, "f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "b1"};

/* The dtype of a .npy 'descr' ("<f4", "|u1", ...; 0: not one the models use). */
static int dtype_of_descr(const char *descr) {
    if (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')
        return 0; /* big-endian */
    for (int i = 1; i <= 9; i++)
        if (strcmp(descr + 1, DESCRS[i]) == 0)
            return i;
    return 0;
}

/* Read `path` (a .npy of the shape and dtype of `info`) into a new buffer. */
static void *read_npy(const char *path, const xweave_tensor_info *info) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die("%s: cannot open%s", path, "");
    unsigned char magic[10];
    if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0)
        die("%s: not a .npy file%s", path, "");
    size_t header_length = magic[8] | magic[9] << 8;
    if (magic[6] >= 2) { /* versions 2 and 3: a 4-byte length */
        unsigned char more[2];
        if (fread(more, 1, 2, f) != 2)
            die("%s: truncated .npy header%s", path, "");
        header_length |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
    }
    if (header_length > 1 << 20)
        die("%s: malformed .npy header%s", path, "");
    char *header = calloc(header_length + 1, 1);
    if (header == NULL || fread(header, 1, header_length, f) != header_length)
        die("%s: truncated .npy header%s", path, "");
    char descr[16] = "";
    const char *d = strstr(header, "'descr':");
    const char *o = strstr(header, "'fortran_order':");
    const char *s = strstr(header, "'shape':");
    if (d == NULL || o == NULL || s == NULL || sscanf(d, "'descr': '%15[^']'", descr) != 1)
        die("%s: malformed .npy header%s", path, "");
    if (strncmp(o + 16 + strspn(o + 16, " "), "False", 5) != 0)
        die("%s: Fortran-ordered arrays are not read (save a C-ordered one)%s", path, "");
    int dtype = dtype_of_descr(descr);
    if (dtype != (int)info->dtype) {
        char want[64];
        snprintf(want, sizeof want, "%s (input '%s')", xweave_dtype_name(info->dtype), info->name);
        die("%s: dtype differs from the model's: expected %s", path, want);
    }
    s = strchr(s, '(');
    int ndim = 0;
    int64_t shape[64];
    while (s != NULL && *++s != ')') {
        char *end;
        long long extent = strtoll(s, &end, 10);
        if (end == s)
            break;
        if (ndim == 64)
            die("%s: too many dimensions%s", path, "");
        shape[ndim++] = extent;
        s = end;
        while (*s == ' ' || *s == ',') s++;
        s--;
    }
    int same = ndim == info->ndim;
    for (int i = 0; same && i < ndim; i++)
        same = shape[i] == info->shape[i];
    if (!same) {
        char want[256] = "(";
        for (int i = 0; i < info->ndim; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld",
                     i ? ", " : "", (long long)info->shape[i]);
        strncat(want, ")", sizeof want - strlen(want) - 1);
        die("%s: shape differs from the model's input: expected %s", path, want);
    }
    void *data = malloc(info->nbytes ? info->nbytes : 1);
    if (data == NULL)
        die("%s: out of memory%s", path, "");
    if (fread(data, 1, info->nbytes, f) != info->nbytes)
        die("%s: truncated data%s", path, "");
    fclose(f);
    free(header);
    return data;
}

static void write_npy(const char *path, const xweave_tensor_info *info, const void *data) {
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     xweave_dtype_size(info->dtype) == 1 ? '|' : '<', DESCRS[info->dtype]);
    for (int i = 0; i < info->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, "%lld,%s", (long long)info->shape[i],
                      i + 1 < info->ndim ? " " : "");
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    int total = (10 + n + 1 + 63) / 64 * 64; /* magic + header + '\n', 64-byte aligned */
    while (10 + n + 1 < total)
        header[n++] = ' ';
    header[n++] = '\n';
    FILE *f = fopen(path, "wb");
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                               (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
    if (f == NULL || fwrite(magic, 1, 10, f) != 10 || fwrite(header, 1, (size_t)n, f) != (size_t)n
        || fwrite(data, 1, info->nbytes, f) != info->nbytes || fclose(f) != 0)
        die("%s: cannot write%s", path, "");
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *output_path = NULL;
    const char **input_paths = calloc((size_t)argc, sizeof(char *));
    int num_paths = 0, repeat = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            output_path = argv[++i];
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1)
                die("--threads %s: expected a positive number%s", argv[i], "");
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            die("unknown option %s%s", argv[i], "");
        } else if (model_path == NULL) {
            model_path = argv[i];
        } else {
            input_paths[num_paths++] = argv[i];
        }
    }
    if (model_path == NULL || output_path == NULL) {
        fprintf(stderr, "usage: run_model MODEL.so IN.npy [IN2.npy ...] -o OUT.npy "
                        "[--repeat N] [--threads T]\n");
        return 2;
    }
    xweave_error error;
    xweave_model *model;
    double opened = now();
    if (xweave_open(model_path, &model, &error) != XWEAVE_OK)
        die("%s%s", error.message, "");
    opened = now() - opened;
    if (threads && xweave_set_num_threads(model, threads, &error) != XWEAVE_OK)
        die("%s%s", error.message, "");
    size_t num_inputs = xweave_num_inputs(model), num_outputs = xweave_num_outputs(model);
    if ((size_t)num_paths != num_inputs) {
        char counts[64];
        snprintf(counts, sizeof counts, "%zu, got %d", num_inputs, num_paths);
        die("expected one .npy per model input: %s%s", counts, "");
    }
    xweave_tensor *inputs = calloc(num_inputs + 1, sizeof *inputs);
    xweave_tensor *outputs = calloc(num_outputs + 1, sizeof *outputs);
    xweave_tensor_info first_output = {0};
    for (size_t i = 0; i < num_inputs; i++) {
        xweave_tensor_info info;
        xweave_input_info(model, i, &info, NULL);
        inputs[i].data = read_npy(input_paths[i], &info);
        inputs[i].nbytes = info.nbytes;
        inputs[i].dtype = info.dtype;
    }
    for (size_t i = 0; i < num_outputs; i++) {
        xweave_tensor_info info;
        xweave_output_info(model, i, &info, NULL);
        if (i == 0)
            first_output = info;
        outputs[i].data = calloc(info.nbytes ? info.nbytes : 1, 1);
        outputs[i].nbytes = info.nbytes;
        outputs[i].dtype = info.dtype;
        if (outputs[i].data == NULL)
            die("out of memory%s%s", "", "");
    }
    double first = now();
    if (xweave_run(model, inputs, num_inputs, outputs, num_outputs, &error) != XWEAVE_OK)
        die("%s%s", error.message, "");
    first = now() - first;
    if (repeat > 0) {
        double *times = calloc((size_t)repeat, sizeof(double));
        for (int r = 0; r < repeat; r++) {
            double start = now();
            if (xweave_run(model, inputs, num_inputs, outputs, num_outputs, &error) != XWEAVE_OK)
                die("%s%s", error.message, "");
            times[r] = now() - start;
        }
        qsort(times, (size_t)repeat, sizeof(double), by_value);
        printf("open %.3f ms, first run %.3f ms, median %.4f ms per run (%d runs, %d threads)\n",
               opened * 1e3, first * 1e3, times[repeat / 2] * 1e3, repeat, xweave_num_threads(model));
        free(times);
    }
    if (num_outputs > 0)
        write_npy(output_path, &first_output, outputs[0].data);
    for (size_t i = 0; i < num_inputs; i++)
        free(inputs[i].data);
    for (size_t i = 0; i < num_outputs; i++)
        free(outputs[i].data);
    free(inputs);
    free(outputs);
    free(input_paths);
    xweave_close(model);
    return 0;
}
