//! The typed, elaborated program the checker produces.
//!
//! Definitions are inlined at their uses (each use is checked at its own
//! types, which is how a `def` is usable at several types), operator sections
//! become lambdas, beta-redexes become `let`s, and every primitive is applied
//! to all of its arguments. Later passes (the interpreter, lowering, the
//! backends) see only this form.

use heddle_ir::expr::{BinOp, UnOp};
use heddle_ir::nat::NatCond;
use heddle_ir::{Name, Nat, Span, Type};

/// A typed expression.
#[derive(Clone, Debug, PartialEq)]
pub struct TExpr {
    /// What it is.
    pub kind: TKind,
    /// Its type (fully solved).
    pub ty: Type,
    /// Where it came from.
    pub span: Span,
}

/// A typed literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TLit {
    /// An integer of the node's integer type.
    Int(i64),
    /// A float of the node's float type.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

/// Typed expression forms.
#[derive(Clone, Debug, PartialEq)]
pub enum TKind {
    /// A value variable (kernel parameter, lambda parameter, `let`).
    Var(Name),
    /// A natural used as a value; its type is an integer type.
    NatValue(Nat),
    /// A literal.
    Lit(TLit),
    /// A function; appears as a primitive's function argument.
    Lambda {
        /// Parameters with their types.
        params: Vec<(Name, Type)>,
        /// The body.
        body: Box<TExpr>,
    },
    /// A fully applied primitive.
    Prim {
        /// The primitive's name (see `heddle_ir::prims`).
        name: &'static str,
        /// Its natural arguments, in signature order (an omitted optional one is 0).
        nats: Vec<Nat>,
        /// Its other arguments in signature order: functions (as lambdas), values, data.
        args: Vec<TExpr>,
        /// For the `map` family over a position-dependent array: the natural
        /// variable that stands for the position in the function's types.
        binder: Option<Name>,
    },
    /// `let name = value in body`.
    Let {
        /// The bound name.
        name: Name,
        /// Its value.
        value: Box<TExpr>,
        /// The body.
        body: Box<TExpr>,
    },
    /// `array@index`.
    Index {
        /// The array.
        array: Box<TExpr>,
        /// The position (an integer).
        index: Box<TExpr>,
    },
    /// Tuple component, 0-based.
    Proj {
        /// The tuple.
        tuple: Box<TExpr>,
        /// Component index from 0.
        index: usize,
    },
    /// A tuple.
    Tuple(Vec<TExpr>),
    /// A binary operation.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left.
        lhs: Box<TExpr>,
        /// Right.
        rhs: Box<TExpr>,
    },
    /// A unary operation.
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        operand: Box<TExpr>,
    },
    /// `select(cond, a, b)`.
    Select {
        /// Condition.
        cond: Box<TExpr>,
        /// If true.
        then: Box<TExpr>,
        /// If false.
        els: Box<TExpr>,
    },
    /// `(value : tensor<…, #ENC>)`: the value stored in the encoding's
    /// buffers, as `plan` says (see `heddle_ir::encoding::result`).
    Assemble {
        /// The value, in the encoding's level order.
        value: Box<TExpr>,
        /// How it is stored.
        plan: Box<heddle_ir::encoding::result::ResultPlan>,
    },
}

/// A parameter of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelParam {
    /// `nFun(n => …)`: a natural, given with `--param` or solved from input lengths.
    Nat(Name),
    /// `fun(A: tensor<…, #ENC> => …)`: a sparse tensor. Its storage buffers
    /// (`A_pos1`, `A_crd1`, `A_values`, …) and dimension sizes (`A_dim0`, …)
    /// come before it in the parameter list; the program sees `view`, the
    /// coordinate hierarchy as nested position-dependent arrays.
    Tensor {
        /// Its name.
        name: Name,
        /// The declared `tensor<…>` type.
        ty: Type,
        /// The type the program sees.
        view: Type,
        /// Its encoding, resolved.
        encoding: heddle_ir::encoding::Encoding,
        /// Where it is declared.
        span: Span,
    },
    /// `fun(x: T => …)`: an input buffer or scalar.
    Value {
        /// Its name.
        name: Name,
        /// Its declared type.
        ty: Type,
        /// Where it is declared.
        span: Span,
    },
}

impl KernelParam {
    /// The parameter's name.
    pub fn name(&self) -> &Name {
        match self {
            KernelParam::Nat(n) => n,
            KernelParam::Value { name, .. } | KernelParam::Tensor { name, .. } => name,
        }
    }
}

/// A condition the type checker could not decide statically and that must
/// hold for the kernel's naturals at run time (e.g. `n % 4 == 0` for `split(4)`
/// of an array of length `n`).
#[derive(Clone, Debug, PartialEq)]
pub struct Obligation {
    /// What must hold.
    pub cond: NatCond,
    /// The expression that needs it.
    pub span: Span,
    /// Why, in words.
    pub reason: String,
}

/// A checked kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Parameters in order.
    pub params: Vec<KernelParam>,
    /// The body.
    pub body: TExpr,
    /// The type of the whole kernel (a chain of `(n: nat) ->` and `(x: T) ->`).
    pub ty: Type,
    /// Conditions to check when the naturals are known.
    pub obligations: Vec<Obligation>,
}

impl TExpr {
    /// Calls `f` on each direct sub-expression, mutably.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut TExpr)) {
        match &mut self.kind {
            TKind::Var(_) | TKind::NatValue(_) | TKind::Lit(_) => {}
            TKind::Lambda { body, .. } => f(body),
            TKind::Prim { args, .. } | TKind::Tuple(args) => args.iter_mut().for_each(f),
            TKind::Let { value, body, .. } => {
                f(value);
                f(body)
            }
            TKind::Index { array, index } => {
                f(array);
                f(index)
            }
            TKind::Proj { tuple, .. } => f(tuple),
            TKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs)
            }
            TKind::Unary { operand, .. } | TKind::Assemble { value: operand, .. } => f(operand),
            TKind::Select { cond, then, els } => {
                f(cond);
                f(then);
                f(els)
            }
        }
    }

    /// Calls `f` on each direct sub-expression.
    pub fn for_each_child(&self, f: &mut dyn FnMut(&TExpr)) {
        match &self.kind {
            TKind::Var(_) | TKind::NatValue(_) | TKind::Lit(_) => {}
            TKind::Lambda { body, .. } => f(body),
            TKind::Prim { args, .. } | TKind::Tuple(args) => args.iter().for_each(f),
            TKind::Let { value, body, .. } => {
                f(value);
                f(body)
            }
            TKind::Index { array, index } => {
                f(array);
                f(index)
            }
            TKind::Proj { tuple, .. } => f(tuple),
            TKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs)
            }
            TKind::Unary { operand, .. } | TKind::Assemble { value: operand, .. } => f(operand),
            TKind::Select { cond, then, els } => {
                f(cond);
                f(then);
                f(els)
            }
        }
    }
}
