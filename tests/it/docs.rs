//! The user documentation is tested: every ```heddle program in `docs/` and
//! the README type-checks and is in canonical form (```heddle error ones must
//! fail with a located error, not an internal one); a ```run block after a
//! program gives its inputs and result, and the program is run on the
//! interpreter and the CPU backend and compared. Every primitive pattern of
//! `prims.sig` is documented in the guide.
//!
//! A run block holds `NAME = JSON` inputs (`NAME = @PATH` for a file of the
//! repository: a tensor parameter's `.mtx`; a natural's value is a number) and
//! `result = JSON`. A ```rules block must load as a rule file; a
//! ```python test block (the cookbook's scripts) runs with `HEDDLE` set to the
//! binary, where numpy and scipy are installed (always under `CI=true`).

use crate::common;

use common::{heddle, heddle_json, root, write};
use std::path::{Path, PathBuf};

/// A fenced block: its info string, its text, and where it starts.
struct Block {
    info: String,
    text: String,
    line: usize,
}

fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = md.lines().enumerate();
    while let Some((k, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        let mut text = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        out.push(Block { info: info.trim().to_string(), text, line: k + 1 });
    }
    out
}

fn documents() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    out.push(root().join("README.md"));
    out.sort();
    out
}

/// Numbers equal up to rounding; everything else exactly.
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-5 * x.abs().max(y.abs()).max(1.0)
        }
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close(p, q)),
        _ => a == b,
    }
}

/// Runs the program of `file` as a run block says, on each backend.
fn run_block(label: &str, file: &Path, params: &serde_json::Value, spec: &str, dir: &Path) -> usize {
    let kind_of = |name: &str| {
        params.as_array().unwrap().iter().find(|p| p["name"] == name).map(|p| p["kind"].as_str().unwrap().to_string())
    };
    let mut args: Vec<String> = vec!["run".into(), file.to_str().unwrap().into()];
    let mut expected = None;
    for line in spec.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("{label}: `{line}` is not NAME = VALUE"));
        let (name, value) = (name.trim(), value.trim());
        if name == "result" {
            expected = Some(
                serde_json::from_str::<serde_json::Value>(value).unwrap_or_else(|e| panic!("{label}: result: {e}")),
            );
            continue;
        }
        let kind = kind_of(name).unwrap_or_else(|| panic!("{label}: the kernel has no parameter `{name}` ({params})"));
        if let Some(path) = value.strip_prefix('@') {
            let flag = if kind == "tensor" { "--matrix" } else { "--input" };
            args.extend([flag.into(), format!("{name}={}", root().join(path).display())]);
        } else if kind == "nat" {
            args.extend(["--param".into(), format!("{name}={value}")]);
        } else {
            let path = write(dir, &format!("{name}.json"), value);
            args.extend(["--input".into(), format!("{name}={}", path.display())]);
        }
    }
    let expected = expected.unwrap_or_else(|| panic!("{label}: the run block has no `result = …`"));
    for backend in ["interp", "cpu"] {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--backend", backend]);
        let (code, v) = heddle_json(&all);
        assert_eq!(code, 0, "{label} on {backend}: {v:#}");
        assert!(
            close(&v["result"], &expected),
            "{label} on {backend}: result {} but the guide says {expected}",
            v["result"]
        );
    }
    1
}

#[test]
fn documented_programs_check_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let (mut programs, mut runs, mut errors) = (0, 0, 0);
    for doc in documents() {
        let md = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        let all = blocks(&md);
        for (k, b) in all.iter().enumerate() {
            if b.info != "heddle" && b.info != "heddle error" {
                continue;
            }
            let label = format!("{name}:{}", b.line);
            let file = write(dir.path(), &format!("p{programs}_{errors}.hdl"), &b.text);
            let (code, v) = heddle_json(&["check", file.to_str().unwrap()]);
            if b.info == "heddle error" {
                errors += 1;
                assert_eq!(code, 1, "{label}: the program should fail to check:\n{v:#}");
                assert!(v["errors"][0]["line"].is_u64(), "{label}: the error is not located: {v:#}");
                assert_ne!(v["errors"][0]["kind"], "internal", "{label}: {v:#}");
                continue;
            }
            programs += 1;
            assert_eq!(code, 0, "{label} does not check:\n{v:#}\n{}", b.text);
            let (code, _, err) = heddle(&["fmt", "--check", file.to_str().unwrap()]);
            assert_eq!(code, 0, "{label} is not in canonical form ({err}): `heddle fmt` it\n{}", b.text);
            if let Some(next) = all.get(k + 1).filter(|n| n.info == "run") {
                runs += run_block(&label, &file, &v["params"], &next.text, dir.path());
            }
        }
    }
    assert!(
        programs >= 15 && runs >= 12 && errors >= 3,
        "{programs} programs, {runs} runs, {errors} errors found in docs/"
    );
}

#[test]
fn documented_rule_files_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for doc in documents() {
        let md = std::fs::read_to_string(&doc).unwrap();
        for b in blocks(&md).iter().filter(|b| b.info == "rules") {
            let file = write(dir.path(), &format!("r{n}.rules"), &b.text);
            let args = [
                "rewrite",
                "examples/csr_row_sums.hdl",
                "--no-builtin",
                "--rules",
                file.to_str().unwrap(),
                "--iter-limit",
                "3",
            ];
            let (code, v) = heddle_json(&args);
            assert_eq!(code, 0, "{}:{}: the rules do not load:\n{v:#}", doc.display(), b.line);
            n += 1;
        }
    }
    assert!(n >= 3, "only {n} rule blocks in docs/");
}

#[test]
fn documented_scripts_run() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import numpy, scipy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI must install numpy and scipy (scripts/test.sh)");
        eprintln!("skipped: python3 with numpy and scipy is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for doc in documents() {
        let md = std::fs::read_to_string(&doc).unwrap();
        for b in blocks(&md).iter().filter(|b| b.info == "python test") {
            let file = write(dir.path(), &format!("s{n}.py"), &b.text);
            let out = std::process::Command::new("python3")
                .arg(&file)
                .current_dir(root())
                .env("HEDDLE", env!("CARGO_BIN_EXE_heddle"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}:{}: the script failed:\n{}\n{}",
                doc.display(),
                b.line,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            n += 1;
        }
    }
    assert!(n >= 2, "only {n} scripts in docs/");
}

#[test]
fn every_pattern_is_in_the_guide() {
    let guide = std::fs::read_to_string(root().join("docs/guide.md")).unwrap();
    for p in heddle_ir::prims::signatures() {
        assert!(
            guide.contains(&format!("`{}`", p.name)),
            "docs/guide.md does not document the pattern `{}` ({})",
            p.name,
            p.text
        );
    }
}
