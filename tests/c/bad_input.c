/*
 * Bad input through the C API of xweave.h: every case must return its error code and
 * a one-line message, never crash. Built and run by tests/test_library.py:
 *
 *     bad_input GOOD.so FILE:CASE [FILE:CASE ...]
 *
 * GOOD.so is a model library with one float32 input and at least one output; each
 * FILE:CASE is a file xweave_open must refuse, and the case's name. Prints one line
 * per case: "<case>\t<status>\t<message>", and "run\t<status>\t..." for a good call.
 */
#include "xweave.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void report(const char *name, int status, const xweave_error *error) {
    const char *message = error ? error->message : "";
    if (error && error->code != status) {
        printf("%s\t%s\tmismatch: returned %d, error->code %d\n", name,
               xweave_status_name(status), status, error->code);
        failures++;
        return;
    }
    if (error && strchr(message, '\n') != NULL)
        failures++;
    printf("%s\t%s\t%s\n", name, xweave_status_name(status), message);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bad_input GOOD.so [FILE:CASE ...]\n");
        return 2;
    }
    xweave_error error;
    xweave_model *model = (xweave_model *)1;

    /* files xweave_open must refuse */
    for (int i = 2; i < argc; i++) {
        char *spec = strdup(argv[i]);
        char *colon = strrchr(spec, ':');
        *colon = '\0';
        int status = xweave_open(spec, &model, &error);
        report(colon + 1, status, &error);
        if (model != NULL) { /* a refused file leaves *model NULL */
            printf("%s\tnot NULL\n", colon + 1);
            failures++;
        }
        free(spec);
    }

    /* NULL pointers to open */
    report("open_null_path", xweave_open(NULL, &model, &error), &error);
    report("open_null_model", xweave_open(argv[1], NULL, &error), &error);
    report("open_no_error", xweave_open("/nonexistent/model.so", &model, NULL), NULL);
    report("open_missing", xweave_open("/nonexistent/model.so", &model, &error), &error);
    report("open_directory", xweave_open("/", &model, &error), &error);

    /* a NULL model to every function */
    xweave_tensor_info info;
    xweave_target_info target;
    report("info_null_model", xweave_input_info(NULL, 0, &info, &error), &error);
    report("output_info_null_model", xweave_output_info(NULL, 0, &info, &error), &error);
    report("run_null_model", xweave_run(NULL, NULL, 0, NULL, 0, &error), &error);
    report("threads_null_model", xweave_set_num_threads(NULL, 1, &error), &error);
    report("target_null_model", xweave_get_target(NULL, &target, &error), &error);
    if (xweave_num_inputs(NULL) != 0 || xweave_num_outputs(NULL) != 0 || xweave_num_threads(NULL) != 0)
        failures++;
    xweave_close(NULL);

    /* the good model, misused */
    int status = xweave_open(argv[1], &model, &error);
    report("open_good", status, &error);
    if (status != XWEAVE_OK)
        return 1;
    size_t n_in = xweave_num_inputs(model), n_out = xweave_num_outputs(model);
    report("info_index", xweave_input_info(model, n_in, &info, &error), &error);
    report("info_null", xweave_input_info(model, 0, NULL, &error), &error);
    report("target_null", xweave_get_target(model, NULL, &error), &error);
    report("threads_zero", xweave_set_num_threads(model, 0, &error), &error);
    report("threads_negative", xweave_set_num_threads(model, -3, &error), &error);

    xweave_tensor *in = calloc(n_in + 1, sizeof *in), *out = calloc(n_out + 1, sizeof *out);
    for (size_t i = 0; i < n_in; i++) {
        xweave_input_info(model, i, &info, NULL);
        in[i].data = calloc(info.nbytes + 64, 1);
        in[i].nbytes = info.nbytes;
        in[i].dtype = info.dtype;
    }
    for (size_t i = 0; i < n_out; i++) {
        xweave_output_info(model, i, &info, NULL);
        out[i].data = calloc(info.nbytes + 64, 1);
        out[i].nbytes = info.nbytes;
        out[i].dtype = info.dtype;
    }
    report("run_null_inputs", xweave_run(model, NULL, n_in, out, n_out, &error), &error);
    report("run_null_outputs", xweave_run(model, in, n_in, NULL, n_out, &error), &error);
    report("run_input_count", xweave_run(model, in, n_in + 1, out, n_out, &error), &error);
    report("run_output_count", xweave_run(model, in, n_in, out, 0, &error), &error);

    xweave_tensor saved = in[0];
    in[0].nbytes = saved.nbytes - 4;
    report("run_input_size_small", xweave_run(model, in, n_in, out, n_out, &error), &error);
    in[0].nbytes = saved.nbytes + 4;
    report("run_input_size_large", xweave_run(model, in, n_in, out, n_out, &error), &error);
    in[0] = saved;
    in[0].dtype = XWEAVE_FLOAT64;
    report("run_input_dtype", xweave_run(model, in, n_in, out, n_out, &error), &error);
    in[0].dtype = (xweave_dtype)77;
    report("run_input_dtype_unknown", xweave_run(model, in, n_in, out, n_out, &error), &error);
    in[0] = saved;
    in[0].data = NULL;
    report("run_input_data_null", xweave_run(model, in, n_in, out, n_out, &error), &error);
    in[0] = saved;

    saved = out[0];
    out[0].nbytes = saved.nbytes * 2;
    report("run_output_size", xweave_run(model, in, n_in, out, n_out, &error), &error);
    out[0] = saved;
    out[0].dtype = XWEAVE_INT32;
    report("run_output_dtype", xweave_run(model, in, n_in, out, n_out, &error), &error);
    out[0] = saved;
    out[0].data = NULL;
    report("run_output_data_null", xweave_run(model, in, n_in, out, n_out, &error), &error);
    out[0] = saved;
    xweave_tensor saved_in = in[0];
    if (in[0].nbytes >= out[0].nbytes) /* an output inside an input, or the reverse */
        out[0].data = in[0].data;
    else
        in[0].data = out[0].data;
    report("run_output_overlaps_input", xweave_run(model, in, n_in, out, n_out, &error), &error);
    out[0] = saved;
    in[0] = saved_in;

    report("run", xweave_run(model, in, n_in, out, n_out, &error), &error);
    report("run_no_error", xweave_run(model, in, n_in, out, n_out, NULL), NULL);

    for (size_t i = 0; i < n_in; i++)
        free(in[i].data);
    for (size_t i = 0; i < n_out; i++)
        free(out[i].data);
    free(in);
    free(out);
    xweave_close(model);
    printf("failures\t%d\n", failures);
    return failures != 0;
}
