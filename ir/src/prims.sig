// heddle's primitive patterns: every signature, declared once.
//
// A signature is a curried function type. A parenthesised slot `(x: …)` names an
// argument that is not data: `nat` (a type-level natural, written like an
// expression: `split(4)`, `split(k)`), `nat?` (an optional natural: the OpenCL
// dimension of `mapGlobal(d, f)`, default 0), or a function `A -> B` that is
// checked once the types it receives are known. Unnamed slots are data inputs.
// Single capital letters are unknowns: types (T U V W) and naturals (N M K).
// A name declared twice has two forms, told apart by the number of parameters
// of its first function argument (`reduce(+, 0)` and `reduce(x => x.1 + x.2)`).
// In `[i -> T]_N` the element type may depend on the position i.
//
// Sections start with `// ## Title`, followed by their description; a
// signature may end with `// a one-line summary`. `heddle prims` prints them.

// ## Data-parallel patterns
// The patterns of Lift and RISE: maps and their OpenCL schedules, reductions,
// layout patterns (zip, split, join, concat, transpose, slide, pad, gather, scatter,
// interleave), generation, iteration, memory placement and vectors.

map          : (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // applies f to every element (in parallel where the backend can)
mapSeq       : (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // as map, one element after another
mapPar       : (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // as map, explicitly parallel
mapGlobal    : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // as map, over the OpenCL global work-items of dimension d
mapWorkgroup : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // as map, one element per OpenCL work-group (dimension d)
mapLocal     : (d: nat?) -> (f: T -> U) -> [i -> T]_N -> [i -> U]_N  // as map, over the local work-items of a work-group (dimension d)
reduce       : (op: U -> T -> U) -> (init: U) -> [T]_N -> U  // combines the elements with op from init; op associative and commutative, may be reassociated
reduceSeq    : (op: U -> T -> U) -> (init: U) -> [T]_N -> U  // as reduce, strictly left to right
reduce       : (op: (T, T) -> T) -> [T]_N -> T  // without init (the array must not be empty): op takes a pair, x.1 the elements so far combined, x.2 the next
reduceSeq    : (op: (T, T) -> T) -> [T]_N -> T  // as reduce without init, strictly left to right
zip          : [i -> T]_N -> [i -> U]_N -> [i -> (T, U)]_N  // pairs the elements at each position
unzip        : [i -> (T, U)]_N -> ([i -> T]_N, [i -> U]_N)  // two arrays from an array of pairs
split        : (k: nat) -> [T]_{k * M} -> [[T]_k]_M  // chunks of k consecutive elements
interleave   : (k: nat) -> [T]_N -> [w -> [T]_{(N - w + k - 1) / k}]_k  // k parts; part w holds elements w, w + k, w + 2k, ...
join         : [i -> [T]_K]_M -> [T]_{sum(i = 0 .. M - 1, K)}  // concatenates the rows (of any lengths)
transpose    : [[T]_N]_M -> [[T]_M]_N  // swaps the two outer dimensions
slide        : (size: nat) -> (step: nat) -> [T]_N -> [[T]_size]_{(N - size) / step + 1}  // windows of size elements, step apart
concat       : [T]_N -> [T]_M -> [T]_{N + M}  // the elements of the first array, then those of the second (MLIR's concatenate: rows side by side)
pad          : (l: nat) -> (r: nat) -> (v: T) -> [T]_N -> [T]_{l + N + r}  // l copies of v before the array and r after it
gather       : (idx: [int]_M) -> [T]_N -> [T]_M  // the elements at positions idx
scatter      : (idx: [int]_N) -> [T]_N -> [T]_N  // element i written at position idx@i (idx a permutation)
generate     : (n: nat) -> (f: int -> T) -> [T]_n  // f(0), f(1), ..., f(n - 1)
iterate      : (k: nat) -> (f: T -> T) -> T -> T  // f applied k times
toLocal      : (f: T -> U) -> T -> U  // as f; its result in OpenCL local memory
toPrivate    : (f: T -> U) -> T -> U  // as f; its result in OpenCL private memory
toGlobal     : (f: T -> U) -> T -> U  // as f; its result in OpenCL global memory
asVector     : (w: nat) -> [T]_{w * N} -> [<T>w]_N  // groups of w scalars as w-wide vectors
asScalar     : [<T>W]_N -> [T]_{W * N}  // vectors back to their scalars

// ## Accumulation by coordinate
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
scatterAdd   : (n: nat) -> [(I, T)]_N -> [T]_n  // sums the values paired with each index k into element k of a dense array of length n

// ## Co-iteration
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
union        : (za: T) -> (zb: U) -> [(I, T)]_N -> [(I, U)]_M -> [(I, T, U)]_counted  // co-iteration over coordinates stored in either list, with both values (za / zb for an absent one)
intersect    : [(I, T)]_N -> [(I, U)]_M -> [(I, T, U)]_counted  // co-iteration over coordinates stored in both lists

// ## The expand/compress workspace
// The expand/compress workspace (MLIR's `expand` / `compress`): the sparse
// counterpart of scatterAdd. `compressAdd(n)` adds the values of (index,
// value) pairs by index in 0 .. n (any order, duplicates summed, as Gustavson's
// SpMSpM produces them) and returns the indices that received a value, in
// increasing order, with their sums: a compressed row. T is a number. An index
// outside 0 .. n is a run-time error (a `Check` in compiled code).
compressAdd  : (n: nat) -> [(I, T)]_N -> [(I, T)]_counted  // sums (index, value) pairs by index in a workspace; the indices that got a value, in order, with their sums
// `compressLast(n)` is the same workspace where a later value for an index
// replaces the earlier one (MLIR's `tensor.insert` into a sparse tensor: the
// last insertion at a coordinate wins); T is any scalar.
compressLast : (n: nat) -> [(I, T)]_N -> [(I, T)]_counted  // (index, value) pairs by index in a workspace, a later value replacing an earlier one; the indices that got a value, in order, with their last values

// ## Filtering
// `filter(p)` keeps the elements for which `p` holds, in order: MLIR's
// `sparse_tensor.select` on a row of (coordinate, value) pairs (the lower
// triangle, `filter(fun(e => e.1 <= i))`; a threshold on the values). Its
// length is counted, as co-iteration's: compiled code counts the kept
// elements first, then writes them.
filter       : (p: T -> bool) -> [T]_N -> [T]_counted  // the elements for which p holds, in order

// ## Sorting
// `sortBy(key)` orders the elements by increasing `key(x)`, keeping elements
// with equal keys in their order (a stable sort; the key is computed once per
// element). The key is a scalar or a tuple of scalars, compared
// lexicographically: integers by value, `false` before `true`, floats by
// value with `-0.0` equal to `0.0` and every NaN after every number (numpy's
// order); complex numbers have no order. A decreasing order is an increasing
// one of a negated key (`sortBy(e => -e.2)`). MLIR's `sparse_tensor.sort`
// (coordinates and values permuted by keys) and `reorder_coo` (COO entries into
// another order) are this pattern on a tensor's entries.
sortBy       : (key: T -> U) -> [T]_N -> [T]_N  // the elements in increasing order of key(x), equal keys kept in their order (stable)

// ## Numeric conversions
// Each scalar type's name converts a number or a bool to that type:
// `float(n)`, `int(x)`, `double(k)`, `u8(v)`, ... (aliases included: `i32`
// is `int`, `f64` is `double`, `index` is `i64`). T is a scalar. Integer to
// integer wraps at the target's width (two's complement); integer to float
// rounds to nearest; float to float rounds to nearest; float to integer
// rounds toward zero and saturates at the target's range, NaN giving 0 (as
// Rust's `as` and OpenCL's `convert_T_sat_rtz`); to `bool` is `x != 0` (NaN
// gives true); a bool is 0 or 1. Every backend computes the same value.
// `f16` and `bf16` are stored in 2 bytes and computed in `f32`: an operation
// on them rounds its exact result once, to nearest even, back to their
// precision (the IEEE result: `f32` is wide enough that rounding twice never
// differs), and a `double` converts to them in one rounding.
bool         : T -> bool  // x != 0
int          : T -> int  // to a 32-bit signed integer
float        : T -> float  // to a 32-bit float
double       : T -> double  // to a 64-bit float
index        : T -> index  // to a 64-bit signed integer (as i64)
i8           : T -> i8  // to an 8-bit signed integer
i16          : T -> i16  // to a 16-bit signed integer
i32          : T -> i32  // to a 32-bit signed integer (as int)
i64          : T -> i64  // to a 64-bit signed integer
u8           : T -> u8  // to an 8-bit unsigned integer
u16          : T -> u16  // to a 16-bit unsigned integer
u32          : T -> u32  // to a 32-bit unsigned integer
u64          : T -> u64  // to a 64-bit unsigned integer
f32          : T -> f32  // to a 32-bit float (as float)
f64          : T -> f64  // to a 64-bit float (as double)
f16          : T -> f16  // to an IEEE 754 16-bit float (binary16)
half         : T -> half  // to an IEEE 754 16-bit float (as f16)
bf16         : T -> bf16  // to a bfloat16 (f32's exponent, 8-bit significand)

// ## Complex numbers
// `complex<f32>` and `complex<f64>` (MLIR's spelling) are scalars: pairs of
// floats (real, imaginary), stored as two consecutive floats as numpy's
// complex64 / complex128 and MLIR store them. They have `+ - * /`, unary
// `-`, `==` and `!=` (no order, `%`, `min` or `max`); a real literal where a
// complex number is expected is one with imaginary part 0 (`z * 2.0`,
// `reduce(+, 0.0)`). `complex(re, im)` builds one from two parts of the same
// float type T (`f32` or `f64`; literal parts default to `float`, or follow
// the complex type the context needs). C is a complex type whose parts have
// type T. Multiplication and division are the textbook formulas, each
// operation rounded as the parts' type rounds (no fused multiply-add).
complex      : T -> T -> C  // the complex number re + im·i (T is f32 or f64)
re           : C -> T  // the real part
im           : C -> T  // the imaginary part
conj         : C -> C  // the complex conjugate re - im·i
