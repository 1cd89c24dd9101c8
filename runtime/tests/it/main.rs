//! The integration tests of this crate, in one test binary (one link instead
//! of one per file). Each file here is a module named after it: `cargo test
//! -p PACKAGE --test it NAME::` runs tests/it/NAME.rs alone. A new test file
//! tests/it/NAME.rs needs one line below, `mod NAME;`; its insta snapshots
//! live in tests/it/snapshots/, named `it__NAME__*.snap`.

mod counted_differential;
mod dia;
mod direct_conversions;
mod exact_values;
mod fill_values;
mod lowering_differential;
mod mtx_numbers;
mod mtx_stream;
mod npz;
mod number_exhaustive;
mod reader_limits;
mod slices;
mod sparse_errors;
mod sparse_io_chunks;
mod sparse_roundtrip;
mod sparse_seeds;
mod sparse_storage;

/// A new, empty directory for one test's files, removed with everything in
/// it when the guard is dropped (when the test ends, passing or failing).
/// Its name is unique, never the process id: ids come back, and a directory
/// or file named after one could hold an earlier process's files (the root
/// crate's `common::scratch_dir`).
pub fn scratch_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("heddle-{tag}-")).tempdir().expect("create a temporary directory")
}

/// A file written in a scratch directory of its own, removed with the
/// directory when dropped; it derefs to its path.
pub struct ScratchFile {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl ScratchFile {
    /// `text` in a new file named `name` (its extension says its format).
    pub fn new(tag: &str, name: &str, text: &str) -> ScratchFile {
        let dir = scratch_dir(tag);
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write a scratch file");
        ScratchFile { path, _dir: dir }
    }
}

impl std::ops::Deref for ScratchFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for ScratchFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}
