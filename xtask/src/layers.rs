// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module's layers (`Documentation/module.md`): one folder of `rust/` per layer,
//! and which layer may name which. A host test reads every `use crate::…` and
//! `crate::…::` path of `rust/` and fails when a lower layer's folder names a higher
//! one, when a folder or a loose file belongs to no layer, when a layer's folder is
//! missing, or when a layer that forbids `unsafe` does not say so once, at the top of
//! its `mod.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, top first, each with its folders under `rust/` (each the name of a
/// top-level module of the crate); a folder may name its own layer and those below it.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("entries", &["entry"]),
    ("verbs", &["verbs"]),
    ("connection management", &["cm"]),
    ("objects", &["objects"]),
    ("engine", &["engine"]),
    ("queues", &["queue"]),
    ("resources", &["resources"]),
    ("kernel wrappers", &["kapi"]),
    ("protocol core and ABI", &["proto", "abi"]),
];

/// The layers' folders that may hold `unsafe`: the `extern "C"` entries (raw pointers
/// from C) and the kernel wrappers. Every other layer's root file starts with
/// [`FORBID`].
pub const UNSAFE_FOLDERS: &[&str] = &["entry", "kapi"];

/// The inner attribute that forbids `unsafe` in a layer.
pub const FORBID: &str = "#![forbid(unsafe_code)]";

/// The separate crates the module includes through `#[path]`: their own root file.
const CRATE_ROOTS: &[(&str, &str)] = &[("proto", "src/lib.rs"), ("abi", "src/lib.rs")];

/// The crate root: mod lines and `module!`, in no layer.
const ROOT: &str = "rsiw.rs";

/// Items of the crate root that are not modules (macros `#[macro_export]` puts there).
const ROOT_ITEMS: &[&str] = &["new_irq_spinlock"];

/// The layer index of folder (top-level module) `m`.
fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&m))
}

/// The folder a file belongs to, from its path under `rust/` (`None` for a file at the
/// root).
fn folder_of(rel: &Path) -> Option<String> {
    let mut parts = rel.iter();
    let first = parts.next()?.to_string_lossy().into_owned();
    parts.next().map(|_| first)
}

/// Whether `src` (a layer's root file) sets [`FORBID`] as an inner attribute, before
/// its first item.
pub fn forbids_unsafe(src: &str) -> bool {
    for l in src.lines().map(str::trim) {
        if l == FORBID {
            return true;
        }
        if !(l.is_empty() || l.starts_with("//") || l.starts_with("#![")) {
            return false;
        }
    }
    false
}

/// The top-level modules (layer folders) a source text names through `crate::`.
pub fn named(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Comments say what they like.
    let code: String = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the top-level names of the group.
            let mut depth = 0usize;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        item.push(ch);
                    }
                    '}' if depth == 0 => break,
                    '}' => {
                        depth -= 1;
                        item.push(ch);
                    }
                    ',' if depth == 0 => {
                        push_path(&mut out, &item);
                        item.clear();
                    }
                    c => item.push(c),
                }
            }
            push_path(&mut out, &item);
        } else {
            push_path(&mut out, rest);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Records the top-level module a path (`objects::qp::Qp`, `new_irq_spinlock!`) names.
fn push_path(out: &mut Vec<String>, path: &str) {
    let path = path.trim();
    let head: String = path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if head.is_empty() || path[head.len()..].starts_with('!') {
        // A crate-root macro, not a module.
        return;
    }
    out.push(head);
}

/// Every `.rs` file under `dir`, except the protocol core and ABI crates' and the
/// generated bindings.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            if !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("proto" | "abi")
            ) {
                sources(&p, out)?;
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "bindings_generated.rs")
        {
            out.push(p);
        }
    }
    Ok(())
}

/// The tree the host tests check: this checkout, or `RSIW_LAYERS_ROOT` (another
/// checkout, e.g. an older commit's).
pub fn checked_root() -> PathBuf {
    std::env::var("RSIW_LAYERS_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// The violations under `root/rust`, one line each.
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let base = root.join("rust");
    let mut bad = Vec::new();
    // Every folder a layer names exists (the check cannot pass on a tree it does not
    // see), and its root file forbids `unsafe` unless the layer may hold it.
    for (layer, folders) in LAYERS {
        for f in *folders {
            let dir = base.join(f);
            let root_file = CRATE_ROOTS
                .iter()
                .find(|(c, _)| c == f)
                .map_or_else(|| dir.join("mod.rs"), |(_, r)| dir.join(r));
            let Ok(src) = std::fs::read_to_string(&root_file) else {
                bad.push(format!(
                    "rust/{f}/: the folder of layer `{layer}` (xtask/src/layers.rs) has no {}",
                    root_file
                        .strip_prefix(&base)
                        .unwrap_or(&root_file)
                        .display()
                ));
                continue;
            };
            if !UNSAFE_FOLDERS.contains(f) && !forbids_unsafe(&src) {
                bad.push(format!(
                    "rust/{}: layer `{layer}` does not start with `{FORBID}`",
                    root_file
                        .strip_prefix(&base)
                        .unwrap_or(&root_file)
                        .display()
                ));
            }
        }
    }
    // Every entry of `rust/` is the crate root or a layer's folder.
    let mut unknown: BTreeMap<String, &str> = BTreeMap::new();
    for e in std::fs::read_dir(&base)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            if layer_of(&name).is_none() {
                unknown.insert(name, "a folder");
            }
        } else if name.ends_with(".rs") && name != ROOT {
            unknown.insert(name, "a file");
        }
    }
    for (name, what) in unknown {
        bad.push(format!(
            "rust/{name}: {what} outside every layer's folder of xtask/src/layers.rs"
        ));
    }
    let mut files = Vec::new();
    sources(&base, &mut files)?;
    files.sort();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&base).unwrap_or(&f).to_path_buf();
        let Some(m) = folder_of(&rel) else { continue };
        let Some(mine) = layer_of(&m) else { continue };
        *seen.entry(m.clone()).or_default() += 1;
        let src = std::fs::read_to_string(&f)?;
        for n in named(&src) {
            if n == m || ROOT_ITEMS.contains(&n.as_str()) {
                continue;
            }
            match layer_of(&n) {
                Some(theirs) if theirs < mine => bad.push(format!(
                    "rust/{}: `{m}` ({}) names `{n}` ({}), a layer above it",
                    rel.display(),
                    LAYERS[mine].0,
                    LAYERS[theirs].0
                )),
                Some(_) => {}
                None => bad.push(format!(
                    "rust/{}: names `{n}`, which is in no layer of xtask/src/layers.rs",
                    rel.display()
                )),
            }
        }
    }
    // The imports of every layer folder were read (the protocol core and ABI are
    // separate crates, checked by their own build).
    for (layer, folders) in LAYERS {
        for f in *folders {
            let own_crate = CRATE_ROOTS.iter().any(|(c, _)| c == f);
            if !own_crate && base.join(f).is_dir() && !seen.contains_key(*f) {
                bad.push(format!("rust/{f}/: no source of layer `{layer}` was read"));
            }
        }
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_top_level_module() {
        let src = "use crate::{\n    queue::cq::{Cq, Cqe}, // crate::verbs in a comment\n    kapi::{bindings, lock::x},\n    new_irq_spinlock,\n};\nfn f() { crate::objects::qp::Qp::new(); crate::new_irq_spinlock!(); }\n";
        assert_eq!(
            named(src),
            vec!["kapi", "new_irq_spinlock", "objects", "queue"]
        );
    }

    #[test]
    fn forbid_is_an_inner_attribute_before_any_item() {
        assert!(forbids_unsafe(
            "// SPDX\n//! Doc.\n\n#![forbid(unsafe_code)]\n\nmod a;\n"
        ));
        assert!(!forbids_unsafe(
            "//! Doc.\n\nmod a;\n#![forbid(unsafe_code)]\n"
        ));
        assert!(!forbids_unsafe(
            "//! Doc.\n#[forbid(unsafe_code)]\nmod a;\n"
        ));
    }

    /// A tree with every layer's folder, each root file as the layer wants it, then
    /// `files` written (`(path under rust/, text)`) and the folders `gone` removed.
    /// Returns the violations `check` finds.
    fn check_tree(name: &str, files: &[(&str, &str)], gone: &[&str]) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("rsiw-layers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let rust = dir.join("rust");
        let mut all = vec![(ROOT.to_string(), "mod engine;\n")];
        for f in LAYERS.iter().flat_map(|(_, fs)| fs.iter()) {
            let root = CRATE_ROOTS
                .iter()
                .find(|(c, _)| c == f)
                .map_or_else(|| format!("{f}/mod.rs"), |(_, r)| format!("{f}/{r}"));
            let text = if UNSAFE_FOLDERS.contains(f) {
                "//! Unsafe allowed.\n"
            } else {
                "//! A layer.\n\n#![forbid(unsafe_code)]\n"
            };
            all.push((root, text));
        }
        all.extend(files.iter().map(|(p, t)| (p.to_string(), *t)));
        for (p, t) in all {
            let p = rust.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        }
        for g in gone {
            std::fs::remove_dir_all(rust.join(g)).unwrap();
        }
        let bad = check(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        bad
    }

    /// `bad` holds exactly one line per entry of `want`, each containing it.
    fn assert_found(bad: &[String], want: &[&str]) {
        assert_eq!(bad.len(), want.len(), "{bad:?}");
        for (b, w) in bad.iter().zip(want) {
            assert!(b.contains(w), "{bad:?} lacks {w}");
        }
    }

    #[test]
    fn a_well_formed_tree_passes() {
        let bad = check_tree(
            "ok",
            &[("engine/rx.rs", "use crate::queue::cq::Cq;\n")],
            &[],
        );
        assert_found(&bad, &[]);
    }

    #[test]
    fn a_lower_layer_naming_a_higher_one_is_caught() {
        let files = [
            ("engine/rx.rs", "use crate::objects::qp::Qp;\n"),
            ("objects/qp.rs", "use crate::engine::Conn;\n"),
            ("kapi/sock.rs", "fn f() { crate::entry::cm::x(); }\n"),
        ];
        assert_found(
            &check_tree("up", &files, &[]),
            &[
                "rust/engine/rx.rs: `engine` (engine) names `objects` (objects)",
                "rust/kapi/sock.rs: `kapi` (kernel wrappers) names `entry` (entries)",
            ],
        );
    }

    #[test]
    fn a_missing_layer_folder_is_caught() {
        assert_found(
            &check_tree("missing", &[], &["queue"]),
            &["rust/queue/: the folder of layer `queues`"],
        );
    }

    #[test]
    fn a_file_or_folder_outside_the_layers_is_caught() {
        let files = [
            ("cq.rs", "use crate::verbs::x;\n"),
            ("misc/mod.rs", "//! x\n"),
        ];
        assert_found(
            &check_tree("loose", &files, &[]),
            &["rust/cq.rs: a file outside", "rust/misc: a folder outside"],
        );
    }

    #[test]
    fn a_layer_without_forbid_is_caught() {
        let files = [("resources/mod.rs", "//! No forbid.\nmod mem;\n")];
        assert_found(
            &check_tree("forbid", &files, &[]),
            &["rust/resources/mod.rs: layer `resources` does not start with"],
        );
    }

    /// The module as it is: every layer's folder present, no lower layer names a
    /// higher one, every layer but the entries and wrappers forbids `unsafe`.
    #[test]
    fn module_layers() {
        let root = checked_root();
        for (_, folders) in LAYERS {
            for f in *folders {
                assert!(root.join("rust").join(f).is_dir(), "rust/{f} missing");
            }
        }
        let bad = check(&root).unwrap();
        assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
    }
}
