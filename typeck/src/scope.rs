//! Lexical scopes: a persistent linked list, cheap to extend and to capture.

use heddle_ir::{Expr, Name, Type};
use std::rc::Rc;

/// What a name stands for.
#[derive(Clone, Debug)]
pub enum Binding {
    /// A value of this type.
    Value(Type),
    /// A type-level natural.
    Nat,
    /// A function-valued binding (a `def`, a `let` of a function, a function
    /// argument): checked afresh at each use, in the scope it was written in.
    Macro(Rc<Expr>, Scope),
}

/// A scope.
#[derive(Clone, Debug, Default)]
pub struct Scope(Option<Rc<Node>>);

/// One binding of a scope.
#[derive(Debug)]
pub struct Node {
    name: Name,
    binding: Binding,
    next: Scope,
}

impl Scope {
    /// This scope with `name` bound (shadowing).
    pub fn with(&self, name: Name, binding: Binding) -> Scope {
        Scope(Some(Rc::new(Node { name, binding, next: self.clone() })))
    }
    /// The innermost binding of `name`.
    pub fn lookup(&self, name: &Name) -> Option<&Binding> {
        let mut cur = &self.0;
        while let Some(node) = cur {
            if &node.name == name {
                return Some(&node.binding);
            }
            cur = &node.next.0;
        }
        None
    }
    /// Is `name` bound to a natural?
    pub fn is_nat(&self, name: &Name) -> bool {
        matches!(self.lookup(name), Some(Binding::Nat))
    }
}
