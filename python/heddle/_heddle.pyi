"""Type stubs of the extension module `heddle._heddle` (the Rust half)."""

from typing import Any, Sequence

class Error(Exception):
    """Any error heddle reports."""

class SourceError(Error):
    """A problem located in the source (syntax, types, a construct a backend
    refuses, a check that failed while the kernel ran)."""

    file: str
    line: int
    column: int
    kind: str
    message: str
    rendered: str
    diagnostics: list[dict[str, Any]]

class InputError(Error):
    """A problem with the inputs given to a kernel or a conversion."""

    parameter: str | None
    message: str

class DeviceError(Error):
    """No OpenCL device, or the device refused the kernel."""

def check(source: str, filename: str = "<string>") -> str: ...
def fmt(source: str, filename: str = "<string>") -> str: ...
def cli_json(argv: list[str]) -> tuple[int, str]: ...
def compile(source: str, backend: str, filename: str, threads: int | None = None, device: int | None = None) -> Compiled: ...
def convert(storage: str, shape: Sequence[int], a: Any, b: Any, values: Any, encoding: str, elem: str | None = None) -> dict[str, Any]: ...
def assemble_tensor(
    encoding: str,
    dim_sizes: Sequence[int],
    positions: Sequence[Sequence[int] | None],
    coordinates: Sequence[Sequence[int] | None],
    values: Any,
) -> dict[str, Any]: ...

class Compiled:
    @property
    def type(self) -> str: ...
    @property
    def result_type(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def params(self) -> list[tuple[str, str, str, str | None]]: ...
    def call_fast(self, inputs: dict[str, Any]) -> Any | None: ...
    def time_fast(self, inputs: dict[str, Any], reps: int) -> list[float] | None: ...
    def run(self, nats: list[tuple[str, int]], arrays: list[tuple[Any, ...]], tensors: list[tuple[Any, ...]], reps: int = 0) -> tuple[Any, list[float]]: ...
