// heddle's primitive patterns: every signature, declared once.
//
// A signature is a curried function type. A parenthesised slot `(x: …)` names an
// argument that is not data: `nat` (a type-level natural, written like an
// expression: `split(4)`, `split(k)`), `nat?` (an optional natural: the OpenCL
// dimension of `mapGlobal(d, f)`, default 0), or a function `A -> B` that is
// checked once the types it receives are known. Unnamed slots are data inputs.
// Single capital letters are unknowns: types (T U V W) and naturals (N M K).
// In `[i -> T]_N` the element type may depend on the position i.

map          : (f: T -> U) -> [i -> T]_N -> [i -> U]_N
mapSeq       : (f: T -> U) -> [i -> T]_N -> [i -> U]_N
mapPar       : (f: T -> U) -> [i -> T]_N -> [i -> U]_N
mapGlobal    : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N
mapWorkgroup : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N
mapLocal     : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N
reduce       : (op: U -> T -> U) -> (init: U) -> [T]_N -> U
reduceSeq    : (op: U -> T -> U) -> (init: U) -> [T]_N -> U
zip          : [i -> T]_N -> [i -> U]_N -> [i -> (T, U)]_N
unzip        : [i -> (T, U)]_N -> ([i -> T]_N, [i -> U]_N)
split        : (k: nat) -> [T]_{k * M} -> [[T]_k]_M
interleave   : (k: nat) -> [T]_N -> [w -> [T]_{(N - w + k - 1) / k}]_k
join         : [i -> [T]_K]_M -> [T]_{sum(i = 0 .. M - 1, K)}
transpose    : [[T]_N]_M -> [[T]_M]_N
slide        : (size: nat) -> (step: nat) -> [T]_N -> [[T]_size]_{(N - size) / step + 1}
pad          : (l: nat) -> (r: nat) -> (v: T) -> [T]_N -> [T]_{l + N + r}
gather       : (idx: [int]_M) -> [T]_N -> [T]_M
scatter      : (idx: [int]_N) -> [T]_N -> [T]_N
generate     : (n: nat) -> (f: int -> T) -> [T]_n
iterate      : (k: nat) -> (f: T -> T) -> T -> T
toLocal      : (f: T -> U) -> T -> U
toPrivate    : (f: T -> U) -> T -> U
toGlobal     : (f: T -> U) -> T -> U
asVector     : (w: nat) -> [T]_{w * N} -> [<T>w]_N
asScalar     : [<T>w]_N -> [T]_{w * N}

// Accumulation by coordinate (sparse kernels whose result is scattered: COO,
// CSC, DCSR rows, MTTKRP). `scatterAdd(n)` takes (index, value) pairs and
// returns the dense array of length n whose element k is the sum (`+`, from
// 0) of the values paired with k, in input order; positions no pair names
// are 0. I is any integer type (coordinates keep their storage width); T is
// a number, or a tuple or array of numbers (compiled code: a number or a row
// of numbers). An index outside 0 .. n is a run-time error (a `Check` in
// compiled code). Duplicate indices are summed, which is what duplicate COO
// entries mean. As a kernel's result it runs in parallel with atomic adds, so
// float sums may arrive in another order and differ in the last bits.
scatterAdd   : (n: nat) -> [(I, T)]_N -> [T]_n

// Co-iteration (merge lattices, MLIR paper §4.3) over two coordinate lists
// sorted by strictly increasing coordinate, such as two rows of compressed
// levels ((coordinate, value) pairs). `union(za, zb)` visits every coordinate
// stored in either list, in order, with both values (za / zb standing in for
// the list that has none): the disjunction, for `+`. `intersect` visits the
// coordinates stored in both: the conjunction, for `*`. An unsorted or
// duplicated list is a run-time error in the interpreter; compiled code then
// produces an unspecified but in-bounds result.
//
// A result length written `counted` is known only after the pattern ran: the
// type checker gives each use its own count array, `toNat(count#k)`, indexed by
// the positions of the maps around it (`toNat(count#k@i)`), and compiled code
// computes it in a counting phase before the kernel that fills the result
// (count → allocate → fill). See `heddle_ir::nat::counted`.
union        : (za: T) -> (zb: U) -> [(I, T)]_N -> [(I, U)]_M -> [(I, T, U)]_counted
intersect    : [(I, T)]_N -> [(I, U)]_M -> [(I, T, U)]_counted

// The expand/compress workspace (MLIR's `expand` / `compress`): the sparse
// counterpart of scatterAdd. `compressAdd(n)` adds the values of (index,
// value) pairs by index in 0 .. n (any order, duplicates summed, as Gustavson's
// SpMSpM produces them) and returns the indices that received a value, in
// increasing order, with their sums: a compressed row. T is a number. An index
// outside 0 .. n is a run-time error (a `Check` in compiled code).
compressAdd  : (n: nat) -> [(I, T)]_N -> [(I, T)]_counted
