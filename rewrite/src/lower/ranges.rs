//! The value ranges of tensor coordinates, stated for the runtime
//! (`LoopProgram::ranges`): the coordinates of level `l` of a valid tensor
//! lie below the level's size. A runtime that validates an input against
//! them may run code without the checks they imply (`xs@e.1` in an SpMV);
//! the program itself keeps every check.
//!
//! Also which lists are one parent's entries of an ordered, unique level
//! (`sorted_leaf`): sorted by strictly increasing coordinate, which input
//! binding guarantees, so co-iteration need not check them.
//!
//! And which positions buffers hold only values in `0 ..= A_crd{l}_len`
//! (`bounded_positions`): those the view indexes the flat rows with (a
//! loose_compressed level, or a (loose_)compressed level of a batched
//! tensor), which input binding checks whatever the storage came from. Tidying
//! (`tidy.rs`) uses them as an unbatched CSR's nested types are used: the
//! child position `lo + p` of a parent's `lo .. hi` is below the rows' length,
//! so the compiled code need not check it per entry.

use super::view::ViewKind;
use super::{Env, Lowerer, Val, View};
use heddle_ir::encoding::LevelFormat;
use heddle_ir::encoding::storage_types::{BufferKind, storage_layout};
use heddle_ir::loops::{Block, InputRange, Stmt};
use heddle_ir::{Name, Nat, Type};
use heddle_typeck::{KernelParam, TKind};

impl Lowerer<'_> {
    /// The ranges of the coordinate buffers of the kernel's tensor
    /// parameters that are arguments of this program: each level's
    /// coordinate (a field of an array-of-structs run, COO's (i, j) pairs,
    /// or the one field of its own buffer) below the level's size, at levels
    /// whose every stored coordinate is read (not loose levels, whose gaps
    /// between parents hold anything, nor DIA's signed offsets).
    pub(super) fn coordinate_ranges(&mut self) -> Vec<InputRange> {
        let mut out = Vec::new();
        for p in &self.kernel.params {
            let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { continue };
            let Ok(dims) = tt.static_dims() else { continue };
            let Ok(layout) = storage_layout(encoding, &dims, tt.elem, name.as_str()) else { continue };
            for b in &layout.buffers {
                let (BufferKind::Coordinates, Some(l)) = (b.kind, b.level) else { continue };
                // A difference level's offsets (DIA) are signed: not below a size.
                // The levels whose coordinates the buffer holds, one field each:
                // one level, or an array-of-structs run (COO's (i, j) pairs).
                let levels = encoding.aos_run(l).unwrap_or(l..l + 1);
                let signed = levels.clone().any(|k| {
                    encoding
                        .levels
                        .get(k)
                        .is_none_or(|lv| lv.format == LevelFormat::LooseCompressed || lv.expr.is_signed())
                });
                let fields = self.args.iter().find(|a| a.name == b.name).and_then(|a| match &a.kind {
                    heddle_ir::loops::ArgKind::Input { fields, .. } => Some(fields.len()),
                    _ => None,
                });
                if signed || fields != Some(levels.len()) {
                    continue;
                }
                for (field, k) in levels.enumerate() {
                    let Some(size) = layout.lvl_sizes.get(k) else { continue };
                    let mut sink = Block::new();
                    let Ok(below) = self.index_expr(size, &Env::default(), &mut sink) else { continue };
                    if sink.iter().all(|s| matches!(s, Stmt::Let { .. })) {
                        out.push(InputRange {
                            buf: b.name.clone(),
                            field: field as u32,
                            below: super::emit::inline_lets(below, &sink),
                        });
                    }
                }
            }
        }
        out
    }
}

/// Every value of the positions buffer `buf` lies in `0 ..= at_most`, which
/// input binding guarantees (`check_loose_positions`, `check_batched_levels`
/// in `heddle_runtime::io::bind`).
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedPositions {
    /// The positions buffer (an input of the program).
    pub buf: Name,
    /// The inclusive upper bound, the rows' length `A_crd{l}_len`: an `i64`
    /// expression over the naturals.
    pub at_most: heddle_ir::loops::Expr,
}

impl Lowerer<'_> {
    /// The positions buffers, among this program's inputs, that the view reads
    /// a parent's `lo` from and indexes the flat rows below at `lo + p`
    /// ([`LevelAccess::loose_lo`](heddle_ir::encoding::storage_types::LevelAccess)):
    /// a loose_compressed level's, and a batched tensor's (loose_)compressed
    /// levels'. Binding checks that each holds only values in
    /// `0 ..= A_crd{l}_len` (the rows' length).
    pub(super) fn bounded_positions(&mut self) -> Vec<BoundedPositions> {
        let mut out = Vec::new();
        for p in &self.kernel.params {
            let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { continue };
            let Ok(dims) = tt.static_dims() else { continue };
            let Ok(layout) = storage_layout(encoding, &dims, tt.elem, name.as_str()) else { continue };
            for (l, access) in layout.levels.iter().enumerate() {
                if access.loose_lo.is_none() {
                    continue;
                }
                let Some(pos) = layout.buffers.iter().find(|b| b.kind == BufferKind::Positions && b.level == Some(l))
                else {
                    continue;
                };
                let len = Name::from(format!("{name}_crd{l}_len"));
                let input = |n: &Name| self.args.iter().any(|a| &a.name == n);
                if !layout.nat_vars.contains(&len) || !input(&pos.name) || !input(&len) {
                    continue;
                }
                out.push(BoundedPositions { buf: pos.name.clone(), at_most: heddle_ir::loops::Expr::Var(len) });
            }
        }
        out
    }
}

impl Lowerer<'_> {
    /// Is `v` one parent's entries of a tensor parameter's level whose
    /// coordinates are sorted by strictly increasing coordinate under each
    /// parent (see [`Lowerer::sorted_coordinates`])? That is the view the
    /// tensor's `generate` builds (`tensor.rs` in the type checker):
    /// `generate(len, fun(p => (crd@…@p, …)))` over the coordinates buffer
    /// itself, not a list computed from it.
    pub(super) fn sorted_leaf(&self, v: &View) -> bool {
        leaf_coordinates(v).is_some_and(|crd| self.sorted_coordinates(&crd))
    }

    /// How many entries the list `v` can have at most when it is a
    /// [`sorted_leaf`](Self::sorted_leaf): its coordinates are distinct and
    /// below its level's size (input binding checks both), so that size.
    pub(super) fn sorted_leaf_bound(&self, v: &View) -> Option<Nat> {
        let crd = leaf_coordinates(v)?;
        self.kernel.params.iter().find_map(|p| {
            let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { return None };
            let dims = tt.static_dims().ok()?;
            let layout = storage_layout(encoding, &dims, tt.elem, name.as_str()).ok()?;
            layout.buffers.iter().find_map(|b| {
                let (BufferKind::Coordinates, Some(l)) = (b.kind, b.level) else { return None };
                (b.name == crd && encoding.strictly_increasing(l)).then(|| layout.lvl_sizes.get(l).cloned()).flatten()
            })
        })
    }

    /// Is `buf` the coordinates buffer (one scalar per entry) of a tensor
    /// parameter's compressed level that is ordered and unique? Input binding
    /// checks that every such buffer is strictly increasing under each parent
    /// (`heddle_runtime::io::bind`, whatever the storage came from), so code
    /// may rely on it.
    pub(super) fn sorted_coordinates(&self, buf: &Name) -> bool {
        self.kernel.params.iter().any(|p| {
            let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { return false };
            let Ok(dims) = tt.static_dims() else { return false };
            let Ok(layout) = storage_layout(encoding, &dims, tt.elem, name.as_str()) else { return false };
            layout.buffers.iter().any(|b| {
                let (BufferKind::Coordinates, Some(l)) = (b.kind, b.level) else { return false };
                &b.name == buf && encoding.strictly_increasing(l)
            })
        })
    }
}

/// The coordinates buffer `v` reads when it is one parent's entries of a
/// tensor parameter's level as the type checker views it (`tensor.rs`):
/// `generate(len, fun(p => (crd@…@p, …)))` over the buffer itself, not a
/// list computed from it.
fn leaf_coordinates(v: &View) -> Option<Name> {
    let ViewKind::Generate { f, env, .. } = &v.kind else { return None };
    let TKind::Lambda { params, body } = &f.kind else { return None };
    let [(p, _)] = params.as_slice() else { return None };
    let TKind::Tuple(items) = &body.kind else { return None };
    let Some(TKind::Index { array, index }) = items.first().map(|c| &c.kind) else { return None };
    if !matches!(&index.kind, TKind::Var(x) if x == p) {
        return None;
    }
    let mut base = &**array;
    while let TKind::Index { array, .. } = &base.kind {
        base = array;
    }
    let TKind::Var(crd) = &base.kind else { return None };
    // The name is the buffer itself (the parameter, not a rebinding).
    let is_buffer = matches!(env.value(crd), Some(Val::Array(View { kind: ViewKind::Buffer { buf, offset }, .. })) if buf == crd && *offset == Nat::Lit(0));
    is_buffer.then(|| crd.clone())
}
