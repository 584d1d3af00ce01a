//! Where the program made a one-sided call, which the runtime observes itself (so no
//! `#[track_caller]` location reaches it): the return addresses of the calling frames,
//! taken only on the observed path, kept per distinct stack, and resolved to `file:line`
//! (through the binary's debug information) only when the trace is written, once per
//! distinct address. The site is the innermost frame, inlined ones included, outside
//! this library, the standard library and the unwinder.

use std::collections::HashMap;

/// Frames kept of a stack: enough to pass the unwinder's, the runtime's and the typed
/// layer's own frames (12 of them in a build that inlines nothing, 6 in a release
/// build), and a bound on the walk, which costs about 0.1 µs a frame.
const DEPTH: usize = 16;

/// Return addresses of a call's frames, innermost first (0: none).
pub(crate) type Stack = [usize; DEPTH];

/// The calling frames' return addresses, innermost first.
#[cold]
#[inline(never)]
pub(crate) fn capture() -> Stack {
    let mut stack = [0; DEPTH];
    let mut n = 0;
    backtrace::trace(|frame| {
        stack[n] = frame.ip() as usize;
        n += 1;
        n < DEPTH
    });
    stack
}

/// Distinct stacks of one PE and their sites, resolved when first asked for.
#[derive(Default)]
pub(crate) struct Stacks {
    index: HashMap<Stack, u16>,
    stacks: Vec<Stack>,
    /// Per stack (by index - 1): its site, once resolved.
    sites: Vec<Option<String>>,
    /// Per return address: the site its frame names (None: all its frames are the
    /// library's).
    by_ip: HashMap<usize, Option<String>>,
}

impl Stacks {
    /// The number (from 1) of `stack` among the distinct stacks; 0 past `u16::MAX` of
    /// them (such an event shows no site).
    pub(crate) fn intern(&mut self, stack: Stack) -> u16 {
        if let Some(&i) = self.index.get(&stack) {
            return i;
        }
        let Ok(i) = u16::try_from(self.stacks.len() + 1) else {
            return 0;
        };
        self.stacks.push(stack);
        self.sites.push(None);
        self.index.insert(stack, i);
        i
    }

    /// The site of stack number `i` (`file:line`; the function's name without debug
    /// information; "-" when no frame outside the library resolves; empty for 0).
    pub(crate) fn site(&mut self, i: u16) -> String {
        let Some(at) = (i as usize).checked_sub(1) else {
            return String::new();
        };
        if let Some(site) = &self.sites[at] {
            return site.clone();
        }
        let by_ip = &mut self.by_ip;
        let site = self.stacks[at]
            .iter()
            .take_while(|&&ip| ip != 0)
            .find_map(|&ip| by_ip.entry(ip).or_insert_with(|| resolve(ip)).clone())
            .unwrap_or_else(|| "-".to_string());
        self.sites[at] = Some(site.clone());
        site
    }
}

/// The site the frame at return address `ip` names: its innermost inlined frame outside
/// the library (None: none is).
fn resolve(ip: usize) -> Option<String> {
    let mut site = None;
    // Return addresses point past the call: one byte back lies in the call's line.
    backtrace::resolve(ip.saturating_sub(1) as *mut std::ffi::c_void, |symbol| {
        if site.is_some() {
            return;
        }
        let name = symbol.name().map(|n| format!("{n:#}"));
        let file = symbol.filename().map(|f| f.display().to_string());
        if file.as_deref().is_some_and(library_file)
            || name.as_deref().is_some_and(library_function)
        {
            return;
        }
        site = match (file, symbol.lineno(), name) {
            (Some(file), Some(line), _) => Some(format!("{}:{line}", relative(&file))),
            (_, _, Some(name)) => Some(name),
            _ => None,
        };
    });
    site
}

/// `file` relative to the working directory, if it lies under it (as a program's own
/// `#[track_caller]` locations are when it runs from its workspace).
fn relative(file: &str) -> &str {
    std::env::current_dir()
        .ok()
        .and_then(|dir| {
            let dir = dir.to_str()?.to_owned() + "/";
            file.strip_prefix(&dir)
                .map(|rest| &file[file.len() - rest.len()..])
        })
        .unwrap_or(file)
}

/// Whether `file` is a source of this library, the standard library or the unwinder.
fn library_file(file: &str) -> bool {
    const DIRS: [&str; 3] = ["shmem-rt/src/", "shmem-typed/src/", "shmem-fabric/src/"];
    DIRS.iter().any(|d| file.contains(d))
        || file.starts_with("/rustc/")
        || file.contains("/library/std/")
        || file.contains("/library/core/")
        || file.contains("/library/alloc/")
        || file.contains("/backtrace-")
}

/// Whether the function `name` (demangled, without its hash) is this library's, the
/// standard library's or the unwinder's.
fn library_function(name: &str) -> bool {
    const CRATES: [&str; 7] = [
        "shmem_rt::",
        "shmem_typed::",
        "shmem_fabric::",
        "std::",
        "core::",
        "alloc::",
        "backtrace::",
    ];
    let name = name.trim_start_matches('<');
    CRATES.iter().any(|c| name.starts_with(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_the_library_and_of_rust_are_passed_over() {
        assert!(library_file("/work/x/shmem-rt/src/runtime/rma.rs"));
        assert!(library_file("/rustc/abc/library/core/src/ops/function.rs"));
        assert!(!library_file("/work/x/shmem-rt/tests/observe.rs"));
        assert!(library_function("shmem_typed::sym::Sym<T>::put"));
        assert!(library_function(
            "<shmem_rt::Runtime as core::fmt::Debug>::fmt"
        ));
        assert!(!library_function("observe::main"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "walks the stack through the platform's unwinder")]
    fn stacks_are_kept_once_and_number_from_one() {
        let mut stacks = Stacks::default();
        let stack = capture();
        let i = stacks.intern(stack);
        assert_eq!(i, 1);
        assert_eq!(stacks.intern(stack), i);
        assert_eq!(stacks.site(0), "");
        assert!(!stacks.site(i).is_empty());
    }
}
