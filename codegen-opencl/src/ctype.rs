//! C spellings: scalar types, literals, records and identifiers.

use heddle_ir::{Name, ScalarType};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The OpenCL C type of a scalar held in a variable.
pub fn scalar(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "bool",
        ScalarType::I8 => "char",
        ScalarType::I16 => "short",
        ScalarType::I32 => "int",
        ScalarType::I64 => "long",
        ScalarType::U8 => "uchar",
        ScalarType::U16 => "ushort",
        ScalarType::U32 => "uint",
        ScalarType::U64 => "ulong",
        // Computed in `float`, rounded back after every operation (`half`
        // arithmetic needs cl_khr_fp16, which few devices have).
        ScalarType::F16 | ScalarType::BF16 => "float",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
        // Lowering refuses complex numbers (`heddle_rewrite::lower::complex`);
        // OpenCL's pair types name them.
        ScalarType::C32 => "float2",
        ScalarType::C64 => "double2",
    }
}

/// The OpenCL C type of a scalar stored in memory or passed as an argument:
/// `bool` has no defined size in OpenCL C and may not be a kernel argument,
/// so it is stored as a `uchar` (0 or 1), the one-byte layout the host uses;
/// `f16` and `bf16` are stored as their bits in a `ushort` (converted by
/// the `heddle_from_*` / `heddle_to_*` helpers of `halves.rs`).
pub fn stored(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "uchar",
        ScalarType::F16 | ScalarType::BF16 => "ushort",
        t => scalar(t),
    }
}

/// Integer types narrower than `int`: C promotes their arithmetic to `int`,
/// so results are cast back to wrap at the declared width like the interpreter.
pub fn is_narrow(t: ScalarType) -> bool {
    t.is_int() && t.size_bytes() < 4
}

/// A literal of an integer type.
pub fn int_literal(v: i64, t: ScalarType) -> String {
    match t {
        // The most negative value has no literal in C: `-N` negates a positive literal.
        ScalarType::I64 if v == i64::MIN => "(-9223372036854775807L - 1L)".into(),
        ScalarType::I64 => format!("{v}L"),
        ScalarType::I32 if v == i64::from(i32::MIN) => "(-2147483647 - 1)".into(),
        ScalarType::I32 => format!("{}", v as i32),
        ScalarType::U32 => format!("{}U", v as u32),
        ScalarType::U64 => format!("{}UL", v as u64),
        ScalarType::I8 => format!("(char){}", v as i8),
        ScalarType::I16 => format!("(short){}", v as i16),
        ScalarType::U8 => format!("(uchar){}", v as u8),
        ScalarType::U16 => format!("(ushort){}", v as u16),
        ScalarType::Bool => (if v != 0 { "true" } else { "false" }).into(),
        ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64 => float_literal(v as f64, t),
        // Never met: lowering refuses complex numbers. The real part's literal.
        ScalarType::C32 | ScalarType::C64 => float_literal(v as f64, t.part()),
    }
}

/// A literal of a float type (`INFINITY` / `NAN` for the non-finite values).
pub fn float_literal(v: f64, t: ScalarType) -> String {
    // f16 and bf16 literals are rounded to their type and held in a `float`
    // (their values are exact there).
    let v = match t {
        ScalarType::F16 => heddle_ir::rounding::f16_of_f64(v).to_f64(),
        ScalarType::BF16 => heddle_ir::rounding::bf16_of_f64(v).to_f64(),
        _ => v,
    };
    let (text, suffix) = if t != ScalarType::F64 {
        let v = v as f32;
        (if v.is_finite() { format!("{v:?}") } else { non_finite(f64::from(v)) }, "f")
    } else {
        (if v.is_finite() { format!("{v:?}") } else { non_finite(v) }, "")
    };
    if !v.is_finite() {
        return if t != ScalarType::F64 { text } else { format!("(double){text}") };
    }
    format!("{text}{suffix}")
}

fn non_finite(v: f64) -> String {
    if v.is_nan() {
        "NAN".into()
    } else if v > 0.0 {
        "INFINITY".into()
    } else {
        "(-INFINITY)".into()
    }
}

/// Struct types for buffer records of several fields, named in order of first use.
#[derive(Default)]
pub struct Records {
    names: BTreeMap<Vec<ScalarType>, String>,
    order: Vec<Vec<ScalarType>>,
}

impl Records {
    /// The element type of a buffer with these fields: the scalar for one
    /// field, else a struct whose members `f0, f1, …` follow C's layout rules,
    /// the same as `heddle_ir::loops::record_layout`.
    pub fn elem(&mut self, fields: &[ScalarType]) -> String {
        if let [one] = fields {
            return stored(*one).to_string();
        }
        if let Some(n) = self.names.get(fields) {
            return n.clone();
        }
        let name = format!("heddle_rec{}", self.order.len());
        self.names.insert(fields.to_vec(), name.clone());
        self.order.push(fields.to_vec());
        name
    }

    /// `typedef struct { … } heddle_recN;` for every record used.
    pub fn declarations(&self) -> String {
        let mut out = String::new();
        for fields in &self.order {
            let members: Vec<String> =
                fields.iter().enumerate().map(|(k, f)| format!("{} f{k};", stored(*f))).collect();
            out.push_str(&format!("typedef struct {{ {} }} {};\n", members.join(" "), self.names[fields]));
        }
        out
    }
}

/// Words a loop-IR name must not become in C: keywords, OpenCL types and
/// qualifiers, and the built-in functions the generated code calls.
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "true",
    "false",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "half",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "kernel",
    "global",
    "local",
    "private",
    "constant",
    "read_only",
    "write_only",
    "read_write",
    "min",
    "max",
    "fmod",
    "barrier",
    "atomic_cmpxchg",
    "NAN",
    "INFINITY",
    "main",
];

/// Maps loop-IR names to C identifiers: a name that is already a valid,
/// unreserved identifier keeps its spelling (readable kernels); anything
/// else gets a fresh `heddle_v…` name. Names beginning with `heddle_` or
/// `get_` are the generator's and OpenCL's own, so they are renamed too.
#[derive(Default)]
pub struct Idents {
    map: HashMap<Name, String>,
    used: HashSet<String>,
}

impl Idents {
    /// The C identifier of `n`.
    pub fn get(&mut self, n: &Name) -> String {
        if let Some(s) = self.map.get(n) {
            return s.clone();
        }
        let s = n.as_str();
        let valid = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with("__")
            && !s.starts_with("heddle_")
            && !s.starts_with("get_")
            && !RESERVED.contains(&s);
        let mut out = if valid { s.to_string() } else { String::new() };
        if out.is_empty() || self.used.contains(&out) {
            let stem: String = s.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            let mut k = self.used.len();
            loop {
                let candidate = format!("heddle_v{k}_{stem}");
                if !self.used.contains(&candidate) {
                    out = candidate;
                    break;
                }
                k += 1;
            }
        }
        self.used.insert(out.clone());
        self.map.insert(n.clone(), out.clone());
        out
    }
}
