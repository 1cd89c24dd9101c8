//! Binding input files to kernel parameters.
//!
//! Naturals come from `--param` or are solved from input lengths (an
//! `offset : [int]_{n+1}` of 5 elements gives n = 4). Every input is then
//! checked against its type before anything runs: element kinds and ranges,
//! every length (including `toNat` sizes of position-dependent arrays, which
//! must be ≥ 0, so decreasing offsets are rejected), and the total size.
//! A tensor parameter's loose_compressed positions are checked against its
//! coordinates buffer (`lo <= hi <= A_crd{l}_len`), which no type states.

use super::read::{Loaded, ScalarKind};
use crate::interp::Env;
use crate::launch::Buffer;
use crate::scalars::ScalarVec;
use crate::value::Value;
use heddle_ir::{Name, Nat, ScalarType, Type};
use heddle_typeck::{Kernel, KernelParam};
use std::collections::HashMap;

/// A problem with the inputs, naming the parameter it concerns.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}{message}", parameter.as_ref().map(|p| format!("parameter `{p}`: ")).unwrap_or_default())]
pub struct InputError {
    /// The kernel parameter concerned, if one.
    pub parameter: Option<String>,
    /// What is wrong.
    pub message: String,
}

fn err(param: &Name, message: impl Into<String>) -> InputError {
    InputError { parameter: Some(param.to_string()), message: message.into() }
}

/// Binds naturals and inputs; returns the environment the kernel runs in,
/// every input as the interpreter's values.
pub fn bind_inputs(
    kernel: &Kernel,
    nat_args: &[(String, i64)],
    inputs: Vec<(String, Loaded)>,
) -> Result<Env, InputError> {
    let inputs = inputs.into_iter().map(|(n, l)| (n, l.into_values())).collect();
    bind(kernel, nat_args, inputs)
}

/// [`bind_inputs`] for the compiled backends: a packed input
/// ([`Loaded::Packed`]) of an array of scalars is checked as it is and bound
/// as the flat buffer the kernel reads ([`Env::with_buffer`]), shared by
/// every launch, never as per-element values. The checks and their messages
/// are [`bind_inputs`']; the environment is for `launch::prepare` (the
/// interpreter cannot run in it).
pub fn bind_inputs_flat(
    kernel: &Kernel,
    nat_args: &[(String, i64)],
    inputs: Vec<(String, Loaded)>,
) -> Result<Env, InputError> {
    let inputs = inputs
        .into_iter()
        .map(|(n, l)| {
            let scalar_leaf = kernel.params.iter().any(|p| match p {
                KernelParam::Value { name, ty, .. } => {
                    name.as_str() == n && matches!(super::write::leaf_type(ty), Type::Scalar(_))
                }
                _ => false,
            });
            if scalar_leaf { (n, l) } else { (n, l.into_values()) }
        })
        .collect();
    bind(kernel, nat_args, inputs)
}

/// An input once bound.
enum Bound {
    Value(Value),
    Buffer(Buffer),
}

fn bind(kernel: &Kernel, nat_args: &[(String, i64)], inputs: Vec<(String, Loaded)>) -> Result<Env, InputError> {
    let nat_params: Vec<&Name> =
        kernel.params.iter().filter(|&p| matches!(p, KernelParam::Nat(_))).map(|p| p.name()).collect();
    let value_params: Vec<(&Name, &Type)> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::Value { name, ty, .. } => Some((name, ty)),
            _ => None,
        })
        .collect();
    let list = |names: Vec<&Name>| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");

    let mut nats: HashMap<Name, i64> = HashMap::new();
    for (name, v) in nat_args {
        let n = Name::from(name.as_str());
        if !nat_params.contains(&&n) {
            return Err(InputError {
                parameter: Some(name.clone()),
                message: format!(
                    "the kernel has no natural parameter of this name (its naturals: {})",
                    list(nat_params.clone())
                ),
            });
        }
        if *v < 0 {
            return Err(err(&n, format!("a natural cannot be negative (given {v})")));
        }
        if nats.insert(n.clone(), *v).is_some() {
            return Err(err(&n, "given twice with --param"));
        }
    }
    let mut data: HashMap<Name, Loaded> = HashMap::new();
    for (name, loaded) in inputs {
        let n = Name::from(name.as_str());
        if !value_params.iter().any(|(p, _)| **p == n) {
            // A tensor parameter (one `--encoding` made sparse, say) is read
            // from its file with `--matrix`, not `--input`.
            if kernel.params.iter().any(|p| matches!(p, KernelParam::Tensor { name, .. } if *name == n)) {
                return Err(err(
                    &n,
                    format!(
                        "`{n}` is a tensor parameter, whose storage is read from a file: pass it with --matrix {n}=FILE (.mtx, .tns, .npz or .json), not --input"
                    ),
                ));
            }
            return Err(InputError {
                parameter: Some(name),
                message: format!(
                    "the kernel has no input of this name (its inputs: {})",
                    list(value_params.iter().map(|p| p.0).collect())
                ),
            });
        }
        if data.insert(n.clone(), loaded).is_some() {
            return Err(err(&n, "given twice with --input"));
        }
    }
    for (p, _) in &value_params {
        if !data.contains_key(*p) {
            // Storage buffers of a tensor parameter come from its file.
            let tensor = kernel.params.iter().find_map(|t| match t {
                KernelParam::Tensor { name, .. } if p.as_str().starts_with(&format!("{name}_")) => Some(name),
                _ => None,
            });
            return Err(match tensor {
                Some(t) => err(t, format!("no input given; pass it with --matrix {t}=FILE (.mtx, .tns or .json)")),
                None => err(p, format!("no input given; pass it with --input {p}=FILE (.npy or .json)")),
            });
        }
    }

    let mut values: Vec<(Name, Bound)> = Vec::new();
    let mut pending: Vec<(&Name, &Type)> = value_params.clone();
    while !pending.is_empty() {
        let env = make_env(&nats, &values);
        let mut progress = false;
        let mut k = 0;
        while k < pending.len() {
            let (name, ty) = pending[k];
            let needs = free_names(ty);
            let ready = needs.iter().all(|n| nats.contains_key(n) || values.iter().any(|(v, _)| v == n));
            if ready {
                // Built once: the data moves into the binding.
                let v = match data.remove(name).expect("every input was given") {
                    Loaded::Packed { data, dtype, shape } => {
                        Bound::Buffer(build_packed(name, ty, data, &dtype, &shape, &env)?)
                    }
                    Loaded::Buffer { buffer, dtype, shape } => {
                        Bound::Buffer(build_buffer(name, ty, buffer, &dtype, &shape, &env)?)
                    }
                    other => Bound::Value(build_input(name, ty, &other, &env)?),
                };
                values.push((name.clone(), v));
                pending.remove(k);
                progress = true;
                break;
            }
            if let Some((unknown, value)) = solve_from_length(name, ty, &data[name], &nats, &env)? {
                nats.insert(unknown, value);
                progress = true;
                break;
            }
            k += 1;
        }
        if !progress {
            let (name, ty) = pending[0];
            let missing: Vec<Name> =
                free_names(ty).into_iter().filter(|n| nat_params.contains(&n) && !nats.contains_key(n)).collect();
            let which = missing.first().map_or("a natural".to_string(), |m| format!("`{m}`"));
            return Err(err(
                name,
                format!(
                    "cannot determine {which} from the inputs' lengths; give it with --param {}=VALUE",
                    missing.first().map_or("N".to_string(), |m| m.to_string())
                ),
            ));
        }
    }
    for n in nat_params {
        if !nats.contains_key(n) {
            return Err(err(n, format!("no input determines this natural; give it with --param {n}=VALUE")));
        }
    }
    check_loose_positions(kernel, &nats, &values)?;
    check_batched_levels(kernel, &nats, &values)?;
    check_sorted_levels(kernel, &values)?;
    Ok(make_env(&nats, &values))
}

/// Every ordered, unique compressed level of a tensor parameter
/// (`Encoding::strictly_increasing`) holds strictly increasing coordinates
/// under each parent, whatever the storage came from (`--matrix` storage is
/// checked when it is assembled too; this covers buffers given with
/// `--input`): compiled co-iteration merges such lists without checking them
/// again. Under parent `q` the entries are `pos[q] - pos[0] .. pos[q+1] - pos[0]`
/// of the flat coordinates buffer, or the innermost arrays of its values.
fn check_sorted_levels(kernel: &Kernel, values: &[(Name, Bound)]) -> Result<(), InputError> {
    use heddle_ir::encoding::storage_types::{BufferKind, storage_layout};
    let find = |n: &Name| values.iter().find(|(v, _)| v == n).map(|(_, b)| b);
    for p in &kernel.params {
        let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { continue };
        let Ok(dims) = tt.static_dims() else { continue };
        let Ok(layout) = storage_layout(encoding, &dims, tt.elem, name.as_str()) else { continue };
        // A batched tensor's rows are checked batch by batch (`check_batched_levels`).
        if layout.batch_levels > 0 {
            continue;
        }
        for b in &layout.buffers {
            let (BufferKind::Coordinates, Some(l)) = (b.kind, b.level) else { continue };
            if !encoding.strictly_increasing(l) {
                continue;
            }
            let Some(crd) = find(&b.name) else { continue };
            // The first entry out of order: (position, coordinate, the one before).
            let mut bad: Option<(usize, i64, i64)> = None;
            match crd {
                Bound::Value(v) => {
                    let mut at = 0;
                    innermost_unsorted(v, &mut at, &mut bad);
                }
                Bound::Buffer(c) => {
                    let pos_name = layout
                        .buffers
                        .iter()
                        .find(|p| p.kind == BufferKind::Positions && p.level == Some(l))
                        .map(|p| p.name.clone());
                    if let Some(Bound::Buffer(pb)) = pos_name.as_ref().and_then(find)
                        && c.known_sorted_under(pb)
                    {
                        continue; // Validated when bound (`compressed_inputs`).
                    }
                    let mut copied = Vec::new();
                    let pos: &[i64] = match pos_name.as_ref().and_then(find) {
                        // The usual `index` positions: read in place.
                        Some(Bound::Buffer(pb)) if pb.as_i64s().is_some() => pb.as_i64s().unwrap_or_default(),
                        Some(Bound::Buffer(pb)) => {
                            copied.extend((0..pb.len()).map(|k| pb.int_at(k).unwrap_or(0)));
                            &copied
                        }
                        Some(Bound::Value(pv)) => {
                            flat_ints(pv, &mut copied);
                            &copied
                        }
                        None => continue,
                    };
                    let base = pos.first().copied().unwrap_or(0);
                    let wide;
                    let crd: &[i64] = match c.as_i64s() {
                        Some(x) => x,
                        None => {
                            wide = (0..c.len()).map(|k| c.int_at(k).unwrap_or(0)).collect::<Vec<_>>();
                            &wide
                        }
                    };
                    if sorted_rows(pos, crd).is_some_and(|r| r.sorted) {
                        continue;
                    }
                    // Out of order somewhere (or positions the count does not cover): find where.
                    for w in pos.windows(2) {
                        let (lo, hi) = ((w[0] - base).max(0) as usize, ((w[1] - base).max(0) as usize).min(crd.len()));
                        let Some(row) = crd.get(lo..hi) else { continue };
                        // Branch-free, so it vectorises; the place only once one is out of order.
                        if !row.windows(2).fold(true, |ok, p| ok & (p[0] < p[1])) {
                            let k = (1..row.len()).find(|&k| row[k] <= row[k - 1]).unwrap_or(1);
                            bad = Some((lo + k, row[k], row[k - 1]));
                            break;
                        }
                    }
                }
            }
            if let Some((k, cur, prev)) = bad {
                let why = if cur < prev { "ordered" } else { "unique" };
                return Err(err(
                    name,
                    format!(
                        "`{}`[{k}] = {cur} follows {prev} under one parent (level {l} is {why}: its coordinates must strictly increase under each parent)",
                        b.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// What [`sorted_rows`] finds.
struct SortedRows {
    /// Whether the coordinates strictly increase under every parent.
    sorted: bool,
    /// The least and greatest coordinate (`None` for none).
    range: Option<(i64, i64)>,
}

/// An integer type that compressed storage comes in from outside (scipy's
/// `int32` and `int64` indices), read as it is by the validating sweep.
pub trait IndexInt: Copy + Ord + Into<i64> + sealed::Sealed {}
impl IndexInt for i32 {}
impl IndexInt for i64 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// Whether `indptr` and `indices` are canonical compressed storage (scipy's
/// `has_canonical_format`, checked rather than trusted) of a matrix with
/// `outer` rows (columns, for CSC) of `inner` entries: `outer + 1` offsets
/// from 0 to `indices.len()`, never decreasing, and indices in `0 .. inner`,
/// strictly increasing within each row. One sweep over `indices` (it
/// vectorises) and one over `indptr`: the checks [`compressed_inputs`]
/// makes before it takes such buffers as they are.
pub fn canonical_compressed<T: IndexInt>(indptr: &[i64], indices: &[T], outer: u64, inner: u64) -> bool {
    let nnz = indices.len() as i64;
    if indptr.len() as u64 != outer.saturating_add(1) || indptr.first() != Some(&0) || indptr.last() != Some(&nnz) {
        return false;
    }
    let Ok(inner) = i64::try_from(inner) else { return false };
    sorted_rows(indptr, indices).is_some_and(|r| r.sorted && r.range.is_none_or(|(lo, hi)| lo >= 0 && hi < inner))
}

/// Whether the coordinates `crd` strictly increase under each parent `q`
/// (entries `pos[q] - pos[0] .. pos[q+1] - pos[0]`), and their range, in one
/// branch-free pass over `crd` (it vectorises) and one over `pos`: the
/// descents (`crd[k] <= crd[k-1]`) all lie at the start of a non-empty row.
/// `None` where `pos` decreases or does not end at the last entry (the
/// caller checks such positions entry by entry).
fn sorted_rows<T: IndexInt>(pos: &[i64], crd: &[T]) -> Option<SortedRows> {
    let base = *pos.first()?;
    let n = crd.len();
    if pos.last()?.checked_sub(base)? != n as i64 {
        return None;
    }
    let (mut monotone, mut at_starts) = (true, 0usize);
    for w in pos.windows(2) {
        monotone &= w[0] <= w[1];
        // A descent at the first entry of a non-empty row is where it belongs
        // (non-empty rows of non-decreasing positions start at distinct
        // entries). The branch is taken for nearly every row (empty rows are
        // rare), so it predicts well; a branch-free form measured slower.
        let p = w[0].wrapping_sub(base) as usize;
        if w[0] < w[1] && p > 0 && p < n {
            at_starts += usize::from(crd[p] <= crd[p - 1]);
        }
    }
    if !monotone {
        return None;
    }
    if crd.is_empty() {
        return Some(SortedRows { sorted: true, range: None });
    }
    let (lo, hi, descents) = summary(crd);
    Some(SortedRows { sorted: descents == at_starts as u64, range: Some((lo.into(), hi.into())) })
}

/// The least and greatest of `crd` (not empty) and how many entries are not
/// above the one before: with AVX2 where the machine has it (eight `i32` or
/// four `i64` comparisons at once), else as the target allows.
fn summary<T: IndexInt>(crd: &[T]) -> (T, T, u64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { summary_avx2(crd) };
    }
    summary_plain(crd)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn summary_avx2<T: IndexInt>(crd: &[T]) -> (T, T, u64) {
    summary_plain(crd)
}

#[inline(always)]
fn summary_plain<T: IndexInt>(crd: &[T]) -> (T, T, u64) {
    let first = crd[0];
    let (next, prev) = (&crd[1..], &crd[..crd.len() - 1]);
    // Branch-free reductions over two equal slices: they vectorise.
    let (mut lo, mut hi, mut descents) = (first, first, 0u64);
    // Counted in 32 bits per block (the lanes of `i32` comparisons), added up in 64.
    for (next, prev) in next.chunks(1 << 30).zip(prev.chunks(1 << 30)) {
        let mut block = 0u32;
        for (&x, &p) in next.iter().zip(prev) {
            lo = lo.min(x);
            hi = hi.max(x);
            block += u32::from(x <= p);
        }
        descents += u64::from(block);
    }
    (lo, hi, descents)
}

/// The first entry of an innermost array (of integers) of `v` that is not
/// above the one before it, counting entries across arrays from `at`.
fn innermost_unsorted(v: &Value, at: &mut usize, bad: &mut Option<(usize, i64, i64)>) {
    let Some(items) = v.as_array() else { return };
    if items.first().is_some_and(|x| x.as_array().is_some()) {
        for x in items {
            innermost_unsorted(x, at, bad);
            if bad.is_some() {
                return;
            }
        }
        return;
    }
    let ints: Vec<i64> = items.iter().map(|x| x.as_int().unwrap_or(0)).collect();
    if let Some(k) = (1..ints.len()).find(|&k| ints[k] <= ints[k - 1]) {
        *bad = Some((*at + k, ints[k], ints[k - 1]));
    }
    *at += ints.len();
}

/// The integers of `v`, nested arrays flattened in order.
fn flat_ints(v: &Value, out: &mut Vec<i64>) {
    match v.as_array() {
        Some(items) => items.iter().for_each(|x| flat_ints(x, out)),
        None => out.extend(v.as_int()),
    }
}

/// The integers of a bound buffer, flat (`-1` for what is not one).
fn bound_ints(b: &Bound) -> Vec<i64> {
    match b {
        Bound::Value(v) => {
            let mut out = Vec::new();
            flat_ints(v, &mut out);
            out
        }
        Bound::Buffer(b) => (0..b.len()).map(|k| b.int_at(k).unwrap_or(-1)).collect(),
    }
}

/// A tensor parameter with leading batch levels holds one row per batch in
/// every buffer (see `crate::sparse::batch`); the view reads parent q's
/// entries of batch b at `A_pos{l}@b@q ..` of the batch's rows, which no type
/// states. So each batch's positions row of a (loose_)compressed level must
/// start at 0 (MLIR's rule: each batch is stored on its own), never decrease
/// (loose: `lo <= hi` per pair) and stay within the row (`A_crd{l}_len`); an
/// ordered, unique level's coordinates must strictly increase under each
/// parent. Errors name the tensor parameter, the buffer, the batch and the
/// flat position.
fn check_batched_levels(
    kernel: &Kernel,
    nats: &HashMap<Name, i64>,
    values: &[(Name, Bound)],
) -> Result<(), InputError> {
    use heddle_ir::encoding::LevelFormat;
    let env = make_env(nats, &[]);
    let find = |n: &Name| values.iter().find(|(v, _)| v == n).map(|(_, b)| b);
    for p in &kernel.params {
        let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { continue };
        let k = encoding.levels.iter().take_while(|l| l.format == LevelFormat::Batch).count();
        if k == 0 {
            continue;
        }
        let Ok(dims) = tt.static_dims() else { continue };
        let Ok(layout) = heddle_ir::encoding::storage_layout(encoding, &dims, tt.elem, name.as_str()) else { continue };
        let sizes: Option<Vec<i64>> = layout.lvl_sizes[..k].iter().map(|n| n.eval(&env).ok()).collect();
        let Some(nb) = sizes.map(|s| s.iter().product::<i64>()) else { continue };
        if nb <= 0 {
            continue;
        }
        let nb = nb as usize;
        for (l, level) in encoding.levels.iter().enumerate().skip(k) {
            let loose = level.format == LevelFormat::LooseCompressed;
            if !(loose || level.format == LevelFormat::Compressed) {
                continue;
            }
            let (pos_name, crd_name) = (Name::from(format!("{name}_pos{l}")), Name::from(format!("{name}_crd{l}")));
            let (Some(pos), Some(&len)) =
                (find(&pos_name).map(bound_ints), nats.get(&Name::from(format!("{name}_crd{l}_len"))))
            else {
                continue;
            };
            let row = pos.len() / nb;
            let crd = find(&crd_name).filter(|_| encoding.strictly_increasing(l)).map(bound_ints);
            for b in 0..nb {
                let r = &pos[b * row..(b + 1) * row];
                let at = |i: usize| format!("`{pos_name}`[{b}][{i}]");
                let problem = if !loose && r.first().is_some_and(|&x| x != 0) {
                    Some(format!(
                        "{} = {} but each batch's positions start at 0 (batch {b} is stored on its own)",
                        at(0),
                        r[0]
                    ))
                } else if let Some(i) = r.iter().position(|&x| x < 0) {
                    Some(format!("{} = {} is negative", at(i), r[i]))
                } else if let Some(i) =
                    (1..r.len()).find(|&i| if loose { i % 2 == 1 && r[i] < r[i - 1] } else { r[i] < r[i - 1] })
                {
                    Some(format!("{} = {} is below {} = {} (batch {b}, level {l})", at(i), r[i], at(i - 1), r[i - 1]))
                } else {
                    r.iter().position(|&x| x > len).map(|i| {
                        format!(
                            "{} = {} is past the end of batch {b}'s row of `{crd_name}` ({len} entries)",
                            at(i),
                            r[i]
                        )
                    })
                };
                if let Some(m) = problem {
                    return Err(err(name, m));
                }
                let Some(crd) = &crd else { continue };
                let c = &crd[b * len as usize..((b + 1) * len as usize).min(crd.len())];
                for w in r.windows(2) {
                    let Some(seg) = c.get(w[0] as usize..w[1] as usize) else { continue };
                    if let Some(i) = (1..seg.len()).find(|&i| seg[i] <= seg[i - 1]) {
                        let why = if seg[i] < seg[i - 1] { "ordered" } else { "unique" };
                        return Err(err(
                            name,
                            format!(
                                "`{crd_name}`[{b}][{}] = {} follows {} under one parent (level {l} is {why}: its coordinates must strictly increase under each parent)",
                                w[0] as usize + i,
                                seg[i],
                                seg[i - 1]
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A loose_compressed level's `lo, hi` pairs must satisfy
/// `0 <= lo <= hi <= A_crd{l}_len`: the view reads parent q's entries at
/// `A_pos@(2q) + p` of the flat coordinates and values buffers, whose types
/// cannot state it. (`--matrix` storage is validated when it is assembled;
/// this covers buffers given with `--input`.) The error names the tensor
/// parameter and the buffer.
fn check_loose_positions(
    kernel: &Kernel,
    nats: &HashMap<Name, i64>,
    values: &[(Name, Bound)],
) -> Result<(), InputError> {
    use heddle_ir::encoding::LevelFormat;
    for p in &kernel.params {
        let KernelParam::Tensor { name, encoding, .. } = p else { continue };
        for (l, level) in encoding.levels.iter().enumerate() {
            // Batched tensors' loose levels are checked per batch (`check_batched_levels`).
            if level.format != LevelFormat::LooseCompressed || encoding.levels[0].format == LevelFormat::Batch {
                continue;
            }
            let pos_name = Name::from(format!("{name}_pos{l}"));
            let len_name = Name::from(format!("{name}_crd{l}_len"));
            let pos: Option<Vec<i64>> = values.iter().find(|(n, _)| *n == pos_name).and_then(|(_, v)| match v {
                Bound::Value(v) => v.as_array().map(|items| items.iter().map(|x| x.as_int().unwrap_or(-1)).collect()),
                Bound::Buffer(b) => Some((0..b.len()).map(|k| b.int_at(k).unwrap_or(-1)).collect()),
            });
            let (Some(pos), Some(&len)) = (pos, nats.get(&len_name)) else {
                continue;
            };
            for (q, pair) in pos.chunks(2).enumerate() {
                let &[lo, hi] = pair else { continue };
                let at = |k: usize| format!("`{pos_name}`[{k}]");
                let problem = if lo < 0 {
                    Some(format!("{} = {lo} is negative", at(2 * q)))
                } else if hi < lo {
                    Some(format!(
                        "{} = {hi} is below its lower bound {} = {lo} (parent {q} of loose_compressed level {l})",
                        at(2 * q + 1),
                        at(2 * q)
                    ))
                } else if hi > len {
                    Some(format!(
                        "{} = {hi} is past the end of `{name}_crd{l}` ({len} entries; parent {q} of loose_compressed level {l})",
                        at(2 * q + 1)
                    ))
                } else {
                    None
                };
                if let Some(m) = problem {
                    return Err(err(name, m));
                }
            }
        }
    }
    Ok(())
}

fn make_env(nats: &HashMap<Name, i64>, values: &[(Name, Bound)]) -> Env {
    let mut env = Env::default();
    let mut sorted: Vec<_> = nats.iter().collect();
    sorted.sort();
    for (n, v) in sorted {
        env = env.with_nat(n.clone(), *v);
    }
    for (n, v) in values {
        env = match v {
            Bound::Value(v) => env.with_value(n.clone(), v.clone()),
            Bound::Buffer(b) => env.with_buffer(n.clone(), b.clone()),
        };
    }
    env
}

/// Names a type depends on: naturals and, inside `toNat`, values.
pub fn free_names(t: &Type) -> Vec<Name> {
    let mut out = Vec::new();
    collect_type(t, &mut Vec::new(), &mut out);
    out
}

fn collect_type(t: &Type, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
    match t {
        Type::Array { binder, elem, len } => {
            collect_nat(len, bound, out);
            if let Some(b) = binder {
                bound.push(b.clone());
            }
            collect_type(elem, bound, out);
            if binder.is_some() {
                bound.pop();
            }
        }
        Type::Tuple(ts) => ts.iter().for_each(|t| collect_type(t, bound, out)),
        _ => t.for_each_nat(&mut |n| collect_nat(n, bound, out)),
    }
}

fn collect_nat(n: &Nat, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
    match n {
        Nat::Var(x) => {
            if !bound.contains(x) && !out.contains(x) {
                out.push(x.clone())
            }
        }
        Nat::Sum { var, lo, hi, body } => {
            collect_nat(lo, bound, out);
            collect_nat(hi, bound, out);
            bound.push(var.clone());
            collect_nat(body, bound, out);
            bound.pop();
        }
        Nat::ToNat(e) => collect_expr(e, bound, out),
        _ => n.for_each_child(&mut |c| collect_nat(c, bound, out)),
    }
}

fn collect_expr(e: &heddle_ir::Expr, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
    match &e.kind {
        heddle_ir::ExprKind::Var(x) => {
            if !bound.contains(x) && !out.contains(x) {
                out.push(x.clone())
            }
        }
        heddle_ir::ExprKind::NatValue(n) => collect_nat(n, bound, out),
        _ => e.for_each_child(&mut |c| collect_expr(c, bound, out)),
    }
}

/// The number of buffer items of a value of type `t` (a tuple is one item).
pub fn flat_count(t: &Type) -> Nat {
    match t {
        Type::Array { binder, elem, len } => match (&**elem, binder) {
            (Type::Array { .. }, Some(b)) => {
                Nat::sum(b.clone(), Nat::Lit(0), Nat::sub(len.clone(), Nat::Lit(1)), flat_count(elem))
            }
            (Type::Array { .. }, None) => Nat::mul(len.clone(), flat_count(elem)),
            _ => len.clone(),
        },
        _ => Nat::Lit(1),
    }
}

/// How deep the lists of a JSON value for `t` nest (a tuple is a list too).
fn type_depth(t: &Type) -> usize {
    match t {
        Type::Array { elem, .. } => 1 + type_depth(elem),
        Type::Tuple(_) => 1,
        _ => 0,
    }
}

fn json_depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Is the JSON value `j` for `t` its flat buffer rather than nested lists?
/// When it nests less deeply than `t` does, unless it is a non-empty list
/// that nests as `t` does wherever it has elements: rows without entries
/// (`[[]]`, `[[], []]`) show no depth, but a flat list's items are scalars or
/// tuples, never empty lists. (`[]` alone stays flat: no elements at all.)
fn reads_flat(j: &serde_json::Value, t: &Type) -> bool {
    json_depth(j) < type_depth(t)
        && !(matches!(j, serde_json::Value::Array(items) if !items.is_empty()) && nests_as(j, t))
}

/// Does `j` have lists where `t` has arrays (an empty list fits any array)
/// and tuples (lists of the tuple's arity), and non-lists at its scalars?
fn nests_as(j: &serde_json::Value, t: &Type) -> bool {
    use serde_json::Value::Array;
    match (t, j) {
        (Type::Array { elem, .. }, Array(items)) => items.iter().all(|x| nests_as(x, elem)),
        (Type::Tuple(ts), Array(items)) => items.len() == ts.len() && items.iter().zip(ts).all(|(x, t)| nests_as(x, t)),
        (Type::Array { .. } | Type::Tuple(_), _) | (_, Array(_)) => false,
        _ => true,
    }
}

/// Does an n-D file (n ≥ 2) give the lengths of `t` level by level? When
/// `t` nests at least n dense arrays (no position binder among the outer n).
/// Otherwise the file is the flat buffer of `t`.
fn shaped(t: &Type, shape: &[u64]) -> bool {
    if shape.len() < 2 {
        return false;
    }
    let mut ty = t;
    for _ in shape {
        match ty {
            Type::Array { binder: None, elem, .. } => ty = elem,
            _ => return false,
        }
    }
    true
}

/// Lengths the data shows, each with the type's formula for it.
fn observed_lengths(t: &Type, data: &Loaded) -> Vec<(Nat, i64)> {
    match data {
        Loaded::Flat { shape, .. } | Loaded::Packed { shape, .. } | Loaded::Buffer { shape, .. }
            if shaped(t, shape) =>
        {
            // One equation per dimension of the file, along the nesting.
            let mut out = Vec::new();
            let mut ty = t;
            for &d in shape {
                let Type::Array { elem, len, .. } = ty else { break };
                out.push((len.clone(), d as i64));
                ty = elem;
            }
            out
        }
        Loaded::Flat { items, .. } => vec![(flat_count(t), items.len() as i64)],
        Loaded::Packed { data, .. } => vec![(flat_count(t), data.len() as i64)],
        Loaded::Buffer { buffer, .. } => vec![(flat_count(t), buffer.len() as i64)],
        Loaded::Json(j) => {
            let mut out = Vec::new();
            let (mut ty, mut cur) = (t, j);
            // `[]` is an empty array at every depth: its outer length is 0 (read
            // as a flat list it would only say that a product of lengths is 0).
            if let (serde_json::Value::Array(items), Type::Array { len, .. }) = (j, t)
                && items.is_empty()
            {
                return vec![(len.clone(), 0)];
            }
            if reads_flat(j, t)
                && let serde_json::Value::Array(items) = j
            {
                return vec![(flat_count(t), items.len() as i64)];
            }
            // Nested: one equation per level along the first elements.
            while let (Type::Array { binder, elem, len }, serde_json::Value::Array(items)) = (ty, cur) {
                out.push((len.clone(), items.len() as i64));
                if binder.is_some() || items.is_empty() {
                    break;
                }
                ty = elem;
                cur = &items[0];
            }
            out
        }
    }
}

fn solve_from_length(
    name: &Name,
    ty: &Type,
    data: &Loaded,
    nats: &HashMap<Name, i64>,
    env: &Env,
) -> Result<Option<(Name, i64)>, InputError> {
    for (formula, observed) in observed_lengths(ty, data) {
        let unknown: Vec<Name> = free_names(&Type::array(Type::Scalar(ScalarType::I32), formula.clone()))
            .into_iter()
            .filter(|n| !nats.contains_key(n) && env.value(n).is_none() && env.buffer(n).is_none())
            .collect();
        let [u] = unknown.as_slice() else { continue };
        let g = |x: i64| formula.eval(&env.with_nat(u.clone(), x)).ok();
        let (Some(a), Some(b), Some(c)) = (g(0), g(1), g(2)) else { continue };
        let slope = b - a;
        if slope == 0 || c - b != slope {
            continue;
        }
        let num = observed - a;
        if num % slope != 0 || num / slope < 0 {
            return Err(err(
                name,
                format!(
                    "its {observed} elements do not fit its type {ty}: no natural `{u}` gives {formula} = {observed}"
                ),
            ));
        }
        return Ok(Some((u.clone(), num / slope)));
    }
    Ok(None)
}

/// Checks every length in `t` (≥ 0) without touching the data.
fn check_sizes(name: &Name, t: &Type, env: &Env, at: &mut Vec<i64>) -> Result<(), InputError> {
    if let Type::Array { binder, elem, len } = t {
        let n = len.eval(env).map_err(|e| err(name, format!("cannot evaluate the length {len}: {e}")))?;
        if n < 0 {
            let position = if at.is_empty() { String::new() } else { format!(" at position {at:?}") };
            let reads: Vec<String> = free_names(&Type::array(Type::Scalar(ScalarType::I32), len.clone()))
                .into_iter()
                .filter(|x| env.value(x).is_some() || env.buffer(x).is_some())
                .map(|x| format!("`{x}`"))
                .collect();
            let hint = if reads.is_empty() {
                String::new()
            } else {
                format!(" (check {}: is it decreasing?)", reads.join(", "))
            };
            return Err(err(name, format!("the length {len} is {n}{position}, which is negative{hint}")));
        }
        if contains_array(elem) {
            for k in 0..n {
                let env_k = match binder {
                    Some(b) => env.with_nat(b.clone(), k),
                    None => env.clone(),
                };
                at.push(k);
                check_sizes(name, elem, &env_k, at)?;
                at.pop();
                if binder.is_none() {
                    break;
                }
            }
        }
    }
    Ok(())
}

fn contains_array(t: &Type) -> bool {
    match t {
        Type::Array { .. } => true,
        Type::Tuple(ts) => ts.iter().any(contains_array),
        _ => false,
    }
}

fn build_input(name: &Name, ty: &Type, data: &Loaded, env: &Env) -> Result<Value, InputError> {
    check_sizes(name, ty, env, &mut Vec::new())?;
    let flat_items: Option<(Vec<Value>, String)> = match data {
        Loaded::Flat { items, dtype, .. } => Some((items.clone(), dtype.clone())),
        Loaded::Packed { .. } | Loaded::Buffer { .. } => {
            return build_input(name, ty, &data.clone().into_values(), env);
        }
        Loaded::Json(j) if reads_flat(j, ty) || !matches!(ty, Type::Array { .. }) && !j.is_array() => {
            let items = match j {
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|x| json_item(name, x, super::write::leaf_type(ty)))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![json_item(name, other, super::write::leaf_type(ty))?],
            };
            Some((items, "JSON".to_string()))
        }
        Loaded::Json(_) => None,
    };
    if let Loaded::Flat { shape, .. } = data {
        check_shape(name, ty, shape, env)?;
    }
    match flat_items {
        Some((items, dtype)) => {
            let expected = flat_count(ty).eval(env).map_err(|e| err(name, format!("cannot compute its size: {e}")))?;
            if expected != items.len() as i64 {
                return Err(err(
                    name,
                    format!("its type {ty} needs {expected} elements, but the {dtype} data has {}", items.len()),
                ));
            }
            let mut pos = 0;
            build_flat(name, ty, &items, &mut pos, env, &dtype)
        }
        None => {
            let Loaded::Json(j) = data else { unreachable!("flat data handled above") };
            build_json(name, ty, j, env, &mut Vec::new())
        }
    }
}

/// A multi-dimensional file's shape against the type's lengths.
fn check_shape(name: &Name, ty: &Type, shape: &[u64], env: &Env) -> Result<(), InputError> {
    if !shaped(ty, shape) {
        return Ok(());
    }
    let mut t = ty;
    for (k, &d) in shape.iter().enumerate() {
        let Type::Array { elem, len, .. } = t else { break };
        let n = len.eval(env).map_err(|e| err(name, format!("cannot evaluate the length {len}: {e}")))?;
        if n != d as i64 {
            let shown: Vec<String> = shape.iter().map(u64::to_string).collect();
            return Err(err(
                name,
                format!(
                    "its type {ty} needs length {n} in dimension {k}, but the file's shape is ({})",
                    shown.join(", ")
                ),
            ));
        }
        t = elem;
    }
    Ok(())
}

/// A packed input of an array of scalars, checked as [`build_input`] checks
/// it (lengths, sizes, each element against the type) and laid out as the
/// kernel's flat buffer: the data itself when the file's type is the
/// parameter's, converted element by element otherwise.
/// A [`Loaded::Buffer`] input: the buffer itself where its field is the
/// input's scalar type, after [`build_packed`]'s checks; else its values,
/// converted as `build_packed` converts.
fn build_buffer(
    name: &Name,
    ty: &Type,
    buffer: Buffer,
    dtype: &str,
    shape: &[u64],
    env: &Env,
) -> Result<Buffer, InputError> {
    let leaf = check_packed(name, ty, buffer.len(), dtype, shape, env)?;
    if buffer.fields.as_slice() == [leaf] {
        return Ok(buffer);
    }
    let &[elem] = buffer.fields.as_slice() else {
        return Err(err(name, format!("inputs of records of {} fields are not supported", buffer.fields.len())));
    };
    let mut data = ScalarVec::with_capacity(elem, buffer.len());
    for k in 0..buffer.len() {
        let num = crate::scalars::Num::of_value(&buffer.read(k, 0), elem);
        if !num.is_some_and(|n| data.push_num(n)) {
            return Err(err(name, format!("element {k} is not a {elem}")));
        }
    }
    build_packed(name, ty, data, dtype, shape, env)
}

/// The checks of a packed input of `len` elements against its type (sizes,
/// shape, element count); its scalar type.
fn check_packed(
    name: &Name,
    ty: &Type,
    len: usize,
    dtype: &str,
    shape: &[u64],
    env: &Env,
) -> Result<ScalarType, InputError> {
    let Type::Scalar(leaf) = *super::write::leaf_type(ty) else {
        return Err(err(name, format!("inputs of type {ty} are not supported")));
    };
    // Rows sized by an offsets array (CSR, LIL): their lengths in one pass over it.
    let fast = row_lengths(ty, env);
    let _p = crate::profile::phase(|| {
        format!(
            "bind `{name}` ({len} elements; row lengths {})",
            if fast.is_some() { "read from the offsets" } else { "evaluated" }
        )
    });
    if !fast.as_ref().is_some_and(|f| f.all_sizes) {
        check_sizes(name, ty, env, &mut Vec::new())?;
    }
    check_shape(name, ty, shape, env)?;
    let expected = match fast {
        Some(f) => f.total,
        None => flat_count(ty).eval(env).map_err(|e| err(name, format!("cannot compute its size: {e}")))?,
    };
    if expected != len as i64 {
        return Err(err(name, format!("its type {ty} needs {expected} elements, but the {dtype} data has {len}")));
    }
    Ok(leaf)
}

fn build_packed(
    name: &Name,
    ty: &Type,
    data: ScalarVec,
    dtype: &str,
    shape: &[u64],
    env: &Env,
) -> Result<Buffer, InputError> {
    let leaf = check_packed(name, ty, data.len(), dtype, shape, env)?;
    let what = format!("the input `{name}`");
    if data.elem() == leaf {
        return Buffer::from_scalar_vec(data, &what).map_err(|m| err(name, m));
    }
    let mut out = ScalarVec::with_capacity(leaf, data.len());
    for k in 0..data.len() {
        // Kinds and rounding as for values; an integer kept exact (a `u64`
        // beyond `i64` does not fit an `i64`).
        let exact = data.num(k);
        let v = scalar(name, leaf, &exact.to_value(), k, dtype)?;
        let num = if leaf.is_int() { Some(exact) } else { crate::scalars::Num::of_value(&v, leaf) };
        if !num.is_some_and(|n| out.push_num(n)) {
            let v = exact;
            return Err(err(name, format!("element {k} = {v} does not fit in {leaf}")));
        }
    }
    Buffer::from_scalars(&out, &what).map_err(|m| err(name, m))
}

/// What [`row_lengths`] finds.
struct RowLengths {
    /// Their sum: the flat count.
    total: i64,
    /// Whether every one is ≥ 0.
    all_sizes: bool,
}

/// The row lengths of `[i -> [T]_{toNat(X@(i + a) - X@(i + b))}]_n` (or
/// `toNat(X@(i + a)) - toNat(X@(i + b))`) with `X` a bound integer buffer,
/// read straight from it; `None` for any other type, an index outside `X` or
/// an overflow (the general check then reports it).
fn row_lengths(ty: &Type, env: &Env) -> Option<RowLengths> {
    use heddle_ir::expr::{BinOp, ExprKind};
    let Type::Array { binder: Some(b), elem, len } = ty else { return None };
    let Type::Array { elem: leaf, len: row, .. } = &**elem else { return None };
    if contains_array(leaf) {
        return None;
    }
    let n = len.eval(env).ok().filter(|&n| n >= 0)?;
    // `X@(i + c)`: the buffer's name and c.
    let lookup = |e: &heddle_ir::Expr| -> Option<(Name, i64)> {
        let ExprKind::Index { array, index } = &e.kind else { return None };
        let ExprKind::Var(x) = &array.kind else { return None };
        let offset = match &index.kind {
            ExprKind::Var(v) if v == b => 0,
            ExprKind::NatValue(Nat::Var(v)) if v == b => 0,
            ExprKind::Binary { op: BinOp::Add, lhs, rhs } => match (&lhs.kind, &rhs.kind) {
                (ExprKind::Var(v), ExprKind::Lit(heddle_ir::expr::Literal::Int(c))) if v == b => *c,
                _ => return None,
            },
            _ => return None,
        };
        Some((x.clone(), offset))
    };
    let (hi, lo) = match row {
        Nat::ToNat(e) => match &e.kind {
            ExprKind::Binary { op: BinOp::Sub, lhs, rhs } => (lookup(lhs)?, lookup(rhs)?),
            _ => return None,
        },
        Nat::Bin(heddle_ir::nat::NatOp::Sub, a, c) => match (&**a, &**c) {
            (Nat::ToNat(a), Nat::ToNat(c)) => (lookup(a)?, lookup(c)?),
            _ => return None,
        },
        _ => return None,
    };
    if hi.0 != lo.0 {
        return None;
    }
    let x = env.buffer(&hi.0)?;
    if let (Some(xs), 0..=1, 0..=1) = (x.as_i64s(), hi.1, lo.1) {
        // The usual offsets (`X@(i + 1) - X@i`), in one sweep over the slice.
        let n = usize::try_from(n).ok()?;
        let (hs, ls) = (xs.get(hi.1 as usize..hi.1 as usize + n)?, xs.get(lo.1 as usize..lo.1 as usize + n)?);
        if (hi.1, lo.1) == (1, 0) && xs[..=n].windows(2).fold(true, |ok, w| ok & (w[0] <= w[1])) {
            // Non-decreasing offsets (branch-free check): the lengths telescope.
            return Some(RowLengths { total: xs[n].checked_sub(xs[0])?, all_sizes: true });
        }
        let mut total = 0i64;
        let mut all_sizes = true;
        for (&h, &l) in hs.iter().zip(ls) {
            let d = h.checked_sub(l)?;
            all_sizes &= d >= 0;
            total = total.checked_add(d)?;
        }
        return Some(RowLengths { total, all_sizes });
    }
    let at = |k: i64, c: i64| usize::try_from(k.checked_add(c)?).ok().and_then(|k| x.int_at(k));
    let mut total = 0i64;
    let mut all_sizes = true;
    for k in 0..n {
        let l = at(k, hi.1)?.checked_sub(at(k, lo.1)?)?;
        all_sizes &= l >= 0;
        total = total.checked_add(l)?;
    }
    Some(RowLengths { total, all_sizes })
}

/// One JSON scalar, or a list as a tuple, for an item of type `item` (a
/// scalar or a tuple type; anything else takes the data as it is). A `u64`
/// takes the integers 0 ..= 2^64 − 1 (kept in an `i64`'s bits, as the
/// interpreter holds them); a float type rounds an integer once, straight to
/// its width; the strings "inf", "-inf" and "nan" are floats.
fn json_item(name: &Name, j: &serde_json::Value, item: &Type) -> Result<Value, InputError> {
    let s = item.as_scalar();
    Ok(match j {
        serde_json::Value::Number(n)
            if s == Some(ScalarType::U64) && n.is_i64() && n.as_i64().is_some_and(|x| x < 0) =>
        {
            return Err(err(name, format!("the number {n} does not fit in u64")));
        }
        serde_json::Value::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap_or_default()),
        serde_json::Value::Number(n) if n.is_u64() => {
            let u = n.as_u64().unwrap_or_default();
            match s {
                Some(ScalarType::U64) => Value::Int(u as i64),
                Some(s) if s.is_float() => Value::Float(crate::value::int_to_float(i128::from(u), s)),
                _ => {
                    return Err(err(
                        name,
                        format!("the number {n} is too large for {}", s.map_or("an i64".into(), |s| s.to_string())),
                    ));
                }
            }
        }
        // Rounded once from the text: straight to `f32` for an `f32` (through
        // `f64` could round twice).
        serde_json::Value::Number(n) if s == Some(ScalarType::F32) => {
            Value::Float(super::number::parse_f32(n.to_string().as_bytes()).map_or(f64::NAN, f64::from))
        }
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Bool(b) => Value::Bool(*b),
        // A complex number is the pair [re, im].
        serde_json::Value::Array(items) if let Some(c) = s.filter(|s| s.is_complex()) => {
            let part = Type::Scalar(c.part());
            let [re, im] = items.as_slice() else {
                return Err(err(name, format!("a {c} value is a pair [re, im], found {j}")));
            };
            let float = |v: Value| match v {
                Value::Int(i) => Some(crate::value::int_to_float(i128::from(i), c.part())),
                Value::Float(x) => Some(x),
                _ => None,
            };
            match (float(json_item(name, re, &part)?), float(json_item(name, im, &part)?)) {
                (Some(re), Some(im)) => Value::complex(re, im),
                _ => return Err(err(name, format!("a {c} value is a pair of numbers [re, im], found {j}"))),
            }
        }
        serde_json::Value::Array(items) => {
            let parts: Vec<Type> = match item {
                Type::Tuple(ts) if ts.len() == items.len() => ts.clone(),
                _ => vec![Type::Tuple(Vec::new()); items.len()],
            };
            Value::tuple(items.iter().zip(&parts).map(|(x, t)| json_item(name, x, t)).collect::<Result<_, _>>()?)
        }
        serde_json::Value::String(text) if let Some(v) = super::number::non_finite_from_str(text) => Value::Float(v),
        other => return Err(err(name, format!("expected numbers (or \"inf\", \"-inf\", \"nan\"), found {other}"))),
    })
}

fn build_flat(
    name: &Name,
    ty: &Type,
    items: &[Value],
    pos: &mut usize,
    env: &Env,
    dtype: &str,
) -> Result<Value, InputError> {
    match ty {
        Type::Array { binder, elem, len } => {
            let n = len.eval(env).map_err(|e| err(name, format!("cannot evaluate the length {len}: {e}")))?;
            let mut out = Vec::with_capacity(n.max(0) as usize);
            for k in 0..n {
                let env_k = match binder {
                    Some(b) => env.with_nat(b.clone(), k),
                    None => env.clone(),
                };
                out.push(build_flat(name, elem, items, pos, &env_k, dtype)?);
            }
            Ok(Value::array(out))
        }
        _ => {
            let item =
                items.get(*pos).ok_or_else(|| err(name, format!("the data ends after {} elements", items.len())))?;
            *pos += 1;
            convert_scalar(name, ty, item, *pos - 1, dtype)
        }
    }
}

fn convert_scalar(name: &Name, ty: &Type, item: &Value, at: usize, dtype: &str) -> Result<Value, InputError> {
    match (ty, item) {
        (Type::Scalar(s), v) => scalar(name, *s, v, at, dtype),
        (Type::Tuple(ts), Value::Tuple(vs)) if ts.len() == vs.len() => Ok(Value::tuple(
            ts.iter().zip(vs.iter()).map(|(t, v)| convert_scalar(name, t, v, at, dtype)).collect::<Result<_, _>>()?,
        )),
        (Type::Tuple(ts), _) => Err(err(
            name,
            format!(
                "element {at} should be a tuple of {} components ({ty}); the {dtype} data does not hold tuples of that size (use a structured dtype or [a, b] lists)",
                ts.len()
            ),
        )),
        _ => Err(err(name, format!("inputs of type {ty} are not supported"))),
    }
}

fn scalar(name: &Name, s: ScalarType, v: &Value, at: usize, dtype: &str) -> Result<Value, InputError> {
    match v {
        // A `uint64` file's integers beyond `i64` are held in an i64's bits:
        // only a `u64` holds them.
        Value::Int(x) if s.is_int() && *x < 0 && dtype == "uint64" && s != ScalarType::U64 => {
            Err(err(name, format!("element {at} = {} does not fit in {s}", *x as u64)))
        }
        Value::Int(x) if s.is_int() => {
            let fits = match s {
                ScalarType::I8 => i8::try_from(*x).is_ok(),
                ScalarType::I16 => i16::try_from(*x).is_ok(),
                ScalarType::I32 => i32::try_from(*x).is_ok(),
                ScalarType::U8 => u8::try_from(*x).is_ok(),
                ScalarType::U16 => u16::try_from(*x).is_ok(),
                ScalarType::U32 => u32::try_from(*x).is_ok(),
                // Held in an i64's bits: from unsigned data, every pattern is a u64
                // (JSON's negative numbers are refused in `json_item`).
                // So is a stored tensor's `u64` value (converted exactly before).
                ScalarType::U64 => *x >= 0 || dtype == "uint64" || dtype == "JSON" || dtype == "storage",
                _ => true,
            };
            if fits { Ok(Value::Int(*x)) } else { Err(err(name, format!("element {at} = {x} does not fit in {s}"))) }
        }
        // Rounded once, straight to the width (i64 → f64 → f32 could round twice).
        Value::Int(x) if s.is_float() && dtype == "JSON" => {
            Ok(Value::Float(crate::value::int_to_float(i128::from(*x), s)))
        }
        Value::Float(x) if s.is_float() => Ok(Value::Float(crate::value::round_float(*x, s))),
        // Each part rounded once to the part type; real data is complex with imaginary part 0.
        Value::Complex(z) if s.is_complex() => {
            Ok(Value::complex(crate::value::round_float(z.re, s.part()), crate::value::round_float(z.im, s.part())))
        }
        Value::Float(x) if s.is_complex() => Ok(Value::complex(crate::value::round_float(*x, s.part()), 0.0)),
        Value::Int(x) if s.is_complex() && dtype == "JSON" => {
            Ok(Value::complex(crate::value::int_to_float(i128::from(*x), s.part()), 0.0))
        }
        Value::Bool(b) if s == ScalarType::Bool => Ok(Value::Bool(*b)),
        Value::Int(x) if s == ScalarType::Bool && dtype == "JSON" && (*x == 0 || *x == 1) => Ok(Value::Bool(*x == 1)),
        _ => {
            let found = match v {
                Value::Float(_) => "floating-point",
                Value::Int(_) => "integer",
                Value::Bool(_) => "boolean",
                Value::Complex(..) => "complex",
                _ => "structured",
            };
            let wanted = if s.is_float() {
                "floating-point"
            } else if s.is_complex() {
                "complex"
            } else if s.is_int() {
                "integer"
            } else {
                "boolean"
            };
            Err(err(name, format!("expected {wanted} data ({s}), found {found} data ({dtype}) at element {at}")))
        }
    }
}

fn build_json(
    name: &Name,
    ty: &Type,
    j: &serde_json::Value,
    env: &Env,
    at: &mut Vec<usize>,
) -> Result<Value, InputError> {
    let where_ = |at: &Vec<usize>| if at.is_empty() { String::new() } else { format!(" at {at:?}") };
    match ty {
        Type::Array { binder, elem, len } => {
            let n = len.eval(env).map_err(|e| err(name, format!("cannot evaluate the length {len}: {e}")))?;
            let serde_json::Value::Array(items) = j else {
                return Err(err(name, format!("expected a list of {n} elements{}, found {j}", where_(at))));
            };
            if items.len() as i64 != n {
                return Err(err(
                    name,
                    format!("expected {n} elements{} (length {len}), found {}", where_(at), items.len()),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (k, x) in items.iter().enumerate() {
                let env_k = match binder {
                    Some(b) => env.with_nat(b.clone(), k as i64),
                    None => env.clone(),
                };
                at.push(k);
                out.push(build_json(name, elem, x, &env_k, at)?);
                at.pop();
            }
            Ok(Value::array(out))
        }
        _ => {
            let item = json_item(name, j, ty)?;
            convert_scalar(name, ty, &item, at.last().copied().unwrap_or(0), "JSON")
        }
    }
}

/// The kinds of scalars in loaded data (for messages).
pub fn kinds(data: &Loaded) -> Vec<ScalarKind> {
    match data {
        Loaded::Flat { kinds, .. } => kinds.clone(),
        Loaded::Packed { data, .. } => vec![super::read::kind_of(data.elem())],
        Loaded::Buffer { buffer, .. } => buffer.fields.iter().map(|&f| super::read::kind_of(f)).collect(),
        Loaded::Json(_) => Vec::new(),
    }
}

/// A kernel's inputs by name, as [`bind_inputs`] takes them: its naturals
/// (`A_dim0`, `n`, …) and its loaded buffers (`A_pos1`, `A_values`, `xs`, …).
pub type NamedInputs = (Vec<(String, i64)>, Vec<(String, Loaded)>);

/// The storage of a tensor parameter read from a Matrix Market / FROSTT /
/// JSON file (`--matrix A=file.mtx`): its dimension sizes (`A_dim0`, …) and its
/// buffers (`A_pos1`, `A_crd1`, `A_values`, …) as inputs for [`bind_inputs`].
pub fn tensor_inputs(kernel: &Kernel, name: &str, path: &std::path::Path) -> Result<NamedInputs, InputError> {
    let (encoding, elem) = tensor_param(kernel, name)?;
    let t = crate::sparse::file::read_into_for(path, encoding, elem).map_err(|e| in_file(name, path, e))?;
    stored_tensor_inputs(kernel, name, t)
}

/// [`tensor_inputs`] of a file already read: `contents` as
/// [`crate::sparse::file::read_tensor`] read `path` at the parameter's
/// element type, stored here in the parameter's encoding. A file bound to
/// many kernels (`heddle search-formats`, one per encoding) is read once.
pub fn tensor_inputs_from(
    kernel: &Kernel,
    name: &str,
    contents: crate::sparse::file::Contents,
    path: &std::path::Path,
) -> Result<NamedInputs, InputError> {
    let (encoding, _) = tensor_param(kernel, name)?;
    let t = contents.into_encoding(encoding).map_err(|e| in_file(name, path, e))?;
    stored_tensor_inputs(kernel, name, t)
}

/// A tensor file's error as parameter `name`'s, the file named in front
/// (most errors already name it).
pub fn in_file(name: &str, path: &std::path::Path, e: crate::sparse::SparseError) -> InputError {
    let (message, file) = (e.to_string(), path.display().to_string());
    err(&Name::from(name), if message.starts_with(&file) { message } else { format!("{file}: {message}") })
}

/// The encoding and element type of the tensor parameter `name`.
pub fn tensor_param<'k>(
    kernel: &'k Kernel,
    name: &str,
) -> Result<(&'k heddle_ir::encoding::Encoding, ScalarType), InputError> {
    let n = Name::from(name);
    match kernel.params.iter().find(|p| p.name() == &n) {
        Some(KernelParam::Tensor { ty: Type::Tensor(tt), encoding, .. }) => Ok((encoding, tt.elem)),
        _ => Err(err(&n, "the kernel has no tensor parameter of this name (--matrix is for `tensor<…>` parameters)")),
    }
}

/// [`tensor_inputs`] of a tensor already stored in the parameter's encoding
/// (the Python package binds scipy arrays through it).
pub fn stored_tensor_inputs(
    kernel: &Kernel,
    name: &str,
    t: crate::sparse::SparseTensor,
) -> Result<NamedInputs, InputError> {
    use heddle_ir::encoding::LevelFormat;
    let n = Name::from(name);
    let Some(KernelParam::Tensor { ty: Type::Tensor(tt), encoding, .. }) =
        kernel.params.iter().find(|p| p.name() == &n)
    else {
        return Err(err(
            &n,
            "the kernel has no tensor parameter of this name (--matrix is for `tensor<…>` parameters)",
        ));
    };
    // The type checker admits only `?` and numbers as a parameter's sizes.
    let dims = tt.static_dims().unwrap_or_default();
    for (d, (want, got)) in dims.iter().zip(&t.dim_sizes).enumerate() {
        if want.is_some_and(|w| w != *got) {
            return Err(err(
                &n,
                format!("dimension {d} of the file is {got}, but the type says {}", want.unwrap_or(0)),
            ));
        }
    }
    let _p = crate::profile::phase(|| format!("the buffers of `{name}`"));
    let mut nats = Vec::new();
    for (d, size) in t.dim_sizes.iter().enumerate() {
        if tt.dims[d].is_none() {
            nats.push((format!("{name}_dim{d}"), *size as i64));
        }
    }
    // A batched tensor's rows of coordinates and values: their length is a
    // natural of its own (`A_crd{l}_len`), given here because the lengths
    // cannot tell it when there is no batch.
    let k = encoding.levels.iter().take_while(|l| l.format == LevelFormat::Batch).count();
    if k > 0 {
        let batches: u64 = t.lvl_sizes[..k].iter().product();
        for (l, level) in encoding.levels.iter().enumerate().skip(k) {
            if !matches!(level.format, LevelFormat::Compressed | LevelFormat::LooseCompressed) {
                continue;
            }
            let stride = encoding.aos_run(l).map_or(1, |r| r.len()).max(1) as u64;
            let len = t.coordinates[l].as_ref().map_or(0, |c| c.len() as u64);
            let row = (len / stride).checked_div(batches).unwrap_or(0);
            nats.push((format!("{name}_crd{l}_len"), row as i64));
        }
    }
    let mut inputs = Vec::new();
    // Positions and coordinates packed at the buffer parameter's own type
    // (kept as `u64` where one does not fit it: binding then names it).
    let packed = |buffer: &str, v: &crate::sparse::buffer::IndexBuf| {
        let leaf = kernel.params.iter().find_map(|p| match p {
            KernelParam::Value { name, ty, .. } if name.as_str() == buffer => match super::write::leaf_type(ty) {
                Type::Scalar(s) => Some(*s),
                _ => None,
            },
            _ => None,
        });
        Loaded::packed(index_data(v, leaf), "storage")
    };
    for (l, level) in encoding.levels.iter().enumerate() {
        if let Some(p) = &t.positions[l] {
            let buffer = format!("{name}_pos{l}");
            inputs.push((buffer.clone(), packed(&buffer, p)));
        }
        if let Some(c) = &t.coordinates[l] {
            // An array-of-structs COO region interleaves the coordinates of its levels.
            let run = encoding.aos_run(l).map_or(1, |r| r.len()).max(1);
            let buffer = format!("{name}_crd{l}");
            if run > 1 && level.format != LevelFormat::Singleton {
                let items = (0..c.len() / run)
                    .map(|e| Value::tuple((0..run).map(|k| Value::Int(c.get(e * run + k) as i64)).collect()))
                    .collect::<Vec<_>>();
                let shape = vec![items.len() as u64];
                inputs.push((
                    buffer,
                    Loaded::Flat { items, dtype: "storage".into(), kinds: vec![super::read::ScalarKind::Int], shape },
                ));
            } else if encoding.signed_level(l) {
                // DIA's offsets: signed, sign-extended from the stored width.
                let leaf = kernel.params.iter().find_map(|p| match p {
                    KernelParam::Value { name, ty, .. } if name.as_str() == buffer => match super::write::leaf_type(ty)
                    {
                        Type::Scalar(s) => Some(*s),
                        _ => None,
                    },
                    _ => None,
                });
                let wide = ScalarVec::I64(c.to_i64());
                let data = match leaf {
                    Some(s) => wide.clone().convert(s).unwrap_or(wide),
                    None => wide,
                };
                inputs.push((buffer.clone(), Loaded::packed(data, "storage")));
            } else {
                inputs.push((buffer.clone(), packed(&buffer, c)));
            }
        }
    }
    // An iso-valued parameter (`explicitVal`, `storage_types::iso_value`)
    // takes no values buffer: its kernel reads the constant, and assembly
    // checked every stored value equals it.
    let values_name = format!("{name}_values");
    if !kernel.params.iter().any(|p| matches!(p, KernelParam::Value { name, .. } if name.as_str() == values_name)) {
        return Ok((nats, inputs));
    }
    // At the parameter's element type, exactly (an integer beyond what the
    // type holds is an error naming it; a float is rounded once).
    let typed =
        t.values.convert(tt.elem).map_err(|e| err(&n, format!("stored value {}: {}", e.position, e.message)))?;
    inputs.push((values_name, Loaded::streamed(typed, "storage")));
    Ok((nats, inputs))
}

/// A stored tensor's positions or coordinates at the type `leaf` of the
/// parameter that takes them, in one pass; as `u64` where a value does not
/// fit `leaf` (binding then names it).
fn index_data(v: &crate::sparse::buffer::IndexBuf, leaf: Option<ScalarType>) -> ScalarVec {
    use crate::sparse::buffer::IndexBuf;
    let wide = || ScalarVec::U64(v.to_u64());
    match (v, leaf) {
        // The usual case: `index` positions and coordinates.
        (IndexBuf::U64(x), Some(ScalarType::I64)) if x.iter().all(|&c| c <= i64::MAX as u64) => {
            ScalarVec::I64(x.iter().map(|&c| c as i64).collect())
        }
        (IndexBuf::U64(x), Some(ScalarType::U64) | None) => ScalarVec::U64(x.clone()),
        (IndexBuf::U32(x), Some(ScalarType::U32)) => ScalarVec::U32(x.clone()),
        (IndexBuf::U16(x), Some(ScalarType::U16)) => ScalarVec::U16(x.clone()),
        (IndexBuf::U8(x), Some(ScalarType::U8)) => ScalarVec::U8(x.clone()),
        (_, Some(s)) => wide().convert(s).unwrap_or_else(|_| wide()),
        (_, None) => wide(),
    }
}

/// A compressed array given as its three buffers (scipy's `indptr`,
/// `indices`, `data`) for a tensor parameter stored the same way (CSR for
/// `by_rows`, CSC otherwise; sorted, unique, no fill values, no slices): the
/// parameter's dimension sizes and buffers as packed inputs, taken as they
/// are after one validating pass — the checks [`crate::sparse::assemble`]
/// makes of such storage. The buffers come back unchanged where the
/// parameter stores the array otherwise or a check fails: the general path
/// (assemble, or convert) then takes them and reports what is wrong.
pub fn compressed_inputs(
    kernel: &Kernel,
    name: &str,
    shape: &[u64],
    by_rows: bool,
    (indptr, indices, values): (Vec<i64>, Vec<i64>, ScalarVec),
) -> Result<NamedInputs, (Vec<i64>, Vec<i64>, ScalarVec)> {
    let Some((tt, nats)) = compressed_fits(kernel, name, shape, by_rows, &indptr, &indices, values.len()) else {
        return Err((indptr, indices, values));
    };
    let values = if values.elem() == tt.elem {
        values
    } else {
        // Exactly, or the general path names the value that does not fit.
        match values.clone().convert(tt.elem) {
            Ok(v) => v,
            Err(_) => return Err((indptr, indices, values)),
        }
    };
    Ok((
        nats,
        compressed_buffers(
            kernel,
            name,
            indptr,
            indices,
            Loaded::packed(values, "storage"),
            if by_rows { shape[1] } else { shape[0] },
        ),
    ))
}

/// [`compressed_inputs`] with the values as a buffer of one field, bound as
/// it is ([`Loaded::Buffer`]: it may read memory owned elsewhere); it
/// applies where the field is the parameter's element type.
pub fn compressed_buffer_inputs(
    kernel: &Kernel,
    name: &str,
    shape: &[u64],
    by_rows: bool,
    (indptr, indices, values): (Vec<i64>, Vec<i64>, Buffer),
) -> Result<NamedInputs, (Vec<i64>, Vec<i64>, Buffer)> {
    let Some((tt, nats)) = compressed_fits(kernel, name, shape, by_rows, &indptr, &indices, values.len()) else {
        return Err((indptr, indices, values));
    };
    if values.fields.as_slice() != [tt.elem] {
        return Err((indptr, indices, values));
    }
    let below = if by_rows { shape[1] } else { shape[0] };
    let values_shape = vec![values.len() as u64];
    Ok((
        nats,
        compressed_buffers(
            kernel,
            name,
            indptr,
            indices,
            Loaded::Buffer { buffer: values, dtype: "storage".into(), shape: values_shape },
            below,
        ),
    ))
}

/// The three inputs of a validated compressed array. Positions and
/// coordinates bound as `index` (`i64`) carry what the validation found
/// (coordinates below `below`, strictly increasing in each row), so that
/// binding and the launch do not check it again.
fn compressed_buffers(
    kernel: &Kernel,
    name: &str,
    indptr: Vec<i64>,
    indices: Vec<i64>,
    values: Loaded,
    below: u64,
) -> Vec<(String, Loaded)> {
    let (pos_name, crd_name) = (format!("{name}_pos1"), format!("{name}_crd1"));
    let leaf = |buffer: &str| {
        kernel.params.iter().find_map(|p| match p {
            KernelParam::Value { name, ty, .. } if name.as_str() == buffer => Some(super::write::leaf_type(ty).clone()),
            _ => None,
        })
    };
    let index = Some(Type::Scalar(ScalarType::I64));
    let (nnz, rows) = (indices.len(), indptr.len());
    let fits = |n: usize| crate::limits::check_records("", n as u64, 8).is_ok();
    if leaf(&pos_name) == index && leaf(&crd_name) == index && nnz >= 1 && rows >= 1 && fits(nnz) && fits(rows) {
        let loaded = |buffer: Buffer| {
            let shape = vec![buffer.len() as u64];
            Loaded::Buffer { buffer, dtype: "storage".into(), shape }
        };
        return match (
            Buffer::from_scalar_vec(ScalarVec::I64(indptr), "the positions"),
            Buffer::from_scalar_vec(ScalarVec::I64(indices), "the coordinates"),
        ) {
            (Ok(pos), Ok(crd)) => vec![
                (pos_name, loaded(pos.clone())),
                (crd_name, loaded(crd.with_checked_coordinates(below, &pos))),
                (format!("{name}_values"), values),
            ],
            // Not reached (the sizes fit, above); binding then reports the buffers missing.
            _ => vec![(format!("{name}_values"), values)],
        };
    }
    vec![
        (pos_name, Loaded::packed(ScalarVec::I64(indptr), "storage")),
        (crd_name, Loaded::packed(ScalarVec::I64(indices), "storage")),
        (format!("{name}_values"), values),
    ]
}

/// Whether [`compressed_inputs`] applies: the parameter's tensor type and
/// its dimension-size naturals.
fn compressed_fits(
    kernel: &Kernel,
    name: &str,
    shape: &[u64],
    by_rows: bool,
    indptr: &[i64],
    indices: &[i64],
    nnz_values: usize,
) -> Option<(heddle_ir::tensor::TensorType, Vec<(String, i64)>)> {
    let n = Name::from(name);
    let Some(KernelParam::Tensor { ty: Type::Tensor(tt), encoding: enc, .. }) =
        kernel.params.iter().find(|p| p.name() == &n)
    else {
        return None;
    };
    let want = if by_rows { (0, 1) } else { (1, 0) };
    if crate::sparse::csr::csr_like(enc) != Some(want)
        || enc.levels[1].props.nonordered
        || enc.explicit_val.is_some()
        || enc.implicit_val.is_some()
        || shape.len() != 2
    {
        return None;
    }
    let dims = tt.static_dims().ok()?;
    if dims.iter().zip(shape).any(|(want, got)| want.is_some_and(|w| w != *got)) {
        return None;
    }
    let (outer, inner) = if by_rows { (shape[0], shape[1]) } else { (shape[1], shape[0]) };
    if nnz_values != indices.len() || !canonical_compressed(indptr, indices, outer, inner) {
        return None;
    }
    let nats = (0..2).filter(|&d| tt.dims[d].is_none()).map(|d| (format!("{name}_dim{d}"), shape[d] as i64)).collect();
    Some(((**tt).clone(), nats))
}

#[cfg(test)]
mod tests {
    use super::sorted_rows;

    /// The per-row check `sorted_rows` must agree with, entry by entry.
    fn slow(pos: &[i64], crd: &[i64]) -> bool {
        pos.windows(2).all(|w| crd[w[0] as usize..w[1] as usize].windows(2).all(|p| p[0] < p[1]))
    }

    #[test]
    fn sorted_rows_agrees_with_the_per_row_check() {
        let cases: &[(&[i64], &[i64])] = &[
            (&[0, 2, 2, 5], &[1, 3, 0, 4, 9]),
            (&[0, 2, 2, 5], &[1, 1, 0, 4, 9]),
            (&[0, 2, 2, 5], &[1, 3, 0, 9, 4]),
            (&[0, 3], &[5, 6, 7]),
            (&[0, 3], &[5, 7, 6]),
            (&[0, 1, 2, 3], &[9, 1, 0]),
            (&[0, 0, 0, 2], &[4, 4]),
            (&[0, 0, 0, 2], &[3, 4]),
            // A descent at a row start shared by an empty row counts once.
            (&[0, 2, 2, 2, 4], &[3, 5, 1, 0]),
            (&[0, 2, 2, 2, 4], &[3, 5, 1, 2]),
        ];
        for &(pos, crd) in cases {
            let r = sorted_rows(pos, crd).expect("positions cover the coordinates");
            assert_eq!(r.sorted, slow(pos, crd), "{pos:?} {crd:?}");
            assert_eq!(r.range, Some((*crd.iter().min().unwrap(), *crd.iter().max().unwrap())));
        }
        // Long rows (the vectorised sweep), one entry out of order at each place in turn.
        let crd: Vec<i64> = (0..300).map(|k| k % 100).collect();
        let pos = [0, 100, 200, 300];
        assert!(sorted_rows(&pos, &crd).unwrap().sorted);
        for k in 1..300 {
            if k % 100 == 0 {
                continue;
            }
            let mut bad = crd.clone();
            bad[k] = bad[k - 1];
            assert!(!sorted_rows(&pos, &bad).unwrap().sorted, "{k}");
        }
        // Positions that decrease, or do not end at the last entry: not for the count.
        assert!(sorted_rows(&[0, 2, 1, 3], &[1, 2, 3]).is_none());
        assert!(sorted_rows(&[0, 2], &[1, 2, 3]).is_none());
        assert!(sorted_rows::<i64>(&[0, 0], &[]).is_some_and(|r| r.sorted && r.range.is_none()));
    }

    #[test]
    fn canonical_compressed_agrees_for_int32_and_int64_indices() {
        use super::canonical_compressed;
        // (indptr, indices, rows, columns, canonical?)
        type Case<'a> = (&'a [i64], &'a [i64], u64, u64, bool);
        let cases: &[Case] = &[
            (&[0, 2, 2, 5], &[1, 3, 0, 4, 9], 3, 10, true),
            (&[0, 2, 2, 5], &[1, 3, 0, 4, 10], 3, 10, false), // out of range
            (&[0, 2, 2, 5], &[1, 3, -1, 4, 9], 3, 10, false), // negative
            (&[0, 2, 2, 5], &[3, 1, 0, 4, 9], 3, 10, false),  // unsorted row
            (&[0, 2, 2, 5], &[1, 1, 0, 4, 9], 3, 10, false),  // duplicate
            (&[0, 3, 2, 5], &[1, 3, 0, 4, 9], 3, 10, false),  // decreasing indptr
            (&[1, 2, 2, 5], &[1, 3, 0, 4, 9], 3, 10, false),  // not from 0
            (&[0, 2, 2, 4], &[1, 3, 0, 4, 9], 3, 10, false),  // not to nnz
            (&[0, 2, 5], &[1, 3, 0, 4, 9], 3, 10, false),     // too few offsets
            (&[0, 0, 0], &[], 2, 10, true),
        ];
        for &(indptr, indices, outer, inner, want) in cases {
            let narrow: Vec<i32> = indices.iter().map(|&x| x as i32).collect();
            assert_eq!(canonical_compressed(indptr, indices, outer, inner), want, "{indptr:?} {indices:?}");
            assert_eq!(canonical_compressed(indptr, &narrow, outer, inner), want, "{indptr:?} {indices:?} as int32");
        }
    }
}
