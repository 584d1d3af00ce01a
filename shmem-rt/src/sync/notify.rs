//! Waking PEs: the notifier side of the wake protocol, below the job's failure record
//! (which wakes every PE) and the waits (which sleep on the words defined here).
//!
//! The protocol (Dekker style, both sides sequentially consistent): a sleeper raises
//! its `sleeping` word, then the job's sleeper count (PE 0's), fences, re-checks its
//! condition, then sleeps on its wake word; a notifier stores its data, fences, reads the
//! job's sleeper count and, only if it is not zero, bumps the wake word of each PE whose
//! `sleeping` it sees (and wakes it). Either the notifier sees the sleeper or the
//! sleeper sees the data, so no wake-up is lost; a sleeper's `sleeping` is raised before
//! its count, so a notifier that sees the count sees `sleeping` too. While nobody
//! sleeps, waking any number of PEs costs the notifier one load of a line that is
//! rarely written.
//!
//! A sleeper also records the wake value it sleeps on (`slept_on`, before its fence). A
//! notifier bumps the wake word only from that value, so a PE is woken by one system
//! call however many notifiers find it asleep before it runs again (a broadcast root
//! publishing call after call to readers that wait for a CPU). A notifier that reads a
//! stale `slept_on` read it before the sleeper's fence, so the sleeper's re-check sees
//! the notifier's data.

use std::mem::offset_of;

use crate::memory::layout::{self, ControlLine};
use crate::transport::Transport;

/// A PE's "sleeping" count (raised while it sleeps or is about to).
pub(crate) const SLEEPING: usize = layout::control(offset_of!(ControlLine, sleeping));
/// A PE's wake word, on which it sleeps.
pub(crate) const WAKE: usize = layout::control(offset_of!(ControlLine, wake));
/// The wake value a PE sleeps on.
pub(crate) const SLEPT_ON: usize = layout::control(offset_of!(ControlLine, slept_on));
/// The job's sleeper count (PE 0's word).
pub(crate) const SLEEPERS: usize = layout::SLEEPERS_WORD;

/// Wakes each of `pes` that sleeps, with one fence for all. Call after the stores they
/// may be waiting for.
#[inline]
pub(crate) fn notify_each<T: Transport>(t: &T, pes: impl Iterator<Item = usize>) {
    if any_sleeper(t) {
        wake_sleepers_among(t, pes);
    }
}

/// Whether any PE of the job may sleep in a wait, so that a notifier must look at whom
/// to wake: the notifier's half of the sleep protocol (its earlier stores ordered before
/// the look). Call after the stores the sleepers may be waiting for.
#[inline]
pub(crate) fn any_sleeper<T: Transport>(t: &T) -> bool {
    if T::SLEEPERS_POLL {
        return false;
    }
    t.store_load_fence();
    t.load(t.place(0, SLEEPERS)) != 0
}

/// The part of [`notify_each`] that runs only while some PE of the job sleeps in a wait
/// ([`any_sleeper`]): wakes those of `pes` that do. Kept out of line so that its cost, which depends on
/// the other PEs' waits, can be told apart from the caller's (scripts/instructions.sh).
#[inline(never)]
pub(crate) fn wake_sleepers_among<T: Transport>(t: &T, pes: impl Iterator<Item = usize>) {
    for pe in pes {
        if t.load_relaxed(t.place(pe, SLEEPING)) != 0 {
            // Bumped only from the value it sleeps on: if the word moved past it,
            // somebody woke it already, and this makes no system call.
            let slept_on = t.load(t.place(pe, SLEPT_ON));
            let wake = t.place(pe, WAKE);
            if t.compare_exchange(wake, slept_on, slept_on.wrapping_add(1)) == slept_on {
                t.wake_sleepers(pe);
            }
        }
    }
}

/// Bumps PE `pe`'s wake word and wakes it whatever it waits for (a recorded job
/// failure concerns every wait).
pub(crate) fn wake<T: Transport>(t: &T, pe: usize) {
    t.fetch_add(t.place(pe, WAKE), 1);
    t.wake_sleepers(pe);
}

/// Wakes PE `pe` if it sleeps. Call after the store it may be waiting for.
#[inline]
pub(crate) fn notify<T: Transport>(t: &T, pe: usize) {
    notify_each(t, std::iter::once(pe));
}
