"""Shared fixtures: the repository's example kernels, and a matrix helper."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def reversed_rows(A):
    """A copy of the csr array A with each row's entries in reverse order
    (marked unsorted): the same matrix, not canonical."""
    import numpy as np

    shuffled = A.copy()
    for i in range(A.shape[0]):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        order = np.arange(lo, hi)[::-1]
        shuffled.indices[lo:hi], shuffled.data[lo:hi] = A.indices[order], A.data[order]
    shuffled.has_sorted_indices = False
    return shuffled


def example(name: str) -> str:
    """The text of examples/NAME."""
    return (ROOT / "examples" / name).read_text()


@pytest.fixture
def spmv_csr() -> str:
    return example("sparse/spmv_csr.hdl")
