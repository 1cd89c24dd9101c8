//! Setting up Cranelift for the host and turning a translated function into
//! callable machine code.

use crate::error::CodegenError;
use crate::kernel::{CodeMemory, CpuKernel, Entry};
use crate::{Options, helpers, translate};
use cranelift_codegen::Context;
use cranelift_codegen::ir::{AbiParam, Function, Signature, UserFuncName, types};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use heddle_ir::loops::LoopProgram;

fn cl(e: impl std::fmt::Display) -> CodegenError {
    CodegenError::Cranelift(e.to_string())
}

/// The host ISA with every feature it has, optimising for speed.
fn host_isa() -> Result<OwnedTargetIsa, CodegenError> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(cl)?;
    // The JIT places code and its helpers anywhere in the address space.
    flags.set("is_pic", "false").map_err(cl)?;
    flags.set("use_colocated_libcalls", "false").map_err(cl)?;
    let isa = cranelift_native::builder().map_err(|e| CodegenError::Cranelift(format!("unsupported host: {e}")))?;
    isa.finish(settings::Flags::new(flags)).map_err(cl)
}

/// A JIT module that knows the helpers generated code may call.
fn module(isa: OwnedTargetIsa) -> JITModule {
    let mut b = JITBuilder::with_isa(isa, default_libcall_names());
    b.symbol(helpers::FMOD, helpers::fmod as *const u8);
    b.symbol(helpers::ALLOC, helpers::alloc as *const u8);
    b.symbol(helpers::FREE, helpers::free as *const u8);
    b.symbol(helpers::SORT, helpers::sort as *const u8);
    b.symbol(helpers::F16_OF_F64, helpers::f16_of_f64 as *const u8);
    b.symbol(helpers::BF16_OF_F64, helpers::bf16_of_f64 as *const u8);
    b.symbol(helpers::F16_OF_I64, helpers::f16_of_i64 as *const u8);
    b.symbol(helpers::BF16_OF_I64, helpers::bf16_of_i64 as *const u8);
    b.symbol(helpers::F16_OF_U64, helpers::f16_of_u64 as *const u8);
    b.symbol(helpers::BF16_OF_U64, helpers::bf16_of_u64 as *const u8);
    JITModule::new(b)
}

/// `fn(args: *const u64, lo: i64, hi: i64) -> u32` in the host's C convention.
fn entry_signature(m: &JITModule) -> Signature {
    let mut sig = m.make_signature();
    sig.params.push(AbiParam::new(m.target_config().pointer_type()));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I32));
    sig
}

/// Validates and translates `prog` into a function of `m`.
fn translate(prog: &LoopProgram, m: &mut JITModule, options: &Options) -> Result<(Function, usize), CodegenError> {
    prog.validate()?;
    let mut f = Function::with_name_signature(UserFuncName::user(0, 0), entry_signature(m));
    let trusted = translate::function(prog, m, &mut f, options)?;
    Ok((f, trusted))
}

pub fn clif_text(prog: &LoopProgram, options: &Options) -> Result<String, CodegenError> {
    let mut m = module(host_isa()?);
    let (f, _) = translate(prog, &mut m, options)?;
    Ok(f.display().to_string())
}

pub fn disassembly(prog: &LoopProgram, options: &Options) -> Result<String, CodegenError> {
    let isa = host_isa()?;
    let mut m = module(isa.clone());
    let (f, _) = translate(prog, &mut m, options)?;
    let mut ctx = Context::for_function(f);
    ctx.set_disasm(true);
    let mut ctrl = cranelift_codegen::control::ControlPlane::default();
    let code = ctx.compile(&*isa, &mut ctrl).map_err(|e| CodegenError::Cranelift(format!("{:?}", e.inner)))?;
    Ok(code.vcode.clone().unwrap_or_default())
}

pub fn compile(prog: &LoopProgram, options: &Options) -> Result<CpuKernel, CodegenError> {
    let mut m = module(host_isa()?);
    let (f, trusted_checks) = translate(prog, &mut m, options)?;
    let clif = f.display().to_string();
    let id = m.declare_function("heddle_kernel", Linkage::Export, &f.signature).map_err(cl)?;
    let mut ctx = Context::for_function(f);
    m.define_function(id, &mut ctx).map_err(|e| match e {
        cranelift_module::ModuleError::Compilation(c) => CodegenError::Cranelift(format!("{c:?}")),
        e => cl(e),
    })?;
    m.finalize_definitions().map_err(cl)?;
    let ptr = m.get_finalized_function(id);
    // SAFETY: `ptr` is the finished code of a function with `entry_signature`,
    // which is `Entry` in the host's C calling convention; it stays valid as
    // long as `m`, which the kernel owns next to it.
    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(ptr) };
    Ok(CpuKernel {
        code: CodeMemory(Some(m)),
        entry,
        params: prog.args.iter().map(|a| a.kind.clone()).collect(),
        splittable: translate::splittable(prog),
        clif,
        trusted_checks,
    })
}
