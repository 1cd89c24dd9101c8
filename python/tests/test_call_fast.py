"""The cpu kernel's planned call (`Compiled.call_fast`): canonical csr/csc
arrays with int32 or int64 indices and float arrays, read in place by a
variant of the kernel compiled for the indices' width and bound by a plan
made once. It must give what the general path (`Compiled.run`) and scipy
give, decline (None) everything else so that the general path converts or
reports it, and never read out of bounds whatever another thread writes."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import heddle
from conftest import ROOT, example, reversed_rows

SPMV_F64 = example("sparse/spmv_csr.hdl").replace("xf32", "xf64").replace("[float]", "[f64]")
SPMV_CSR32 = (ROOT / "tests" / "compile_coverage" / "tensor_spmv_csr32.hdl").read_text()


def matrix(rows=90, cols=60, density=0.1, seed=1, dtype=np.float32, index=np.int32):
    A = sp.random_array((rows, cols), density=density, format="csr", dtype=dtype, rng=np.random.default_rng(seed))
    A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
    return A


def big_endian_indices(A):
    """A copy of the csr array A whose indices are stored big-endian (scipy's
    constructor would convert them: set afterwards)."""
    B = A.copy()
    B.indices, B.indptr = A.indices.astype(">i4"), A.indptr.astype(">i4")
    assert B.indices.dtype.str == ">i4"
    return B


def general(k, **inputs):
    """The general path's result, whatever the fast path would do."""
    value, _ = k._c.run(*k._bind(inputs), 0)
    return value


@pytest.fixture(scope="module")
def kernels():
    return {
        "f32": heddle.compile(example("sparse/spmv_csr.hdl"), backend="cpu"),
        "f64": heddle.compile(SPMV_F64, backend="cpu"),
        "csc": heddle.compile(example("sparse/spmv_csc.hdl"), backend="cpu"),
        "csr32": heddle.compile(SPMV_CSR32, backend="cpu"),
        "f32x2": heddle.compile(example("sparse/spmv_csr.hdl"), backend="cpu", threads=2),
    }


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("name", ["f32", "f64", "csr32", "f32x2"])
def test_fast_calls_agree_with_the_general_path_and_scipy(kernels, name, index):
    k = kernels[name]
    dtype = np.float64 if name == "f64" else np.float32
    for seed, (rows, cols) in enumerate([(90, 60), (1, 1), (3, 200), (400, 7)]):
        A = matrix(rows, cols, density=0.2, seed=seed, dtype=dtype, index=index)
        x = np.random.default_rng(seed + 50).random(cols).astype(dtype)
        fast = k._c.call_fast({"A": A, "xs": x})
        if A.nnz * A.data.itemsize < 8 or cols * x.itemsize < 8:
            # Too small to read in place: the general path copies.
            assert fast is None
            continue
        assert fast is not None, (rows, cols)
        assert fast.dtype == dtype and fast.shape == (rows,) and fast.flags.writeable
        np.testing.assert_allclose(fast, general(k, A=A, xs=x), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fast, A.astype(np.float64) @ x.astype(np.float64), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(k(A=A, xs=x), fast)


def test_csr_matrix_and_first_calls_from_many_threads():
    """A fresh kernel's first calls race to make its plans (int32 and int64
    at once): every call gets the right result, scipy's older csr_matrix too."""
    k = heddle.compile(example("sparse/spmv_csr.hdl"), backend="cpu")
    cases = []
    for s in range(8):
        A = matrix(120, 80, seed=60 + s, index=np.int32 if s % 2 else np.int64)
        if s % 3 == 0:
            A = sp.csr_matrix(A)
        x = np.random.default_rng(70 + s).random(80).astype(np.float32)
        cases.append((A, x, A.astype(np.float64) @ x.astype(np.float64)))
    start = threading.Barrier(len(cases))
    results = [None] * len(cases)

    def work(j):
        A, x, _ = cases[j]
        start.wait()
        results[j] = (k._c.call_fast({"A": A, "xs": x}), k(A=A, xs=x))

    threads = [threading.Thread(target=work, args=(j,)) for j in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (fast, called), (_, _, want) in zip(results, cases):
        assert fast is not None
        np.testing.assert_allclose(fast, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(called, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_csc_arrays_take_the_fast_path(kernels, index):
    A = matrix(50, 80, seed=4, index=index).tocsc()
    A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
    x = np.random.default_rng(5).random(80).astype(np.float32)
    fast = kernels["csc"]._c.call_fast({"A": A, "xs": x})
    assert fast is not None
    np.testing.assert_allclose(fast, general(kernels["csc"], A=A, xs=x), rtol=1e-6)
    np.testing.assert_allclose(fast, A @ x, rtol=1e-5, atol=1e-6)
    # A csr array for the csc parameter: converted by the general path.
    assert kernels["csc"]._c.call_fast({"A": A.tocsr(), "xs": x}) is None
    np.testing.assert_allclose(kernels["csc"](A=A.tocsr(), xs=x), A @ x, rtol=1e-5, atol=1e-6)


def test_inputs_the_fast_path_declines_still_give_the_general_result(kernels):
    k = kernels["f32"]
    A = matrix(seed=7)
    x = np.random.default_rng(8).random(A.shape[1]).astype(np.float32)
    want = A.astype(np.float64) @ x.astype(np.float64)
    mixed = A.copy()
    mixed.indptr = mixed.indptr.astype(np.int64)
    dup = sp.csr_array((np.array([1.0, 2.0, 4.0, 8.0], dtype=np.float32), np.array([1, 1, 0, 2], dtype=np.int32), np.array([0, 2, 4], dtype=np.int32)), shape=(2, 3))
    declined = {
        "int64 indptr, int32 indices": ({"A": mixed, "xs": x}, want),
        "float64 x for a float32 parameter": ({"A": A, "xs": x.astype(np.float64)}, want),
        "float64 values for a float32 parameter": ({"A": A.astype(np.float64), "xs": x}, want),
        "strided x": ({"A": A, "xs": np.repeat(x, 2)[::2]}, want),
        "big-endian x": ({"A": A, "xs": x.astype(">f4")}, want),
        "big-endian values": ({"A": sp.csr_array((A.data.astype(">f4"), A.indices, A.indptr), shape=A.shape), "xs": x}, want),
        "big-endian indices": ({"A": big_endian_indices(A), "xs": x}, want),
        "a coo array": ({"A": A.tocoo(), "xs": x}, want),
        "a dense matrix": ({"A": A.toarray(), "xs": x}, want),
        "a list for xs": ({"A": A, "xs": [float(v) for v in x]}, want),
    }
    for why, (inputs, expected) in declined.items():
        assert k._c.call_fast(inputs) is None, why
        np.testing.assert_allclose(k(**inputs), expected, rtol=1e-5, atol=1e-5, err_msg=why)
    # Duplicates are summed by the general path; SpMV, a sum of the entries'
    # products, takes them (and unsorted rows) as they are, to the same result
    # (test_sum_of_entries.py has more).
    three = np.array([10.0, 100.0, 1000.0], dtype=np.float32)
    np.testing.assert_allclose(k._c.call_fast({"A": dup, "xs": three}), [300.0, 8040.0])
    np.testing.assert_allclose(general(k, A=dup, xs=three), [300.0, 8040.0])
    np.testing.assert_allclose(k._c.call_fast({"A": reversed_rows(A), "xs": x}), want, rtol=1e-5, atol=1e-5)
    # Missing or extra inputs: the general path names them.
    assert k._c.call_fast({"A": A}) is None
    assert k._c.call_fast({"A": A, "xs": x, "zs": x}) is None
    with pytest.raises(heddle.InputError):
        k(A=A)
    with pytest.raises(heddle.InputError):
        k(A=A, xs=x, zs=x)


def test_other_kernels_and_backends_have_no_fast_path():
    A = matrix(seed=9)
    x = np.ones(A.shape[1], dtype=np.float32)
    interp = heddle.compile(example("sparse/spmv_csr.hdl"), backend="interp")
    assert interp._c.call_fast({"A": A, "xs": x}) is None
    # A natural given by hand; a sparse result; integer arrays.
    by_hand = heddle.compile("nFun(n => fun(xs: [float]_n => xs :>> reduce(+, 0)))", backend="cpu")
    assert by_hand._c.call_fast({"n": 3, "xs": np.ones(3, dtype=np.float32)}) is None
    assert by_hand(n=3, xs=np.ones(3, dtype=np.float32)) == 3.0
    spgemm = heddle.compile(example("sparse/spgemm_csr.hdl"), backend="cpu")
    B = matrix(A.shape[1], 30, seed=10)
    assert spgemm._c.call_fast({"A": A, "B": B}) is None


def test_malformed_csr_arrays_raise_input_errors(kernels):
    for name in ("f32", "csr32"):
        k = kernels[name]
        for index in (np.int32, np.int64):
            A = matrix(seed=11, index=index)
            x = np.ones(A.shape[1], dtype=np.float32)
            bad = {}
            bad["index past the columns"] = A.copy()
            bad["index past the columns"].indices[5] = A.shape[1]
            bad["negative index"] = A.copy()
            bad["negative index"].indices[2] = -1
            bad["decreasing indptr"] = A.copy()
            bad["decreasing indptr"].indptr[3] = bad["decreasing indptr"].indptr[4] + 1
            bad["indptr past the entries"] = A.copy()
            bad["indptr past the entries"].indptr[-1] = A.nnz + 5
            bad["indptr not from 0"] = A.copy()
            bad["indptr not from 0"].indptr[0] = 1
            for why, M in bad.items():
                assert k._c.call_fast({"A": M, "xs": x}) is None, (name, index, why)
                with pytest.raises(heddle.InputError) as e:
                    k(A=M, xs=x)
                assert e.value.parameter == "A", (name, index, why)
            # x one too long: the general path names it.
            long = np.ones(A.shape[1] + 1, dtype=np.float32)
            assert k._c.call_fast({"A": A, "xs": long}) is None
            with pytest.raises(heddle.InputError):
                k(A=A, xs=long)


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_a_thread_writing_the_indices_during_calls_never_reads_out_of_bounds(kernels, index):
    """The coordinates are read in place: another thread writes wild values
    (negative, far past the columns) into them while calls run. Each call
    must return (wrong sums allowed) or raise heddle's error, never crash;
    the offsets are copied, so writes to them are never seen mid-call."""
    k = kernels["f32"]
    A = matrix(400, 300, density=0.2, seed=12, index=index)
    x = np.ones(A.shape[1], dtype=np.float32)
    stop = threading.Event()
    rng = np.random.default_rng(13)
    wild = rng.integers(-(2**31), 2**31 - 1, size=4096).astype(index)

    def vandal():
        k_ = 0
        while not stop.is_set():
            at = rng.integers(0, A.nnz, size=64)
            A.indices[at] = wild[(k_ + np.arange(64)) % wild.size]
            A.indptr[rng.integers(1, A.shape[0], size=4)] = rng.integers(-5, 2 * A.nnz, size=4)
            k_ += 64

    writer = threading.Thread(target=vandal)
    writer.start()
    outcomes = {"ok": 0, "error": 0}
    try:
        for _ in range(300):
            try:
                y = k(A=A, xs=x)
                assert y.shape == (A.shape[0],)
                outcomes["ok"] += 1
            except heddle.Error:
                outcomes["error"] += 1
    finally:
        stop.set()
        writer.join()
    assert outcomes["ok"] + outcomes["error"] == 300
