//! The verifier rejects what MLIR's verifier rejects, with located messages.
//! Each case is rendered with a caret under the span and snapshot-tested, so a
//! wrong span or a reworded message shows up in review.

use heddle_ir::Diagnostic;
use heddle_ir::encoding::parse_encoding;

/// `error: ...`, the offending line with a caret under the span, the notes.
fn render(src: &str, offset: usize, d: &Diagnostic) -> String {
    let start = (d.span.start as usize).saturating_sub(offset).min(src.len());
    let end = (d.span.end as usize).saturating_sub(offset).clamp(start, src.len());
    let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
    let line_no = src[..start].matches('\n').count() + 1;
    let col = src[line_start..start].chars().count();
    let width = src[start..end.min(line_end).max(start)].chars().count().max(1);
    let mut out = format!(
        "error: {}\n{line_no:>3} | {}\n    | {}{} {}\n",
        d.message,
        &src[line_start..line_end],
        " ".repeat(col),
        "^".repeat(width),
        d.label
    );
    for n in &d.notes {
        out.push_str(&format!("    = note: {n}\n"));
    }
    out
}

fn wrap(map: &str) -> String {
    format!("#sparse_tensor.encoding<{{ {map} }}>")
}

const CASES: &[(&str, &str)] = &[
    ("unknown_format", "map = (i, j) -> (i : dense, j : compresed)"),
    ("unknown_format_far", "map = (i, j) -> (i : dense, j : sparse)"),
    ("unknown_property", "map = (i, j) -> (i : dense, j : compressed(unique))"),
    ("duplicate_property", "map = (i, j) -> (i : compressed(nonunique, nonunique), j : singleton)"),
    ("property_on_dense", "map = (i, j) -> (i : dense(nonunique), j : compressed)"),
    ("singleton_first", "map = (i, j) -> (i : singleton, j : compressed)"),
    ("singleton_after_dense", "map = (i, j) -> (i : dense, j : singleton)"),
    ("soa_on_compressed", "map = (i, j) -> (i : compressed(soa), j : singleton)"),
    ("mixed_soa", "map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique, soa), k : singleton)"),
    ("batch_not_leading", "map = (i, j, k) -> (i : dense, j : batch, k : compressed)"),
    ("nm_not_last", "map = (i, j) -> (j floordiv 4 : dense, j mod 4 : block2_4, i : dense)"),
    ("nm_after_compressed", "map = (i, j) -> (i : compressed, j floordiv 4 : dense, j mod 4 : structured[2, 4])"),
    ("nm_block_mismatch", "map = (i, j) -> (i : dense, j floordiv 8 : dense, j mod 8 : structured[2, 4])"),
    ("nm_not_blocked", "map = (i, j) -> (i : dense, j : structured[2, 4])"),
    ("nm_bad_shape", "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[5, 4])"),
    ("banded_not_last", "map = (i, j, k) -> (i : dense, j : banded, k : dense)"),
    ("banded_under_compressed", "map = (i, j) -> (i : compressed, j : banded)"),
    ("banded_nonunique", "map = (i, j) -> (i : dense, j : banded(nonunique))"),
    ("bad_pos_width", "map = (i, j) -> (i : dense, j : compressed), posWidth = 7"),
    ("crd_width_two", "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2"),
    ("duplicate_field", "map = (i, j) -> (i : dense, j : compressed), posWidth = 8, pointerBitWidth = 16"),
    ("unknown_field", "map = (i, j) -> (i : dense, j : compressed), valWidth = 8"),
    ("duplicate_dim_var", "map = (i, i) -> (i : dense, i : compressed)"),
    ("dim_stored_twice", "map = (i, j) -> (i : dense, i : compressed)"),
    ("dim_not_stored", "map = (i, j, k) -> (i : dense, k : compressed)"),
    ("floordiv_without_mod", "map = (i, j) -> (i floordiv 2 : dense, j : compressed)"),
    ("block_sizes_differ", "map = (i, j) -> (i floordiv 2 : dense, j : compressed, i mod 3 : dense)"),
    ("whole_and_blocked", "map = (i, j) -> (i : dense, j : compressed, i mod 2 : dense)"),
    ("division_by_zero", "map = (i, j) -> (i floordiv 0 : dense, j : compressed, i mod 0 : dense)"),
    ("unknown_variable", "map = (i, j) -> (i : dense, k : compressed)"),
    ("non_affine_sum", "map = (i, j) -> (i + j : dense, j : compressed)"),
    ("diff_same_dim", "map = (i, j) -> (i - i : compressed, j : dense)"),
    ("diff_with_constant", "map = (i, j) -> (j - 1 : compressed, i : dense)"),
    ("diff_of_three", "map = (i, j, k) -> (j - i - k : compressed, i : dense, k : dense)"),
    ("diff_dense", "map = (i, j) -> (j - i : dense, i : dense)"),
    ("diff_aos", "map = (i, j) -> (i : compressed(nonunique), j - i : singleton)"),
    ("diff_aos_head", "map = (i, j) -> (j - i : compressed(nonunique), i : singleton)"),
    ("diff_not_invertible", "map = (i, j, k) -> (j - i : compressed, k : dense)"),
    ("diff_redundant", "map = (i, j) -> (j - i : compressed, i : dense, j : dense)"),
    ("diff_twice", "map = (i, j, k) -> (j - i : compressed, k - i : compressed, i : dense)"),
    ("diff_blocked", "map = (i, j) -> (j - i : compressed, i floordiv 2 : dense, i mod 2 : dense)"),
    ("diff_bad_inverse", "map = {d, r}(i = r, j = d - r) -> (d = j - i : compressed, r = i : dense)"),
    ("ceildiv", "map = (i, j) -> (i ceildiv 2 : dense, j : compressed, i mod 2 : dense)"),
    ("symbol_alone", "map = [c](i, j) -> (c : dense, i : dense, j : compressed)"),
    ("unused_symbol", "map = [c](i, j) -> (i : dense, j : compressed)"),
    (
        "legacy_count_mismatch",
        "dimLevelType = [\"dense\", \"compressed\"], dimOrdering = affine_map<(i, j, k) -> (k, j, i)>",
    ),
    ("map_and_legacy", "map = (i, j) -> (i : dense, j : compressed), dimLevelType = [\"dense\", \"compressed\"]"),
    ("level_names_count", "map = {a, b, c}(i, j) -> (a = i : dense, b = j : compressed)"),
    (
        "bad_inverse",
        "map = {ib, jb, ii, jj}(i = ib * 2 + ii, j = jb * 2 + jj) -> (ib = i floordiv 2 : dense, jb = j floordiv 3 : compressed, ii = i mod 2 : dense, jj = j mod 3 : dense)",
    ),
    ("slice_zero_size", "map = (i : #sparse_tensor<slice(0, 0, 1)>, j) -> (i : dense, j : compressed)"),
    ("no_map", "posWidth = 32"),
    ("missing_format", "map = (i, j) -> (i : dense, j)"),
    ("no_levels", "map = (i, j) -> ()"),
    ("bad_explicit_val", "map = (i, j) -> (i : dense, j : compressed), explicitVal = true : f32, implicitVal = foo"),
];

#[test]
fn rejected_encodings_have_located_messages() {
    // A non-zero offset checks that spans are absolute: the encoding sits
    // after `#E = ` on line 3 of an imaginary file.
    let prefix = "// file header\n\n#E = ";
    for (name, body) in CASES {
        let text = wrap(body);
        let file = format!("{prefix}{text}");
        let e = parse_encoding(&text, prefix.len()).expect_err(name);
        insta::assert_snapshot!(format!("reject_{name}"), render(&file, 0, &e));
    }
}

#[test]
fn syntax_errors_are_located() {
    let cases = [
        ("unterminated", "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed)"),
        ("not_an_encoding", "#CSR"),
        ("trailing", "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }> extra"),
        ("bad_char", "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) ; }>"),
    ];
    for (name, text) in cases {
        let e = parse_encoding(text, 0).expect_err(name);
        insta::assert_snapshot!(format!("syntax_{name}"), render(text, 0, &e));
    }
}
