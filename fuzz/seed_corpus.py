#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets from the repository itself.

Every program in examples/ and tests/, every encoding written in them, the
rule files, the data files, and a few hand-made files of each format go to
fuzz/corpus/<target>/ (one file per seed, named by its content's hash), so
the seeds follow the repository instead of going stale in a copy.

    python3 fuzz/seed_corpus.py          # from anywhere in the repository
"""

import hashlib
import pathlib
import re

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
SKIP = {"target", "fuzz", ".git", "node_modules"}


def files(*patterns):
    out = []
    for pattern in patterns:
        for p in sorted(ROOT.rglob(pattern)):
            if not SKIP.intersection(p.relative_to(ROOT).parts) and p.is_file() and p.stat().st_size <= 64 * 1024:
                out.append(p)
    return out


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = FUZZ / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


ENCODING = re.compile(r"#sparse_tensor\.encoding<\{.*?\}>", re.S)
SIZE = re.compile(r"_\{([^{}]*)\}")

MTX = [
    "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1.5\n2 3 -2\n3 4 1e3\n",
    "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 3 -1\n",
    "%%MatrixMarket matrix coordinate pattern general\n% comment\n2 2 2\n1 2\n2 1\n",
    "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n3 1 2.0\n",
    "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
    "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n",
    "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1.0 2.0\n",
]
TNS = ["1 1 1 1.0\n2 3 1 -2.5\n3 2 4 4\n", "# a comment\n1 1 0.5\n2 2 1.5\n", "1 1 1 1 1 3.0\n"]
NATS = [
    "n + 1", "(n + 1) * (n + 2) / 2", "sum(i = 0 .. n - 1, i)", "sum(i = 0 .. n - 1, 2 * i + 1)",
    "sum(k = 0 .. m - 1, sum(j = 0 .. k, j))", "n < 4 ? n : 4", "min(n, m) + max(n, 2)", "n / 2 * 2 + n % 2",
    "sum(i = 0 .. n / 2 - 1, 2)", "(a + b) * (c + d) * (e + f)", "sum(i = 1 .. n, i * i)", "n - (n - 1)",
]
RULES = ["a: map(?f) => map(?f)\n", "split-join: ?x :>> split(?k) :>> join => ?x for ?k in 2, 4\n",
         "r: ?x :>> reduce(?op, ?i) => ?x :>> reduceSeq(?op, ?i) if assoc(?op, ?i)\n"]


def npy(descr, shape, payload):
    """A version 1.0 .npy file (its header padded to 64 bytes, as numpy writes it)."""
    header = "{'descr': %s, 'fortran_order': False, 'shape': %s, }" % (repr(descr) if descr.startswith("<") else descr, shape)
    pad = 64 - (10 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode()
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + payload


def npz(members, deflate=False):
    """A .npz archive (a zip of .npy members), as np.savez / scipy.sparse.save_npz write it."""
    import io
    import zipfile
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(name + ".npy", data)
    return out.getvalue()


def ints(descr, xs):
    size = int(descr[2:])
    return npy(descr, "(%d,)" % len(xs), b"".join(x.to_bytes(size, "little", signed=True) for x in xs))


def floats(xs, shape=None):
    import struct
    return npy("<f8", shape or "(%d,)" % len(xs), b"".join(struct.pack("<d", x) for x in xs))


def fmt(name):
    return npy("'|S%d'" % len(name), "()", name.encode())


# scipy.sparse.save_npz's layouts (the first byte picks the npz target's encoding).
NPZ = [
    [("format", fmt("csr")), ("shape", ints("<i8", [3, 4])), ("data", floats([1.5, -2.0, 3.0])),
     ("indices", ints("<i4", [0, 2, 3])), ("indptr", ints("<i4", [0, 1, 1, 3]))],
    [("format", fmt("csc")), ("shape", ints("<i8", [3, 4])), ("data", floats([1.0, 2.0])),
     ("indices", ints("<i4", [2, 0])), ("indptr", ints("<i4", [0, 1, 1, 2, 2]))],
    [("format", fmt("csr")), ("shape", ints("<i8", [2, 3])), ("data", floats([1.0, 2.0, 4.0])),
     ("indices", ints("<i8", [2, 0, 2])), ("indptr", ints("<i8", [0, 3, 3]))],
    [("format", fmt("bsr")), ("shape", ints("<i8", [4, 4])), ("data", floats([1, 2, 3, 4], "(1, 2, 2)")),
     ("indices", ints("<i4", [1])), ("indptr", ints("<i4", [0, 1, 1]))],
    [("format", fmt("coo")), ("shape", ints("<i8", [3, 3])), ("data", floats([1.0, 2.0])),
     ("row", ints("<i4", [0, 2])), ("col", ints("<i4", [1, 2]))],
    [("format", fmt("coo")), ("shape", ints("<i8", [2, 3, 4])), ("data", floats([1.0, 2.0])),
     ("coords", npy("<i8", "(3, 2)", b"".join(x.to_bytes(8, "little") for x in [0, 1, 2, 0, 3, 1])))],
    [("format", fmt("dia")), ("shape", ints("<i8", [3, 3])), ("data", floats([1, 2, 3, 4, 5, 6], "(2, 3)")),
     ("offsets", ints("<i4", [0, 1]))],
]


def main():
    programs = files("*.hdl")
    for p in programs:
        text = p.read_text(errors="replace")
        for target in ("parse_roundtrip", "typecheck", "lower"):
            add(target, text)
        for enc in ENCODING.findall(text):
            add("encoding", b"\x04\x08\x00\x03" + enc.encode())
        for size in SIZE.findall(text):
            add("nat", size)
    for p in files("*.rs"):
        for enc in ENCODING.findall(p.read_text(errors="replace")):
            add("encoding", b"\x00\x00\x00\x00" + enc.encode())
    for n in NATS:
        add("nat", n)
    for p in files("*.mtx"):
        add("mtx", p.read_bytes())
    for m in MTX:
        add("mtx", m)
    for p in files("*.tns"):
        add("tns", p.read_bytes())
    for t in TNS:
        add("tns", t)
    for p in files("*.json"):
        data = p.read_bytes()
        add("input_file", b"\x01" + data)
        add("json_storage", data)
    for p in files("*.npy"):
        add("input_file", b"\x00" + p.read_bytes())
    add("input_file", b"\x00" + npy("<f4", "(2,)", b"\x00\x00\x80\x3f\x00\x00\x00\x40"))
    add("input_file", b"\x00" + npy("<i8", "(2, 1)", bytes(16)))
    add("input_file", b"\x00" + npy("[('c', '<i4'), ('v', '<f8')]", "(1,)", bytes(16)))
    for k, members in enumerate(NPZ):
        add("npz", bytes([k % 5]) + npz(members))
        add("npz", bytes([(k + 1) % 5]) + npz(members, deflate=True))
    for p in files("*.npz"):
        add("npz", b"\x00" + p.read_bytes())
    for p in files("*.rules"):
        add("rules", p.read_bytes())
    for r in RULES:
        add("rules", r)
    storage = '{"coordinates":[null,[0,5,1,2,7,6]],"dim_sizes":[4,8],"encoding":"#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : %s) }>","lvl_sizes":[4,8],"nse":6,"positions":[null,%s],"values":[1.0,2.0,3.0,4.0,5.0,6.0]}'
    add("json_storage", storage % ("compressed", "[0,2,2,5,6]"))
    add("json_storage", storage % ("loose_compressed", "[0,2,2,2,2,5,5,6]"))
    add("json_storage", '{"coordinates":[[0,0,0,5,2,1,2,2,2,7,3,6],null],"dim_sizes":[4,8],"encoding":"#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>","lvl_sizes":[4,8],"nse":6,"positions":[[0,6],null],"values":[1.0,2.0,3.0,4.0,5.0,6.0]}')
    add("json_storage", "[[1, 0, 2], [0, 0, 3]]")
    for target in sorted((FUZZ / "corpus").iterdir()):
        print(f"{target.name}: {sum(1 for _ in target.iterdir())} seeds")


if __name__ == "__main__":
    main()
