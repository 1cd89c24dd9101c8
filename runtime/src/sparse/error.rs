//! Errors of storage, I/O and conversion. Each names where the problem is:
//! a file and line, or a buffer and the position in it.

use std::path::PathBuf;

/// A sparse-tensor error.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A malformed input file.
    #[error("{}:{line}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A malformed archive (`.npz`): the file, the member (array) and what is wrong.
    #[error("{}{}{message}", path.display(), if member.is_empty() { ": ".to_string() } else { format!(": `{member}`: ") })]
    Archive {
        /// The file.
        path: PathBuf,
        /// The array concerned (`indptr`), empty for the archive itself.
        member: String,
        /// What is wrong.
        message: String,
    },
    /// A file that could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A buffer whose contents contradict the encoding.
    #[error("{buffer}[{position}]: {message}")]
    Buffer {
        /// `positions[1]`, `coordinates[0]`, `values`.
        buffer: String,
        /// Index into the buffer.
        position: usize,
        /// What is wrong.
        message: String,
    },
    /// A tensor that does not fit the target encoding (shape, block size, ELL slices, ...).
    #[error("{0}")]
    Shape(String),
    /// An encoding text that does not parse or verify.
    #[error("{}", .0.message)]
    Encoding(heddle_ir::Diagnostic),
    /// A `.json` document that is not a tensor.
    #[error("{0}")]
    Json(String),
}

impl SparseError {
    pub(crate) fn buffer(buffer: impl Into<String>, position: usize, message: impl Into<String>) -> SparseError {
        SparseError::Buffer { buffer: buffer.into(), position, message: message.into() }
    }
    pub(crate) fn file(path: &std::path::Path, line: usize, message: impl Into<String>) -> SparseError {
        SparseError::File { path: path.to_path_buf(), line, message: message.into() }
    }
}

/// Result of this module.
pub type Result<T> = std::result::Result<T, SparseError>;
