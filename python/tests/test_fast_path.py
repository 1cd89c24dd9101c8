"""The cpu backend's fast path: a call runs on the calling thread, float
arrays (and a compressed array's float values) are read in place, scipy's
int32 indices are widened while copied, and a flat result is written by the
kernel straight into the numpy array the call returns. Every input the fast path does not take must
still give what the general path gives, and bad data must still raise."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import heddle
from conftest import example, reversed_rows

SPMV_F64 = example("sparse/spmv_csr.hdl").replace("xf32", "xf64").replace("[float]", "[f64]")


def matrix(rows=70, cols=50, density=0.1, seed=1, dtype=np.float32):
    return sp.random_array((rows, cols), density=density, format="csr", dtype=dtype, rng=np.random.default_rng(seed))


def reference(A, x):
    return A.astype(np.float64) @ x.astype(np.float64)


@pytest.fixture(scope="module")
def kernels():
    spmv = example("sparse/spmv_csr.hdl")
    return {
        "cpu": heddle.compile(spmv, backend="cpu"),
        "interp": heddle.compile(spmv, backend="interp"),
        "f64": heddle.compile(SPMV_F64, backend="cpu"),
        "csc": heddle.compile(example("sparse/spmv_csc.hdl"), backend="cpu"),
    }


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("data", [np.float32, np.float64])
@pytest.mark.parametrize("xdtype", [np.float32, np.float64, np.float16])
def test_every_index_value_and_x_dtype_agrees_with_scipy_and_the_interpreter(kernels, index, data, xdtype):
    A = matrix(seed=3, dtype=data)
    A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
    x = (np.arange(A.shape[1]) % 7).astype(xdtype)
    for k in (kernels["cpu"], kernels["f64"]):
        y = k(A=A, xs=x)
        assert y.shape == (A.shape[0],) and y.flags.writeable and y.flags.c_contiguous
        np.testing.assert_allclose(y, reference(A, x), rtol=1e-5, atol=1e-5)
    # The compiled reduction may add in another order (reassociable `reduce`).
    np.testing.assert_allclose(kernels["cpu"](A=A, xs=x), kernels["interp"](A=A, xs=x), rtol=1e-6, atol=1e-6)
    assert kernels["cpu"](A=A, xs=x).dtype == np.float32
    assert kernels["f64"](A=A, xs=x).dtype == np.float64


def test_arrays_changed_between_calls_are_read_again(kernels):
    k = kernels["cpu"]
    A = matrix(seed=5)
    x = np.ones(A.shape[1], dtype=np.float32)
    first = k(A=A, xs=x)
    np.testing.assert_allclose(first, A @ x, rtol=1e-5)
    x *= 3
    A.data *= 2
    second = k(A=A, xs=x)
    np.testing.assert_allclose(second, 6 * first, rtol=1e-5)
    # Each result is an array of its own, not the kernel's buffer.
    assert not np.shares_memory(first, second)
    first[:] = -1
    np.testing.assert_allclose(k(A=A, xs=x), second, rtol=1e-6)
    # Changed indices are validated again.
    A.indices[0] = A.shape[1] + 3
    with pytest.raises(heddle.InputError):
        k(A=A, xs=x)


def test_each_result_is_a_fresh_array_of_its_own(kernels):
    # The kernel writes the result into the numpy array the call returns:
    # every call must get its own, which later calls never write again.
    A = matrix(rows=40000, cols=50, seed=9)  # results of 160 KB and more: lent, not copied
    x = np.linspace(-1, 1, A.shape[1], dtype=np.float32)
    for k in (kernels["cpu"], kernels["f64"]):
        first = k(A=A, xs=x)
        kept = first.copy()
        first[:] = 7.0
        second = k(A=A, xs=2 * x)
        assert not np.shares_memory(first, second)
        assert second.flags.writeable and second.flags.c_contiguous
        np.testing.assert_array_equal(first, np.full_like(first, 7.0))
        np.testing.assert_allclose(second, 2 * kept, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(kept, reference(A, x), rtol=1e-5, atol=1e-5)
        # Timed repetitions run the kernel again on the same output.
        assert k.time(reps=3, A=A, xs=x)["reps"] == 3
        third = k(A=A, xs=x)
        np.testing.assert_array_equal(third, kept)


def test_non_contiguous_read_only_and_offset_arrays(kernels):
    k = kernels["cpu"]
    A = matrix(seed=7)
    base = np.random.default_rng(8).random(2 * A.shape[1]).astype(np.float32)
    want = reference(A, base[::2])
    np.testing.assert_allclose(k(A=A, xs=base[::2]), want, rtol=1e-5)
    ro = base[::2].copy()
    ro.setflags(write=False)
    np.testing.assert_allclose(k(A=A, xs=ro), want, rtol=1e-5)
    # Misaligned: float32 data at an odd byte offset (copied, not read in place).
    raw = np.zeros(4 * A.shape[1] + 1, dtype=np.uint8)
    odd = raw[1:].view(np.float32)
    odd[:] = base[::2]
    np.testing.assert_allclose(k(A=A, xs=odd), want, rtol=1e-5)
    # Non-contiguous sparse buffers (views with a stride) go the general way.
    B = A.copy()
    B.data = np.repeat(A.data, 2)[::2]
    B.indices = np.repeat(A.indices, 2)[::2]
    assert not B.data.flags.c_contiguous
    np.testing.assert_allclose(k(A=B, xs=base[::2]), want, rtol=1e-5)
    # A big-endian x is converted.
    np.testing.assert_allclose(k(A=A, xs=base[::2].astype(">f4")), want, rtol=1e-5)


def test_tiny_inputs_and_empty_rows(kernels):
    k = kernels["cpu"]
    # Fewer than 8 bytes of values and of x: copied rather than read in place.
    A = sp.csr_array((np.array([2.0], dtype=np.float32), np.array([0], dtype=np.int32), np.array([0, 1, 1], dtype=np.int32)), shape=(2, 1))
    np.testing.assert_array_equal(k(A=A, xs=np.array([3.0], dtype=np.float32)), [6.0, 0.0])
    empty = sp.csr_array((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(k(A=empty, xs=np.ones(4, dtype=np.float32)), np.zeros(3))


def test_unsorted_and_duplicate_entries_with_in_place_values(kernels):
    k = kernels["cpu"]
    A = matrix(seed=9)
    x = np.random.default_rng(10).random(A.shape[1]).astype(np.float32)
    shuffled = reversed_rows(A)
    np.testing.assert_allclose(k(A=shuffled, xs=x), reference(A, x), rtol=1e-5)
    dup = sp.csr_array((np.array([1.0, 2.0, 4.0], dtype=np.float32), np.array([1, 1, 0], dtype=np.int32), np.array([0, 2, 3], dtype=np.int32)), shape=(2, 2))
    np.testing.assert_allclose(k(A=dup, xs=np.array([10.0, 100.0], dtype=np.float32)), [300.0, 40.0])


def test_bad_data_still_raises_input_errors(kernels):
    k = kernels["cpu"]
    A = matrix(seed=11)
    x = np.ones(A.shape[1], dtype=np.float32)
    for index in (np.int32, np.int64):
        neg = A.copy()
        neg.indices = neg.indices.astype(index)
        neg.indices[2] = -1
        with pytest.raises(heddle.InputError):
            k(A=neg, xs=x)
        past = A.copy()
        past.indptr = past.indptr.astype(index)
        past.indptr[-1] = A.nnz + 5
        with pytest.raises(heddle.InputError) as e:
            k(A=past, xs=x)
        assert e.value.parameter == "A"
        down = A.copy()
        down.indptr = down.indptr.astype(index)
        down.indptr[3] = down.indptr[4] + 1
        with pytest.raises(heddle.InputError):
            k(A=down, xs=x)
    with pytest.raises(heddle.InputError):
        k(A=A, xs=np.ones(A.shape[1] + 1, dtype=np.float32))
    with pytest.raises(heddle.InputError, match="integer data"):
        k(A=A, xs=np.ones(A.shape[1], dtype=np.int32))


def test_csc_parameter_in_place(kernels):
    A = matrix(seed=13).tocsc()
    x = np.random.default_rng(14).random(A.shape[1]).astype(np.float32)
    np.testing.assert_allclose(kernels["csc"](A=A, xs=x), reference(A, x), rtol=1e-5)


def test_many_python_threads_call_one_kernel(kernels):
    k = kernels["cpu"]
    cases = []
    for s in range(6):
        A = matrix(seed=20 + s)
        x = np.random.default_rng(30 + s).random(A.shape[1]).astype(np.float32)
        cases.append((A, x, reference(A, x)))
    failures = []

    def work(case):
        A, x, want = case
        for _ in range(40):
            y = k(A=A, xs=x)
            if not np.allclose(y, want, rtol=1e-5, atol=1e-6):
                failures.append(y)

    threads = [threading.Thread(target=work, args=(c,)) for c in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


RESULTS = {
    "int": ("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => x + 1))))", np.int32, np.array([1, -2, 3])),
    "i64": ("nFun(n => fun(xs: [i64]_n => xs :>> map(fun(x => x - 1))))", np.int64, np.array([1, -2, 2**40])),
    "u8": ("nFun(n => fun(xs: [u8]_n => xs :>> map(fun(x => x))))", np.uint8, np.array([1, 2, 255], dtype=np.uint8)),
    "i32": ("nFun(n => fun(xs: [i32]_n => xs :>> map(fun(x => x * 2))))", np.int32, np.array([1, -2, 3], dtype=np.int32)),
    "bool": ("nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => x > 0.5))))", np.bool_, np.array([0.1, 0.9, 0.7])),
    "f64": ("nFun(n => fun(xs: [f64]_n => xs :>> map(fun(x => x * 0.5))))", np.float64, np.array([1.0, 3.0, 2.5])),
}


@pytest.mark.parametrize("case", sorted(RESULTS))
def test_flat_results_keep_the_dtype_the_values_path_gives(case):
    src, dtype, xs = RESULTS[case]
    cpu = heddle.compile(src, backend="cpu")(xs=xs)
    interp = heddle.compile(src, backend="interp")(xs=xs)
    assert cpu.dtype == interp.dtype == dtype
    np.testing.assert_array_equal(cpu, interp)
