//! Storing a value in an encoding: the plan of an annotation
//! `(e : tensor<?x{n}xf32, #ENC>)`.
//!
//! The value is read in the encoding's *level order*, with the shape a
//! parameter of that type is viewed at (LANGUAGE.md §6), except that a level
//! may also be given in a different but equivalent form:
//!
//! | the value at level l | the encoding's level l | stored |
//! |---|---|---|
//! | `[T]_N` (indexed by coordinate) | dense, batch | every child ([`Store::Dense`]) |
//! | `[T]_N` | compressed, loose_compressed (unique) | the children with an entry below ([`Store::Compress`]: DCSR's empty rows dropped) |
//! | `[T]_N` | compressed(nonunique) then singletons | a coordinate per entry ([`Store::PerEntry`]: COO from nested rows) |
//! | `[(I, T)]_L` (coordinate, child) | compressed, loose_compressed; a singleton under a per-entry level | every element ([`Store::Nodes`]) |
//! | `(I, T)` | singleton | the coordinate ([`Store::Nodes`]) |
//!
//! and levels after the last non-dense one are plain arrays inside each entry
//! (a BSR block). The value has dense levels, then a list level, then pairs
//! below it (so an entry's position is the prefix sum of the list lengths
//! over the dense positions before it, which is what compiled code counts),
//! or more lists inside the list's elements ([`ResultPlan::nested_lists`]:
//! a CSF tensor's fibres under its slices, each a unique compressed level;
//! the interpreter stores them, compiled code refuses them). A value without
//! a list is a dense tensor (every level dense).
//!
//! Every element of a list is stored, zero or not (as MLIR keeps the explicit
//! zeros a computation produces); a list's coordinates must be strictly
//! increasing (non-decreasing for a nonunique level) and below the level's
//! size, which the interpreter and compiled code check as the value is stored.

use super::{Encoding, LevelFormat, LvlExpr};
use crate::Name;
use crate::nat::Nat;
use crate::types::{ScalarType, Type};

/// How a value is stored in an encoding.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultPlan {
    /// The encoding.
    pub encoding: Encoding,
    /// The element type of the stored values.
    pub elem: ScalarType,
    /// The dimension sizes (given or inferred), over the naturals in scope.
    pub dims: Vec<Nat>,
    /// The level sizes, from the dimension sizes through the map.
    pub lvl_sizes: Vec<Nat>,
    /// The value's levels, outermost first: one per encoding level down to
    /// the last non-dense one.
    pub levels: Vec<PlanLevel>,
    /// The sizes of the trailing dense levels, which are arrays inside each entry.
    pub block: Vec<Nat>,
}

/// One level of the value and how it is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanLevel {
    /// What the value has at this level.
    pub source: Source,
    /// What the encoding keeps of it.
    pub store: Store,
}

/// The value's form at one level.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// `[T]_len`: child k has coordinate k.
    Dense {
        /// The array's length (the level's size).
        len: Nat,
        /// The position binder of a position-dependent array.
        binder: Option<Name>,
    },
    /// `[(I, T)]_len`: (coordinate, child) pairs.
    List {
        /// The list's length, over the binders of the dense levels above.
        len: Nat,
        /// The position binder.
        binder: Option<Name>,
        /// The coordinate's type.
        crd: ScalarType,
    },
    /// `(I, T)`: one coordinate and its child.
    Pair {
        /// The coordinate's type.
        crd: ScalarType,
    },
}

/// What the encoding stores at a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Every child; positions are implicit.
    Dense,
    /// The children that have an entry below them: positions, and their coordinates.
    Compress,
    /// The coordinate of every entry below (a nonunique level and its singletons).
    PerEntry,
    /// Every list element (or the pair's coordinate): positions where the level has them.
    Nodes,
}

/// The order a list's coordinates must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Each greater than the one before.
    Increasing,
    /// Each at least the one before.
    NonDecreasing,
    /// No requirement.
    Any,
}

/// A requirement the caller checks on a part of the value's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// This type must be an integer type (a coordinate).
    Integer(Type),
    /// This type must be the tensor's element type (a stored value).
    Element(Type),
    /// These two naturals must be equal (an array's length and its level's size).
    Equal(Nat, Nat, String),
}

impl ResultPlan {
    /// The index of the list level, if the value has one.
    pub fn list_level(&self) -> Option<usize> {
        self.levels.iter().position(|l| matches!(l.source, Source::List { .. }))
    }
    /// Whether the value has a list inside a list element (a CSF tensor
    /// stored from lists of lists): every list level is then a unique
    /// compressed or loose_compressed level storing each element, and the
    /// value is stored by walking it ([`ResultPlan::levels`]), not from one
    /// list's lengths.
    pub fn nested_lists(&self) -> bool {
        self.levels.iter().filter(|l| matches!(l.source, Source::List { .. })).count() > 1
    }
    /// The dense levels above the list (all levels when there is none): (length, binder).
    pub fn dense_prefix(&self) -> Vec<(Nat, Option<Name>)> {
        self.levels
            .iter()
            .map_while(|l| match &l.source {
                Source::Dense { len, binder } => Some((len.clone(), binder.clone())),
                _ => None,
            })
            .collect()
    }
    /// Stored values per entry (the product of the block's sizes).
    pub fn block_len(&self) -> Nat {
        self.block.iter().cloned().fold(Nat::Lit(1), Nat::mul)
    }
    /// Every natural of the plan, rewritten by `f` (type checking solves unknowns so).
    pub fn map_nats(&mut self, f: &mut dyn FnMut(&Nat) -> Nat) {
        for n in self.dims.iter_mut().chain(self.lvl_sizes.iter_mut()).chain(self.block.iter_mut()) {
            *n = f(n);
        }
        for l in &mut self.levels {
            if let Source::Dense { len, .. } | Source::List { len, .. } = &mut l.source {
                *len = f(len);
            }
        }
    }
    /// How level `l`'s list coordinates must follow each other: strictly
    /// increasing for a unique level (also a nonordered one: a sorted list is
    /// a valid nonordered list, and uniqueness is then evident),
    /// non-decreasing for an ordered nonunique level, any order otherwise.
    pub fn order(&self, l: usize) -> Order {
        let props = self.encoding.levels[l].props;
        match (props.nonunique, props.nonordered) {
            (false, _) => Order::Increasing,
            (true, false) => Order::NonDecreasing,
            (true, true) => Order::Any,
        }
    }
    /// The message of a coordinate out of its level's range.
    pub fn range_message(&self, l: usize) -> String {
        format!(
            "a coordinate stored at {} is outside the level's size {}",
            describe_level(&self.encoding, l),
            self.lvl_sizes[l]
        )
    }
    /// The message of coordinates out of order within a list.
    pub fn order_message(&self, l: usize) -> String {
        let how = match self.order(l) {
            Order::Increasing => "strictly increasing",
            _ => "non-decreasing",
        };
        format!("the coordinates stored at {} must be {how} within each list", describe_level(&self.encoding, l))
    }
    /// The list's level when it is an n:m level: (level, n, m). Each list
    /// (one block) holds at most `n` entries; storing pads it to exactly `n`
    /// with the smallest unused coordinates and zeros, as `heddle convert` does.
    pub fn n_out_of_m(&self) -> Option<(usize, u32, u32)> {
        let l = self.list_level()?;
        match self.encoding.levels[l].format {
            LevelFormat::NOutOfM { n, m, .. } => Some((l, n, m)),
            _ => None,
        }
    }
    /// The list's level when it is heddle's banded (skyline) level: each
    /// row's list is stored from its first column through the diagonal,
    /// zeros between its entries; an entry above the diagonal is an error.
    pub fn banded(&self) -> Option<usize> {
        let l = self.list_level()?;
        (self.encoding.levels[l].format == LevelFormat::Banded).then_some(l)
    }
    /// The message of a block holding more entries than its n:m level stores.
    pub fn block_message(&self, l: usize, n: u32, m: u32) -> String {
        format!(
            "{} stores at most {n} entries of every block of {m}, but a block of the value has more",
            describe_level(&self.encoding, l)
        )
    }
    /// Levels whose coordinates are written once per entry (per-entry levels,
    /// the list level and the pairs below it), outermost first.
    pub fn entry_levels(&self) -> Vec<usize> {
        let s = self.list_level();
        (0..self.levels.len())
            .filter(|&l| match self.levels[l].store {
                Store::PerEntry => true,
                Store::Nodes => s.is_some_and(|s| l >= s),
                _ => false,
            })
            .collect()
    }
}

fn describe_level(enc: &Encoding, l: usize) -> String {
    let lv = &enc.levels[l];
    let expr = match lv.expr {
        LvlExpr::Dim(d) => enc.dims[d].name.to_string(),
        LvlExpr::FloorDiv(d, k) => format!("{} floordiv {k}", enc.dims[d].name),
        LvlExpr::Mod(d, k) => format!("{} mod {k}", enc.dims[d].name),
        LvlExpr::Counter { .. } => "the counter".into(),
        LvlExpr::Diff { plus, minus } => format!("{} - {}", enc.dims[plus].name, enc.dims[minus].name),
    };
    format!("level {l} (`{expr} : {}`)", lv.format.keyword())
}

/// Is `t` a coordinate's type so far (an integer, or not known yet)?
fn coordinate_like(t: &Type) -> bool {
    match t {
        Type::Scalar(s) => s.is_int(),
        Type::Meta(_) => true,
        _ => false,
    }
}

/// The plan for storing a value of type `value` as `tensor<dims x elem, enc>`
/// (`given`: the written sizes, `None` for `?`), with the requirements on the
/// value's types that the caller must check; or why it cannot be stored.
pub fn plan(
    enc: &Encoding,
    elem: ScalarType,
    given: &[Option<Nat>],
    value: &Type,
) -> Result<(ResultPlan, Vec<Need>), String> {
    if given.len() != enc.dim_rank() {
        return Err(format!("the encoding has {} dimensions but the tensor type has {}", enc.dim_rank(), given.len()));
    }
    if let Some(d) = enc.dims.iter().find(|d| d.slice.is_some()) {
        return Err(format!(
            "a sliced encoding (dimension `{}`) describes a view into another tensor; a value cannot be stored in one",
            d.name
        ));
    }
    for (l, lv) in enc.levels.iter().enumerate() {
        if matches!(lv.format, LevelFormat::NOutOfM { .. })
            && (l + 1 != enc.levels.len() || !matches!(lv.expr, LvlExpr::Mod(..)))
        {
            return Err(format!(
                "{}: a value can be stored in an n:m level only when it is the last level and a block's coordinate (`j mod m`)",
                describe_level(enc, l)
            ));
        }
        if matches!(lv.expr, LvlExpr::Counter { .. }) {
            return Err(format!(
                "{}: a value cannot be stored in an encoding with a counting (ELL) level",
                describe_level(enc, l)
            ));
        }
        if matches!(lv.expr, LvlExpr::Diff { .. }) {
            return Err(format!(
                "{}: a value cannot be stored in an encoding with a difference (DIA offset) level; store it as CSR or COO and convert with `heddle convert`",
                describe_level(enc, l)
            ));
        }
    }
    let walked = enc.levels.iter().rposition(|l| !l.format.is_dense_like()).map_or(0, |k| k + 1);
    let mut needs = Vec::new();
    let mut levels: Vec<PlanLevel> = Vec::new();
    let mut ty = value.clone();
    for l in 0..walked {
        let lv = &enc.levels[l];
        let here = describe_level(enc, l);
        let (source, child) = match &ty {
            Type::Array { binder, elem, len } => match &**elem {
                Type::Tuple(ts) if ts.len() == 2 && coordinate_like(&ts[0]) => {
                    needs.push(Need::Integer(ts[0].clone()));
                    let crd = ts[0].as_scalar().unwrap_or(ScalarType::I64);
                    (Source::List { len: len.clone(), binder: binder.clone(), crd }, ts[1].clone())
                }
                child => (Source::Dense { len: len.clone(), binder: binder.clone() }, child.clone()),
            },
            Type::Tuple(ts) if ts.len() == 2 && coordinate_like(&ts[0]) => {
                needs.push(Need::Integer(ts[0].clone()));
                (Source::Pair { crd: ts[0].as_scalar().unwrap_or(ScalarType::I64) }, ts[1].clone())
            }
            other => {
                return Err(format!(
                    "{here} needs an array (indexed by coordinate, or a list of (coordinate, …) pairs) or a (coordinate, …) pair here, but the value has {other}"
                ));
            }
        };
        let list_above = levels.iter().any(|p| matches!(p.source, Source::List { .. }));
        let per_entry_above = levels.last().is_some_and(|p| p.store == Store::PerEntry);
        let store = match (&source, lv.format) {
            // A dense level between lists (a DCSR-like `ssds` tensor's view):
            // every child stored; a list must follow (checked below).
            (Source::Dense { .. }, LevelFormat::Dense) if list_above => Store::Dense,
            (Source::Dense { .. }, _) if list_above => {
                return Err(format!(
                    "{here}: below a list of (coordinate, …) pairs each entry is a (coordinate, …) pair or a dense block, but the value has an array of {child} here (a list inside a list cannot be stored yet)"
                ));
            }
            (Source::Dense { .. }, f) if f.is_dense_like() => Store::Dense,
            (Source::Dense { .. }, LevelFormat::Compressed | LevelFormat::LooseCompressed) if !lv.props.nonunique => {
                Store::Compress
            }
            (Source::Dense { .. }, LevelFormat::Compressed | LevelFormat::LooseCompressed) => Store::PerEntry,
            (Source::Dense { .. }, LevelFormat::Singleton) if per_entry_above => Store::PerEntry,
            // A list inside a list element (CSF's fibres under its slices):
            // every element stored, positions from the lists' lengths.
            (Source::List { .. }, LevelFormat::Compressed | LevelFormat::LooseCompressed)
                if list_above && !per_entry_above =>
            {
                Store::Nodes
            }
            (Source::List { .. }, f) if list_above => {
                return Err(format!(
                    "{here}: the value has a list of (coordinate, …) pairs inside another list here, which a {} level cannot store (a compressed or loose_compressed one can)",
                    f.keyword()
                ));
            }
            (Source::List { .. }, f) if f.is_dense_like() => {
                return Err(format!(
                    "{here} is dense: it takes an array indexed by coordinate, not a list of (coordinate, …) pairs (`scatterAdd(n)` makes one)"
                ));
            }
            (Source::List { .. }, LevelFormat::Compressed | LevelFormat::LooseCompressed) if !per_entry_above => {
                Store::Nodes
            }
            (Source::List { .. }, LevelFormat::Singleton) if per_entry_above => Store::Nodes,
            // A row's list of (column, value) pairs, filled through the diagonal when stored.
            (Source::List { .. }, LevelFormat::Banded) => Store::Nodes,
            // Each block's list of at most n (coordinate, value) pairs, padded to n when stored.
            (Source::List { .. }, LevelFormat::NOutOfM { .. }) if !per_entry_above => Store::Nodes,
            (Source::Pair { .. }, LevelFormat::Singleton) if !per_entry_above && list_above => Store::Nodes,
            (Source::Pair { .. }, _) => {
                return Err(format!(
                    "{here}: a (coordinate, …) pair is stored by a singleton level below a list of pairs"
                ));
            }
            (_, f) => {
                return Err(format!(
                    "{here}: the value's {} cannot be stored in a {} level here",
                    match source {
                        Source::Dense { .. } => "array",
                        Source::List { .. } => "list of (coordinate, …) pairs",
                        Source::Pair { .. } => "pair",
                    },
                    f.keyword()
                ));
            }
        };
        levels.push(PlanLevel { source, store });
        ty = child;
    }
    if walked > 0 && !levels.iter().any(|p| matches!(p.source, Source::List { .. })) {
        let l = walked - 1;
        return Err(format!(
            "{} stores only some coordinates, but the value gives every one (no list of (coordinate, …) pairs): give that level's entries as a list",
            describe_level(enc, l)
        ));
    }
    // Nested lists: each list a compressed or loose_compressed level, with
    // one positions and one coordinates buffer of its own.
    let lists: Vec<usize> = (0..levels.len()).filter(|&l| matches!(levels[l].source, Source::List { .. })).collect();
    // (Defensive: a dense level inside the walked levels is followed by a
    // sparse one, which below a list can only be another list.)
    if let (Some(&first), Some(&last)) = (lists.first(), lists.last())
        && let Some(l) = (first..levels.len()).find(|&l| matches!(levels[l].source, Source::Dense { .. }) && l > last)
    {
        return Err(format!(
            "{}: below a list of (coordinate, …) pairs each entry is a (coordinate, …) pair or a dense block, but the value has an array here with no list below it",
            describe_level(enc, l)
        ));
    }
    if lists.len() > 1 {
        for &l in &lists {
            if !matches!(enc.levels[l].format, LevelFormat::Compressed | LevelFormat::LooseCompressed)
                || enc.aos_run(l).is_some()
                || enc.levels[l].props.nonunique
            {
                return Err(format!(
                    "{}: the value has lists of (coordinate, …) pairs inside lists, which are stored by unique compressed or loose_compressed levels with coordinates of their own (CSF), not by this one",
                    describe_level(enc, l)
                ));
            }
        }
        if let Some(b) = enc.levels.iter().position(|l| l.format == LevelFormat::Batch) {
            return Err(format!(
                "{}: a batch level cannot be stored from a value with lists inside lists",
                describe_level(enc, b)
            ));
        }
    }
    // A per-entry group ends at the list: every level from the group's start
    // down to the list is per-entry or the list itself.
    if let Some(first) = levels.iter().position(|p| p.store == Store::PerEntry)
        && let Some(s) = levels.iter().position(|p| matches!(p.source, Source::List { .. }))
        && enc.levels[s].format != LevelFormat::Singleton
    {
        return Err(format!(
            "{} is nonunique and stores a coordinate per entry, so the levels below it down to the list must be singletons; {} is not",
            describe_level(enc, first),
            describe_level(enc, s)
        ));
    }

    // The trailing dense levels: arrays inside each entry.
    let mut block_lens = Vec::new();
    for l in walked..enc.levels.len() {
        match ty {
            Type::Array { elem, len, binder: None } => {
                block_lens.push((l, len));
                ty = *elem;
            }
            other => {
                return Err(format!(
                    "{} is dense: each entry holds an array here, but the value has {other}",
                    describe_level(enc, l)
                ));
            }
        }
    }
    match &ty {
        Type::Scalar(s) if *s != ScalarType::Bool => needs.push(Need::Element(ty.clone())),
        Type::Meta(_) => needs.push(Need::Element(ty.clone())),
        other => {
            return Err(format!(
                "the stored values must be numbers ({}), but the value's leaves are {other}",
                elem.keyword()
            ));
        }
    }

    // Dimension sizes: given, or the length of a dense array that spans a level of that dimension.
    let mut dims = Vec::new();
    for (d, g) in given.iter().enumerate() {
        if let Some(n) = g {
            dims.push(n.clone());
            continue;
        }
        let from_levels = enc.levels.iter().enumerate().find_map(|(l, lv)| {
            let len = match levels.get(l).map(|p| &p.source) {
                Some(Source::Dense { len, .. }) => len.clone(),
                None => block_lens.iter().find(|(b, _)| *b == l)?.1.clone(),
                _ => return None,
            };
            match lv.expr {
                LvlExpr::Dim(x) if x == d => Some(len),
                LvlExpr::FloorDiv(x, k) if x == d => Some(Nat::mul(len, Nat::Lit(k as i64))),
                _ => None,
            }
        });
        match from_levels {
            Some(n) => dims.push(n),
            None => {
                let name = &enc.dims[d].name;
                return Err(format!(
                    "the size of dimension {d} (`{name}`) is `?` and the value does not give it (no dense array spans its level): write it in the type, e.g. `{{{name}_size}}` in place of `?`"
                ));
            }
        }
    }
    let lvl_sizes: Vec<Nat> = enc
        .levels
        .iter()
        .map(|l| match l.expr {
            LvlExpr::Dim(d) => dims[d].clone(),
            LvlExpr::FloorDiv(d, k) => Nat::div(dims[d].clone(), Nat::Lit(k as i64)),
            LvlExpr::Mod(_, k) | LvlExpr::Counter { slices: k, .. } => Nat::Lit(k as i64),
            // Refused above.
            LvlExpr::Diff { plus, minus } => Nat::sub(Nat::add(dims[plus].clone(), dims[minus].clone()), Nat::Lit(1)),
        })
        .collect();
    for (l, p) in levels.iter().enumerate() {
        if let Source::Dense { len, .. } = &p.source {
            needs.push(Need::Equal(
                len.clone(),
                lvl_sizes[l].clone(),
                format!("the value's array at {} has the level's size", describe_level(enc, l)),
            ));
        }
    }
    for (l, len) in &block_lens {
        needs.push(Need::Equal(
            len.clone(),
            lvl_sizes[*l].clone(),
            format!("the value's array at {} has the level's size", describe_level(enc, *l)),
        ));
    }
    // A dimension split into blocks is a multiple of the block size.
    for lv in &enc.levels {
        if let LvlExpr::FloorDiv(d, k) = lv.expr {
            let k = Nat::Lit(k as i64);
            let whole = Nat::mul(Nat::div(dims[d].clone(), k.clone()), k);
            needs.push(Need::Equal(whole, dims[d].clone(), format!("dimension {d} is a multiple of its block size")));
        }
    }
    let block = block_lens.into_iter().map(|(_, n)| n).collect();
    Ok((ResultPlan { encoding: enc.clone(), elem, dims, lvl_sizes, levels, block }, needs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::parse_encoding;

    fn enc(text: &str) -> Encoding {
        parse_encoding(&format!("#sparse_tensor.encoding<{{ {text} }}>"), 0).unwrap()
    }
    fn rows(crd: ScalarType) -> Type {
        let row = Type::array(Type::Tuple(vec![Type::Scalar(crd), Type::Scalar(ScalarType::F32)]), Nat::var("len"));
        Type::array(row, Nat::var("n"))
    }

    #[test]
    fn rows_of_pairs_store_as_csr_dcsr_and_coo() {
        let csr = enc("map = (i, j) -> (i : dense, j : compressed)");
        let (p, _) = plan(&csr, ScalarType::F32, &[None, Some(Nat::var("m"))], &rows(ScalarType::I64)).unwrap();
        assert_eq!(p.dims, vec![Nat::var("n"), Nat::var("m")]);
        assert_eq!(p.levels.iter().map(|l| l.store).collect::<Vec<_>>(), vec![Store::Dense, Store::Nodes]);
        assert_eq!(p.list_level(), Some(1));
        let dcsr = enc("map = (i, j) -> (i : compressed, j : compressed)");
        let (p, _) = plan(&dcsr, ScalarType::F32, &[None, Some(Nat::var("m"))], &rows(ScalarType::I32)).unwrap();
        assert_eq!(p.levels[0].store, Store::Compress);
        let coo = enc("map = (i, j) -> (i : compressed(nonunique), j : singleton)");
        let (p, _) = plan(&coo, ScalarType::F32, &[None, Some(Nat::var("m"))], &rows(ScalarType::I64)).unwrap();
        assert_eq!(p.levels.iter().map(|l| l.store).collect::<Vec<_>>(), vec![Store::PerEntry, Store::Nodes]);
        assert_eq!(p.entry_levels(), vec![0, 1]);
    }

    #[test]
    fn lists_inside_lists_store_as_csf() {
        // [(i, [(j, [(k, f32)]_len2)]_len1)]_len0: a rank-3 CSF tensor's view.
        let pair = |child: Type| Type::Tuple(vec![Type::Scalar(ScalarType::I64), child]);
        let fibre = Type::array(pair(Type::Scalar(ScalarType::F32)), Nat::var("len2"));
        let slice = Type::array(pair(fibre), Nat::var("len1"));
        let value = Type::array(pair(slice), Nat::var("len0"));
        let sizes = [Some(Nat::var("a")), Some(Nat::var("b")), Some(Nat::var("c"))];
        let csf = enc("map = (i, j, k) -> (i : compressed, j : compressed, k : loose_compressed)");
        let (p, _) = plan(&csf, ScalarType::F32, &sizes, &value).unwrap();
        assert_eq!(p.levels.iter().map(|l| l.store).collect::<Vec<_>>(), vec![Store::Nodes; 3]);
        assert!(p.nested_lists());
        // Not a single list: the rows of pairs store as before.
        let csr = enc("map = (i, j) -> (i : dense, j : compressed)");
        let (p, _) = plan(&csr, ScalarType::F32, &[None, Some(Nat::var("m"))], &rows(ScalarType::I64)).unwrap();
        assert!(!p.nested_lists());
        // A dense level between two lists stores every child.
        let rows = Type::array(Type::array(pair(Type::Scalar(ScalarType::F32)), Nat::var("len2")), Nat::var("c"));
        let ssd = Type::array(pair(Type::array(pair(rows), Nat::var("len1"))), Nat::var("len0"));
        let sizes4 = [Some(Nat::var("a")), Some(Nat::var("b")), Some(Nat::var("c")), Some(Nat::var("d"))];
        let ssds = enc("map = (i, j, k, l) -> (i : compressed, j : compressed, k : dense, l : compressed)");
        let (p, _) = plan(&ssds, ScalarType::F32, &sizes4, &ssd).unwrap();
        let stores = p.levels.iter().map(|l| l.store).collect::<Vec<_>>();
        assert_eq!(stores, vec![Store::Nodes, Store::Nodes, Store::Dense, Store::Nodes]);
        // A nonunique or singleton level has no positions of its own for an inner list.
        for bad in [
            "map = (i, j, k) -> (i : compressed(nonunique), j : compressed, k : compressed)",
            "map = (i, j, k) -> (i : compressed, j : singleton, k : compressed)",
        ] {
            let e = plan(&enc(bad), ScalarType::F32, &sizes, &value).unwrap_err();
            assert!(e.contains("inside"), "{bad}: {e}");
        }
    }

    #[test]
    fn what_cannot_be_stored_says_why() {
        let csr = enc("map = (i, j) -> (i : dense, j : compressed)");
        // The column count is nowhere in the value.
        let e = plan(&csr, ScalarType::F32, &[None, None], &rows(ScalarType::I64)).unwrap_err();
        assert!(e.contains("dimension 1 (`j`)"), "{e}");
        // A dense matrix has no list of pairs to store in the compressed level.
        let dense = Type::array(Type::array(Type::Scalar(ScalarType::F32), Nat::var("m")), Nat::var("n"));
        let e = plan(&csr, ScalarType::F32, &[None, None], &dense).unwrap_err();
        assert!(e.contains("give that level's entries as a list"), "{e}");
        let all_dense = enc("map = (i, j) -> (i : dense, j : dense)");
        let e = plan(&all_dense, ScalarType::F32, &[None, Some(Nat::var("m"))], &rows(ScalarType::I64)).unwrap_err();
        assert!(e.contains("must be numbers"), "{e}");
    }
}
