"""Complex numbers from Python: complex64/complex128 numpy arrays and scipy
arrays with complex values as inputs, complex results back, on the
interpreter and the compiled backends (which equal it bit for bit)."""

import numpy as np
import pytest
import scipy.sparse as sp

import heddle
from conftest import example


def complex_matrix(rows, cols, seed, dtype=np.complex128):
    rng = np.random.default_rng(seed)
    real = sp.random_array((rows, cols), density=0.3, format="csr", rng=rng)
    a = real.astype(dtype)
    a.data = (a.data + 1j * rng.uniform(-1, 1, a.nnz)).astype(dtype)
    return a


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_complex_spmv_agrees_with_scipy(fmt):
    k = heddle.compile(example("sparse/spmv_complex_csr.hdl"), backend="interp")
    A = complex_matrix(9, 7, seed=4)
    x = np.linspace(-1, 1, 7) + 1j * np.linspace(2, -2, 7)
    y = k(A=A.asformat(fmt), xs=x)
    assert y.dtype == np.complex128
    np.testing.assert_allclose(y, A @ x, rtol=1e-12, atol=1e-12)
    # complex64 inputs widen to the kernel's complex<f64> exactly.
    y32 = k(A=A.astype(np.complex64), xs=x.astype(np.complex64))
    np.testing.assert_allclose(y32, A.astype(np.complex64).astype(np.complex128) @ x.astype(np.complex64).astype(np.complex128), rtol=1e-12, atol=1e-12)


def test_real_data_for_complex_parameters_has_imaginary_parts_zero():
    # As a real literal where a complex number is expected, in the language.
    k = heddle.compile(example("sparse/spmv_complex_csr.hdl"), backend="interp")
    A = sp.random_array((5, 4), density=0.5, format="csr", rng=np.random.default_rng(2))
    x = np.arange(4.0)
    y = k(A=A, xs=x)
    assert y.dtype == np.complex128
    np.testing.assert_array_equal(y.imag, np.zeros(5))
    np.testing.assert_allclose(y.real, A @ x, rtol=1e-12)


def test_complex_data_for_a_real_parameter_is_refused():
    k = heddle.compile(example("sparse/spmv_csr.hdl"), backend="interp")
    A = complex_matrix(4, 3, seed=1)
    with pytest.raises(heddle.InputError):
        k(A=A, xs=np.ones(3, dtype=np.float32))
    with pytest.raises(heddle.InputError):
        k(A=A.real.astype(np.float32), xs=np.ones(3, dtype=np.complex64))


def compile_or_skip(src, backend):
    try:
        return heddle.compile(src, backend=backend)
    except heddle.DeviceError as e:
        pytest.skip(f"no OpenCL device: {e}")


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_compiled_complex_spmv_equals_the_interpreter_bit_for_bit(backend):
    src = example("sparse/spmv_complex_csr.hdl")
    k = compile_or_skip(src, backend)
    rng = np.random.default_rng(6)
    # Quarter multiples: every product and sum is exact, in any order (the
    # CPU backend may split a row's sum over several accumulators).
    quarters = lambda *shape: rng.integers(-8, 9, size=shape) / 4
    dense = (quarters(12, 9) + 1j * quarters(12, 9)) * (rng.random((12, 9)) < 0.6)
    A = sp.csr_array(dense)
    x = quarters(9) + 1j * quarters(9)
    y = k(A=A, xs=x)
    assert y.dtype == np.complex128
    want = heddle.compile(src, backend="interp")(A=A, xs=x)
    assert y.tobytes() == want.tobytes(), (y, want)
    np.testing.assert_array_equal(y, A @ x)
    # complex64 data, widened exactly to the kernel's complex<f64>.
    y64 = k(A=A.astype(np.complex64), xs=x.astype(np.complex64))
    np.testing.assert_array_equal(y64, A @ x)
