//! The call record: which call a PE is in, since when, and where the program made it
//! (`layout::CallRecord`, one cache line per PE). Written by its owner through its own
//! partition, read by anyone who maps it (the launcher, a PE that prints the table).

use std::mem::offset_of;
use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::probe;
use crate::memory::layout::{
    self, sync, CallRecord, ControlLine, Region, ARRIVAL_LINES, DESC_TAIL_WORDS, LINE_COLD_WORDS,
    LINE_HOT_WORDS,
};
use crate::wire::descriptor::Descriptor;

/// Offset of a field of a call record.
macro_rules! field {
    ($field:ident) => {
        layout::call_record(offset_of!(CallRecord, $field))
    };
}

/// Words of the name field.
const NAME_WORDS: usize = 2;
/// Words of the file field.
const FILE_WORDS: usize = 8;

/// Record state: in the program's own code.
const IN_CODE: u64 = 0;
/// Record state: in a call.
const IN_CALL: u64 = 1;

/// This PE's partition, where it can address it directly (null: not, and the record
/// is not written).
static OWN: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

/// Active set slots of this job's runtime region (to find this PE's latest call).
static SETS: AtomicUsize = AtomicUsize::new(0);

/// Remembers this PE's partition and the job's layout, and stamps the record as joined
/// now.
pub(crate) fn init(own: Option<*mut u8>, region: Region) {
    OWN.store(own.unwrap_or(std::ptr::null_mut()), Ordering::Relaxed);
    SETS.store(region.sets(), Ordering::Relaxed);
    write(|w| w(field!(done_ns), probe::now_ns()));
}

/// A word of this PE's partition (None: not addressable directly).
fn own_word(off: usize) -> Option<u64> {
    let own = OWN.load(Ordering::Relaxed);
    // SAFETY: as in `write`: `off` lies in the runtime region of this PE's partition,
    // which only the runtime accesses, atomically.
    (!own.is_null())
        .then(|| unsafe { AtomicU64::from_ptr(own.add(off).cast()) }.load(Ordering::Acquire))
}

/// This PE's latest collective call on the runtime's set slots: the set's key and the
/// call's number on it (0, 0: none yet, or not readable).
pub(crate) fn latest_collective() -> (u64, u64) {
    let Some(key) = own_word(layout::control(offset_of!(ControlLine, current_set))) else {
        return (0, 0);
    };
    let region = Region::new(SETS.load(Ordering::Relaxed));
    let load = |off: usize| own_word(off).unwrap_or(0);
    match layout::find_with(load, region, key) {
        Some(slot) if key != 0 => (key, load(region.slot(slot) + sync::OWNER_EPOCH)),
        _ => (0, 0),
    }
}

/// Element size and count of this PE's call number `epoch` on the set with key `key`,
/// from its arrival line if the line still holds that call.
pub(crate) fn published_data(key: u64, epoch: u64) -> Option<(u32, u64)> {
    let region = Region::new(SETS.load(Ordering::Relaxed));
    let load = |off: usize| own_word(off).unwrap_or(0);
    let base = region.slot(layout::find_with(load, region, key)?);
    arrival_data(&|off| load(base + off), epoch)
}

/// Element size and count of call `epoch` in the arrival lines of the sync words that
/// `load` reads (by offset from their start), if its line holds that call.
pub(crate) fn arrival_data(load: &dyn Fn(usize) -> u64, epoch: u64) -> Option<(u32, u64)> {
    let line = (epoch % ARRIVAL_LINES as u64) as usize;
    if epoch == 0 || load(sync::epoch(line)) != epoch {
        return None;
    }
    let hot: [u64; LINE_HOT_WORDS] = std::array::from_fn(|i| load(sync::hot(line, i)));
    let cold: [u64; LINE_COLD_WORDS] = std::array::from_fn(|i| load(sync::cold(line, i)));
    let tail: [u64; DESC_TAIL_WORDS] = std::array::from_fn(|i| load(sync::tail(line, i)));
    let desc = Descriptor::from_line(hot, cold, tail);
    let elem = desc.elem();
    (elem.size > 0).then(|| (elem.size, desc.nelems()))
}

/// Rewrites words of this PE's record under its sequence lock: `fill` stores through
/// the function it is given (offset, value).
fn write(fill: impl FnOnce(&dyn Fn(usize, u64))) {
    let own = OWN.load(Ordering::Relaxed);
    if own.is_null() {
        return;
    }
    let word = |off: usize| {
        // SAFETY: `own` is this PE's partition, mapped for the process's life, and the
        // call record lies in its runtime region, 8-aligned; every word of the region is
        // accessed atomically only.
        unsafe { AtomicU64::from_ptr(own.add(off).cast()) }
    };
    let seq = word(field!(seq)).load(Ordering::Relaxed);
    word(field!(seq)).store(seq | 1, Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    fill(&|off, value| word(off).store(value, Ordering::Relaxed));
    word(field!(seq)).store((seq | 1) + 1, Ordering::Release);
}

/// Packs the first bytes of `text` into `N` words (little-endian, NUL-padded).
fn pack<const N: usize>(text: &[u8]) -> [u64; N] {
    let mut words = [0u64; N];
    for (i, b) in text.iter().take(N * 8).enumerate() {
        words[i / 8] |= (*b as u64) << (8 * (i % 8));
    }
    words
}

/// The text packed in `words`, up to its first NUL.
fn unpack(words: &[u64]) -> String {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The end of `file` that fits the record.
fn file_tail(file: &str) -> &[u8] {
    let bytes = file.as_bytes();
    &bytes[bytes.len().saturating_sub(FILE_WORDS * 8)..]
}

/// Stores the call `name` made at `site`.
fn store_call(w: &dyn Fn(usize, u64), name: &str, site: Option<&Location<'_>>) {
    for (i, v) in pack::<NAME_WORDS>(name.as_bytes()).into_iter().enumerate() {
        w(field!(name) + 8 * i, v);
    }
    let file = site.map_or(&[][..], |s| file_tail(s.file()));
    for (i, v) in pack::<FILE_WORDS>(file).into_iter().enumerate() {
        w(field!(file) + 8 * i, v);
    }
    w(field!(line), site.map_or(0, |s| s.line() as u64));
}

/// Publishes that this PE began its call number `calls`, `name` at `site` (if known),
/// at `now`.
pub(crate) fn begin(name: &str, site: Option<&Location<'_>>, calls: u64, now: u64) {
    write(|w| {
        w(field!(state), IN_CALL);
        w(field!(calls), calls);
        w(field!(began_ns), now);
        store_call(w, name, site);
    });
}

/// Publishes that this PE completed its call at `now`.
pub(crate) fn end(now: u64) {
    write(|w| {
        w(field!(state), IN_CODE);
        w(field!(done_ns), now);
    });
}

/// Called when a wait of the operation `name` publishes its wait record: with
/// observation off, the call record learns of the call only now (not its site).
pub(crate) fn note_waiting(name: &str) {
    if probe::on() {
        return;
    }
    write(|w| {
        w(field!(state), IN_CALL);
        store_call(w, name, None);
    });
}

/// When the PE whose words `load` reads last completed a call or joined the job (0:
/// never).
pub(crate) fn done_ns(load: &dyn Fn(usize) -> u64) -> u64 {
    load(field!(done_ns))
}

/// A PE's call record as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallSnapshot {
    /// Whether the PE is in a call (as far as the record knows).
    pub(crate) in_call: bool,
    /// Calls begun (0: observation off).
    pub(crate) calls: u64,
    /// When the current call began.
    pub(crate) began_ns: u64,
    /// When the PE last completed a call, or joined.
    pub(crate) done_ns: u64,
    /// The call's name.
    pub(crate) name: String,
    /// `file:line` of the call in the program (empty: unknown).
    pub(crate) site: String,
}

/// A PE's call record, read consistently through `load` (acquire loads of its words by
/// symmetric offset); `None` while its owner rewrites it.
pub(crate) fn read(load: &dyn Fn(usize) -> u64) -> Option<CallSnapshot> {
    let before = load(field!(seq));
    if before & 1 == 1 {
        return None;
    }
    let words = |at: usize, n: usize| (0..n).map(|i| load(at + 8 * i)).collect::<Vec<_>>();
    let file = unpack(&words(field!(file), FILE_WORDS));
    let line = load(field!(line));
    let snapshot = CallSnapshot {
        in_call: load(field!(state)) == IN_CALL,
        calls: load(field!(calls)),
        began_ns: load(field!(began_ns)),
        done_ns: load(field!(done_ns)),
        name: unpack(&words(field!(name), NAME_WORDS)),
        site: if file.is_empty() {
            String::new()
        } else {
            let cut = if file.len() >= FILE_WORDS * 8 {
                "…"
            } else {
                ""
            };
            format!("{cut}{file}:{line}")
        },
    };
    (load(field!(seq)) == before).then_some(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_through_words() {
        assert_eq!(unpack(&pack::<2>(b"broadcast")), "broadcast");
        assert_eq!(unpack(&pack::<2>(b"")), "");
        let long = "a/very/long/path/to/some/source/file/in/a/deep/tree/of/modules/main.rs";
        let tail = file_tail(long);
        assert_eq!(tail.len(), 64);
        assert!(long.ends_with(&unpack(&pack::<8>(tail))));
    }
}
