//! Running generated OpenCL kernels through `ocl`.
//!
//! [`OpenCl::new`] picks a device (by index over every platform's devices;
//! by default the first GPU, else the first device) and owns its context and
//! a profiling-enabled queue. [`OpenCl::run`] marshals a prepared
//! [`Launch`] into device buffers, sets the kernel's arguments in the order
//! [`heddle_codegen_opencl::compile`] declared them, launches the NDRange
//! the kernel implies for these naturals, reads the output back and turns a
//! failed check into its diagnostic. Built programs are cached by source.
//!
//! On Oclgrind (the OpenCL simulator) every launch is also checked: what
//! Oclgrind reports — a data race, an uninitialised value, an invalid API
//! call — is an error of the launch (see [`crate::oclgrind`]). Oclgrind is
//! chosen only by `--device` when another device exists.
//!
//! No OpenCL driver is an ordinary error, never a panic: ocl's
//! `Platform::list()` / `default()` panic without one, and ocl-core's
//! `get_platform_ids` sleeps ten seconds retrying, so platforms are counted
//! with one direct `clGetPlatformIDs` call first.

use crate::launch::{Launch, Slot, check_failure};
use heddle_codegen_opencl::{Kernel, KernelParam, WorkSizes};
use heddle_ir::loops::{LoopProgram, record_layout};
use heddle_ir::{Diagnostic, ScalarType, Span};
use ocl::core::{self, ArgVal, Event as CoreEvent, ProfilingInfo};
use ocl::enums::ProfilingInfoResult;
use ocl::flags::{CommandQueueProperties, DeviceType, MemFlags};
use ocl::{Buffer, Context, Device, Platform, Program, Queue};
use std::collections::HashMap;
use std::sync::Mutex;

/// The options heddle builds every generated kernel with.
pub const BUILD_OPTIONS: &str = "-cl-std=CL1.2";

/// One OpenCL device a kernel can run on.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceEntry {
    /// Its index for `--device`.
    pub index: usize,
    /// The device's name.
    pub name: String,
    /// Its platform's name.
    pub platform: String,
    /// Is it a GPU?
    pub gpu: bool,
    /// Is it Oclgrind's simulated device (launches are checked, see [`crate::oclgrind`])?
    pub simulator: bool,
}

/// An open device. Launches on Oclgrind go through one thread per process
/// (see [`Simulator`]); on any other device they run on the caller's thread.
pub struct OpenCl {
    entry: DeviceEntry,
    inner: Inner,
}

enum Inner {
    Direct(Session),
    Simulator(&'static Simulator),
}

/// A device's context, queue and the cache of built programs.
struct Session {
    device: Device,
    entry: DeviceEntry,
    context: Context,
    queue: Queue,
    programs: Mutex<HashMap<String, Program>>,
}

/// Oclgrind's device, driven from one thread that owns its context.
///
/// Oclgrind's uninitialised-value checker keeps per-thread state that only
/// the thread that created the context has (host calls from another thread
/// crash it), and every context a process creates restarts the log the
/// reports are read from; so a process has one Oclgrind context, on one
/// thread, and every call is sent to that thread.
struct Simulator {
    jobs: Mutex<std::sync::mpsc::Sender<Job>>,
}

type Job = Box<dyn FnOnce(&Session) + Send>;

impl Simulator {
    /// The process's simulator for the device `index` of [`devices`].
    fn get(index: usize) -> Result<&'static Simulator, Diagnostic> {
        static ONE: std::sync::OnceLock<Result<(usize, Simulator), Diagnostic>> = std::sync::OnceLock::new();
        let (opened, sim) = match ONE.get_or_init(|| Simulator::start(index).map(|s| (index, s))) {
            Ok(one) => one,
            Err(d) => return Err(d.clone()),
        };
        if *opened != index {
            return Err(err(format!("this process already uses the Oclgrind device {opened}")));
        }
        Ok(sim)
    }

    fn start(index: usize) -> Result<Simulator, Diagnostic> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (ready, opened) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("heddle-oclgrind".into())
            .spawn(move || match Session::open(index) {
                Ok(session) => {
                    let _ = ready.send(Ok(()));
                    for job in queue {
                        job(&session);
                    }
                }
                Err(d) => {
                    let _ = ready.send(Err(d));
                }
            })
            .map_err(|e| err(format!("cannot start the Oclgrind thread: {e}")))?;
        opened.recv().map_err(|_| err("the Oclgrind thread stopped"))??;
        Ok(Simulator { jobs: Mutex::new(jobs) })
    }

    /// Runs `f` on the simulator's thread and returns its result.
    fn call<R: Send + 'static>(&self, f: impl FnOnce(&Session) -> R + Send + 'static) -> Result<R, Diagnostic> {
        let (done, result) = std::sync::mpsc::channel();
        let job: Job = Box::new(move |s| {
            let _ = done.send(f(s));
        });
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
            .map_err(|_| err("the Oclgrind thread stopped"))?;
        result.recv().map_err(|_| err("the Oclgrind thread stopped while running a kernel"))
    }
}

/// What one launch measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Timing {
    /// Kernel execution time of each repetition (OpenCL profiling events), seconds.
    pub kernel_seconds: Vec<f64>,
    /// The work sizes used.
    pub sizes: WorkSizes,
}

fn err(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(Span::DUMMY, msg.into()).with_label("while running the kernel with OpenCL")
}

/// Why there is nothing to run on, worded for the user.
const NO_PLATFORM: &str = "no OpenCL platform is installed (clGetPlatformIDs found none): install an OpenCL driver, \
     e.g. `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` for the CPU, or use --backend interp";

/// Every device of every platform, in `--device` order.
pub fn devices() -> Result<Vec<(DeviceEntry, Device)>, Diagnostic> {
    let mut count: ocl::ffi::cl_uint = 0;
    // SAFETY: a count-only query: no output array, a valid pointer for the count.
    let status = unsafe { ocl::ffi::clGetPlatformIDs(0, std::ptr::null_mut(), &mut count) };
    if status != 0 || count == 0 {
        return Err(err(NO_PLATFORM));
    }
    let platforms = core::get_platform_ids().map_err(|e| err(format!("{NO_PLATFORM} ({e})")))?;
    let mut out = Vec::new();
    for p in platforms {
        let platform = Platform::new(p);
        let pname = platform.name().unwrap_or_else(|_| "unknown platform".into());
        // A platform without devices reports an error here; it has nothing to offer.
        let Ok(list) = Device::list(platform, Some(DeviceType::ALL)) else { continue };
        for d in list {
            let gpu = matches!(d.info(ocl::enums::DeviceInfo::Type), Ok(ocl::enums::DeviceInfoResult::Type(t)) if t.contains(DeviceType::GPU));
            let name = d.name().unwrap_or_else(|_| "unknown device".into());
            let simulator = crate::oclgrind::is_oclgrind(&pname);
            out.push((
                DeviceEntry {
                    index: out.len(),
                    name: name.trim().to_string(),
                    platform: pname.trim().to_string(),
                    gpu,
                    simulator,
                },
                d,
            ));
        }
    }
    if out.is_empty() {
        return Err(err("the installed OpenCL platforms have no devices"));
    }
    Ok(out)
}

impl OpenCl {
    /// Opens device `index` (see [`devices`]), or the first GPU, else the
    /// first device that is not a simulator, else the first device.
    pub fn new(index: Option<usize>) -> Result<OpenCl, Diagnostic> {
        let all = devices()?;
        let pick = match index {
            Some(k) => all.iter().find(|(e, _)| e.index == k).ok_or_else(|| {
                err(format!("--device {k}: there are {} OpenCL devices (0 .. {})", all.len(), all.len() - 1))
            })?,
            None => {
                all.iter().find(|(e, _)| e.gpu).or_else(|| all.iter().find(|(e, _)| !e.simulator)).unwrap_or(&all[0])
            }
        };
        let entry = pick.0.clone();
        let inner = if entry.simulator {
            Inner::Simulator(Simulator::get(entry.index)?)
        } else {
            Inner::Direct(Session::open(entry.index)?)
        };
        Ok(OpenCl { entry, inner })
    }

    /// The device in use.
    pub fn device(&self) -> &DeviceEntry {
        &self.entry
    }

    /// Builds the kernel's program for the device (cached by source); a
    /// build failure carries the compiler's log.
    pub fn build(&self, kernel: &Kernel) -> Result<(), Diagnostic> {
        match &self.inner {
            Inner::Direct(s) => s.build(kernel).map(|_| ()),
            Inner::Simulator(sim) => {
                let kernel = kernel.clone();
                sim.call(move |s| {
                    let mut read = crate::oclgrind::lock();
                    let built = s.build(&kernel).map(|_| ());
                    crate::oclgrind::reports(&mut read, &format!("the build of kernel `{}`", kernel.name))?;
                    built
                })?
            }
        }
    }

    /// Stages a launch on the device for repeated runs ([`Staged`]); `None`
    /// on Oclgrind, whose device lives on a thread of its own (run
    /// [`OpenCl::run`] there instead).
    pub fn stage(&self, prog: &LoopProgram, kernel: &Kernel, launch: &Launch) -> Result<Option<Staged>, Diagnostic> {
        match &self.inner {
            Inner::Direct(s) => s.stage(prog, kernel, launch).map(Some),
            Inner::Simulator(_) => Ok(None),
        }
    }

    /// Runs `kernel` (generated from `prog`) `reps` times (at least once) on
    /// the arguments in `launch`, then copies the output back into `launch`.
    /// On Oclgrind, anything it reports fails the launch.
    pub fn run(
        &self,
        prog: &LoopProgram,
        kernel: &Kernel,
        launch: &mut Launch,
        reps: usize,
    ) -> Result<Timing, Diagnostic> {
        let sim = match &self.inner {
            Inner::Direct(s) => return s.launch(prog, kernel, launch, reps),
            Inner::Simulator(sim) => sim,
        };
        let (prog, kernel) = (prog.clone(), kernel.clone());
        let mut moved = Launch { slots: std::mem::take(&mut launch.slots) };
        let (back, timing) = sim.call(move |s| {
            let mut read = crate::oclgrind::lock();
            // Reports from before (a build, another call) are not this launch's.
            let _ = crate::oclgrind::reports(&mut read, "an earlier OpenCL call");
            let timing = s.launch(&prog, &kernel, &mut moved, reps);
            let timing = crate::oclgrind::reports(&mut read, &format!("kernel `{}`", kernel.name)).and(timing);
            (moved, timing)
        })?;
        launch.slots = back.slots;
        timing
    }
}

/// A launch staged on the device ([`OpenCl::stage`]): its buffers uploaded
/// and its arguments set, so that it can run again and again with no layout,
/// upload or read-back in between (the timed runs of `heddle tune`).
pub struct Staged {
    kernel: core::Kernel,
    name: String,
    queue: Queue,
    dims: u32,
    global: [usize; 3],
    local: Option<[usize; 3]>,
    sizes: WorkSizes,
    rezero: Vec<(Buffer<u8>, Vec<u8>)>,
    buffers: Vec<Option<Buffer<u8>>>,
    error: Buffer<u8>,
    // Held until the last run: the kernel's arguments point at them.
    #[allow(dead_code)]
    scratch: Vec<Buffer<u8>>,
    arena: Option<Arena>,
    runs: usize,
}

/// A kernel's arena (`heddle_codegen_opencl`'s `arena` module): `words`
/// 8-byte words for each of `items` work-items, made larger and the launch
/// repeated when a work-item needed more.
struct Arena {
    /// The arguments: the arena, its words per item, the words needed.
    args: [u32; 3],
    words: usize,
    items: usize,
    buffer: Buffer<u8>,
    need: Buffer<u8>,
    /// Zeroed buffers on Oclgrind (see [`Session::zeroed`]).
    simulator: bool,
}

impl Arena {
    /// Replaces the arena by one of at least `need` words per work-item (at
    /// least twice as many as now, so a kernel needing much more is
    /// relaunched a few times only) and clears the need.
    fn grow(&mut self, kernel: &core::Kernel, queue: &Queue, need: usize) -> Result<(), Diagnostic> {
        if need <= self.words {
            // The kernel saturates the need at `i32::MAX` words.
            return Err(err(format!("a work-item needs an arena of more than {} words", self.words)));
        }
        self.words = need.max(self.words.saturating_mul(2)).min(i32::MAX as usize);
        let words = i64::try_from(self.words).map_err(|_| err("an arena of more than 2^63 words"))?;
        self.buffer = arena_buffer(queue, self.items, self.words, self.simulator)?;
        let set = |index: u32, v: ArgVal| {
            core::set_kernel_arg(kernel, index, v)
                .map_err(|e| err(format!("cannot set the arena argument {index}: {e}")))
        };
        set(self.args[0], ArgVal::mem(self.buffer.as_core()))?;
        set(self.args[1], ArgVal::scalar(&words))?;
        self.need.write(&[0u8; 4][..]).enq().map_err(|e| err(format!("cannot clear the arena's need: {e}")))?;
        Ok(())
    }

    /// The words per work-item the last run needed where some work-item
    /// found its slice too small (and stopped), else `None`.
    fn short_of(&self) -> Result<Option<usize>, Diagnostic> {
        let mut need = [0u8; 4];
        self.need.read(&mut need[..]).enq().map_err(|e| err(format!("cannot read the arena's need: {e}")))?;
        let need = i32::from_le_bytes(need).max(0) as usize;
        Ok((need > 0).then_some(need))
    }
}

/// A device buffer of `words` 8-byte words for each of `items` work-items.
fn arena_buffer(queue: &Queue, items: usize, words: usize, simulator: bool) -> Result<Buffer<u8>, Diagnostic> {
    let bytes =
        crate::limits::check_records("the arena", items as u64, (words as u64).saturating_mul(8)).map_err(err)?;
    let len = bytes.max(1).next_multiple_of(4);
    // Zeroed, though its contents do not matter, so that runs repeat exactly;
    // on Oclgrind copied from the host (see `Session::zeroed`).
    let built = if simulator {
        Buffer::<u8>::builder()
            .queue(queue.clone())
            .flags(MemFlags::READ_WRITE | MemFlags::COPY_HOST_PTR)
            .len(len)
            .copy_host_slice(&vec![0u8; len][..])
            .build()
    } else {
        Buffer::<u8>::builder().queue(queue.clone()).flags(MemFlags::READ_WRITE).len(len).fill_val(0u8).build()
    };
    built.map_err(|e| err(format!("cannot allocate an arena of {len} bytes: {e}")))
}

impl Staged {
    /// Runs the kernel once and returns its time (OpenCL profiling events,
    /// seconds). Outputs a kernel adds into are cleared before every run but
    /// the first.
    ///
    /// A kernel with an arena is launched again, with a larger one, while a
    /// work-item finds its slice too small (the time is the last launch's).
    pub fn run_once(&mut self) -> Result<f64, Diagnostic> {
        loop {
            if self.runs > 0 {
                for (dev, zeros) in &self.rezero {
                    dev.write(&zeros[..])
                        .enq()
                        .map_err(|e| err(format!("cannot clear the result between runs: {e}")))?;
                }
            }
            self.runs += 1;
            let mut event = CoreEvent::null();
            // SAFETY: every argument was set by `stage` to a live buffer (held by
            // `self`), a scalar or a local size; the wait below ends the run.
            unsafe {
                core::enqueue_kernel(
                    self.queue.as_core(),
                    &self.kernel,
                    self.dims,
                    None,
                    &self.global,
                    self.local,
                    None::<&CoreEvent>,
                    Some(&mut event),
                )
            }
            .map_err(|e| {
                err(format!(
                    "cannot launch `{}` (global {:?}, local {:?}): {e}",
                    self.name, self.sizes.global, self.sizes.local
                ))
            })?;
            core::wait_for_event(&event).map_err(|e| err(format!("kernel `{}` failed: {e}", self.name)))?;
            let seconds = profiled_seconds(&event).unwrap_or(f64::NAN);
            let Some(arena) = &mut self.arena else { return Ok(seconds) };
            let Some(need) = arena.short_of()? else { return Ok(seconds) };
            // Work-items stopped early: nothing this launch did counts.
            arena.grow(&self.kernel, &self.queue, need)?;
            self.error.write(&[0u8; 4][..]).enq().map_err(|e| err(format!("cannot clear the error flag: {e}")))?;
        }
    }

    /// The run-time check that failed in any run so far, if one did; then
    /// the outputs copied back into `launch`.
    pub fn finish(&self, prog: &LoopProgram, launch: &mut Launch) -> Result<(), Diagnostic> {
        let mut failed = [0u8; 4];
        self.error.read(&mut failed[..]).enq().map_err(|e| err(format!("cannot read the error flag: {e}")))?;
        let failed = i32::from_le_bytes(failed);
        if failed > 0 {
            return Err(check_failure(prog, (failed - 1) as u32));
        }
        for o in prog.output_slots() {
            if let Some(Some(dev)) = self.buffers.get(o)
                && let Some(Slot::Buffer(host)) = launch.slots.get_mut(o)
                && host.byte_len() > 0
            {
                let n = host.byte_len();
                dev.read(&mut host.bytes_mut()[..])
                    .len(n)
                    .enq()
                    .map_err(|e| err(format!("cannot read the result back: {e}")))?;
            }
        }
        Ok(())
    }
}

impl Session {
    fn open(index: usize) -> Result<Session, Diagnostic> {
        let all = devices()?;
        let (entry, device) =
            all.into_iter().find(|(e, _)| e.index == index).ok_or_else(|| err(format!("no OpenCL device {index}")))?;
        let platform = Platform::new(
            device
                .info(ocl::enums::DeviceInfo::Platform)
                .ok()
                .and_then(|r| match r {
                    ocl::enums::DeviceInfoResult::Platform(p) => Some(p),
                    _ => None,
                })
                .ok_or_else(|| err("cannot find the device's platform"))?,
        );
        let context = Context::builder()
            .platform(platform)
            .devices(device)
            .build()
            .map_err(|e| err(format!("cannot create an OpenCL context on {}: {e}", entry.name)))?;
        let queue = Queue::new(&context, device, Some(CommandQueueProperties::PROFILING_ENABLE))
            .map_err(|e| err(format!("cannot create a command queue on {}: {e}", entry.name)))?;
        Ok(Session { device, entry, context, queue, programs: Mutex::new(HashMap::new()) })
    }

    fn build(&self, kernel: &Kernel) -> Result<Program, Diagnostic> {
        let mut cache = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&kernel.source) {
            return Ok(p.clone());
        }
        let program = Program::builder()
            .src(kernel.source.clone())
            .devices(self.device)
            .cmplr_opt(BUILD_OPTIONS)
            .build(&self.context)
            .map_err(|e| err(format!("the OpenCL compiler rejected kernel `{}`:\n{e}", kernel.name)))?;
        cache.insert(kernel.source.clone(), program.clone());
        Ok(program)
    }

    fn launch(
        &self,
        prog: &LoopProgram,
        kernel: &Kernel,
        launch: &mut Launch,
        reps: usize,
    ) -> Result<Timing, Diagnostic> {
        let mut staged = self.stage(prog, kernel, launch)?;
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            times.push(staged.run_once()?);
        }
        staged.finish(prog, launch)?;
        Ok(Timing { kernel_seconds: times, sizes: staged.sizes.clone() })
    }

    /// Uploads `launch`'s buffers, sets the kernel's arguments and sizes the
    /// launch: everything but running it.
    fn stage(&self, prog: &LoopProgram, kernel: &Kernel, launch: &Launch) -> Result<Staged, Diagnostic> {
        let nat = |name: &heddle_ir::Name| {
            let k = prog.args.iter().position(|a| &a.name == name)?;
            match launch.slots.get(k) {
                Some(Slot::Nat(v)) => Some(*v),
                _ => None,
            }
        };
        let mut config = kernel.launch.clone();
        if self.entry.simulator {
            config.cap_default_groups(heddle_codegen_opencl::launch::SIMULATOR_GROUPS);
        }
        let sizes = config.sizes(&nat).map_err(|m| err(format!("cannot size the launch: {m}")))?;
        self.check_sizes(&sizes)?;
        let program = self.build(kernel)?;
        let k = core::create_kernel(program.as_core(), &kernel.name)
            .map_err(|e| err(format!("cannot create kernel `{}`: {e}", kernel.name)))?;

        let mut buffers: Vec<Option<Buffer<u8>>> = Vec::with_capacity(launch.slots.len());
        for slot in &launch.slots {
            buffers.push(match slot {
                Slot::Buffer(b) => Some(self.buffer(b.bytes(), MemFlags::READ_WRITE)?),
                _ => None,
            });
        }
        let error = self.buffer(&[0u8; 4], MemFlags::READ_WRITE)?;
        let mut scratch = Vec::new();
        let mut arena = None;
        let items: usize = sizes.global.iter().product();
        // The kernel's own `__local` arrays, asked before any local argument is
        // sized (unsized ones count as 0), and the local arguments' bytes below.
        let fixed_local = self.kernel_local_bytes(&k);
        let mut local_bytes: usize = 0;
        for (index, param) in kernel.params.iter().enumerate() {
            let index = index as u32;
            let set = |v: ArgVal| {
                core::set_kernel_arg(&k, index, v)
                    .map_err(|e| err(format!("cannot set argument {index} of `{}`: {e}", kernel.name)))
            };
            match param {
                KernelParam::Arg(a) => match (launch.slots.get(*a), buffers.get(*a)) {
                    (Some(Slot::Buffer(_)), Some(Some(b))) => set(ArgVal::mem(b.as_core()))?,
                    (Some(Slot::Nat(v)), _) => set(ArgVal::scalar(v))?,
                    (Some(Slot::Bool(b)), _) => set(ArgVal::scalar(&u8::from(*b)))?,
                    (Some(Slot::Int(v, t)), _) => set_int(&set, *v, *t)?,
                    // An f16 / bf16 argument is a `float` holding its (exact) value.
                    (Some(Slot::Float(v, ScalarType::F32 | ScalarType::F16 | ScalarType::BF16)), _) => {
                        set(ArgVal::scalar(&(*v as f32)))?
                    }
                    (Some(Slot::Float(v, _)), _) => set(ArgVal::scalar(v))?,
                    _ => return Err(err(format!("no launch slot for argument {a} of `{}`", kernel.name))),
                },
                KernelParam::Local { fields, len, .. } => {
                    let bytes = self.param_bytes(fields, len, &nat)?;
                    local_bytes = local_bytes.saturating_add(bytes.max(1));
                    self.check_local_memory(&kernel.name, fixed_local, local_bytes)?;
                    set(ArgVal::local::<u8>(&bytes.max(1)))?;
                }
                KernelParam::Scratch { fields, len, .. } => {
                    let bytes = self.param_bytes(fields, len, &nat)?;
                    scratch.push(self.buffer(&vec![0u8; bytes.max(1)], MemFlags::READ_WRITE)?);
                    if let Some(b) = scratch.last() {
                        set(ArgVal::mem(b.as_core()))?;
                    }
                }
                KernelParam::Workspace { fields, len, .. } => {
                    let per_item = self.param_bytes(fields, len, &nat)?;
                    let bytes =
                        crate::limits::check_records("the workspaces", items as u64, per_item as u64).map_err(err)?;
                    scratch.push(self.zeroed(bytes)?);
                    if let Some(b) = scratch.last() {
                        set(ArgVal::mem(b.as_core()))?;
                    }
                }
                KernelParam::Arena => {
                    let words = heddle_codegen_opencl::ARENA_FIRST_WORDS as usize;
                    let buffer = arena_buffer(&self.queue, items, words, self.entry.simulator)?;
                    set(ArgVal::mem(buffer.as_core()))?;
                    let need = self.buffer(&[0u8; 4], MemFlags::READ_WRITE)?;
                    arena = Some(Arena {
                        args: [index, index, index],
                        words,
                        items,
                        buffer,
                        need,
                        simulator: self.entry.simulator,
                    });
                }
                KernelParam::ArenaWords => {
                    let a = arena
                        .as_mut()
                        .ok_or_else(|| err(format!("`{}` has the arena's size without the arena", kernel.name)))?;
                    a.args[1] = index;
                    set(ArgVal::scalar(&(a.words as i64)))?;
                }
                KernelParam::ArenaNeed => {
                    let a = arena
                        .as_mut()
                        .ok_or_else(|| err(format!("`{}` has the arena's need without the arena", kernel.name)))?;
                    a.args[2] = index;
                    set(ArgVal::mem(a.need.as_core()))?;
                }
                KernelParam::Error => set(ArgVal::mem(error.as_core()))?,
            }
        }

        let mut global = [1usize; 3];
        global[..sizes.global.len()].copy_from_slice(&sizes.global);
        let local = sizes.local.as_ref().map(|l| {
            let mut a = [1usize; 3];
            a[..l.len()].copy_from_slice(l);
            a
        });
        // A kernel that adds into its outputs (scatterAdd) starts every repetition from zero.
        let rezero: Vec<(Buffer<u8>, Vec<u8>)> = if prog.adds_into_output() {
            prog.output_slots()
                .into_iter()
                .filter_map(|o| buffers.get(o)?.clone())
                .map(|dev| {
                    let n = dev.len();
                    (dev, vec![0u8; n])
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Staged {
            kernel: k,
            name: kernel.name.clone(),
            queue: self.queue.clone(),
            dims: sizes.global.len() as u32,
            global,
            local,
            sizes,
            rezero,
            buffers,
            error,
            scratch,
            arena,
            runs: 0,
        })
    }

    fn buffer(&self, bytes: &[u8], flags: MemFlags) -> Result<Buffer<u8>, Diagnostic> {
        // A whole number of 4-byte words (zero-padded), never empty: OpenCL has
        // no empty buffers, and a 16-bit atomic add exchanges the aligned word
        // that holds its slot, which must lie inside the buffer.
        let padded;
        let data = if !bytes.is_empty() && bytes.len().is_multiple_of(4) {
            bytes
        } else {
            let mut v = bytes.to_vec();
            v.resize(bytes.len().max(1).next_multiple_of(4), 0);
            padded = v;
            &padded[..]
        };
        Buffer::<u8>::builder()
            .queue(self.queue.clone())
            .flags(flags | MemFlags::COPY_HOST_PTR)
            .len(data.len())
            .copy_host_slice(data)
            .build()
            .map_err(|e| err(format!("cannot allocate a device buffer of {} bytes: {e}", data.len())))
    }

    /// A zeroed device buffer of `len` bytes (at least one), filled on the
    /// device rather than copied from a zeroed host array. (Oclgrind 21.10
    /// takes memory set by `clEnqueueFillBuffer` for uninitialised: there
    /// it is copied from the host.)
    fn zeroed(&self, len: usize) -> Result<Buffer<u8>, Diagnostic> {
        let len = len.max(1).next_multiple_of(4);
        if self.entry.simulator {
            return self.buffer(&vec![0u8; len], MemFlags::READ_WRITE);
        }
        Buffer::<u8>::builder()
            .queue(self.queue.clone())
            .flags(MemFlags::READ_WRITE)
            .len(len)
            .fill_val(0u8)
            .build()
            .map_err(|e| err(format!("cannot allocate a device buffer of {len} bytes: {e}")))
    }

    fn param_bytes(
        &self,
        fields: &[ScalarType],
        len: &heddle_ir::loops::Expr,
        nat: &dyn Fn(&heddle_ir::Name) -> Option<i64>,
    ) -> Result<usize, Diagnostic> {
        let n = heddle_codegen_opencl::launch::eval(len, nat).map_err(|m| err(format!("cannot size a buffer: {m}")))?;
        let n = u64::try_from(n).map_err(|_| err(format!("a buffer of {n} records")))?;
        crate::limits::check_records("a scratch buffer", n, record_layout(fields).size as u64).map_err(err)
    }

    /// Bytes of `__local` memory the kernel declares itself (0 where the
    /// device does not say).
    fn kernel_local_bytes(&self, k: &core::Kernel) -> usize {
        match core::get_kernel_work_group_info(k, self.device.as_core(), core::KernelWorkGroupInfo::LocalMemSize) {
            Ok(core::KernelWorkGroupInfoResult::LocalMemSize(b)) => usize::try_from(b).unwrap_or(usize::MAX),
            _ => 0,
        }
    }

    /// Refuses a launch whose work-groups need more local memory than the
    /// device has, before the device sees it: a local buffer sized by the data
    /// (a row's length, the longest row) can exceed it, and some drivers abort
    /// the process rather than fail the launch (POCL asserts).
    fn check_local_memory(&self, name: &str, fixed: usize, arguments: usize) -> Result<(), Diagnostic> {
        let limit = match self.device.info(ocl::enums::DeviceInfo::LocalMemSize) {
            Ok(ocl::enums::DeviceInfoResult::LocalMemSize(b)) => usize::try_from(b).unwrap_or(usize::MAX),
            _ => return Ok(()),
        };
        let need = fixed.saturating_add(arguments);
        if need > limit {
            return Err(err(format!(
                "`{name}` needs {need} bytes of local memory per work-group ({fixed} declared in the kernel, {arguments} \
                 for local buffers sized by this input), more than the device's {limit} ({}); use smaller tunables, \
                 shorter rows, or a schedule without local buffers",
                self.entry.name
            )));
        }
        Ok(())
    }

    /// Refuses work-group shapes the device cannot run, naming the limit.
    fn check_sizes(&self, sizes: &WorkSizes) -> Result<(), Diagnostic> {
        let Some(local) = &sizes.local else { return Ok(()) };
        let total: usize = local.iter().product();
        let max = self.device.max_wg_size().unwrap_or(usize::MAX);
        if total > max {
            return Err(err(format!(
                "work-groups of {local:?} = {total} work-items exceed the device's limit of {max} ({}); choose smaller tunables",
                self.entry.name
            )));
        }
        Ok(())
    }
}

fn set_int(set: &dyn Fn(ArgVal) -> Result<(), Diagnostic>, v: i64, t: ScalarType) -> Result<(), Diagnostic> {
    // The value was validated at its declared width; the casts only pick the C type.
    match t {
        ScalarType::I8 => set(ArgVal::scalar(&(v as i8))),
        ScalarType::I16 => set(ArgVal::scalar(&(v as i16))),
        ScalarType::I32 => set(ArgVal::scalar(&(v as i32))),
        ScalarType::U8 => set(ArgVal::scalar(&(v as u8))),
        ScalarType::U16 => set(ArgVal::scalar(&(v as u16))),
        ScalarType::U32 => set(ArgVal::scalar(&(v as u32))),
        ScalarType::U64 => set(ArgVal::scalar(&(v as u64))),
        _ => set(ArgVal::scalar(&v)),
    }
}

fn profiled_seconds(event: &CoreEvent) -> Option<f64> {
    let at = |what| match core::get_event_profiling_info(event, what) {
        Ok(ProfilingInfoResult::Start(t)) | Ok(ProfilingInfoResult::End(t)) => Some(t),
        _ => None,
    };
    let (start, end) = (at(ProfilingInfo::Start)?, at(ProfilingInfo::End)?);
    Some(end.saturating_sub(start) as f64 * 1e-9)
}
