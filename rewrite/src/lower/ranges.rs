//! The value ranges of tensor coordinates, stated for the runtime
//! (`LoopProgram::ranges`): the coordinates of level `l` of a valid tensor
//! lie below the level's size. A runtime that validates an input against
//! them may run code without the checks they imply (`xs@e.1` in an SpMV);
//! the program itself keeps every check.

use super::{Env, Lowerer};
use heddle_ir::encoding::storage_types::{storage_layout, BufferKind};
use heddle_ir::encoding::LevelFormat;
use heddle_ir::loops::{Block, InputRange, Stmt};
use heddle_ir::Type;
use heddle_typeck::KernelParam;

impl Lowerer<'_> {
    /// The ranges of the coordinate buffers of the kernel's tensor
    /// parameters that are arguments of this program: one scalar coordinate
    /// per record (not array-of-structs COO regions), below the level's size,
    /// at levels whose every stored coordinate is read (not loose levels,
    /// whose gaps between parents hold anything).
    pub(super) fn coordinate_ranges(&mut self) -> Vec<InputRange> {
        let mut out = Vec::new();
        for p in &self.kernel.params {
            let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p else { continue };
            let Ok(dims) = tt.static_dims() else { continue };
            let Ok(layout) = storage_layout(encoding, &dims, tt.elem, name.as_str()) else { continue };
            for b in &layout.buffers {
                let (BufferKind::Coordinates, Some(l)) = (b.kind, b.level) else { continue };
                let loose = encoding.levels.get(l).is_none_or(|lv| lv.format == LevelFormat::LooseCompressed);
                let aos = encoding.aos_run(l).is_some_and(|r| r.len() > 1);
                let scalar = self.args.iter().any(|a| a.name == b.name && matches!(&a.kind, heddle_ir::loops::ArgKind::Input { fields, .. } if fields.len() == 1));
                let Some(size) = layout.lvl_sizes.get(l) else { continue };
                if loose || aos || !scalar {
                    continue;
                }
                let mut sink = Block::new();
                let Ok(below) = self.index_expr(size, &Env::default(), &mut sink) else { continue };
                if sink.iter().all(|s| matches!(s, Stmt::Let { .. })) {
                    out.push(InputRange { buf: b.name.clone(), field: 0, below: super::emit::inline_lets(below, &sink) });
                }
            }
        }
        out
    }
}
