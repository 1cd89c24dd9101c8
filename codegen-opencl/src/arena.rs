//! Temporaries whose storage only the running kernel can size: a global
//! buffer allocated inside a loop or with a length the data gives (a stored
//! stream that nothing bounds before the launch, `scatter`'s inverse of a
//! counted array), and a private buffer whose length is not a constant.
//! OpenCL 1.2 allocates nothing inside a kernel, so each work-item takes
//! them from its own slice of one global **arena** the host allocates
//! (`heddle_arena_words` 8-byte words per work-item, a kernel argument),
//! used as a stack: an allocation takes the next words (`heddle_sp`), and the
//! block that made it gives them back when it ends, so a temporary made in
//! every iteration of a loop reuses one place.
//!
//! A work-item whose slice is too small records the words it needed in
//! `heddle_arena_need` (an atomic maximum) and stops; the host then
//! launches again with a larger arena (`runtime::opencl`, at least twice
//! as large), clearing the error flag and the outputs the kernel adds into
//! first. Every launch computes everything from the inputs, so the launch
//! that fits gives the result. Stopping early is impossible where the
//! work-items of a group wait for each other, so a kernel with barriers and
//! an arena temporary is refused, naming the temporary.
//!
//! Each work-item fills and reads its own copy (the stores are not left to
//! one item, as global stores are): lowering writes such a temporary with
//! sequential loops, and a store from a parallel loop inside the one that
//! allocated it — which would leave each copy partly written — is refused.

use crate::Gen;
use crate::launch::text;
use heddle_ir::Name;
use heddle_ir::loops::{Expr, Schedule, TypeEnv};

/// The arena's words per work-item at the first launch (4 KiB).
pub const FIRST_WORDS: i64 = 512;

/// The kernel's first lines when it has an arena: this work-item's slice
/// (by its linear global id, as workspaces) and the stack pointer.
pub(crate) const PROLOGUE: &str = "  __global ulong* heddle_arena = heddle_arena_all + \
(get_global_id(0) + get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2))) * heddle_arena_words;\n  \
long heddle_sp = 0;\n";

impl Gen<'_> {
    /// Emits the allocation of `buf` (`len` records of the C type `elem`,
    /// its C name `name`) from the arena.
    pub(crate) fn arena_alloc(
        &mut self,
        buf: &Name,
        elem: &str,
        name: &str,
        len: &Expr,
        env: &TypeEnv,
        depth: usize,
    ) -> Result<(), String> {
        if self.barriers {
            return Err(format!(
                "the temporary `{buf}` has a length known only as the kernel runs ({}), so it is taken from the work-item's arena, \
                 which a work-item that finds it too small leaves the kernel early for a larger launch; \
                 this kernel's work-groups wait for each other at barriers, where no work-item may leave early",
                text(len)
            ));
        }
        let n = self.expr(len, env)?;
        let (records, words) = (self.fresh_name("heddle_records"), self.fresh_name("heddle_words"));
        self.line(depth, &format!("// {name}: {} records from the work-item's arena", text(len)));
        self.line(depth, &format!("const long {records} = max((long)({n}), 0L);"));
        // Words, rounded up; a length whose bytes overflow needs more than any arena.
        self.line(
            depth,
            &format!("const long {words} = {records} <= (LONG_MAX - 7) / (long)sizeof({elem}) ? ({records} * (long)sizeof({elem}) + 7) / 8 : LONG_MAX;"),
        );
        // The need saturates at INT_MAX (the host refuses an arena that large).
        self.line(
            depth,
            &format!(
                "if ({words} > heddle_arena_words - heddle_sp) {{ atomic_max(heddle_arena_need, (int)(min({words}, (long)INT_MAX - heddle_sp) + heddle_sp)); return; }}"
            ),
        );
        self.line(depth, &format!("__global {elem}* {name} = (__global {elem}*)(heddle_arena + heddle_sp);"));
        self.line(depth, &format!("heddle_sp += {words};"));
        self.arena.push((buf.clone(), self.active.len()));
        self.private.push(buf.clone());
        if let Some(used) = self.arena_marks.last_mut() {
            *used = true;
        }
        Ok(())
    }

    /// Refuses a store to an arena temporary from a parallel loop inside the
    /// one that allocated it: each work-item has its own copy, which the
    /// loop would fill only in part.
    pub(crate) fn arena_store(&self, buf: &Name) -> Result<(), String> {
        let Some((_, at)) = self.arena.iter().rev().find(|(b, _)| b == buf) else { return Ok(()) };
        if self.active[*at..].iter().any(|s| *s != Schedule::Seq) {
            return Err(format!(
                "the temporary `{buf}`, whose length only the running kernel knows, is filled by a parallel loop; \
                 each work-item has its own copy in its arena, which that loop would fill only in part"
            ));
        }
        Ok(())
    }

    /// Marks the start of a block that may allocate from the arena.
    pub(crate) fn arena_enter(&mut self) -> usize {
        self.arena_marks.push(false);
        self.out.len()
    }

    /// Ends a block started at `at` in the output: where it allocated from
    /// the arena (and is not the kernel's body), the stack pointer is saved
    /// at its start and restored at its end.
    pub(crate) fn arena_leave(&mut self, at: usize, depth: usize) {
        let used = self.arena_marks.pop().unwrap_or(false);
        if !used || depth <= 1 {
            return;
        }
        let save = self.fresh_name("heddle_sp_at");
        let indent = "  ".repeat(depth);
        self.out.insert_str(at, &format!("{indent}const long {save} = heddle_sp;\n"));
        self.line(depth, &format!("heddle_sp = {save};"));
    }
}
