//! The layers of the runtime's two crates and of the typed crate above them, written down
//! once and checked. The fabric (`shmem-fabric`: how a PE reaches memory) is a crate of
//! its own below the runtime (`shmem-rt`), which re-exports its modules under the
//! runtime's paths ([`FABRIC`]); the fabric names nothing of the crates above it. The
//! typed crate (`shmem-typed`, the library programs import) has layers of its own
//! ([`TYPED_LAYERS`]). In each crate, every module of `src/`
//! belongs to one layer by its path (bottom first), and a module may use only modules of
//! its own layer or of layers below (`crate::`, `super::` and `self::` paths, and a
//! folder module's paths into its own children; a folder re-exporting a child is not a
//! use). Each crate's module graph has no cycles but those its folder cycles name. The
//! README's module trees list exactly the files of each `src/`, each under its layer.
//!
//! Std only: the paths are read from the source text (comments, strings and each file's
//! `#[cfg(test)] mod tests` left out), not from the compiler.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A layer: a name, what it holds, and the modules in it. A module is named by its path
/// under `src/` without `.rs` (`coll/ctx`; a folder's `mod.rs` by the folder, `coll`;
/// `lib.rs` as `lib`). A pattern `dir/*` takes every module below `dir/` that no exact
/// pattern names, so a new file joins its folder's layer.
type Layer = (&'static str, &'static str, &'static [&'static str]);

/// The fabric's layers, bottom first.
const FABRIC_LAYERS: &[Layer] = &[
    (
        "wire",
        "encodings other PEs read; imports nothing of the crate",
        &["wire", "wire/*"],
    ),
    (
        "error",
        "errors and their messages; imports only wire",
        &["error"],
    ),
    (
        "primitives",
        "partition layout, race-tolerant copy, futex wake, processor atomics",
        &[
            "memory",
            "memory/layout",
            "memory/copy",
            "sync",
            "sync/wake",
            "transport/amo",
        ],
    ),
    ("config", "the job's environment as a PE joins", &["config"]),
    (
        "transport",
        "how a PE reaches memory: the seam and its transports",
        &["transport", "transport/*"],
    ),
    ("root", "the crate's modules", &["lib"]),
];

/// The fabric's folders whose `mod.rs` uses its own children while they use it: the
/// cycles the test allows, only between such a folder and its children.
/// `transport/mod.rs` holds both the trait its transports implement and the enum that
/// dispatches over them. An entry whose folder no longer uses a child fails the test.
const FABRIC_FOLDER_CYCLES: &[&str] = &["transport"];

/// The fabric's modules the runtime re-exports, by the runtime's module names: the
/// runtime's `crate::` paths into them are uses of the fabric, the layer below all of
/// the runtime's own.
const FABRIC: &[&str] = &["wire", "error", "transport", "memory/layout", "memory/copy"];

/// The runtime's layers, bottom first.
const RT_LAYERS: &[Layer] = &[
    (
        "fabric",
        "the shmem-fabric crate, re-exported under the runtime's paths",
        FABRIC,
    ),
    (
        "probe",
        "what waits tell observation: its flag and clock",
        &["observe/probe"],
    ),
    (
        "config",
        "the job's environment, the launcher's side",
        &["config"],
    ),
    (
        "heap",
        "the allocator and the symmetric statics",
        &["memory", "memory/*"],
    ),
    ("notify", "waking PEs", &["sync/notify"]),
    (
        "records",
        "each PE's state, the job's failure record, each PE's call record",
        &["job/state", "observe/record"],
    ),
    (
        "wait",
        "the wait every blocking call uses",
        &["sync", "sync/wait"],
    ),
    (
        "sets",
        "active sets, their slots, algorithm selection, buffer arguments",
        &["coll/sets", "coll/select", "coll/span"],
    ),
    (
        "verdicts",
        "the errors a call's descriptors earn; deadlock detection",
        &["coll/verdict", "coll/deadlock"],
    ),
    ("call", "one collective call on one set", &["coll/ctx"]),
    (
        "steps",
        "the steps every collective algorithm shares",
        &["coll"],
    ),
    ("algorithms", "one module per algorithm family", &["coll/*"]),
    (
        "observe",
        "seeing a job: the table of where every PE is, the trace, the statistics",
        &["observe", "observe/*"],
    ),
    (
        "launch",
        "the supervisor, self-start, the MPI launcher's command",
        &["job", "job/*"],
    ),
    (
        "runtime",
        "a PE's state and the calls the façade makes",
        &["runtime", "runtime/*"],
    ),
    ("root", "the crate's façade", &["lib"]),
];

/// The runtime's folder cycles: `runtime/mod.rs` holds `Runtime` with its children's
/// state, and each child adds `Runtime`'s calls of one kind (one type, its methods in
/// several files).
const RT_FOLDER_CYCLES: &[&str] = &["runtime"];

/// The typed crate's layers, bottom first. Its root re-exports the public items of
/// every module, but no module reaches an item through the root (`crate::Pe`): each
/// names the module that owns it (`crate::pe::Pe`).
const TYPED_LAYERS: &[Layer] = &[
    (
        "values",
        "reduction operators, the integer words waited on; import nothing of the crate",
        &["ops", "words"],
    ),
    ("error", "errors and the call each names", &["error"]),
    (
        "sets",
        "active sets, and the job's PE count they are checked against",
        &["active_set"],
    ),
    ("pe", "the PE handle and the locks it holds", &["pe"]),
    (
        "contexts",
        "contexts: what every one-sided call runs on",
        &["ctx"],
    ),
    (
        "memory",
        "symmetric statics, allocations and the buffer traits",
        &["symmetric"],
    ),
    (
        "one-sided",
        "atomics, transfers, waits, locks",
        &["atomic", "rma", "sync", "lock"],
    ),
    ("work", "work arrays (pSync, pWrk)", &["work"]),
    (
        "collectives",
        "collectives on active sets, and the world barriers",
        &["collectives"],
    ),
    ("teams", "teams, their contexts and collectives", &["team"]),
    ("scans", "prefix reductions", &["scan"]),
    ("local", "collectives on local data", &["local"]),
    (
        "entry",
        "what the macros expand to: main and the test harness",
        &["entry", "testing"],
    ),
    ("root", "the crate's façade and prelude", &["lib"]),
];

/// One crate's layering: its `src/`, its layers, its folder cycles, the modules of
/// another crate it re-exports (named as in this crate), and the first heading of its
/// tree in the README.
struct Crate {
    src: PathBuf,
    layers: &'static [Layer],
    folder_cycles: &'static [&'static str],
    reexported: &'static [&'static str],
    readme_first: &'static str,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fabric() -> Crate {
    Crate {
        src: workspace().join("shmem-fabric/src"),
        layers: FABRIC_LAYERS,
        folder_cycles: FABRIC_FOLDER_CYCLES,
        reexported: &[],
        readme_first: "0 wire",
    }
}

fn typed() -> Crate {
    Crate {
        src: workspace().join("shmem-typed/src"),
        layers: TYPED_LAYERS,
        folder_cycles: &[],
        reexported: &[],
        readme_first: "0 values",
    }
}

fn runtime() -> Crate {
    Crate {
        src: Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        layers: RT_LAYERS,
        folder_cycles: RT_FOLDER_CYCLES,
        reexported: FABRIC,
        readme_first: "0 fabric",
    }
}

/// Every module file under `root` (a `src/`; its `bin/` left out): module name → path
/// relative to `root`. The crate root (`lib.rs` or `main.rs`) is `lib`.
fn modules_of(root: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            if rel == "bin" {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else if let Some(stem) = rel.strip_suffix(".rs") {
                let name = stem.strip_suffix("/mod").unwrap_or(stem).to_string();
                out.insert(name, rel);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    if let Some(main) = out.remove("main") {
        out.insert("lib".to_string(), main);
    }
    out
}

/// The layer of module `m` among `layers`: an exact pattern first, else the deepest
/// `dir/*` above it.
fn layer_of(layers: &[Layer], m: &str) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None; // (specificity, layer)
    for (i, (_, _, patterns)) in layers.iter().enumerate() {
        for p in *patterns {
            let spec = if *p == m {
                usize::MAX
            } else if let Some(dir) = p.strip_suffix("/*") {
                if m.starts_with(&format!("{dir}/")) {
                    dir.len()
                } else {
                    continue;
                }
            } else {
                continue;
            };
            if best.is_none_or(|(s, _)| spec > s) {
                best = Some((spec, i));
            }
        }
    }
    best.map(|(_, i)| i)
}

/// `src` without comments, string and char literals, and its
/// `#[cfg(test)] mod tests { … }` block.
fn code_of(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…" or r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}'), or a lifetime (kept).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match end {
                    Some(e) => {
                        out.push_str("' '");
                        i = e + 1;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                let ch = src[i..].chars().next().unwrap();
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    // The unit tests: from their attribute to the brace that closes them.
    while let Some(at) = out.find("#[cfg(test)]\nmod tests") {
        let open = at + out[at..].find('{').unwrap();
        let mut depth = 0;
        let close = out[open..]
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(out.len(), |(i, _)| open + i + 1);
        out.replace_range(at..close, "");
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths in a use tree or path starting at `s` (after its first segment), expanded:
/// `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn expand(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut path = prefix;
    loop {
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == '{' {
            i += 1;
            loop {
                let rest: String = b[i..].iter().collect();
                i += expand(&rest, path.clone(), out);
                while i < b.len() && b[i].is_whitespace() {
                    i += 1;
                }
                match b.get(i) {
                    Some(',') => i += 1,
                    _ => break,
                }
                while i < b.len() && b[i].is_whitespace() {
                    i += 1;
                }
                if b.get(i) == Some(&'}') {
                    break;
                }
            }
            if b.get(i) == Some(&'}') {
                i += 1;
            }
            return i;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i > start {
            path.push(b[start..i].iter().collect());
        }
        if b[i..].starts_with(&[':', ':']) {
            i += 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// The inline modules (`mod name { … }`) open at each char of `chars`.
fn inline_modules(chars: &[char]) -> Vec<Vec<String>> {
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut at = Vec::with_capacity(chars.len());
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_ident(c) && (i == 0 || !is_ident(chars[i - 1])) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if word == "mod" {
                let rest: String = chars[i..].iter().take(80).collect();
                let name: String = rest
                    .trim_start()
                    .chars()
                    .take_while(|&c| is_ident(c))
                    .collect();
                let after = rest.trim_start()[name.len()..].trim_start().to_string();
                if after.starts_with('{') {
                    pending = Some(name);
                }
            }
            let names: Vec<String> = open.iter().map(|(n, _)| n.clone()).collect();
            at.extend(std::iter::repeat_n(names, i - start));
            continue;
        }
        match c {
            '{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    open.push((name, depth));
                }
            }
            '}' => {
                if open.last().is_some_and(|(_, d)| *d == depth) {
                    open.pop();
                }
                depth -= 1;
            }
            _ => {}
        }
        at.push(open.iter().map(|(n, _)| n.clone()).collect());
        i += 1;
    }
    at
}

/// The modules `m` (whose code is `code`) uses.
fn uses(m: &str, code: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let here: Vec<String> = if m == "lib" {
        vec![]
    } else {
        m.split('/').map(str::to_string).collect()
    };
    // A folder module's own children, as declared.
    let children: BTreeSet<String> = code
        .split(';')
        .filter_map(|stmt| {
            let words: Vec<&str> = stmt.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "mod")?;
            (at + 2 == words.len()).then(|| words[at + 1].to_string())
        })
        .collect();
    let chars: Vec<char> = code.chars().collect();
    let inline = inline_modules(&chars);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
        if !boundary || !is_ident(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let dollar = start > 0 && chars[start - 1] == '$';
        let rooted = matches!(word.as_str(), "crate" | "super" | "self") || dollar;
        let child = children.contains(&word) && inline[start].is_empty();
        if !(rooted || child) || !chars[i..].starts_with(&[':', ':']) {
            continue;
        }
        if !rooted {
            // A folder's `pub use child::…` re-exports its child: its façade, not a use.
            let line_start = chars[..start]
                .iter()
                .rposition(|&c| c == '\n')
                .map_or(0, |p| p + 1);
            let line: String = chars[line_start..start].iter().collect();
            if line.trim_start().starts_with("pub") && line.contains("use") {
                continue;
            }
        }
        let rest: String = chars[i + 2..].iter().collect();
        let mut found = Vec::new();
        i += 2 + expand(&rest, vec![word.clone()], &mut found);
        paths.extend(found.into_iter().map(|p| (p, inline[start].clone())));
    }
    let mut out = BTreeSet::new();
    for (path, inline_at) in paths {
        let mut base: Vec<String> = here.iter().cloned().chain(inline_at).collect();
        let mut segs = path.as_slice();
        match segs[0].as_str() {
            "crate" => {
                base.clear();
                segs = &segs[1..];
            }
            "super" => {
                while segs.first().is_some_and(|s| s == "super") {
                    base.pop();
                    segs = &segs[1..];
                }
            }
            "self" => segs = &segs[1..],
            _ => {} // a folder's child
        }
        // The deepest module the path names.
        let full: Vec<&String> = base.iter().chain(segs).collect();
        let target = (1..=full.len())
            .rev()
            .map(|n| {
                full[..n]
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .find(|p| names.contains(p))
            .unwrap_or_else(|| "lib".to_string());
        if target != m {
            out.insert(target);
        }
    }
    out
}

/// Every module's uses, in the crate whose `src/` is `root`.
fn graph_of(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    graph_with(root, &[])
}

/// Every module's uses, in the crate whose `src/` is `root`, where `reexported` are
/// modules of another crate this one re-exports (named as in this one).
fn graph_with(root: &Path, reexported: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules_of(root);
    let names: BTreeSet<String> = mods
        .keys()
        .cloned()
        .chain(reexported.iter().map(|m| m.to_string()))
        .collect();
    mods.iter()
        .map(|(m, rel)| {
            let code = code_of(&fs::read_to_string(root.join(rel)).unwrap());
            (m.clone(), uses(m, &code, &names))
        })
        .collect()
}

impl Crate {
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        graph_with(&self.src, self.reexported)
    }

    fn every_module_has_a_layer(&self) {
        let missing: Vec<String> = modules_of(&self.src)
            .into_keys()
            .filter(|m| layer_of(self.layers, m).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "modules of {} in no layer: {missing:?}",
            self.src.display()
        );
    }

    fn uses_point_down_the_layers(&self) {
        let mut upward = Vec::new();
        for (m, targets) in &self.graph() {
            let from = layer_of(self.layers, m).unwrap();
            for t in targets {
                let to = layer_of(self.layers, t).unwrap();
                if to > from {
                    upward.push(format!(
                        "{m} ({}) uses {t} ({})",
                        self.layers[from].0, self.layers[to].0
                    ));
                }
            }
        }
        assert!(
            upward.is_empty(),
            "uses that run up the layers of {}:\n{}",
            self.src.display(),
            upward.join("\n")
        );
    }

    fn has_no_cycles(&self) {
        let mut graph = self.graph();
        for folder in self.folder_cycles {
            let uses = graph.get_mut(*folder).unwrap();
            let before = uses.len();
            uses.retain(|t| !t.starts_with(&format!("{folder}/")));
            assert!(
                uses.len() < before,
                "{folder} no longer uses its children: remove it from the folder cycles"
            );
        }
        assert_acyclic(&graph);
    }
}

#[test]
fn every_module_has_a_layer() {
    fabric().every_module_has_a_layer();
    runtime().every_module_has_a_layer();
    typed().every_module_has_a_layer();
}

#[test]
fn uses_point_down_the_layers() {
    fabric().uses_point_down_the_layers();
    runtime().uses_point_down_the_layers();
    typed().uses_point_down_the_layers();
}

#[test]
fn the_module_graphs_have_no_cycles() {
    fabric().has_no_cycles();
    runtime().has_no_cycles();
    typed().has_no_cycles();
}

/// The fabric is below the runtime: its manifest depends on no crate of the workspace
/// and its code names none (`shmem_rt`, `shmem_typed`, …), so no path leads back up.
#[test]
fn the_fabric_depends_on_nothing_above_it() {
    let manifest = fs::read_to_string(workspace().join("shmem-fabric/Cargo.toml")).unwrap();
    let mut section = "";
    for line in manifest.lines() {
        if line.starts_with('[') {
            section = line;
        } else if section.contains("dependencies") {
            assert!(
                !line.trim_start().starts_with("shmem-"),
                "shmem-fabric depends on a crate of the workspace: {line}"
            );
        }
    }
    for (m, rel) in modules_of(&fabric().src) {
        let code = code_of(&fs::read_to_string(fabric().src.join(&rel)).unwrap());
        for above in ["shmem_rt", "shmem_typed", "shmem_macros", "shmem_testkit"] {
            assert!(!code.contains(above), "the fabric's {m} names {above}");
        }
    }
}

/// Which transports a build has is the transports' business: outside the fabric's
/// `transport/` folder no code reads the `mpi` feature (the runtime reaches MPI only
/// through `Transports` and the macros that match on it).
#[test]
fn only_the_transports_read_the_mpi_feature() {
    for c in [fabric(), runtime(), typed()] {
        for (m, rel) in modules_of(&c.src) {
            if c.src == fabric().src && (m == "transport" || m.starts_with("transport/")) {
                continue;
            }
            let code = fs::read_to_string(c.src.join(&rel)).unwrap();
            assert!(
                !code.contains("feature = \"mpi\""),
                "{} reads the mpi feature outside the transports",
                c.src.join(&rel).display()
            );
        }
    }
}

/// Every module the runtime takes from the fabric ([`FABRIC`]) is a module of the
/// fabric, re-exported by the runtime module that would hold it (`lib.rs` for a
/// top-level one) with a `use shmem_fabric::…` naming it, and no file of the runtime
/// has its name.
#[test]
fn the_runtime_reexports_the_fabric_under_its_paths() {
    let fabric_mods = modules_of(&fabric().src);
    let rt_mods = modules_of(&runtime().src);
    for m in FABRIC {
        assert!(
            fabric_mods.contains_key(*m),
            "{m} is no module of the fabric"
        );
        assert!(
            !rt_mods.contains_key(*m),
            "{m} is a file of the runtime too"
        );
        let (parent, name) = m.rsplit_once('/').unwrap_or(("lib", m));
        let code = code_of(&fs::read_to_string(runtime().src.join(&rt_mods[parent])).unwrap());
        let mut found = Vec::new();
        for (at, _) in code.match_indices("use shmem_fabric::") {
            expand(&code[at + "use shmem_fabric::".len()..], vec![], &mut found);
        }
        let expected: Vec<String> = m.split('/').map(str::to_string).collect();
        assert!(
            found.contains(&expected),
            "{parent} does not re-export shmem_fabric::{} (found {found:?})",
            expected.join("::")
        );
        let _ = name;
    }
}

/// The benchmark (`shmem-bench`, a binary of its own) has no layers written down, but
/// its modules form no cycle either.
#[test]
fn the_benchmark_modules_form_no_cycle() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shmem-bench/src");
    let graph = graph_of(&bench);
    assert!(graph.len() > 10, "found only {:?}", graph.keys());
    assert_acyclic(&graph);
}

/// Panics naming a cycle of `graph`, if it has one.
fn assert_acyclic(graph: &BTreeMap<String, BTreeSet<String>>) {
    // Depth-first search; a back edge closes a cycle, reported as its path.
    fn visit<'a>(
        m: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, bool>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(true) => return None,
            Some(false) => {
                let at = stack.iter().position(|s| *s == m).unwrap();
                let mut cycle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(m, false);
        stack.push(m);
        for t in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(t, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m, true);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(cycle) = visit(m, graph, &mut state, &mut Vec::new()) {
            panic!("an import cycle: {}", cycle.join(" -> "));
        }
    }
}

/// The README's trees of `shmem-fabric/src/`, `shmem-rt/src/` and `shmem-typed/src/`, after the line that
/// names this test: each a ```text block whose first line is its crate's first layer
/// heading. Heading lines `N name  text` open layer N; indented lines start with a file
/// path.
#[test]
fn the_readme_lists_every_module_under_its_layer() {
    let readme = fs::read_to_string(workspace().join("README.md")).unwrap();
    let after = readme
        .split_once("shmem-rt/tests/layering.rs")
        .expect("the README names shmem-rt/tests/layering.rs before the module trees")
        .1;
    for krate in [fabric(), runtime(), typed()] {
        let block = after
            .split("```text\n")
            .skip(1)
            .map(|b| b.split_once("```").unwrap().0)
            .find(|b| b.starts_with(krate.readme_first))
            .unwrap_or_else(|| panic!("no tree starting {:?}", krate.readme_first));
        krate.check_readme_tree(block);
    }
}

impl Crate {
    fn check_readme_tree(&self, block: &str) {
        let mods = modules_of(&self.src);
        let mut listed = BTreeMap::new();
        let mut current: Option<usize> = None;
        let mut headings = Vec::new();
        for line in block.lines() {
            if line.trim().is_empty() {
                continue;
            }
            if !line.starts_with(' ') {
                let mut words = line.split_whitespace();
                let n: usize = words
                    .next()
                    .unwrap()
                    .parse()
                    .expect("a heading starts with its layer number");
                headings.push((n, words.next().unwrap().to_string()));
                current = Some(n);
            } else {
                let file = line.split_whitespace().next().unwrap().to_string();
                assert!(
                    listed.insert(file.clone(), current).is_none(),
                    "{file} is listed twice"
                );
            }
        }
        let expected: Vec<(usize, String)> = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, (name, _, _))| (i, name.to_string()))
            .collect();
        assert_eq!(
            headings,
            expected,
            "the README's layer headings differ from the layers of {}",
            self.src.display()
        );
        let files: BTreeSet<&String> = mods.values().collect();
        let in_readme: BTreeSet<&String> = listed.keys().collect();
        assert_eq!(
            in_readme,
            files,
            "the README's module tree differs from the files of {}",
            self.src.display()
        );
        for (m, rel) in &mods {
            assert_eq!(
                listed[rel],
                layer_of(self.layers, m),
                "the README lists {rel} under another layer"
            );
        }
    }
}
