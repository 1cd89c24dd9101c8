//! The encodings `search-formats` tries: the configuration loop of the MLIR
//! sparse compiler paper (§5.2), level types × level orders × widths.

use heddle_ir::expr::ExprKind;
use heddle_ir::{Diagnostic, Program, Type};

/// Level types tried per level (non-unique compressed makes COO a candidate).
const FORMATS: [&str; 4] = ["dense", "compressed", "compressed(nonunique)", "singleton"];
/// (posWidth, crdWidth) pairs tried when a level has such buffers; 0 is the native width.
const WIDTHS: [(u32, u32); 4] = [(0, 0), (0, 32), (32, 0), (32, 32)];

/// The number of array levels of the kernel parameter `operand`.
pub fn operand_rank(program: &Program, operand: &str) -> Result<usize, Diagnostic> {
    let mut e = &program.kernel;
    loop {
        match &e.kind {
            ExprKind::NFun { body, .. } => e = body,
            ExprKind::Fun { params, body } => {
                if let Some(p) = params.iter().find(|p| p.name.as_str() == operand) {
                    let mut rank = 0;
                    let mut t = p.ty.as_ref();
                    while let Some(Type::Array { elem, .. }) = t {
                        rank += 1;
                        t = Some(elem);
                    }
                    if rank == 0 || !matches!(t, Some(Type::Scalar(_))) {
                        return Err(Diagnostic::new(p.span, format!("`{operand}` is not a dense array of scalars"))
                            .with_label("this parameter")
                            .with_note(
                                "search-formats needs the kernel written over dense arrays, e.g. `A: [[float]_m]_n`",
                            ));
                    }
                    if rank > 2 {
                        return Err(Diagnostic::new(
                            p.span,
                            format!("`{operand}` has rank {rank}; search-formats enumerates rank 1 and 2"),
                        )
                        .with_label("this parameter"));
                    }
                    return Ok(rank);
                }
                e = body;
            }
            _ => {
                return Err(Diagnostic::new(program.kernel.span, format!("the kernel has no parameter `{operand}`"))
                    .with_label("this kernel"));
            }
        }
    }
}

/// Every candidate encoding's text for an operand of `rank` (1 or 2).
pub fn enumerate(rank: usize) -> Vec<String> {
    let dims = ["i", "j"];
    let orders: Vec<Vec<usize>> = if rank == 2 { vec![vec![0, 1], vec![1, 0]] } else { vec![vec![0]] };
    let mut formats: Vec<Vec<&str>> = vec![vec![]];
    for _ in 0..rank {
        formats =
            formats.into_iter().flat_map(|f| FORMATS.iter().map(move |x| [f.clone(), vec![*x]].concat())).collect();
    }
    let mut out = Vec::new();
    for order in &orders {
        for fs in &formats {
            let levels: Vec<String> = order.iter().zip(fs).map(|(d, f)| format!("{} : {f}", dims[*d])).collect();
            let map = format!("({}) -> ({})", dims[..rank].join(", "), levels.join(", "));
            // Widths only matter where a level has positions or coordinates.
            let widths: &[(u32, u32)] = if fs.iter().all(|f| *f == "dense") { &WIDTHS[..1] } else { &WIDTHS };
            for (p, c) in widths {
                let mut attrs = format!("map = {map}");
                if *p != 0 {
                    attrs.push_str(&format!(", posWidth = {p}"));
                }
                if *c != 0 {
                    attrs.push_str(&format!(", crdWidth = {c}"));
                }
                out.push(format!("#sparse_tensor.encoding<{{ {attrs} }}>"));
            }
        }
    }
    if rank == 2 {
        out.extend(structured());
    }
    out
}

/// The structured candidates for a matrix: DIA and BSR with 1x8, 2x2 and
/// 4x4 blocks (the formats MKL's inspector chooses for banded and row-band
/// matrices) and 8x1 blocks (a row band's 8 rows in vector lanes, which
/// `auto` ranks), each at the native widths and at 32 bits.
pub const STRUCTURED: [&str; 5] = ["DIA", "BSR(1, 8)", "BSR(2, 2)", "BSR(4, 4)", "BSR(8, 1)"];

fn structured() -> Vec<String> {
    let mut out = Vec::new();
    for name in STRUCTURED {
        let Some(Ok(named)) = heddle_ir::encoding::named::Named::parse(name) else { continue };
        let Ok(text) = named.mlir(Some(2)) else { continue };
        out.push(text.clone());
        out.push(text.replace(" }>", ", posWidth = 32, crdWidth = 32 }>"));
    }
    out
}

/// Whether `operand`'s encoding in the sparsified `kernel` has block or
/// difference levels (whose storage size is checked before it is built).
pub fn is_structured(operand: &str, kernel: &heddle_typeck::Kernel) -> bool {
    heddle_runtime::io::bind::tensor_param(kernel, operand)
        .is_ok_and(|(enc, _)| enc.levels.iter().any(|l| !matches!(l.expr, heddle_ir::encoding::LvlExpr::Dim(_))))
}

/// The attribute's contents, for tables.
pub fn short(text: &str) -> String {
    text.trim_start_matches("#sparse_tensor.encoding<{ ").trim_end_matches(" }>").to_string()
}
