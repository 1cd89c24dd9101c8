//! Large buffers on transparent huge pages.
//!
//! A kernel that reads a large buffer at random (SpMV's `x` of a matrix
//! with random columns) misses the TLB on almost every access when the
//! buffer is on 4 KiB pages: 8 MB is 2048 pages, about what a core's L2
//! TLB holds. On 2 MiB pages the same buffer is 4 entries. Linux gives
//! transparent huge pages to memory that asks for them (`madvise`, the
//! usual kernel setting, `/sys/kernel/mm/transparent_hugepage/enabled`)
//! and only to whole 2 MiB-aligned stretches of it.
//!
//! [`Words`] is a zeroed buffer of 64-bit words; one of
//! [`THRESHOLD`] bytes (2 MiB) or more is, on Linux, its own anonymous mapping,
//! 2 MiB-aligned and advised `MADV_HUGEPAGE` before anything touches it
//! (the mapping is zero until written, as `vec![0; n]`'s is: nothing is
//! cleared eagerly). Smaller ones, other systems, a failed mapping and
//! `HEDDLE_HUGEPAGES=0` give a plain `Vec<u64>`. It is only advice: the
//! contents are the same either way, and a kernel that cannot find free
//! huge pages falls back to small ones.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// The environment variable that turns the advice off (`0`).
pub const ENV: &str = "HEDDLE_HUGEPAGES";

/// The size (and alignment) of a huge page.
pub const HUGE: usize = 2 << 20;

/// The smallest [`Words`] buffer put on huge pages, in bytes: one huge
/// page (its mapping is rounded up to whole huge pages, so at most 2 MiB
/// more; a million `f32`s, 4 MB, are then on 2 huge pages, not 977 small ones).
pub const THRESHOLD: usize = HUGE;

/// The smallest buffer [`advise`] advises: inside memory not aligned to
/// 2 MiB, a buffer of under two huge pages may hold none whole.
pub const ADVISE_THRESHOLD: usize = 2 * HUGE;

/// Whether large buffers ask for huge pages: unless [`ENV`] is `0`.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(ENV).map_or(true, |v| v.trim() != "0"))
}

/// Advises the whole huge pages inside `v`'s memory (the part of it
/// `MADV_HUGEPAGE` can apply to) when `v` is at least [`ADVISE_THRESHOLD`] bytes
/// and the advice is [`enabled`]. For memory not yet touched (a fresh
/// zeroed vector, a vector's spare capacity): pages already faulted in stay
/// small until the kernel's background collapse, if ever.
pub fn advise<T>(v: &[T]) {
    #[cfg(target_os = "linux")]
    {
        let (start, bytes) = (v.as_ptr() as usize, std::mem::size_of_val(v));
        if bytes < ADVISE_THRESHOLD || !enabled() {
            return;
        }
        let (first, last) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
        if first < last {
            // SAFETY: advice about memory `v` owns, whole pages inside it;
            // MADV_HUGEPAGE changes no contents (its failure is ignored: advice).
            unsafe {
                libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// A zeroed buffer of 64-bit words, on huge pages when large (see the module).
pub struct Words(Inner);

enum Inner {
    Heap(Vec<u64>),
    #[cfg(target_os = "linux")]
    Mapped(Mapped),
}

impl Words {
    /// `len` zero words.
    pub fn zeroed(len: usize) -> Words {
        #[cfg(target_os = "linux")]
        if len.saturating_mul(8) >= THRESHOLD
            && enabled()
            && let Some(m) = Mapped::zeroed(len)
        {
            return Words(Inner::Mapped(m));
        }
        Words(Inner::Heap(vec![0; len]))
    }

    /// Whether this buffer is a 2 MiB-aligned mapping advised onto huge pages.
    pub fn on_huge_pages(&self) -> bool {
        match &self.0 {
            Inner::Heap(_) => false,
            #[cfg(target_os = "linux")]
            Inner::Mapped(_) => true,
        }
    }
}

impl Deref for Words {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match &self.0 {
            Inner::Heap(v) => v,
            #[cfg(target_os = "linux")]
            // SAFETY: the mapping holds `len` words, readable while `self` lives.
            Inner::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), m.len) },
        }
    }
}

impl DerefMut for Words {
    fn deref_mut(&mut self) -> &mut [u64] {
        match &mut self.0 {
            Inner::Heap(v) => v,
            #[cfg(target_os = "linux")]
            // SAFETY: as for `deref`; `&mut self` makes this the only reference.
            Inner::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), m.len) },
        }
    }
}

impl Clone for Words {
    fn clone(&self) -> Words {
        let mut w = Words::zeroed(self.len());
        w.copy_from_slice(self);
        w
    }
}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// An anonymous mapping of whole huge pages holding `len` words.
#[cfg(target_os = "linux")]
struct Mapped {
    ptr: std::ptr::NonNull<u64>,
    len: usize,
    /// The mapping's size: `len` words rounded up to whole huge pages.
    bytes: usize,
}

// SAFETY: the mapping is owned by this value alone (as a `Vec`'s memory is):
// moving it to another thread moves the only owner.
#[cfg(target_os = "linux")]
unsafe impl Send for Mapped {}
// SAFETY: shared references only read (`deref`); writes need `&mut`.
#[cfg(target_os = "linux")]
unsafe impl Sync for Mapped {}

#[cfg(target_os = "linux")]
impl Mapped {
    /// A fresh zero mapping of `len` words, 2 MiB-aligned and advised, or
    /// `None` where the system refuses one.
    fn zeroed(len: usize) -> Option<Mapped> {
        let bytes = len.checked_mul(8)?.checked_next_multiple_of(HUGE)?;
        // Room to find a 2 MiB boundary in (mmap aligns to 4 KiB pages only).
        let room = bytes.checked_add(HUGE)?;
        // SAFETY: a new private anonymous mapping; no existing memory is involved.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                room,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let start = raw as usize;
        let aligned = start.next_multiple_of(HUGE);
        let (head, tail) = (aligned - start, start + room - (aligned + bytes));
        // SAFETY: the head and the tail are parts of the mapping just made,
        // outside the aligned stretch kept; unmapping them touches nothing else.
        // `madvise` only advises (its failure is ignored: the memory then
        // stays on small pages).
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((aligned + bytes) as *mut libc::c_void, tail);
            }
            libc::madvise(aligned as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
        Some(Mapped { ptr: std::ptr::NonNull::new(aligned as *mut u64)?, len, bytes })
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping `zeroed` made, unmapped once, with no slice of it
        // outliving `self` (they borrow it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.bytes);
        }
    }
}

/// The `VmFlags` of the mapping of `/proc/self/smaps` that holds `addr`.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn vm_flags(addr: usize) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((lo, hi)) = range.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = lo <= addr && addr < hi;
        } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.trim().to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_stay_on_the_heap_and_are_zero() {
        let w = Words::zeroed(THRESHOLD / 8 - 1);
        assert!(!w.on_huge_pages());
        assert!(w.iter().all(|&x| x == 0));
        assert_eq!(Words::zeroed(0).len(), 0);
    }

    #[test]
    fn large_buffers_are_zero_round_trip_and_clone() {
        let n = THRESHOLD / 8 + 12345;
        let mut w = Words::zeroed(n);
        assert_eq!(w.len(), n);
        assert!(w.iter().all(|&x| x == 0));
        for (i, x) in w.iter_mut().enumerate() {
            *x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        let c = w.clone();
        drop(w);
        assert_eq!(c.len(), n);
        assert!(c.iter().enumerate().all(|(i, &x)| x == (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }

    #[test]
    fn large_buffers_are_aligned_and_advised_on_linux() {
        if !cfg!(target_os = "linux") {
            eprintln!("skipped: huge-page advice is Linux only");
            return;
        }
        if !enabled() {
            eprintln!("skipped: {ENV}=0");
            return;
        }
        let w = Words::zeroed(THRESHOLD / 8);
        assert!(w.on_huge_pages());
        let addr = w.as_ptr() as usize;
        assert_eq!(addr % HUGE, 0, "a huge-page buffer starts on a 2 MiB boundary");
        #[cfg(target_os = "linux")]
        {
            let flags = vm_flags(addr).expect("the buffer's mapping in /proc/self/smaps");
            assert!(flags.split_whitespace().any(|f| f == "hg"), "not advised MADV_HUGEPAGE: VmFlags {flags}");
        }
    }
}
