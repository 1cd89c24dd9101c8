"""heddle from Python: check, rewrite, compile and run heddle kernels on
numpy arrays and scipy sparse arrays.

    >>> import heddle, numpy as np
    >>> heddle.check("nFun(n => fun(xs: [float]_n => xs :>> reduce(+, 0)))")
    '(n: nat) -> [float]_n -> float'
    >>> k = heddle.compile("nFun(n => fun(xs: [float]_n => xs :>> reduce(+, 0)))", backend="cpu")
    >>> k(xs=np.arange(4.0))
    6.0

See docs/python.md in the heddle repository.
"""

from __future__ import annotations

import json as _json
import os as _os
import tempfile as _tempfile
from typing import Any, Mapping, Sequence

import numpy as _np

from . import _heddle
from ._heddle import DeviceError, Error, InputError, SourceError

__all__ = [
    "Error",
    "SourceError",
    "InputError",
    "DeviceError",
    "check",
    "fmt",
    "simplify",
    "rewrite",
    "compile",
    "Kernel",
    "convert",
    "from_buffers",
]

# Kinds of `heddle.error/1` errors located in the source.
_SOURCE_KINDS = {"syntax", "type", "unsupported", "runtime", "internal"}


def check(source: str, *, filename: str = "<string>") -> str:
    """Parse and type-check `source`; return the kernel's type as text.

    Raises SourceError (with file, line, column) on a syntax or type error.
    """
    return _heddle.check(source, filename)


def fmt(source: str, *, filename: str = "<string>") -> str:
    """Return the canonical form of `source` (what `heddle fmt` prints)."""
    return _heddle.fmt(source, filename)


def _raise_error_object(obj: dict) -> None:
    errors = obj.get("errors") or [{"kind": "internal", "message": "failed"}]
    first = errors[0]
    kind = first.get("kind", "data")
    message = first.get("message", "failed")
    if kind in _SOURCE_KINDS and "line" in first:
        text = f"{first.get('file')}:{first.get('line')}:{first.get('column')}: {message}"
        err: Error = SourceError(text)
        for key in ("file", "line", "column", "kind", "message"):
            setattr(err, key, first.get(key))
        err.diagnostics = errors  # type: ignore[attr-defined]
    elif kind == "device":
        err = DeviceError(message)
    else:
        parameter = first.get("parameter")
        err = InputError(f"parameter `{parameter}`: {message}" if parameter else message)
        err.parameter = parameter  # type: ignore[attr-defined]
        err.message = message  # type: ignore[attr-defined]
        err.kind = kind  # type: ignore[attr-defined]
    err.error_object = obj  # type: ignore[attr-defined]
    raise err


def _rename(value: Any, old: str, new: str) -> Any:
    """Replaces the temporary file's path by the name the caller gave."""
    if isinstance(value, str):
        return new if value == old else value.replace(old, new)
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, old, new) for k, v in value.items()}
    return value


def _cli(command: str, source: str | None, args: Sequence[str], filename: str, extra_files: Mapping[str, str] = {}) -> dict:
    """Runs `heddle COMMAND [FILE] ARGS --json` in-process on `source`."""
    with _tempfile.TemporaryDirectory(prefix="heddle-") as tmp:
        argv = [command]
        path = _os.path.join(tmp, _os.path.basename(filename) or "kernel.hdl")
        if source is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            argv.append(path)
        for flag, text in extra_files.items():
            name = _os.path.join(tmp, f"extra{len(argv)}.txt")
            with open(name, "w", encoding="utf-8") as f:
                f.write(text)
            argv += [flag.split("#")[0], name]
        argv += list(args) + ["--json"]
        code, text = _heddle.cli_json(argv)
        obj = _rename(_json.loads(text), path, filename)
    if code != 0:
        _raise_error_object(obj)
    return obj


def simplify(source: str | None = None, *, nat: str | None = None, non_decreasing: Sequence[str] = (), filename: str = "kernel.hdl") -> dict:
    """Flattened index formulas before and after Σ elimination.

    Give the kernel's `source` (every parameter's formulas), or `nat=`, a
    natural in the language's syntax. Returns the object of
    `heddle simplify --json` (docs/schemas/heddle.simplify.json).
    """
    if (source is None) == (nat is None):
        raise ValueError("give either source or nat=")
    args: list[str] = []
    if nat is not None:
        args += ["--nat", nat]
    for a in non_decreasing:
        args += ["--non-decreasing", a]
    return _cli("simplify", source, args, filename)


def rewrite(
    source: str,
    *,
    rules: str | Sequence[str] | None = None,
    builtin: bool = True,
    limits: Mapping[str, float] | None = None,
    explain: bool = False,
    cost: str | None = None,
    params: Mapping[str, int] | None = None,
    filename: str = "kernel.hdl",
) -> dict:
    """Explore rewrites of the kernel with an e-graph; the best program found.

    `rules`: extra rules, as text (one `name: LHS => RHS` a line), or a list
    of such texts; `builtin=False` leaves out the built-in rules. `limits`:
    any of `iterations`, `nodes`, `seconds`. `explain`: add the chain of
    rule applications. `params`: naturals' values for rule conditions.
    Returns exactly the object of `heddle rewrite --json`
    (docs/schemas/heddle.rewrite.json).
    """
    args: list[str] = []
    if not builtin:
        args.append("--no-builtin")
    flags = {"iterations": "--iter-limit", "nodes": "--node-limit", "seconds": "--time-limit"}
    for key, value in (limits or {}).items():
        if key not in flags:
            raise ValueError(f"unknown limit {key!r} (known: {', '.join(flags)})")
        args += [flags[key], str(int(value)) if key != "seconds" else repr(float(value))]
    if explain:
        args.append("--explain")
    if cost is not None:
        args += ["--cost", cost]
    for name, value in (params or {}).items():
        args += ["--param", f"{name}={int(value)}"]
    texts = [rules] if isinstance(rules, str) else list(rules or [])
    extra = {f"--rules#{k}": text for k, text in enumerate(texts)}
    return _cli("rewrite", source, args, filename, extra)


def _is_sparse(x: Any) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return sp.issparse(x)


def _compressed_types() -> frozenset:
    global _COMPRESSED
    if _COMPRESSED is None:
        import scipy.sparse as sp

        _COMPRESSED = frozenset((sp.csr_array, sp.csc_array, sp.csr_matrix, sp.csc_matrix))
    return _COMPRESSED


_COMPRESSED: frozenset | None = None
# Values the extension takes as they are (`_typed_values` gives these unchanged).
_PLAIN_VALUES = frozenset(_np.dtype(t) for t in (_np.float32, _np.float64, _np.int64, _np.uint64))
# Arrays the extension takes as they are (`_array_arg`), by dtype: its name.
_PLAIN_FLOATS = {_np.dtype(_np.float32): "float32", _np.dtype(_np.float64): "float64"}


def _matrix_arg(name: str, x: Any, storage: str | None) -> tuple:
    """A scipy sparse array (or a dense 2-D array) as the extension's tensor argument."""
    if type(x) in (_COMPRESSED or _compressed_types()) and (storage == x.format or storage is None):
        # The common case, without conversions: what the general way below gives.
        data = x.data
        if type(data) is _np.ndarray and data.dtype in _PLAIN_VALUES and data.ndim == 1 and data.flags.c_contiguous and data.flags.aligned:
            return (name, x.format, [int(d) for d in x.shape], _index_array(x.indptr), _index_array(x.indices), data)
    import scipy.sparse as sp

    if not sp.issparse(x):
        dense = _np.asarray(x)
        if dense.dtype.kind not in "fiubc":
            raise InputError(f"parameter `{name}`: expected a scipy sparse array or a numeric numpy array, got {type(x).__name__}")
        x = sp.coo_array(dense)
    if x.dtype.kind not in "fiubc":
        raise InputError(f"parameter `{name}`: sparse arrays of {x.dtype} are not supported (integers, floats or complex numbers)")
    vals = _typed_values  # the values keep their dtype
    i64 = lambda a: _np.ascontiguousarray(a, dtype=_np.int64)  # noqa: E731
    shape = [int(d) for d in x.shape]
    if x.format in ("csr", "csc") and (storage == x.format or storage is None):
        return (name, x.format, shape, _index_array(x.indptr), _index_array(x.indices), vals(x.data))
    coo = x.tocoo()
    coords = _np.stack([i64(c) for c in coo.coords], axis=1) if coo.nnz else _np.zeros((0, len(shape)), dtype=_np.int64)
    return (name, "coo", shape, _np.ascontiguousarray(coords.ravel()), _np.zeros(0, dtype=_np.int64), vals(coo.data))


def _index_array(a: Any) -> Any:
    """scipy's indptr or indices as they are when they are contiguous native
    int32 or int64 (read in place, widened on the Rust side while copied),
    else as int64."""
    if isinstance(a, _np.ndarray) and a.dtype in _NATIVE_INDEX and a.flags.c_contiguous and a.flags.aligned:
        return a
    return _aligned(_np.ascontiguousarray(a, dtype=_np.int64))


def _aligned(a: Any) -> Any:
    """`a`, copied if its data is not aligned to its dtype (a buffer the
    extension reads must be)."""
    return a if a.flags.aligned else a.copy()


_NATIVE_INDEX = (_np.dtype(_np.int32), _np.dtype(_np.int64))


def _typed_values(a: Any) -> Any:
    """A sparse array's values as float64, float32, int64 or uint64, without
    loss (booleans as 0/1): the kernel's element type is reached by an exact
    conversion on the Rust side, never through float64."""
    a = _np.asarray(a)
    k = a.dtype.kind
    if k == "c":
        return ("complex", _complex_parts(a))
    if a.dtype == _np.float32:
        dtype = _np.float32
    elif k == "f":
        dtype = _np.float64
    elif k == "u":
        dtype = _np.uint64
    else:
        dtype = _np.int64
    return _aligned(_np.ascontiguousarray(a, dtype=dtype))


def _complex_parts(a: Any) -> Any:
    """Complex numbers as the flat float buffer of their parts (real,
    imaginary, ...): complex64 as float32, wider ones as float64."""
    dtype, parts = (_np.complex64, _np.float32) if a.dtype.itemsize <= 8 else (_np.complex128, _np.float64)
    return _aligned(_np.ascontiguousarray(a, dtype=dtype).reshape(-1)).view(parts)


def _array_arg(name: str, x: Any) -> tuple:
    """A numpy array (or anything numpy.asarray takes) as the extension's array argument."""
    if type(x) is _np.ndarray and x.ndim == 1 and x.flags.c_contiguous and x.flags.aligned:
        # The common case, without conversions: what the general way below gives.
        dtype = _PLAIN_FLOATS.get(x.dtype)
        if dtype is not None:
            return (name, x, "f", dtype, [x.shape[0]])
    a = _np.asarray(x)
    kind = a.dtype.kind
    # Numbers keep their dtype (the kernel's buffer is a copy of them when the
    # parameter has that type); half floats widen to float32, which holds them.
    if kind == "f":
        buf, k = _np.ascontiguousarray(a, dtype=_np.float32 if a.dtype.itemsize <= 4 else _np.float64), "f"
    elif kind in "iu":
        buf, k = _np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("=")), "i"
    elif kind == "b":
        buf, k = _np.ascontiguousarray(a, dtype=_np.uint8), "b"
    elif kind == "c":
        shape = [int(d) for d in a.shape] or [1]
        return (name, _complex_parts(a), "c", str(a.dtype), shape)
    else:
        raise InputError(f"parameter `{name}`: arrays of {a.dtype} are not supported (integers, floats, complex numbers or booleans)")
    shape = [int(d) for d in a.shape] or [1]
    return (name, _aligned(buf.reshape(-1)), k, str(a.dtype), shape)


def _to_scipy(d: dict) -> Any:
    """A stored tensor's dict (from the extension) as a scipy sparse array."""
    import scipy.sparse as sp

    shape = tuple(d["dim_sizes"])
    if d["storage"] == "csr":
        return sp.csr_array((d["values"], d["coordinates"][1], d["positions"][1]), shape=shape)
    if d["storage"] == "csc":
        return sp.csc_array((d["values"], d["coordinates"][1], d["positions"][1]), shape=shape)
    coords = d["coords"]
    return sp.coo_array((d["entry_values"], tuple(coords[:, k] for k in range(coords.shape[1]))), shape=shape)


def _result(value: Any) -> Any:
    if type(value) is _np.ndarray:
        return value
    if isinstance(value, dict) and value.get("__tensor__"):
        return _to_scipy(value)
    if isinstance(value, tuple):
        return tuple(_result(v) for v in value)
    if isinstance(value, list):
        return [_result(v) for v in value]
    return value


class Kernel:
    """A compiled kernel: call it with its inputs by name.

    `k(A=scipy.sparse.csr_array(...), xs=numpy_array, n=5)`: sparse arrays
    bind to `tensor<…>` parameters, numpy arrays (or lists, numbers) to
    array and scalar parameters, ints to naturals (`nFun`); naturals not
    given are solved from the inputs' lengths, as `heddle run` does.
    Returns numpy arrays (scalars as Python numbers, tuples as tuples,
    stored tensors as scipy sparse arrays).
    """

    def __init__(self, compiled: Any) -> None:
        self._c = compiled
        self._params = {name: (kind, ty, storage) for name, kind, ty, storage in compiled.params()}

    @property
    def type(self) -> str:
        """The kernel's type."""
        return self._c.type

    @property
    def result_type(self) -> str:
        """The type of the kernel's result."""
        return self._c.result_type

    @property
    def backend(self) -> str:
        """The backend it runs on: "cpu", "opencl" or "interp"."""
        return self._c.backend

    @property
    def params(self) -> dict[str, tuple[str, str]]:
        """Parameter name -> (kind: "nat" | "value" | "tensor", type)."""
        return {name: (kind, ty) for name, (kind, ty, _) in self._params.items()}

    def _bind(self, inputs: Mapping[str, Any]) -> tuple[list, list, list]:
        nats, arrays, tensors = [], [], []
        for name, x in inputs.items():
            kind, _, storage = self._params.get(name, ("value", "", None))
            if kind == "nat":
                if isinstance(x, bool) or not isinstance(x, (int, _np.integer)):
                    raise InputError(f"parameter `{name}`: a natural is an int, got {type(x).__name__}")
                nats.append((name, int(x)))
            elif kind == "tensor":
                tensors.append(_matrix_arg(name, x, storage))
            elif _is_sparse(x):
                raise InputError(f"parameter `{name}`: a sparse array binds to a `tensor<…>` parameter; `{name}` is an array (give a numpy array, e.g. x.toarray())")
            else:
                arrays.append(_array_arg(name, x))
        return nats, arrays, tensors

    def __call__(self, **inputs: Any) -> Any:
        """Run the kernel on `inputs` (by parameter name); its result."""
        # A cpu kernel on canonical csr/csc arrays and float arrays: read in
        # place, bound by a plan made once (None: anything else, below).
        fast = self._c.call_fast(inputs)
        if fast is not None:
            return fast
        value, _ = self._c.run(*self._bind(inputs), 0)
        return _result(value)

    def time(self, reps: int = 10, **inputs: Any) -> dict[str, float]:
        """Run once, then `reps` more times; the kernel-only seconds of the
        repetitions, as `heddle run --reps N --json` reports them:
        {"median", "min", "max", "reps"} (inputs bound and laid out once)."""
        if reps < 1:
            raise ValueError("reps must be at least 1")
        # The call's own binding where the fast path takes the inputs (as
        # `__call__` does), else the general one.
        times = self._c.time_fast(inputs, int(reps))
        if times is None:
            _, times = self._c.run(*self._bind(inputs), int(reps))
        t = sorted(times)
        n = len(t)
        median = t[n // 2] if n % 2 else (t[n // 2 - 1] + t[n // 2]) / 2
        return {"median": median, "min": t[0], "max": t[-1], "reps": n}

    def __repr__(self) -> str:
        return f"<heddle.Kernel {self.type} on {self.backend}>"


def compile(source: str, backend: str = "cpu", *, threads: int | None = None, device: int | None = None, filename: str = "kernel.hdl") -> Kernel:
    """Check and compile `source` for `backend` ("cpu", "opencl", "interp").

    `threads`: threads for the cpu backend (default: HEDDLE_THREADS, else
    every core); `device`: the OpenCL device's index. Raises SourceError
    when the kernel does not check or the backend refuses it, DeviceError
    when there is no OpenCL device.
    """
    if threads is not None and backend != "cpu":
        raise ValueError("threads= applies to backend=\"cpu\"")
    return Kernel(_heddle.compile(source, backend, filename, threads, device))


_BUFFER_KEYS = ("encoding", "dim_sizes", "lvl_sizes", "positions", "coordinates", "values")


def convert(matrix: Any, encoding: str, elem: str | None = None) -> dict:
    """Store a matrix (scipy sparse array, or dense numpy array) in
    `encoding` (as `heddle convert --to` spells it: CSR, CSC, COO, DCSR,
    BSR(2, 2), `ds`, `#sparse_tensor.encoding<{...}>`); its buffers:
    {"encoding", "dim_sizes", "lvl_sizes", "positions", "coordinates",
    "values"}, positions and coordinates per level (None where a level has
    none). The values keep their type, or are stored at `elem` ("f16",
    "bf16", "f32", "i32", ...; `heddle convert --elem`), each converted once
    (a bf16 comes back as float32 holding it). `from_buffers` turns them back
    into a scipy array."""
    arg = _matrix_arg("matrix", matrix, None)
    d = _heddle.convert(*arg[1:], encoding, elem)
    return {k: d[k] for k in _BUFFER_KEYS}


def from_buffers(buffers: Mapping[str, Any]) -> Any:
    """The scipy sparse array of a tensor's buffers (as `convert` returns
    them), after checking them against their encoding: csr_array or
    csc_array where the encoding stores it so, else coo_array."""
    as_list = lambda v: None if v is None else [int(i) for i in _np.asarray(v).ravel()]  # noqa: E731
    d = _heddle.assemble_tensor(
        buffers["encoding"],
        [int(s) for s in buffers["dim_sizes"]],
        [as_list(p) for p in buffers["positions"]],
        [as_list(c) for c in buffers["coordinates"]],
        _typed_values(_np.asarray(buffers["values"]).ravel()),
    )
    return _to_scipy(d)
