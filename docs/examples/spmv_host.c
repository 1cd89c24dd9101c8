/* A host program that launches the kernel heddle generates for
 * examples/csr_spmv_parallel.hdl, with nothing but the OpenCL C API.
 * Everything it needs comes from `heddle compile --target opencl --json`
 * (docs/opencl-host.md walks through the mapping):
 *
 *   heddle compile examples/csr_spmv_parallel.hdl --target opencl --json \
 *     --param n=8 --param m=6 --param R=2 --param W=4 > kernel.json
 *   heddle compile examples/csr_spmv_parallel.hdl --target opencl -o kernel.cl
 *   cc -O2 -o spmv_host docs/examples/spmv_host.c -lOpenCL
 *   ./spmv_host kernel.cl n m R W < matrix.txt
 *
 * The input on stdin is whitespace-separated: the n + 1 row offsets, the nnz
 * column indices, the nnz values, then the m entries of x. The result y is
 * printed as a JSON list, like `heddle run`.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

static void check(cl_int status, const char *what) {
  if (status != CL_SUCCESS) {
    fprintf(stderr, "error: %s failed (%d)\n", what, status);
    exit(1);
  }
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  char *text = malloc(*len + 1);
  if (fread(text, 1, *len, f) != *len) { perror(path); exit(1); }
  text[*len] = 0;
  fclose(f);
  return text;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s KERNEL.cl n m R W < matrix.txt\n", argv[0]);
    return 2;
  }
  /* Arguments 0-3, role "natural": the naturals, as `long`. */
  cl_long n = atol(argv[2]), m = atol(argv[3]), R = atol(argv[4]), W = atol(argv[5]);
  if (n < 0 || m < 0 || R <= 0 || W <= 0 || n % R != 0) {
    /* heddle run checks the kernel's requirement `n % R == 0` before launching. */
    fprintf(stderr, "error: n, m >= 0, R, W > 0 and n a multiple of R are required\n");
    return 1;
  }

  /* Arguments 4-7, role "input": records of one field each (int, int, float, float). */
  cl_int *offset = malloc(sizeof(cl_int) * (size_t)(n + 1));
  for (cl_long i = 0; i <= n; i++)
    if (scanf("%d", &offset[i]) != 1) { fprintf(stderr, "error: short input\n"); return 1; }
  size_t nnz = (size_t)(offset[n] - offset[0]); /* records: toNat(offset@n) - toNat(offset@0) */
  cl_int *cols = malloc(sizeof(cl_int) * (nnz ? nnz : 1));
  cl_float *vals = malloc(sizeof(cl_float) * (nnz ? nnz : 1));
  cl_float *xs = malloc(sizeof(cl_float) * (size_t)(m ? m : 1));
  for (size_t k = 0; k < nnz; k++)
    if (scanf("%d", &cols[k]) != 1) { fprintf(stderr, "error: short input\n"); return 1; }
  for (size_t k = 0; k < nnz; k++)
    if (scanf("%f", &vals[k]) != 1) { fprintf(stderr, "error: short input\n"); return 1; }
  for (cl_long j = 0; j < m; j++)
    if (scanf("%f", &xs[j]) != 1) { fprintf(stderr, "error: short input\n"); return 1; }

  cl_platform_id platform;
  cl_device_id device;
  cl_int status;
  check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
  check(status, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &status);
  check(status, "clCreateCommandQueue");

  size_t len;
  const char *source = read_file(argv[1], &len);
  cl_program program = clCreateProgramWithSource(context, 1, &source, &len, &status);
  check(status, "clCreateProgramWithSource");
  /* "build_options" */
  if (clBuildProgram(program, 1, &device, "-cl-std=CL1.2", NULL, NULL) != CL_SUCCESS) {
    char log[1 << 14];
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "error: the kernel does not build:\n%s\n", log);
    return 1;
  }
  /* "name" */
  cl_kernel kernel = clCreateKernel(program, "heddle_csr_spmv_parallel", &status);
  check(status, "clCreateKernel");

  cl_mem_flags in = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  cl_mem offset_d = clCreateBuffer(context, in, sizeof(cl_int) * (size_t)(n + 1), offset, &status);
  check(status, "clCreateBuffer(offset)");
  cl_mem cols_d = clCreateBuffer(context, in, sizeof(cl_int) * (nnz ? nnz : 1), cols, &status);
  check(status, "clCreateBuffer(col_indices)");
  cl_mem vals_d = clCreateBuffer(context, in, sizeof(cl_float) * (nnz ? nnz : 1), vals, &status);
  check(status, "clCreateBuffer(values)");
  cl_mem xs_d = clCreateBuffer(context, in, sizeof(cl_float) * (size_t)(m ? m : 1), xs, &status);
  check(status, "clCreateBuffer(xs)");
  /* Argument 8, role "output": records "R * (n / R)", every one written by the kernel. */
  size_t rows = (size_t)(R * (n / R));
  cl_mem out_d = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof(cl_float) * (rows ? rows : 1), NULL, &status);
  check(status, "clCreateBuffer(out)");
  /* Argument 10, role "error": one int, 0 before the launch. */
  cl_int no_error = 0;
  cl_mem error_d = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(cl_int), &no_error, &status);
  check(status, "clCreateBuffer(heddle_error)");

  check(clSetKernelArg(kernel, 0, sizeof(cl_long), &n), "clSetKernelArg(n)");
  check(clSetKernelArg(kernel, 1, sizeof(cl_long), &m), "clSetKernelArg(m)");
  check(clSetKernelArg(kernel, 2, sizeof(cl_long), &R), "clSetKernelArg(R)");
  check(clSetKernelArg(kernel, 3, sizeof(cl_long), &W), "clSetKernelArg(W)");
  check(clSetKernelArg(kernel, 4, sizeof(cl_mem), &offset_d), "clSetKernelArg(offset)");
  check(clSetKernelArg(kernel, 5, sizeof(cl_mem), &cols_d), "clSetKernelArg(col_indices)");
  check(clSetKernelArg(kernel, 6, sizeof(cl_mem), &vals_d), "clSetKernelArg(values)");
  check(clSetKernelArg(kernel, 7, sizeof(cl_mem), &xs_d), "clSetKernelArg(xs)");
  check(clSetKernelArg(kernel, 8, sizeof(cl_mem), &out_d), "clSetKernelArg(out)");
  /* Argument 9, role "local": records "W * R" of float; pass the bytes and no data. */
  check(clSetKernelArg(kernel, 9, sizeof(cl_float) * (size_t)(W * R), NULL), "clSetKernelArg(tmp)");
  check(clSetKernelArg(kernel, 10, sizeof(cl_mem), &error_d), "clSetKernelArg(heddle_error)");

  /* "launch": global = [(n / R) * W, R], local = [W, R]; an empty range
     still launches one group (the kernel's loops are strided). */
  size_t groups = (size_t)(n / R) ? (size_t)(n / R) : 1;
  size_t global[2] = {groups * (size_t)W, (size_t)R}, local[2] = {(size_t)W, (size_t)R};
  check(clEnqueueNDRangeKernel(queue, kernel, 2, NULL, global, local, 0, NULL, NULL), "clEnqueueNDRangeKernel");

  cl_int failed;
  check(clEnqueueReadBuffer(queue, error_d, CL_TRUE, 0, sizeof(cl_int), &failed, 0, NULL, NULL), "read heddle_error");
  if (failed != 0) {
    /* "errors": code 1 is a row index out of range, code 3 a column index outside xs. */
    fprintf(stderr, "error: the kernel's check %d failed (see \"errors\" in the JSON)\n", failed);
    return 1;
  }
  cl_float *y = malloc(sizeof(cl_float) * (rows ? rows : 1));
  if (rows > 0)
    check(clEnqueueReadBuffer(queue, out_d, CL_TRUE, 0, sizeof(cl_float) * rows, y, 0, NULL, NULL), "read out");
  printf("[");
  for (size_t i = 0; i < rows; i++) printf("%s%.9g", i ? "," : "", y[i]);
  printf("]\n");
  return 0;
}
