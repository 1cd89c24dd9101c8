//! Lazily lowered values: scalars as loop expressions, arrays as views.

use super::{Env, Lowerer, bug, unsupported};
use heddle_ir::loops::{Block, Expr as L, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::TExpr;

/// A lowered value.
#[derive(Clone, Debug)]
pub enum Val {
    /// A scalar: its expression and type.
    Scalar(L, ScalarType),
    /// A tuple of values.
    Tuple(Vec<Val>),
    /// An array, not materialised.
    Array(View),
}

/// An array as a way to reach its elements.
#[derive(Clone, Debug)]
pub struct View {
    /// The array's type, with positions and naturals substituted.
    pub ty: Type,
    /// How elements are reached.
    pub kind: ViewKind,
}

/// The kinds of views.
#[derive(Clone, Debug)]
pub enum ViewKind {
    /// Records of a flat buffer (an input or a temporary), laid out per the
    /// view's type, starting at record `offset`.
    Buffer {
        /// The buffer.
        buf: Name,
        /// The first record.
        offset: Nat,
    },
    /// `zip(a, b, …)`.
    Zip(Vec<View>),
    /// Component `k` of an array of tuples (`unzip`).
    Proj(Box<View>, usize),
    /// `map(f)(src)`, computed element by element where consumed (fusion).
    Map {
        /// The lambda.
        f: Box<TExpr>,
        /// Where it was written.
        env: Env,
        /// The mapped array.
        src: Box<View>,
        /// The position binder of the function's types.
        binder: Option<Name>,
        /// Which `map` (it fixes the loop's schedule).
        prim: &'static str,
        /// Its OpenCL dimension.
        dim: u32,
    },
    /// Elements `start ..` of `src` (a chunk of `split`, a window of `slide`).
    Slice {
        /// The sliced array.
        src: Box<View>,
        /// Its first element.
        start: Nat,
    },
    /// `split(k)`: element `i` is the slice at `i * k`.
    Split {
        /// The split array.
        src: Box<View>,
        /// Chunk length.
        k: Nat,
    },
    /// `slide(size, step)`: element `w` is the slice at `w * step`.
    Slide {
        /// The array.
        src: Box<View>,
        /// The step.
        step: Nat,
    },
    /// `interleave(k)`: part `w` holds elements `w, w + k, w + 2k, …`.
    Interleave {
        /// The dealt array.
        src: Box<View>,
        /// Number of parts.
        k: Nat,
    },
    /// Elements `start, start + step, …` of `src` (a part of `interleave`).
    Strided {
        /// The array.
        src: Box<View>,
        /// First element.
        start: Nat,
        /// Distance between elements.
        step: Nat,
    },
    /// `asVector(w)`: element `k` is the vector (the tuple of lanes) of
    /// elements `w·k … w·k + w − 1` (`vectors.rs`).
    Lanes {
        /// The array of scalars.
        src: Box<View>,
        /// The width.
        w: usize,
    },
    /// `asScalar`: element `k` is lane `k mod w` of vector `k / w`.
    Unlanes {
        /// The array of vectors.
        src: Box<View>,
        /// The width.
        w: usize,
    },
    /// `join` of arrays of one length `k`.
    Join {
        /// The nested array.
        src: Box<View>,
        /// Inner length.
        k: Nat,
    },
    /// `join` of rows of different lengths computed in the kernel: walked in
    /// order where it is consumed in order (`reduce`, `scatterAdd`, writing),
    /// indexed by a binary search over the row starts (`ragged.rs`).
    Concat(Box<View>),
    /// `transpose`.
    Transpose(Box<View>),
    /// Column `col` of a nested array (an element of `transpose`).
    Column {
        /// The nested array.
        src: Box<View>,
        /// Which column.
        col: Nat,
    },
    /// `generate(n, f)`.
    Generate {
        /// The lambda.
        f: Box<TExpr>,
        /// Where it was written.
        env: Env,
        /// The `generate` call (where a position past `int`'s range is reported).
        span: Span,
    },
    /// `concat(a, b)`: element `i` is `a@i` below `a`'s length, else
    /// `b@(i - len a)`.
    Appended {
        /// The first array.
        a: Box<View>,
        /// The second array.
        b: Box<View>,
    },
    /// `pad(l, r, v)`.
    Pad {
        /// The padded array.
        src: Box<View>,
        /// Left padding.
        l: Nat,
        /// The value.
        value: Box<Val>,
    },
    /// `union(za, zb)(a, b)` (with the defaults) or `intersect(a, b)`: a
    /// stream (see `stream.rs`), visited in order; indexing walks it.
    Merge {
        /// The first list.
        a: Box<View>,
        /// The second list.
        b: Box<View>,
        /// A union's stand-ins for a missing value: `za`, `zb`.
        defaults: Option<Box<(Val, Val)>>,
        /// Where the pattern is (for its run-time checks and refusals).
        span: Span,
    },
    /// `compressAdd(n)` (or `compressLast(n)`) of `src`: a stream (see `stream.rs`).
    Compress {
        /// The (coordinate, value) pairs.
        src: Box<View>,
        /// The workspace length.
        n: Nat,
        /// `compressLast`: a later value for a coordinate replaces the
        /// earlier one instead of being added to it.
        last: bool,
        /// Where the pattern is (for the bounds check's message).
        span: Span,
    },
    /// `filter(p)` of `src`: a stream (see `stream.rs`) of the elements
    /// for which `p` holds.
    Filter {
        /// The predicate.
        p: Box<TExpr>,
        /// Where it was written.
        env: Env,
        /// The filtered array.
        src: Box<View>,
        /// Where the pattern is (for refusals).
        span: Span,
    },
    /// `select(cond, a, b)` of two arrays (of one type): element `i` is
    /// `a@i` or `b@i`, only the chosen one computed.
    Choice {
        /// The condition (a variable or literal).
        cond: L,
        /// Chosen when `cond` holds.
        a: Box<View>,
        /// Chosen otherwise.
        b: Box<View>,
        /// Each element read only on its side (`pad` of rows: the other side's
        /// element may be out of range), not computed on both and selected.
        strict: bool,
    },
    /// `scatter(idx)(src)`: element `j` is `src@(inv[at + j].field)`, where the buffer
    /// `inv` holds the inverse permutation (filled and checked by `scatter.rs`;
    /// `sort.rs` sorts rows through the permutation its merge sort leaves).
    Permuted {
        /// The inverse permutation, `i64` fields of records.
        inv: Name,
        /// Its first record.
        at: Nat,
        /// The field that holds the positions.
        field: u32,
        /// The scattered array.
        src: Box<View>,
    },
    /// `gather(idx)`.
    Gather {
        /// The indices.
        idx: Box<View>,
        /// The array read.
        src: Box<View>,
        /// Where the pattern is, for the bounds check's message.
        span: Span,
    },
}

impl View {
    /// A view of a buffer.
    pub fn buffer(buf: Name, offset: Nat, ty: Type) -> View {
        View { ty, kind: ViewKind::Buffer { buf, offset } }
    }
    /// The array's length.
    pub fn len(&self) -> Nat {
        match &self.ty {
            Type::Array { len, .. } => len.clone(),
            _ => Nat::Lit(0),
        }
    }
    /// The type of element `i`.
    pub fn elem_ty(&self, i: &Nat) -> Type {
        match &self.ty {
            Type::Array { binder: Some(b), elem, .. } => elem.subst_nat(b, i),
            Type::Array { elem, .. } => (**elem).clone(),
            other => other.clone(),
        }
    }
}

impl Lowerer<'_> {
    /// Element `i` of a view; may emit statements (lets, checks) into `body`.
    pub(super) fn elem(&mut self, v: &View, i: &Nat, body: &mut Block) -> Result<Val, Diagnostic> {
        let elem_ty = v.elem_ty(i);
        let span = self.kernel.body.span;
        match &v.kind {
            ViewKind::Buffer { buf, offset } => {
                let at = crate::flat_index(&v.ty, std::slice::from_ref(i))
                    .map_err(|e| unsupported(span, &format!("indexing `{buf}`: {e}")))?;
                let record = Nat::add(offset.clone(), at);
                match &elem_ty {
                    Type::Array { .. } => {
                        // Bind the start of the sub-array once, where it is first reached:
                        // loops inside then reuse it (loop-invariant by construction).
                        let start = self.index_expr_bounded(&record, &Env::default(), Some(&v.len()), body)?;
                        let start = self.bind_index(start, "start", body);
                        Ok(Val::Array(View::buffer(buf.clone(), start, elem_ty)))
                    }
                    _ => {
                        let index = self.index_expr_bounded(&record, &Env::default(), Some(&v.len()), body)?;
                        load_record(buf, index, &elem_ty, span)
                    }
                }
            }
            ViewKind::Zip(parts) => {
                Ok(Val::Tuple(parts.iter().map(|p| self.elem(p, i, body)).collect::<Result<_, _>>()?))
            }
            ViewKind::Proj(src, k) => match self.elem(src, i, body)? {
                Val::Tuple(mut items) if *k < items.len() => Ok(items.swap_remove(*k)),
                _ => Err(bug(span, "unzip of something that is not an array of pairs")),
            },
            ViewKind::Map { f, env, src, binder, .. } => {
                let x = self.elem(src, i, body)?;
                let env = match binder {
                    Some(b) => {
                        // From here on the binder names this position: no fresh
                        // variable may take its name (it would be read as it).
                        self.used.insert(b.clone());
                        env.with_nat(b.clone(), i.clone())
                    }
                    None => env.clone(),
                };
                self.apply(f, vec![x], &env, body)
            }
            ViewKind::Slice { src, start } => self.elem(src, &Nat::add(start.clone(), i.clone()), body),
            ViewKind::Split { src, k } => {
                let start = Nat::mul(i.clone(), k.clone());
                Ok(Val::Array(View { ty: elem_ty, kind: ViewKind::Slice { src: src.clone(), start } }))
            }
            ViewKind::Slide { src, step } => {
                let start = Nat::mul(i.clone(), step.clone());
                Ok(Val::Array(View { ty: elem_ty, kind: ViewKind::Slice { src: src.clone(), start } }))
            }
            ViewKind::Interleave { src, k } => Ok(Val::Array(View {
                ty: elem_ty,
                kind: ViewKind::Strided { src: src.clone(), start: i.clone(), step: k.clone() },
            })),
            ViewKind::Strided { src, start, step } => {
                self.elem(src, &Nat::add(start.clone(), Nat::mul(i.clone(), step.clone())), body)
            }
            ViewKind::Join { src, k } => {
                let outer = Nat::div(i.clone(), k.clone());
                let inner = Nat::bin(heddle_ir::nat::NatOp::Mod, i.clone(), k.clone());
                match self.elem(src, &outer, body)? {
                    Val::Array(row) => self.elem(&row, &inner, body),
                    _ => Err(bug(span, "join of something that is not nested arrays")),
                }
            }
            ViewKind::Lanes { src, w } => {
                let first = Nat::mul(i.clone(), Nat::Lit(*w as i64));
                let lanes = (0..*w)
                    .map(|j| self.elem(src, &Nat::add(first.clone(), Nat::Lit(j as i64)), body))
                    .collect::<Result<_, _>>()?;
                Ok(Val::Tuple(lanes))
            }
            ViewKind::Unlanes { src, w } => {
                // `asScalar` of `asVector`: the scalars themselves.
                if let ViewKind::Lanes { src: scalars, w: w2 } = &src.kind
                    && w2 == w
                {
                    return self.elem(scalars, i, body);
                }
                let width = Nat::Lit(*w as i64);
                let vector = self.elem(src, &Nat::div(i.clone(), width.clone()), body)?;
                let Val::Tuple(mut lanes) = vector else {
                    return Err(bug(span, "asScalar of something that is not vectors"));
                };
                let lane = Nat::bin(heddle_ir::nat::NatOp::Mod, i.clone(), width);
                if let Some(k) = lane.const_value() {
                    return Ok(lanes.swap_remove(k as usize));
                }
                // A lane chosen at run time: the last lane, unless the lane is
                // an earlier one (every lane is already computed).
                let at = self.index_expr(&lane, &Env::default(), body)?;
                let at = self.bind_index(at, "lane", body);
                let at = self.index_expr(&at, &Env::default(), body)?;
                let mut chosen = lanes.pop().ok_or_else(|| bug(span, "a vector without lanes"))?;
                for (k, x) in lanes.into_iter().enumerate().rev() {
                    let cond = L::bin(heddle_ir::loops::BinOp::Eq, at.clone(), L::index(k as i64));
                    chosen = select_lane(&cond, x, chosen)
                        .ok_or_else(|| bug(span, "a vector lane that is not a scalar or a pair"))?;
                }
                Ok(chosen)
            }
            ViewKind::Concat(rows) => self.concat_elem(rows, i, body),
            ViewKind::Merge { span: at, .. }
            | ViewKind::Compress { span: at, .. }
            | ViewKind::Filter { span: at, .. } => Err(unsupported(
                *at,
                "reading the result of `union`, `intersect`, `compressAdd` or `filter` element by element here (it is produced in order; map, reduce, index it with `@` or return it instead)",
            )),
            ViewKind::Transpose(src) => {
                Ok(Val::Array(View { ty: elem_ty, kind: ViewKind::Column { src: src.clone(), col: i.clone() } }))
            }
            ViewKind::Column { src, col } => match self.elem(src, i, body)? {
                Val::Array(row) => self.elem(&row, col, body),
                _ => Err(bug(span, "transpose of something that is not nested arrays")),
            },
            ViewKind::Generate { f, env, span: at } => {
                let k = self.index_expr(i, &Env::default(), body)?;
                // The position is an `int`: a backend checks that the loop's
                // range fits before converting, and reports a failure here.
                self.index_overflow_at.get_or_insert(*at);
                let arg = Val::Scalar(L::Cast(ScalarType::I32, Box::new(k)), ScalarType::I32);
                let param_ty = match &f.kind {
                    heddle_typeck::TKind::Lambda { params, .. } => params.first().and_then(|p| p.1.as_scalar()),
                    _ => None,
                };
                let arg = match (arg, param_ty) {
                    (Val::Scalar(L::Cast(_, e), _), Some(s)) => Val::Scalar(L::Cast(s, e), s),
                    (a, _) => a,
                };
                self.apply(f, vec![arg], env, body)
            }
            ViewKind::Pad { src, l, value } => {
                let n = src.len();
                let ie = self.index_expr(i, &Env::default(), body)?;
                let le = self.index_expr(l, &Env::default(), body)?;
                let ne = self.index_expr(&n, &Env::default(), body)?;
                use heddle_ir::loops::BinOp;
                let outside = L::bin(
                    BinOp::Or,
                    L::bin(BinOp::Lt, ie.clone(), le.clone()),
                    L::bin(BinOp::Ge, ie.clone(), L::bin(BinOp::Add, le.clone(), ne)),
                );
                // The element is read only inside (an empty array has none to read).
                let mut inside = Block::new();
                let at = self.bind_index(L::bin(BinOp::Sub, ie, le), "p", &mut inside);
                let x = self.elem(src, &at, &mut inside)?;
                self.choose_strictly(outside, ((**value).clone(), Block::new()), (x, inside), &elem_ty, span, body)
            }
            ViewKind::Appended { a, b } => {
                let ie = self.index_expr(i, &Env::default(), body)?;
                let na = self.index_expr(&a.len(), &Env::default(), body)?;
                use heddle_ir::loops::BinOp;
                let in_a = L::bin(BinOp::Lt, ie.clone(), na.clone());
                // Only the chosen array's element is read: the other index is out of its bounds.
                let (mut a_block, mut b_block) = (Block::new(), Block::new());
                let x = self.elem(a, i, &mut a_block)?;
                let at = self.bind_index(L::bin(BinOp::Sub, ie, na), "q", &mut b_block);
                let y = self.elem(b, &at, &mut b_block)?;
                if matches!(elem_ty, heddle_ir::Type::Array { .. }) {
                    // Rows: a choice between the two views, each read under the condition.
                    self.choose(in_a, (x, a_block), (y, b_block), &elem_ty, span, body)
                } else {
                    self.choose_strictly(in_a, (x, a_block), (y, b_block), &elem_ty, span, body)
                }
            }
            ViewKind::Choice { cond, a, b, strict } => {
                let (mut a_block, mut b_block) = (Block::new(), Block::new());
                let x = self.elem(a, i, &mut a_block)?;
                let y = self.elem(b, i, &mut b_block)?;
                if *strict {
                    return self.choose_strictly(cond.clone(), (x, a_block), (y, b_block), &elem_ty, span, body);
                }
                self.choose(cond.clone(), (x, a_block), (y, b_block), &elem_ty, span, body)
            }
            ViewKind::Permuted { inv, at, field, src } => {
                let j = self.index_expr(&Nat::add(at.clone(), i.clone()), &Env::default(), body)?;
                let k = self.bind_index(L::load(inv.clone(), j, *field), "from", body);
                self.elem(src, &k, body)
            }
            ViewKind::Gather { idx, src, span } => {
                let Val::Scalar(e, _) = self.elem(idx, i, body)? else {
                    return Err(bug(*span, "`gather` with non-scalar indices"));
                };
                let k = self.bind_index(L::Cast(ScalarType::I64, Box::new(e)), "g", body);
                self.bounds_check(&k, &src.len(), "the array given to `gather`", *span, body)?;
                self.elem(src, &k, body)
            }
        }
    }

    /// Binds an index expression to a fresh `i64` let, unless it is already a variable or literal.
    pub(super) fn bind_index(&mut self, e: L, base: &str, body: &mut Block) -> Nat {
        match e {
            L::Var(v) => Nat::Var(v),
            L::Int(v, _) => Nat::Lit(v),
            other => {
                let var = self.fresh(base);
                self.var_types.push((var.clone(), ScalarType::I64));
                body.push(Stmt::Let { var: var.clone(), ty: ScalarType::I64, value: other });
                Nat::Var(var)
            }
        }
    }

    /// Emits `check 0 <= k < len`.
    pub(super) fn bounds_check(
        &mut self,
        k: &Nat,
        len: &Nat,
        what: &str,
        span: Span,
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        use heddle_ir::loops::BinOp;
        let ke = self.index_expr(k, &Env::default(), body)?;
        let le = self.index_expr(len, &Env::default(), body)?;
        let id = self.check(format!("index out of bounds: an index into {what} is not below its length {len}"), span);
        let cond = L::bin(BinOp::And, L::bin(BinOp::Ge, ke.clone(), L::index(0)), L::bin(BinOp::Lt, ke, le));
        body.push(Stmt::Check { cond, id });
        Ok(())
    }
}

/// The value of the record at `index` of `buf`, whose type is `ty` (a
/// scalar, or a tuple of scalars and tuples, stored flat).
fn load_record(buf: &Name, index: L, ty: &Type, span: Span) -> Result<Val, Diagnostic> {
    fn go(buf: &Name, index: &L, ty: &Type, field: &mut u32) -> Option<Val> {
        match ty {
            Type::Scalar(s) => {
                *field += 1;
                Some(Val::Scalar(L::load(buf.clone(), index.clone(), *field - 1), *s))
            }
            Type::Tuple(ts) => Some(Val::Tuple(ts.iter().map(|t| go(buf, index, t, field)).collect::<Option<_>>()?)),
            _ => None,
        }
    }
    go(buf, &index, ty, &mut 0).ok_or_else(|| unsupported(span, &format!("buffers of {ty}")))
}

impl Env {
    /// This environment with a natural (a map position) bound.
    pub fn with_nat(&self, name: Name, value: Nat) -> Env {
        let mut e = self.clone();
        e.nats.push((name, value));
        e
    }
    /// Substitutes the bound naturals into a type, simultaneously (see `placeholders`).
    pub fn subst_type(&self, t: &Type) -> Type {
        let ps = self.placeholders();
        let t = self.nats.iter().rev().zip(&ps).fold(t.clone(), |t, ((n, _), p)| t.subst_nat(n, &Nat::Var(p.clone())));
        self.nats.iter().rev().zip(&ps).fold(t, |t, ((_, v), p)| t.subst_nat(p, v))
    }
    /// Substitutes the bound naturals into a natural, simultaneously.
    pub fn subst_nat(&self, n: &Nat) -> Nat {
        let ps = self.placeholders();
        let n = self.nats.iter().rev().zip(&ps).fold(n.clone(), |n, ((x, _), p)| n.subst(x, &Nat::Var(p.clone())));
        self.nats.iter().rev().zip(&ps).fold(n, |n, ((_, v), p)| n.subst(p, v))
    }
    /// One name no program can spell per bound natural, innermost first: a
    /// position's value may name a variable that an outer binding also names
    /// (`i2 := i1` inside `i1 := i`), so substituting one after the other
    /// would replace it again.
    fn placeholders(&self) -> Vec<Name> {
        (0..self.nats.len()).map(|k| Name::from(format!("\u{2}{k}"))).collect()
    }
}

/// `cond ? a : b` for two lanes of a vector: scalars, or the pairs of a
/// vector of complex numbers (`complex.rs`), chosen field by field.
fn select_lane(cond: &L, a: Val, b: Val) -> Option<Val> {
    match (a, b) {
        (Val::Scalar(a, s), Val::Scalar(b, _)) => {
            Some(Val::Scalar(L::Select(Box::new(cond.clone()), Box::new(a), Box::new(b)), s))
        }
        (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => {
            xs.into_iter().zip(ys).map(|(x, y)| select_lane(cond, x, y)).collect::<Option<Vec<_>>>().map(Val::Tuple)
        }
        _ => None,
    }
}
