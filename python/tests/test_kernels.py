"""Compiled kernels on numpy and scipy data, against numpy and scipy."""

import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import heddle
from conftest import example, reversed_rows

BACKENDS = ["cpu", "interp"]
DENSE_MV = "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m => a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0)))))))"


def matrix(rows=60, cols=45, density=0.1, seed=1):
    return sp.random_array((rows, cols), density=density, format="csr", rng=np.random.default_rng(seed))


def opencl_or_skip(src):
    try:
        return heddle.compile(src, backend="opencl")
    except heddle.DeviceError as e:
        pytest.skip(f"no OpenCL device: {e}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia", "lil", "dense"])
def test_spmv_every_scipy_format(spmv_csr, backend, fmt):
    A = matrix()
    x = np.random.default_rng(2).random(A.shape[1])
    k = heddle.compile(spmv_csr, backend=backend)
    given = A.toarray() if fmt == "dense" else A.asformat(fmt)
    y = k(A=given, xs=x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (A.shape[0],)
    np.testing.assert_allclose(y, A @ x, rtol=1e-5, atol=1e-5)


def test_spmv_unsorted_csr_is_converted(spmv_csr):
    A = matrix()
    x = np.arange(A.shape[1], dtype=np.float64)
    shuffled = A.copy()
    for r in range(A.shape[0]):
        lo, hi = A.indptr[r], A.indptr[r + 1]
        shuffled.indices[lo:hi] = A.indices[lo:hi][::-1]
        shuffled.data[lo:hi] = A.data[lo:hi][::-1]
    shuffled.has_sorted_indices = False
    y = heddle.compile(spmv_csr)(A=shuffled, xs=x)
    np.testing.assert_allclose(y, A @ x, rtol=1e-5)


def test_spmv_csc_parameter():
    k = heddle.compile(example("sparse/spmv_csc.hdl"))
    A = matrix(seed=5)
    x = np.random.default_rng(3).random(A.shape[1])
    for given in (A.tocsc(), A):
        np.testing.assert_allclose(k(A=given, xs=x), A @ x, rtol=1e-5, atol=1e-5)


def test_spmv_opencl(spmv_csr):
    k = opencl_or_skip(spmv_csr)
    A = matrix()
    x = np.random.default_rng(2).random(A.shape[1])
    np.testing.assert_allclose(k(A=A, xs=x), A @ x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sparse_result_is_a_scipy_array(backend):
    k = heddle.compile(example("sparse/spadd_csr.hdl"), backend=backend)
    A, B = matrix(seed=1), matrix(seed=2)
    C = k(A=A, B=B)
    assert sp.issparse(C) and C.format == "csr" and C.shape == A.shape
    np.testing.assert_allclose(C.toarray(), (A + B).toarray(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dense_kernel_with_naturals_inferred_or_given(backend):
    k = heddle.compile(DENSE_MV, backend=backend)
    rng = np.random.default_rng(4)
    a, x = rng.random((7, 5)), rng.random(5)
    np.testing.assert_allclose(k(a=a, xs=x), a @ x, rtol=1e-5)
    np.testing.assert_allclose(k(a=a, xs=x, n=7, m=5), a @ x, rtol=1e-5)
    with pytest.raises(heddle.InputError):
        k(a=a, xs=x, n=8)


def test_scalar_result_and_int_inputs():
    k = heddle.compile("nFun(n => fun(xs: [int]_n => xs :>> reduce(+, 0)))")
    xs = np.arange(10, dtype=np.int32)
    assert k(xs=xs) == int(xs.sum())
    assert k(xs=list(range(5))) == 10


def test_input_errors_are_exceptions(spmv_csr):
    k = heddle.compile(spmv_csr)
    A = matrix()
    with pytest.raises(heddle.InputError) as e:
        k(A=A, xs=np.ones(A.shape[1] + 1))
    assert e.value.parameter == "xs"
    with pytest.raises(heddle.InputError):
        k(A=A, xs=A)  # a sparse array for an array parameter
    with pytest.raises(heddle.InputError):
        k(A=A, xs=np.array(["a"] * A.shape[1]))
    with pytest.raises(heddle.InputError):
        k(A=np.ones(3), xs=np.ones(3))
    with pytest.raises(heddle.Error):
        k(A=A)  # xs missing
    with pytest.raises(heddle.InputError):
        k(A=A, xs=np.ones(A.shape[1]), nosuch=np.ones(2))


def test_runtime_check_raises_a_source_error():
    k = heddle.compile("fun(xs: [float]_4 => fun(i: int => xs@i))", backend="interp")
    with pytest.raises(heddle.Error):
        k(xs=np.ones(4), i=9)


def test_bad_backend_and_threads():
    with pytest.raises(ValueError):
        heddle.compile("fun(x: int => x)", backend="gpu")
    with pytest.raises(ValueError):
        heddle.compile("fun(x: int => x)", backend="interp", threads=2)
    with pytest.raises(heddle.InputError):
        heddle.compile("fun(x: int => x)", backend="cpu", threads=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_threads(spmv_csr, threads):
    A = matrix(400, 300, 0.05)
    x = np.random.default_rng(9).random(300)
    k = heddle.compile(spmv_csr, backend="cpu", threads=threads)
    np.testing.assert_allclose(k(A=A, xs=x), A @ x, rtol=1e-5, atol=1e-5)


def test_time_reports_kernel_seconds(spmv_csr):
    k = heddle.compile(spmv_csr)
    A = matrix()
    t = k.time(reps=7, A=A, xs=np.ones(A.shape[1]))
    assert set(t) == {"median", "min", "max", "reps"} and t["reps"] == 7
    assert 0 < t["min"] <= t["median"] <= t["max"] < 1
    with pytest.raises(ValueError):
        k.time(reps=0, A=A, xs=np.ones(A.shape[1]))


def test_the_gil_is_released_while_a_kernel_runs(spmv_csr):
    k = heddle.compile(spmv_csr, backend="interp")
    A = matrix(300, 300, 0.05)
    x = np.ones(300)
    started = time.perf_counter()
    k.time(reps=2, A=A, xs=x)
    one = (time.perf_counter() - started) / 3
    reps = max(3, int(0.5 / max(one, 1e-4)))
    worker = threading.Thread(target=k.time, kwargs={"reps": reps, "A": A, "xs": x})
    count = 0
    worker.start()
    time.sleep(0.05)
    while worker.is_alive():
        count += 1
    worker.join()
    # Holding the GIL for the whole run would leave this thread a handful of turns.
    assert count > 10_000


@pytest.mark.parametrize("backend", BACKENDS)
def test_deeply_nested_kernels_do_not_overflow_the_stack(backend):
    # The CLI gives the front end a big stack; so does the package (Python's main thread has 8 MiB).
    src = "nFun(n => fun(xs: [float]_n => xs" + " :>> map(fun(y => y + 1.0))" * 400 + "))"
    k = heddle.compile(src, backend=backend)
    xs = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(k(xs=xs), xs + 400)
    with pytest.raises(heddle.SourceError):
        heddle.check("fun(x: int => " + "(" * 600 + "x" + ")" * 600 + ")")


def test_malformed_scipy_arrays_raise_input_errors(spmv_csr):
    k = heddle.compile(spmv_csr)
    x = np.ones(45)
    A = matrix()
    bad = A.copy()
    bad.indptr = bad.indptr.copy()
    bad.indptr[-1] = bad.nnz + 5  # ends past the entries
    with pytest.raises(heddle.InputError) as e:
        k(A=bad, xs=x)
    assert e.value.parameter == "A"
    out_of_range = A.copy()
    out_of_range.indices = out_of_range.indices.copy()
    out_of_range.indices[0] = 10_000  # a column past the matrix
    with pytest.raises(heddle.InputError):
        k(A=out_of_range, xs=x)
    complex_ = A.astype(np.complex128)
    with pytest.raises(heddle.InputError):
        k(A=complex_, xs=x)


def test_int32_and_float32_inputs_match_float64(spmv_csr):
    k = heddle.compile(spmv_csr)
    A = matrix(seed=11)
    x = np.random.default_rng(12).random(A.shape[1])
    narrow = A.astype(np.float32)
    narrow.indices = narrow.indices.astype(np.int32)
    narrow.indptr = narrow.indptr.astype(np.int32)
    np.testing.assert_allclose(k(A=narrow, xs=x.astype(np.float32)), k(A=A, xs=x), rtol=1e-6)


IDENTITY_I64 = """
fun(A: tensor<?x?xi64, CSR> =>
  (generate(A_dim0, fun(i => union(0, 0, A@i, A@i) :>> map(fun(e => (e.1, e.2))))) : tensor<?x{A_dim1}xi64, CSR>))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_int64_values_beyond_2_53_pass_exactly(backend):
    # Through float64, 2**53 + 1 would become 2**53.
    big = np.array([2**53 + 1, -(2**62) - 3, 7, 2**63 - 1], dtype=np.int64)
    A = sp.csr_array((big, np.array([0, 2, 1, 3]), np.array([0, 2, 2, 4])), shape=(3, 4))
    C = heddle.compile(IDENTITY_I64, backend=backend)(A=A)
    assert C.dtype == np.int64
    np.testing.assert_array_equal(C.data, big)
    np.testing.assert_array_equal(C.indices, A.indices)


def test_values_keep_their_dtype_through_convert():
    big = np.array([2**63 + 5, 1, 2**64 - 1], dtype=np.uint64)
    A = sp.coo_array((big, (np.array([0, 1, 2]), np.array([2, 0, 1]))), shape=(3, 3))
    d = heddle.convert(A, "CSR")
    assert d["values"].dtype == np.uint64
    np.testing.assert_array_equal(d["values"], big)
    back = heddle.from_buffers(d)
    assert back.dtype == np.uint64
    np.testing.assert_array_equal(back.toarray(), A.toarray())
    f32 = A.astype(np.float32) * np.float32(0.1)
    assert heddle.convert(f32, "CSR")["values"].dtype == np.float32


def test_a_value_that_does_not_fit_the_parameter_is_an_error():
    A = sp.csr_array((np.array([1.5]), np.array([0]), np.array([0, 1])), shape=(1, 1))
    with pytest.raises(heddle.InputError, match="1.5"):
        heddle.compile(IDENTITY_I64)(A=A)


INT_SUM = "nFun(n => fun(xs: [int]_n => xs :>> reduce(+, 0)))"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_arrays_of_every_width_bind_exactly(backend, dtype):
    # Each dtype arrives at its own width and is converted (and checked) in the runtime.
    xs = np.array([0, 1, 100, 7], dtype=dtype)
    assert heddle.compile(INT_SUM, backend=backend)(xs=xs) == 108


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_integer_beyond_the_parameters_type_is_an_error_naming_it(backend):
    k = heddle.compile(INT_SUM, backend=backend)
    with pytest.raises(heddle.InputError, match="18446744073709551615 does not fit in int"):
        k(xs=np.array([1, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(heddle.InputError, match="does not fit in int"):
        k(xs=np.array([1, 2**40], dtype=np.int64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_float16_float32_and_float64_arrays_give_the_same_spmv(spmv_csr, backend):
    k = heddle.compile(spmv_csr, backend=backend)
    A = matrix(seed=21)
    x = np.arange(A.shape[1], dtype=np.float16) / 8  # exact in every float width
    want = k(A=A, xs=x.astype(np.float64))
    for dtype in (np.float16, np.float32):
        np.testing.assert_array_equal(k(A=A, xs=x.astype(dtype)), want)


def test_a_canonical_csr_array_and_a_converted_one_agree(spmv_csr):
    # Canonical: taken as it is after one check. Unsorted, or with duplicates: converted.
    k = heddle.compile(spmv_csr)
    A = matrix(seed=31)
    x = np.random.default_rng(32).random(A.shape[1])
    shuffled = reversed_rows(A)
    np.testing.assert_allclose(k(A=shuffled, xs=x), k(A=A, xs=x), rtol=1e-6)
    np.testing.assert_allclose(k(A=A, xs=x), A @ x, rtol=1e-5)
    # A csr array whose column is out of range is an error, not a read out of bounds.
    bad = sp.csr_array((np.array([1.0]), np.array([A.shape[1]]), np.array([0, 1] + [1] * (A.shape[0] - 1))), shape=A.shape)
    with pytest.raises(heddle.InputError):
        k(A=bad, xs=x)


HALF_SPMV = """#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
fun(A: tensor<?x?xELEM, #CSR> =>
fun(xs: [ELEM]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduceSeq(+, 0)))))"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_f16_kernels_take_and_return_float16_and_round_like_numpy(backend):
    k = heddle.compile(HALF_SPMV.replace("ELEM", "f16"), backend=backend)
    A = matrix(seed=41)
    x = (np.random.default_rng(42).random(A.shape[1]) * 4 - 2).astype(np.float16)
    y = k(A=A, xs=x)
    assert y.dtype == np.float16
    # numpy's float16 arithmetic rounds each product and each sum, as f16 does.
    data = A.data.astype(np.float16)
    want = np.zeros(A.shape[0], dtype=np.float16)
    for i in range(A.shape[0]):
        for p in range(A.indptr[i], A.indptr[i + 1]):
            want[i] = want[i] + data[p] * x[A.indices[p]]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bf16_results_come_back_as_float32_holding_bfloat16_values(backend):
    k = heddle.compile(HALF_SPMV.replace("ELEM", "bf16"), backend=backend)
    A = matrix(seed=43)
    x = np.random.default_rng(44).random(A.shape[1])
    y = k(A=A, xs=x)
    assert y.dtype == np.float32
    # Every value has a zero low half: a bfloat16 in a float32.
    assert not np.any(y.view(np.uint32) & 0xFFFF)
    np.testing.assert_allclose(y, A @ x, rtol=0.05, atol=0.05)


def test_convert_stores_values_at_a_given_element_type():
    A = matrix(seed=45)
    b = heddle.convert(A, "CSR", elem="f16")
    assert b["values"].dtype == np.float16
    np.testing.assert_array_equal(b["values"], A.data.astype(np.float16))
    # bf16 values come back as float32 holding them (low 16 bits zero).
    b = heddle.convert(A, "CSR", elem="bf16")
    assert b["values"].dtype == np.float32 and not np.any(b["values"].view(np.uint32) & 0xFFFF)
    with pytest.raises(heddle.InputError, match="`f8` is not a scalar type"):
        heddle.convert(A, "CSR", elem="f8")


def power_law_matrix(n, seed, long_row=False):
    """Row lengths from a Pareto law (many empty rows, a few long ones); one full row where long_row."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(n, np.floor(rng.pareto(1.0, n)).astype(np.int64))
    if long_row and n:
        lengths[n // 2] = n
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(n, size=k, replace=False) for k in lengths]) if lengths.sum() else np.zeros(0, np.int64)
    A = sp.coo_array((rng.random(rows.size, dtype=np.float32) + 0.5, (rows, cols)), shape=(n, n)).tocsr()
    A.sort_indices()
    return A


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_co_iteration_results_equal_scipy_structure_and_values(threads):
    """A + B and A * B with CSR results (merged once into room for each row's
    bound, read back from the rooms) give scipy's indptr, indices and data,
    on power-law rows, one long row, empty rows, 0x0 and 1x1."""
    kernels = {name: heddle.compile(example(f"sparse/{name}.hdl"), backend="cpu", threads=threads) for name in ("spadd_csr", "spmul_csr")}
    interp = {name: heddle.compile(example(f"sparse/{name}.hdl"), backend="interp") for name in kernels}
    cases = [(power_law_matrix(n, 10 * n + 1, long_row=n > 1), power_law_matrix(n, 10 * n + 2)) for n in (0, 1, 2, 50, 300)]
    cases.append((matrix(200, 200, 0.05, seed=3).astype(np.float32), power_law_matrix(200, 7, long_row=True)))
    for A, B in cases:
        for name, want in (("spadd_csr", A + B), ("spmul_csr", A * B)):
            want = sp.csr_array(want)
            want.sort_indices()
            for got in (kernels[name](A=A, B=B), interp[name](A=A, B=B)):
                got = sp.csr_array(got)
                assert got.shape == want.shape, name
                np.testing.assert_array_equal(got.indptr, want.indptr, err_msg=f"{name} {A.shape}")
                np.testing.assert_array_equal(got.indices, want.indices, err_msg=f"{name} {A.shape}")
                np.testing.assert_allclose(got.data, want.data, rtol=1e-6, err_msg=f"{name} {A.shape}")
