//! What a host program needs to launch a generated kernel itself: every
//! argument in order with its C declaration, its role and its size as a
//! formula over the kernel's naturals (and, for inputs, over the data), the
//! NDRange (`launch.rs`), and what the codes in the error buffer mean.
//! `heddle compile --target opencl --json` prints it (docs/opencl-host.md).

use crate::KernelParam;
use crate::ctype::stored;
use crate::launch::{LaunchConfig, eval, text};
use heddle_ir::loops::{ArgKind, Expr, HostKind, LoopProgram};
use heddle_ir::{Name, Nat};
use serde::Serialize;
use std::collections::HashMap;

/// What an argument is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A natural parameter (`long`).
    Natural,
    /// A scalar input.
    Scalar,
    /// A read-only input buffer.
    Input,
    /// The result buffer.
    Output,
    /// A buffer the host computes from the inputs before the launch (a prefix sum).
    Host,
    /// `__local` memory: pass its size in bytes and no data (`clSetKernelArg(k, i, bytes, NULL)`).
    Local,
    /// A global scratch buffer the kernel uses; its contents do not matter.
    Scratch,
    /// One zeroed slice per work-item of the launch (`records` per item).
    Workspace,
    /// The arena: `records` 8-byte words per work-item (the natural
    /// `heddle_arena_words`); its contents do not matter.
    Arena,
    /// One `int`, 0 before the launch; after it, 0, or the arena words per
    /// work-item a work-item needed where it had fewer: launch again with at
    /// least that many (and the error buffer and added-into outputs cleared).
    ArenaNeed,
    /// One `int`, 0 before the launch; after it, 0 or the code of the check that failed.
    Error,
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArgSpec {
    /// Its position in the kernel's parameter list.
    pub index: usize,
    /// The C parameter's name.
    pub name: String,
    /// What heddle calls it: the kernel parameter or storage buffer it
    /// holds (`offset`, `A_pos1`, the count array `count#1`), or the buffer
    /// of the loop program (`out`, a `__local` temporary).
    pub param: String,
    /// The C parameter declaration, as in the kernel's signature.
    pub declaration: String,
    /// What it is for.
    pub role: Role,
    /// The C types of a record's fields (one for an array of scalars);
    /// records are C structs (`heddle_recN`, members `f0, f1, …`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Each field's byte offset in a record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub field_offsets: Vec<usize>,
    /// Bytes per record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_bytes: Option<usize>,
    /// The number of records, as a formula (per work-item for a workspace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<String>,
    /// How the host computes a `host` buffer, or a natural it computes from
    /// the inputs (`HostKind::Largest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    /// What the buffer must hold at the launch, when it matters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial: Option<String>,
    #[serde(skip)]
    size: Size,
}

/// A buffer's record count, for evaluation.
#[derive(Clone, Debug, PartialEq, Default)]
enum Size {
    #[default]
    None,
    Nat(Nat),
    Expr(Expr),
    /// Records per work-item: times the launch's global work-items.
    PerItem(Expr),
}

/// A code the error buffer can hold after a launch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorCode {
    /// The value in the buffer (0 means no check failed).
    pub code: u64,
    /// What failed.
    pub message: String,
    /// Where the checked access is in the source (a byte span).
    #[serde(skip)]
    pub span: heddle_ir::Span,
}

/// A generated kernel's interface to its host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interface {
    /// The arguments, in order.
    pub args: Vec<ArgSpec>,
    /// The codes of failed checks.
    pub errors: Vec<ErrorCode>,
}

impl Interface {
    /// `index_overflow`: the kernel checks that a loop's range fits the
    /// narrow integer its variable is converted to (its own error code).
    pub(crate) fn new(prog: &LoopProgram, params: &[KernelParam], decls: &[String], index_overflow: bool) -> Interface {
        let args = params.iter().zip(decls).enumerate().map(|(index, (p, decl))| spec(prog, index, p, decl)).collect();
        let mut errors: Vec<ErrorCode> = prog
            .checks
            .iter()
            .enumerate()
            .map(|(k, c)| ErrorCode { code: k as u64 + 1, message: c.message.clone(), span: c.span })
            .collect();
        if index_overflow {
            let code = u64::from(heddle_ir::loops::INDEX_OVERFLOW_CHECK) + 1;
            errors.push(ErrorCode {
                code,
                message: heddle_ir::loops::INDEX_OVERFLOW_MESSAGE.to_string(),
                span: prog.index_overflow_at.unwrap_or(heddle_ir::Span::DUMMY),
            });
        }
        Interface { args, errors }
    }

    /// The size in bytes of each argument that is a buffer, where it
    /// follows from the naturals (`nat`) alone; `launch` gives the
    /// work-item count workspaces are multiplied by.
    pub fn bytes(&self, nat: &dyn Fn(&Name) -> Option<i64>, launch: &LaunchConfig) -> Vec<Option<i64>> {
        let items = launch.sizes(nat).ok().map(|s| s.global.iter().product::<usize>() as i64);
        let nats: HashMap<Name, i64> = self
            .args
            .iter()
            .filter(|a| a.role == Role::Natural)
            .filter_map(|a| nat(&Name::from(a.name.as_str())).map(|v| (Name::from(a.name.as_str()), v)))
            .collect();
        self.args
            .iter()
            .map(|a| {
                let record = a.record_bytes? as i64;
                let records = match &a.size {
                    Size::None => return None,
                    Size::Nat(n) => n.eval(&nats).ok()?,
                    Size::Expr(e) => eval(e, nat).ok()?,
                    Size::PerItem(e) => eval(e, nat).ok()?.checked_mul(items?)?,
                };
                records.checked_mul(record)
            })
            .collect()
    }
}

fn spec(prog: &LoopProgram, index: usize, p: &KernelParam, decl: &str) -> ArgSpec {
    let name = decl.rsplit(' ').next().unwrap_or_default().to_string();
    let param = match p {
        KernelParam::Arg(k) => prog.args[*k].name.to_string(),
        KernelParam::Local { name, .. } | KernelParam::Scratch { name, .. } | KernelParam::Workspace { name, .. } => {
            name.to_string()
        }
        KernelParam::Arena => "heddle_arena_all".to_string(),
        KernelParam::ArenaWords => "heddle_arena_words".to_string(),
        KernelParam::ArenaNeed => "heddle_arena_need".to_string(),
        KernelParam::Error => "heddle_error".to_string(),
    };
    let mut a = ArgSpec {
        index,
        name,
        param,
        declaration: decl.to_string(),
        role: Role::Error,
        fields: Vec::new(),
        field_offsets: Vec::new(),
        record_bytes: None,
        records: None,
        computed: None,
        initial: None,
        size: Size::None,
    };
    let layout = |a: &mut ArgSpec, fields: &[heddle_ir::ScalarType]| {
        let l = heddle_ir::loops::record_layout(fields);
        a.fields = fields.iter().map(|f| stored(*f).to_string()).collect();
        a.field_offsets = l.offsets;
        a.record_bytes = Some(l.size);
    };
    match p {
        KernelParam::Arg(k) => {
            let arg = &prog.args[*k];
            match &arg.kind {
                ArgKind::Nat => {
                    a.role = Role::Natural;
                    if let Some(HostKind::Largest { ranges, body }) =
                        prog.host.iter().find(|h| h.name == arg.name).map(|h| &h.kind)
                    {
                        let ranges: Vec<String> = ranges.iter().map(|(v, n)| format!("{v} = 0 .. {n} - 1")).collect();
                        a.computed =
                            Some(format!("the largest {body} for {} (0 where there is none)", ranges.join(", ")));
                    }
                }
                ArgKind::Scalar(_) => a.role = Role::Scalar,
                ArgKind::Input { fields, len } => {
                    a.role = Role::Input;
                    layout(&mut a, fields);
                    a.records = Some(len.to_string());
                    a.size = Size::Nat(len.clone());
                }
                ArgKind::Output { fields, len } => {
                    a.role = Role::Output;
                    layout(&mut a, fields);
                    a.records = Some(len.to_string());
                    a.size = Size::Nat(len.clone());
                    if prog.adds_into_output() {
                        a.initial = Some("zero (the kernel adds into it)".into());
                    }
                }
                ArgKind::Host => {
                    a.role = Role::Host;
                    layout(&mut a, &[heddle_ir::ScalarType::I64]);
                    if let Some(HostKind::PrefixSum { var, body, count, flat }) =
                        prog.host.iter().find(|h| h.name == arg.name).map(|h| &h.kind)
                    {
                        a.records = Some(Nat::add(count.clone(), Nat::Lit(1)).to_string());
                        a.size = Size::Nat(Nat::add(count.clone(), Nat::Lit(1)));
                        let flat = if flat.is_empty() {
                            String::new()
                        } else {
                            let names: Vec<String> = flat.iter().map(|f| format!("`{f}`")).collect();
                            format!("; {} read by flat record position ({}@q is record q)", names.join(", "), flat[0])
                        };
                        a.computed = Some(format!(
                            "the exclusive prefix sum: {n}[j] = sum({var} = 0 .. j - 1, {body}) for j = 0 .. {count} ({n}[0] = 0){flat}",
                            n = a.name
                        ));
                    }
                }
            }
        }
        KernelParam::Local { fields, len, .. } => {
            a.role = Role::Local;
            layout(&mut a, fields);
            a.records = Some(text(len));
            a.size = Size::Expr(len.clone());
        }
        KernelParam::Scratch { fields, len, .. } => {
            a.role = Role::Scratch;
            layout(&mut a, fields);
            a.records = Some(text(len));
            a.size = Size::Expr(len.clone());
        }
        KernelParam::Workspace { fields, len, .. } => {
            a.role = Role::Workspace;
            layout(&mut a, fields);
            a.records = Some(text(len));
            a.size = Size::PerItem(len.clone());
            a.initial = Some("zero; work-item g (its linear global id) uses records g * records ..".into());
        }
        KernelParam::Arena => {
            a.role = Role::Arena;
            layout(&mut a, &[heddle_ir::ScalarType::U64]);
            a.records = Some("heddle_arena_words".into());
            a.initial =
                Some("anything; work-item g (its linear global id) uses words g * heddle_arena_words ..".into());
        }
        KernelParam::ArenaWords => {
            a.role = Role::Natural;
            a.computed = Some(format!(
                "the arena's words per work-item: any number at first (heddle starts with {}); after a launch that leaves \
                 heddle_arena_need not 0 (a work-item stopped for want of room), at least heddle_arena_need for the launch again",
                crate::ARENA_FIRST_WORDS
            ));
        }
        KernelParam::ArenaNeed => {
            a.role = Role::ArenaNeed;
            layout(&mut a, &[heddle_ir::ScalarType::I32]);
            a.records = Some("1".into());
            a.size = Size::Nat(Nat::Lit(1));
            a.initial = Some("0".into());
        }
        KernelParam::Error => {
            a.role = Role::Error;
            layout(&mut a, &[heddle_ir::ScalarType::I32]);
            a.records = Some("1".into());
            a.size = Size::Nat(Nat::Lit(1));
            a.initial = Some("0".into());
        }
    }
    a
}
