//! The structural step of the front door: the operand's new type, its size
//! naturals, and the dense-level law applied to its uses.

use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr};
use heddle_ir::expr::{EncodingDef, ExprKind, Param};
use heddle_ir::tensor::{EncodingRef, EncodingText, TensorType};
use heddle_ir::types::ScalarType;
use heddle_ir::{Diagnostic, Expr, Name, Nat, Program, Span, Type};

/// The name of the marker for "the dense array this compressed level
/// stands for"; never a primitive, so a program that keeps one does not
/// type-check.
pub const MARKER: &str = "densify";

/// The marker for "the dense row-major matrix whose columns are these
/// compressed levels": `densifyCols(A, rows)` for a column-major operand.
/// Every marker's name starts with [`MARKER`].
pub const COLS_MARKER: &str = "densifyCols";

/// The marker for "the dense row a list of guarded `(column, value)` pairs
/// stands for": `densifyGuarded(s :>> map(fun(d => let j = c in let inside
/// = g in (j, v))))` is the dense row whose entry `j` is `v` where `inside`
/// holds; pairs where it does not (a diagonal's padding, `j` maybe out of
/// range) are no entry. The `let`s are written as redexes
/// (`fun(j => …)(c)`), which rules can match; [`super::sparsify`] turns
/// the ones left after tidying back into `let`s.
pub const GUARDED_MARKER: &str = "densifyGuarded";

/// The marker for "the dense row a list of blocks stands for":
/// `densifyBlocks(s :>> map(fun(b => (b.1, v))), c)` is the dense row whose
/// columns `b.1 · c .. b.1 · c + c` hold the `c` values `v`, 0 elsewhere.
pub const BLOCKS_MARKER: &str = "densifyBlocks";

/// The kernel after the structural step, before the laws run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The program with the operand retyped and the encoding defined.
    pub program: Program,
    /// Its kernel, with `densify(row)` where a compressed row is used.
    pub kernel: Expr,
    /// Where each row binder that got a `densify` is.
    pub rows: Vec<Span>,
    /// The lane binders of the row-block maps of BSR(r, c) with r > 1
    /// (`generate(r, fun(lane => row lane's body))`), which
    /// the lane form (`lanes.rs`) interchanges once the laws have run.
    pub lanes: Vec<Name>,
    /// The operand parameter's location.
    pub operand_span: Span,
}

/// What the structural step marked while rebuilding the uses.
#[derive(Default)]
struct Marks {
    /// The row binders that got a marker.
    rows: Vec<Span>,
    /// The lane binders of BSR's block rows (see [`Plan::lanes`]).
    lanes: Vec<Name>,
}

/// How the operand's dense uses map onto the encoding's view.
enum Shape {
    /// The view is the dense array itself.
    Same,
    /// The view is the dense array transposed (all-dense, levels (j, i)).
    Transposed,
    /// Rank 1, one compressed level: the operand is `densify(A)`.
    SparseVector,
    /// Rank 2, dense rows then a compressed level: each row is `densify(row)`.
    CompressedRows,
    /// Rank 2, dense columns then a compressed level (CSC): the operand is
    /// `densifyCols(A, rows)`, which only a law can remove.
    CompressedCols {
        /// The number of rows of the dense matrix.
        rows: Nat,
    },
    /// Rank 2, DIA `(j - i : compressed, i : dense)`: the stored diagonals,
    /// each a dense array over the rows. Row `i` is the list of `(column,
    /// value)` pairs `(i + d.1, d.2@i)` over the diagonals `d`, whose
    /// columns may fall outside `0 .. cols` (a diagonal's padding at the
    /// matrix's edge): `densifyGuarded`, with the guard in each pair.
    Diagonals {
        /// The number of rows (the dense matrix's outer length).
        rows: Nat,
        /// The number of columns.
        cols: Nat,
    },
    /// Rank 2, row blocks: BSR `(i floordiv r : dense, j floordiv c :
    /// compressed, i mod r : dense, j mod c : dense)` (`lanes` = `Some(r)`)
    /// or `(i : dense, j floordiv c : compressed, j mod c : dense)`
    /// (`None`). Row `i` is the stored blocks of its block row, each giving
    /// the `c` values of lane `i mod r` from column `block · c`:
    /// `densifyBlocks(blocks, c)`; with `r > 1` and `c = 1`, the plain
    /// `densify` of `(block column, lane's value)` pairs, a CSR row.
    BlockRows {
        /// The block's rows `r`, when the rows are blocked.
        lanes: Option<u64>,
        /// The block's columns `c`.
        width: u64,
    },
    /// Rank 2, a compressed outer level of `rows` rows: only stored rows are
    /// visited, each sent to its coordinate with `scatterAdd`; the inner
    /// level is compressed (`densify(row.2)`) or dense (`row.2` as is).
    StoredRows {
        /// Whether the inner level is compressed.
        inner_sparse: bool,
        /// The number of rows of the result.
        rows: Nat,
    },
}

pub(super) fn refuse(span: Span, msg: impl Into<String>, note: impl Into<String>) -> Diagnostic {
    Diagnostic::new(span, msg).with_label("this operand").with_note(note)
}

fn is_compressed(f: &LevelFormat) -> bool {
    matches!(f, LevelFormat::Compressed | LevelFormat::LooseCompressed)
}

/// What the encoding's view is relative to the dense array, or why the
/// front door cannot use it.
fn shape(enc: &Encoding, rank: usize, span: Span, operand: &str, rows: Nat, cols: Nat) -> Result<Shape, Diagnostic> {
    if enc.dim_rank() != rank {
        return Err(refuse(
            span,
            format!("the encoding has {} dimensions but `{operand}` has {rank}", enc.dim_rank()),
            "give an encoding with one dimension per array level of the parameter",
        ));
    }
    if enc.implicit_val.as_ref().is_some_and(|v| v.value() != Some(0.0)) {
        return Err(refuse(
            span,
            "the encoding's implicit value is not 0",
            "the sparsification laws assume absent entries are 0",
        ));
    }
    if let Some(s) = block_shape(enc, rows.clone(), cols) {
        return Ok(s);
    }
    let mut order = Vec::new();
    for l in &enc.levels {
        match l.expr {
            LvlExpr::Dim(d) => order.push(d),
            LvlExpr::Counter { .. } => {
                return Err(refuse(
                    span,
                    "counting levels (ELL) are not supported by the front door yet",
                    "the front door handles levels that store one dimension each, DIA and BSR",
                ));
            }
            _ => {
                return Err(refuse(
                    span,
                    "the front door cannot yet sparsify these block or difference levels",
                    "supported: DIA `(j - i : compressed, i : dense)`, BSR `(i floordiv r : dense, j floordiv c : compressed, i mod r : dense, j mod c : dense)` and row blocks `(i : dense, j floordiv c : compressed, j mod c : dense)`",
                ));
            }
        }
    }
    if enc.levels.iter().any(|l| matches!(l.format, LevelFormat::Singleton)) {
        return Err(refuse(
            span,
            "singleton levels (COO) are not supported by the front door yet",
            "store the operand with dense and compressed levels (CSR, DCSR, CSC), DIA or BSR",
        ));
    }
    let dense = |k: usize| matches!(enc.levels[k].format, LevelFormat::Dense | LevelFormat::Batch);
    let fmt = |k: usize| enc.levels[k].format.keyword();
    match (rank, order.as_slice()) {
        (_, _) if enc.is_all_dense() && order.iter().enumerate().all(|(i, d)| i == *d) => Ok(Shape::Same),
        (2, [1, 0]) if dense(0) && dense(1) => Ok(Shape::Transposed),
        (2, [1, 0]) if dense(0) && is_compressed(&enc.levels[1].format) => Ok(Shape::CompressedCols { rows }),
        (1, [0]) if is_compressed(&enc.levels[0].format) => Ok(Shape::SparseVector),
        (2, [0, 1]) if dense(0) && is_compressed(&enc.levels[1].format) => Ok(Shape::CompressedRows),
        (2, [0, 1]) if is_compressed(&enc.levels[0].format) && (dense(1) || is_compressed(&enc.levels[1].format)) => {
            Ok(Shape::StoredRows { inner_sparse: !dense(1), rows })
        }
        (2, [0, 1]) if !dense(0) => Err(refuse(
            span,
            format!("levels ({}, {}) are not supported by the front door yet", fmt(0), fmt(1)),
            "supported rows: (dense, dense), (dense, compressed), (compressed, dense), (compressed, compressed)",
        )),
        (2, [1, 0]) => Err(refuse(
            span,
            format!("levels in order (j, i) with a `{}` level: the view iterates columns first", fmt(1)),
            "with levels (j, i) the front door handles all-dense storage and dense columns of compressed entries (CSC)",
        )),
        _ => Err(refuse(
            span,
            format!(
                "the front door cannot yet sparsify a rank-{rank} operand with levels ({})",
                (0..enc.levels.len()).map(fmt).collect::<Vec<_>>().join(", ")
            ),
            "supported: all-dense in either order, (dense, compressed) rows, and a compressed vector",
        )),
    }
}

/// DIA and the row-block encodings, which the dense-level law does not cover.
fn block_shape(enc: &Encoding, rows: Nat, cols: Nat) -> Option<Shape> {
    use LvlExpr::{Diff, Dim, FloorDiv, Mod};
    if enc.dim_rank() != 2 {
        return None;
    }
    let dense = |k: usize| matches!(enc.levels[k].format, LevelFormat::Dense);
    let sparse = |k: usize| is_compressed(&enc.levels[k].format);
    let exprs: Vec<LvlExpr> = enc.levels.iter().map(|l| l.expr).collect();
    match exprs.as_slice() {
        [Diff { plus: 1, minus: 0 }, Dim(0)] if sparse(0) && dense(1) => Some(Shape::Diagonals { rows, cols }),
        [FloorDiv(0, r), FloorDiv(1, c), Mod(0, r2), Mod(1, c2)]
            if r == r2 && c == c2 && dense(0) && sparse(1) && dense(2) && dense(3) =>
        {
            Some(Shape::BlockRows { lanes: Some(*r), width: *c })
        }
        [Dim(0), FloorDiv(1, c), Mod(1, c2)] if c == c2 && dense(0) && sparse(1) && dense(2) => {
            Some(Shape::BlockRows { lanes: None, width: *c })
        }
        _ => None,
    }
}

/// The parameter chain of the kernel: nat binders and typed parameters.
pub(super) struct Chain<'a> {
    pub(super) nats: Vec<(&'a Name, Span)>,
    pub(super) params: Vec<&'a Param>,
}

impl<'a> Chain<'a> {
    /// The typed parameter `operand` of `kernel`'s chain, or an error at the
    /// kernel that lists the parameters it has.
    pub(super) fn param(&self, kernel: &Expr, operand: &str) -> Result<&'a Param, Diagnostic> {
        self.params.iter().copied().find(|p| p.name.as_str() == operand).ok_or_else(|| {
            let names: Vec<_> = self.params.iter().map(|p| format!("`{}`", p.name)).collect();
            Diagnostic::new(kernel.span, format!("the kernel has no parameter `{operand}`"))
                .with_label("this kernel")
                .with_note(format!(
                    "its parameters are {}",
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ))
        })
    }
}

pub(super) fn chain(kernel: &Expr) -> Chain<'_> {
    let mut out = Chain { nats: Vec::new(), params: Vec::new() };
    let mut e = kernel;
    loop {
        match &e.kind {
            ExprKind::NFun { var, body } => {
                out.nats.push((var, e.span));
                e = body;
            }
            ExprKind::Fun { params, body } if params.iter().all(|p| p.ty.is_some()) => {
                out.params.extend(params.iter());
                e = body;
            }
            _ => return out,
        }
    }
}

/// The dense array's lengths and scalar, outermost first.
pub(super) fn dense_shape(t: &Type) -> Option<(Vec<Nat>, ScalarType)> {
    let mut lens = Vec::new();
    let mut cur = t;
    loop {
        match cur {
            Type::Array { binder: None, elem, len } => {
                lens.push(len.clone());
                cur = elem;
            }
            Type::Scalar(s) if !lens.is_empty() => return Some((lens, *s)),
            _ => return None,
        }
    }
}

/// Applies the structural step: see the module documentation of
/// [`super`].
pub fn plan(program: &Program, operand: &str, enc_name: &str, enc: &Encoding) -> Result<Plan, Diagnostic> {
    let kernel = &program.kernel;
    let ch = chain(kernel);
    let param = ch.param(kernel, operand)?;
    let ty = param.ty.as_ref().map(heddle_ir::printer::print_type).unwrap_or_default();
    let Some((lens, scalar)) = param.ty.as_ref().and_then(dense_shape) else {
        return Err(refuse(
            param.span,
            format!("`{operand}` has type {ty}, not a dense array of scalars"),
            "the front door sparsifies a parameter written as a dense array such as `[[float]_m]_n`",
        ));
    };
    if program.encodings.iter().any(|d| d.name.as_str() == enc_name) {
        return Err(refuse(
            param.span,
            format!("the program already defines an encoding `#{enc_name}`"),
            "name the encoding differently",
        ));
    }
    // Each length becomes the tensor's dimension size: a nat binder is
    // replaced by `A_dimK` (and its binder dropped), a literal becomes a
    // static size; anything else has no place in a tensor type.
    let mut dims = Vec::new();
    let mut substs: Vec<(Name, Nat)> = Vec::new();
    for (k, len) in lens.iter().enumerate() {
        if let Some(v) = len.as_lit() {
            dims.push(Some(Nat::Lit(v)).filter(|_| v >= 0));
            continue;
        }
        match len {
            Nat::Var(v) if ch.nats.iter().any(|(n, _)| *n == v) => {
                if !substs.iter().any(|(n, _)| n == v) {
                    substs.push((v.clone(), Nat::var(format!("{operand}_dim{k}"))));
                }
                dims.push(None);
            }
            _ => {
                return Err(refuse(
                    param.span,
                    format!(
                        "dimension {k} of `{operand}` has length {}, neither a kernel's nat parameter nor a literal",
                        heddle_ir::printer::print_nat(len)
                    ),
                    "write the dense operand's lengths as nFun parameters or numbers; a size shared with an operand given an encoding before this one cannot be a second tensor's dimension yet",
                ));
            }
        }
    }
    // A length as the tensor's dimension: a literal stays, a size natural
    // becomes the dimension it was substituted by.
    let nat_of = |len: &Nat| match (len.as_lit(), substs.iter().find(|(n, _)| matches!(len, Nat::Var(v) if v == n))) {
        (Some(_), _) | (_, None) => len.clone(),
        (None, Some((_, dim))) => dim.clone(),
    };
    let outer = nat_of(&lens[0]);
    let cols = lens.get(1).map(nat_of).unwrap_or_else(|| outer.clone());
    let shape = shape(enc, lens.len(), param.span, operand, outer, cols)?;
    let tensor = Type::Tensor(Box::new(TensorType {
        dims,
        elem: scalar,
        encoding: Some(EncodingRef::Named(Name::from(enc_name), Span::DUMMY)),
    }));
    let mut marks = Marks::default();
    let new_kernel = rebuild(kernel, operand, &tensor, &substs, &shape, &mut marks)?;
    let mut encodings = program.encodings.clone();
    encodings.push(EncodingDef {
        name: Name::from(enc_name),
        encoding: EncodingText { text: heddle_ir::encoding::print_encoding(enc), span: Span::DUMMY },
        span: Span::DUMMY,
    });
    let program = Program { encodings, defs: program.defs.clone(), kernel: new_kernel.clone() };
    Ok(Plan { program, kernel: new_kernel, rows: marks.rows, lanes: marks.lanes, operand_span: param.span })
}

/// Rebuilds the parameter chain (dropping the operand's nat binders,
/// retyping it) and rewrites the body's uses of the operand.
fn rebuild(
    e: &Expr,
    operand: &str,
    tensor: &Type,
    substs: &[(Name, Nat)],
    shape: &Shape,
    marks: &mut Marks,
) -> Result<Expr, Diagnostic> {
    match &e.kind {
        ExprKind::NFun { var, body } => match substs.iter().find(|(n, _)| n == var) {
            // The operand's size: the binder goes, its uses become `A_dimK`.
            Some((_, value)) => {
                let body = body.subst(var, &Expr::synth(ExprKind::NatValue(value.clone())));
                rebuild(&body, operand, tensor, substs, shape, marks)
            }
            None => Ok(Expr::new(
                ExprKind::NFun {
                    var: var.clone(),
                    body: Box::new(rebuild(body, operand, tensor, substs, shape, marks)?),
                },
                e.span,
            )),
        },
        ExprKind::Fun { params, body } if params.iter().all(|p| p.ty.is_some()) => {
            let params = params
                .iter()
                .map(|p| {
                    if p.name.as_str() == operand { Param { ty: Some(tensor.clone()), ..p.clone() } } else { p.clone() }
                })
                .collect();
            let body = rebuild(body, operand, tensor, substs, shape, marks)?;
            Ok(Expr::new(ExprKind::Fun { params, body: Box::new(body) }, e.span))
        }
        _ => uses(e, &Name::from(operand), shape, marks),
    }
}

pub(super) fn marker(e: Expr) -> Expr {
    Expr::synth(ExprKind::App { func: Box::new(Expr::var(MARKER)), args: vec![e] })
}

/// `fun(row => body)` as the function of a `map`.
pub(super) fn row_lambda(f: &Expr) -> Option<(&Param, &Expr)> {
    match &f.kind {
        ExprKind::Fun { params, body } if params.len() == 1 => Some((&params[0], body)),
        _ => None,
    }
}

/// Rewrites every use of the operand `a` in `e` per `shape`.
fn uses(e: &Expr, a: &Name, shape: &Shape, marks: &mut Marks) -> Result<Expr, Diagnostic> {
    let is_a = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v == a);
    let is_map = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v.as_str() == "map");
    match (&e.kind, shape) {
        (ExprKind::Var(v), Shape::Same) if v == a => Ok(e.clone()),
        (ExprKind::Var(v), Shape::Transposed) if v == a => {
            Ok(Expr::new(ExprKind::Pipe { arg: Box::new(e.clone()), func: Box::new(Expr::var("transpose")) }, e.span))
        }
        (ExprKind::Var(v), Shape::SparseVector) if v == a => Ok(marker(e.clone())),
        (ExprKind::Var(v), Shape::CompressedCols { rows: n }) if v == a => Ok(Expr::synth(ExprKind::App {
            func: Box::new(Expr::var(COLS_MARKER)),
            args: vec![e.clone(), Expr::from_nat(n)],
        })),
        (ExprKind::Var(v), Shape::CompressedRows | Shape::StoredRows { .. } | Shape::Diagonals { .. } | Shape::BlockRows { .. })
            if v == a =>
        {
            Err(Diagnostic::new(
            e.span,
            format!("`{a}` is used here other than as the rows of a map"),
        )
        .with_label("this use")
        .with_note(format!(
            "the front door handles `{a} :>> map(fun(row => …))`: the dense level is mapped, each row is a sparse level"
        )))
        }
        // DIA and row blocks: the row map is rebuilt over the stored structure.
        (ExprKind::Pipe { arg, func }, Shape::Diagonals { .. } | Shape::BlockRows { .. }) if is_a(arg) => {
            match &func.kind {
                ExprKind::App { func: m, args } if is_map(m) && args.len() == 1 && row_lambda(&args[0]).is_some() => {
                    structured_rows(&args[0], a, shape, marks)
                }
                _ => uses(arg, a, shape, marks),
            }
        }
        (ExprKind::App { func: m, args }, Shape::Diagonals { .. } | Shape::BlockRows { .. })
            if is_map(m) && args.len() == 2 && is_a(&args[1]) && row_lambda(&args[0]).is_some() =>
        {
            structured_rows(&args[0], a, shape, marks)
        }
        // `A :>> map(fun(row => body))` and `map(fun(row => body), A)`:
        // the dense level law — map over the dense level, densify each row.
        (ExprKind::Pipe { arg, func }, Shape::CompressedRows | Shape::StoredRows { .. }) if is_a(arg) => {
            match &func.kind {
                ExprKind::App { func: m, args } if is_map(m) && args.len() == 1 && row_lambda(&args[0]).is_some() => {
                    let f = densify_rows(&args[0], a, shape, marks)?;
                    let func = Expr::new(ExprKind::App { func: m.clone(), args: vec![f] }, func.span);
                    Ok(scatter(Expr::new(ExprKind::Pipe { arg: arg.clone(), func: Box::new(func) }, e.span), shape))
                }
                _ => uses(arg, a, shape, marks),
            }
        }
        (ExprKind::App { func: m, args }, Shape::CompressedRows | Shape::StoredRows { .. })
            if is_map(m) && args.len() == 2 && is_a(&args[1]) && row_lambda(&args[0]).is_some() =>
        {
            let f = densify_rows(&args[0], a, shape, marks)?;
            Ok(scatter(Expr::new(ExprKind::App { func: m.clone(), args: vec![f, args[1].clone()] }, e.span), shape))
        }
        _ => map_children(e, &mut |c| uses(c, a, shape, marks)),
    }
}

/// For stored rows, the mapped `(coordinate, result)` pairs summed into
/// the dense result by coordinate; otherwise `mapped` itself.
fn scatter(mapped: Expr, shape: &Shape) -> Expr {
    match shape {
        Shape::StoredRows { rows, .. } => {
            let s = Expr::synth(ExprKind::App {
                func: Box::new(Expr::var("scatterAdd")),
                args: vec![Expr::from_nat(rows)],
            });
            Expr::new(ExprKind::Pipe { arg: Box::new(mapped), func: Box::new(s) }, Span::DUMMY)
        }
        _ => mapped,
    }
}

/// The dense-level law on `fun(row => body)`: with dense rows it becomes
/// `fun(row => body[row := densify(row)])`; with stored rows (the row is
/// `(coordinate, child)`) `fun(row => (row.1, body[row := child]))`, where
/// the child is `densify(row.2)` for a compressed inner level — sound only
/// when `body` is 0 for an absent row ([`super::absent`]).
fn densify_rows(f: &Expr, a: &Name, shape: &Shape, marks: &mut Marks) -> Result<Expr, Diagnostic> {
    let Some((p, body)) = row_lambda(f) else { return uses(f, a, shape, marks) };
    let body = uses(body, a, shape, marks)?;
    let row = Expr::var(p.name.clone());
    let body = match shape {
        Shape::StoredRows { inner_sparse, .. } => {
            if !super::absent::zero_when_absent(&body, &p.name) {
                return Err(Diagnostic::new(p.span, format!("the result for a row of `{a}` that is not stored might not be 0"))
                    .with_label("this row")
                    .with_note("a compressed outer level stores only some rows; the front door skips the others only when the row's result is 0 for an all-zero row (products and + sums of the row)"));
            }
            let child = proj(row.clone(), 2);
            let child = if *inner_sparse {
                marks.rows.push(p.span);
                marker(child)
            } else {
                child
            };
            Expr::synth(ExprKind::Tuple(vec![proj(row, 1), body.subst(&p.name, &child)]))
        }
        _ => {
            marks.rows.push(p.span);
            body.subst(&p.name, &marker(row))
        }
    };
    Ok(Expr::new(ExprKind::Fun { params: vec![p.clone()], body: Box::new(body) }, f.span))
}

/// The row map `a :>> map(fun(row => body))` over DIA or row blocks (see
/// [`Shape::Diagonals`], [`Shape::BlockRows`]): the rows are rebuilt from
/// the stored structure and each row is its marker. The names bound here
/// are fresh in the kernel, since substitution does not rename binders.
fn structured_rows(f: &Expr, a: &Name, shape: &Shape, marks: &mut Marks) -> Result<Expr, Diagnostic> {
    let Some((p, body)) = row_lambda(f) else { return uses(f, a, shape, marks) };
    let body = uses(body, a, shape, marks)?;
    marks.rows.push(p.span);
    let mut used = std::collections::BTreeSet::new();
    names(&body, &mut used);
    used.insert(a.to_string());
    let mut fresh = |base: &str| {
        let mut n = base.to_string();
        let mut k = 1;
        while used.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        used.insert(n.clone());
        n
    };
    let nat = |n: &Nat| heddle_ir::printer::print_nat(n);
    // The row's place in the rebuilt map, filled with the row's body below.
    let hole = fresh("ROW");
    let (text, row_at) = match shape {
        Shape::Diagonals { rows: n, cols } => {
            let (i, d, j, inside) = (fresh("i"), fresh("d"), fresh("j"), fresh("inside"));
            let row = format!(
                "{GUARDED_MARKER}({a} :>> map(fun({d} => fun({j} => fun({inside} => ({j}, {d}.2@{i}))({j} >= 0 && {j} < {cols}))({i} + {d}.1))))",
                cols = nat(cols)
            );
            (format!("generate({n}, fun({i} => {hole}))", n = nat(n)), row)
        }
        Shape::BlockRows { lanes, width } => {
            let (br, b, l) = (fresh("brow"), fresh("b"), fresh("lane"));
            let lane = match lanes {
                None => format!("{b}.2"),
                // One lane: the block's single row, as a flat run (the loops of the 3-level form).
                Some(1) => format!("{b}.2 :>> join"),
                Some(_) => format!("{b}.2@{l}"),
            };
            let row = match (lanes, width) {
                // Blocks one column wide in lanes (BSR(r, 1)): lane `l` of a
                // block is one entry at column `b.1`, so the lane's row is the
                // plain `(column, value)` list a CSR row is (the laws then give
                // one product per block, no slice of the dense operand). The
                // block's `r x 1` values are read flat (`join`): the CPU code
                // then addresses lane `l` at a constant offset from the block.
                (Some(r), 1) if *r > 1 => format!("{MARKER}({br} :>> map(fun({b} => ({b}.1, ({b}.2 :>> join)@{l}))))"),
                _ => format!("{BLOCKS_MARKER}({br} :>> map(fun({b} => ({b}.1, {lane}))), {width})"),
            };
            match lanes {
                Some(r) if *r > 1 => {
                    marks.lanes.push(Name::from(l.as_str()));
                    (format!("{a} :>> map(fun({br} => generate({r}, fun({l} => {hole})))) :>> join"), row)
                }
                _ => (format!("{a} :>> map(fun({br} => {hole}))"), row),
            }
        }
        _ => unreachable!("structured_rows is called for DIA and row blocks only"),
    };
    let parse = |t: &str| {
        heddle_ir::parser::parse_expr(t)
            .map_err(|d| Diagnostic::new(p.span, format!("internal: the front door built `{t}`: {}", d.message)))
    };
    let row = parse(&row_at)?;
    let outer = parse(&text)?;
    Ok(outer.subst(&Name::from(hole.as_str()), &body.subst(&p.name, &row)))
}

/// Every name `e` uses or binds.
pub(super) fn names(e: &Expr, out: &mut std::collections::BTreeSet<String>) {
    match &e.kind {
        ExprKind::Var(v) => {
            out.insert(v.to_string());
        }
        ExprKind::Fun { params, .. } => out.extend(params.iter().map(|p| p.name.to_string())),
        ExprKind::NFun { var, .. } => {
            out.insert(var.to_string());
        }
        ExprKind::Let { name, .. } => {
            out.insert(name.to_string());
        }
        _ => {}
    }
    e.for_each_child(&mut |c| names(c, out));
}

pub(super) fn proj(e: Expr, field: u32) -> Expr {
    Expr::synth(ExprKind::Proj { tuple: Box::new(e), field })
}

/// Rebuilds `e` with `f` applied to each direct child expression; the first error wins.
pub(super) fn map_children(e: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Expr, Diagnostic>) -> Result<Expr, Diagnostic> {
    let mut out = e.clone();
    let mut failure = None;
    out.for_each_child_mut(&mut |c| {
        if failure.is_none() {
            match f(c) {
                Ok(new) => *c = new,
                Err(d) => failure = Some(d),
            }
        }
    });
    failure.map_or(Ok(out), Err)
}
