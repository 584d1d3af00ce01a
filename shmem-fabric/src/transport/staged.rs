//! Contexts' non-blocking puts held back until their context's `quiet` or `fence` (or a
//! barrier) issues them: what makes one context's `quiet` complete its own puts and
//! leave another's undelivered, on a transport whose puts would otherwise be issued at
//! once (a network) or complete on return (the loopback transport).

use std::sync::{Mutex, MutexGuard};

/// Bytes of staged puts past which a context's puts are issued at once (a context that
/// never calls `quiet` does not grow without bound).
const STAGED_MAX: usize = 64 << 20;

/// The staged puts of a PE's contexts, whichever thread stages them.
pub(crate) struct StagedPuts<P> {
    staged: Mutex<Staged<P>>,
}

struct Staged<P> {
    puts: Vec<StagedPut<P>>,
    /// Bytes of `puts`' data.
    bytes: usize,
}

/// A non-blocking put of context `ctx`: its target and a copy of its source.
pub(crate) struct StagedPut<P> {
    ctx: u64,
    pub(crate) to: P,
    pub(crate) data: Box<[u8]>,
}

impl<P> StagedPuts<P> {
    pub(crate) fn new() -> Self {
        StagedPuts {
            staged: Mutex::new(Staged {
                puts: Vec::new(),
                bytes: 0,
            }),
        }
    }

    /// The staged puts (a panic elsewhere leaves them usable).
    fn now(&self) -> MutexGuard<'_, Staged<P>> {
        self.staged.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stages a put of context `ctx` of `len` bytes at `from` to `to`, and returns
    /// whether the staged puts have grown past their bound (the caller then issues
    /// `ctx`'s).
    ///
    /// # Safety
    /// `from` must be valid for reads of `len` bytes.
    pub(crate) unsafe fn stage(&self, ctx: u64, from: *const u8, to: P, len: usize) -> bool {
        // SAFETY: the caller's contract.
        let data: Box<[u8]> = unsafe { std::slice::from_raw_parts(from, len) }.into();
        let mut staged = self.now();
        staged.bytes += len;
        staged.puts.push(StagedPut { ctx, to, data });
        staged.bytes > STAGED_MAX
    }

    /// Takes the staged puts of context `ctx` (of every context for `None`), in the
    /// order they were staged.
    pub(crate) fn take(&self, ctx: Option<u64>) -> Vec<StagedPut<P>> {
        let mut staged = self.now();
        if staged.puts.is_empty() {
            return Vec::new();
        }
        let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut staged.puts)
            .into_iter()
            .partition(|put| ctx.is_none_or(|c| put.ctx == c));
        staged.puts = kept;
        staged.bytes -= taken.iter().map(|put| put.data.len()).sum::<usize>();
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::StagedPuts;

    #[test]
    fn take_returns_one_contexts_puts_in_order_and_keeps_the_others() {
        let staged = StagedPuts::new();
        for (ctx, byte) in [(1, 10u8), (2, 20), (1, 11)] {
            // SAFETY: one byte of a local.
            unsafe { staged.stage(ctx, &byte, byte as usize, 1) };
        }
        let first: Vec<_> = staged
            .take(Some(1))
            .iter()
            .map(|p| (p.to, p.data[0]))
            .collect();
        assert_eq!(first, [(10, 10), (11, 11)]);
        assert!(staged.take(Some(1)).is_empty());
        let rest: Vec<_> = staged.take(None).iter().map(|p| p.to).collect();
        assert_eq!(rest, [20]);
        assert_eq!(staged.now().bytes, 0);
    }
}
