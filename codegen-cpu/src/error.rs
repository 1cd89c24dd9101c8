//! Why a program could not be compiled.

/// A compilation failure. None of these is a crash: a malformed program, an
/// unsupported construct and a Cranelift error are all reported as values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    /// The loop program does not validate (a bug in lowering, or a
    /// hand-written program).
    #[error(transparent)]
    Invalid(#[from] heddle_ir::loops::LoopError),
    /// A construct this backend does not compile.
    #[error("the CPU backend does not support {0}")]
    Unsupported(String),
    /// Cranelift rejected the generated function or could not set up the
    /// target (an internal error of this backend).
    #[error("cranelift: {0}")]
    Cranelift(String),
}
