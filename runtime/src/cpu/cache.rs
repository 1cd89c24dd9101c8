//! Compiled kernels, kept so that running a program again does not compile it again.

use heddle_codegen_cpu::{CodegenError, CpuKernel, Options, compile_with};
use heddle_ir::loops::LoopProgram;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A map from a program's complete text to its compiled kernel.
///
/// The key is the program's `Debug` form: everything compilation depends on
/// (arguments, types, the body, the check table). Natural parameters are
/// kernel *arguments*, not part of the code, so one compiled kernel serves
/// every size; options that change the lowering (`--param` values folded in,
/// naive sums) change the program and therefore the key, and code generation
/// options are part of the key.
#[derive(Default)]
pub struct KernelCache {
    kernels: Mutex<HashMap<String, Arc<CpuKernel>>>,
    /// The last few kernels handed out, found by comparing programs (no
    /// key text to build): a kernel run again and again (`run --reps`,
    /// calls from Python) skips formatting its program on every launch.
    recent: Mutex<Vec<(Options, LoopProgram, Arc<CpuKernel>)>>,
}

/// How many programs [`KernelCache`] compares before building a key.
const RECENT: usize = 4;

impl KernelCache {
    /// The kernel for `prog`, compiled on first use.
    pub fn get(&self, prog: &LoopProgram) -> Result<Arc<CpuKernel>, CodegenError> {
        self.get_with(prog, &Options::default())
    }

    /// The kernel for `prog` compiled with `options`, compiled on first use.
    pub fn get_with(&self, prog: &LoopProgram, options: &Options) -> Result<Arc<CpuKernel>, CodegenError> {
        {
            let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, _, k)) = recent.iter().find(|(o, p, _)| o == options && p == prog) {
                return Ok(k.clone());
            }
        }
        let key = format!("{options:?}{prog:?}");
        let found = self.lock().get(&key).cloned();
        let k = match found {
            Some(k) => k,
            None => {
                // Compiled outside the lock: two threads may race to compile the same
                // program, and the second result simply replaces the first.
                let k = Arc::new(compile_with(prog, options)?);
                self.lock().insert(key, k.clone());
                k
            }
        };
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT {
            recent.remove(0);
        }
        recent.push((*options, prog.clone(), k.clone()));
        Ok(k)
    }

    /// Number of kernels held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Holds no kernel?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CpuKernel>>> {
        // A panic while holding the lock cannot leave the map half-updated.
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The process-wide cache.
pub fn global() -> &'static KernelCache {
    static CACHE: OnceLock<KernelCache> = OnceLock::new();
    CACHE.get_or_init(KernelCache::default)
}

/// Compiles `prog` through the process-wide cache.
pub fn compile_cached(prog: &LoopProgram) -> Result<Arc<CpuKernel>, CodegenError> {
    global().get(prog)
}

/// Compiles `prog` with `options` through the process-wide cache.
pub fn compile_cached_with(prog: &LoopProgram, options: &Options) -> Result<Arc<CpuKernel>, CodegenError> {
    global().get_with(prog, options)
}
