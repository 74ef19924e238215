// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module's layers (`Documentation/module.md`): which top-level module of the crate
//! may name which. A host test reads every `use crate::…` and `crate::…::` path of
//! `rust/` and fails when a lower layer names a higher one, so that the layers can be
//! read from the imports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, top first; a module may name its own layer and those below it. A name
/// is a top-level module of the crate, or `ffi::entry` (the `extern "C"` entries,
/// above everything) as distinct from the rest of `ffi` (the wrappers, below the
/// domain).
pub const LAYERS: &[(&str, &[&str])] = &[
    ("entries", &["ffi::entry"]),
    ("verbs", &["verbs", "driver", "link", "netdev_events"]),
    ("connection management", &["cm"]),
    ("objects", &["device", "qp", "srq"]),
    ("engine", &["engine"]),
    (
        "resources",
        &[
            "cq", "mem", "wr", "uqueue", "stream", "slots", "queue", "counters",
        ],
    ),
    ("wrappers", &["ffi"]),
    ("protocol core and ABI", &["proto", "abi"]),
];

/// Items of the crate root that are not modules (macros `#[macro_export]` puts there).
const ROOT_ITEMS: &[&str] = &["new_irq_spinlock"];

/// The layer index of module `m` (`ffi::entry` or a top-level name).
fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&m))
}

/// The module a file belongs to, from its path under `rust/`.
fn module_of(rel: &Path) -> Option<String> {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let first = parts.first()?.trim_end_matches(".rs").to_string();
    if first == "ffi" && parts.get(1).map(String::as_str) == Some("entry") {
        return Some("ffi::entry".into());
    }
    Some(first)
}

/// The top-level modules (and `ffi::entry`) a source text names through `crate::`.
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
            // `crate::{a, b::c, ffi::{entry::x, y}}`: the top-level names of the group.
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

/// Records the module a path (`qp::Qp`, `ffi::{entry::…}`, `new_irq_spinlock!`) names.
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
    let after = path[head.len()..].trim_start();
    if head == "ffi" {
        let sub = after.trim_start_matches("::").trim_start();
        // `ffi::{a, entry::b}`: each item of the group counts.
        let items: Vec<&str> = match sub.strip_prefix('{') {
            Some(g) => g.split(',').map(str::trim).collect(),
            None => vec![sub],
        };
        for it in items {
            out.push(if it.starts_with("entry") {
                "ffi::entry".into()
            } else {
                "ffi".into()
            });
        }
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

/// The violations under `root/rust`: `(file, module it names, why)`.
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let base = root.join("rust");
    let mut files = Vec::new();
    sources(&base, &mut files)?;
    files.sort();
    let mut bad = Vec::new();
    let mut unknown: BTreeMap<String, String> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&base).unwrap_or(&f).to_path_buf();
        let Some(m) = module_of(&rel) else { continue };
        if m == "rsiw" {
            continue; // the crate root declares every module
        }
        let Some(mine) = layer_of(&m) else {
            unknown.insert(m.clone(), rel.display().to_string());
            continue;
        };
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
    for (m, f) in unknown {
        bad.push(format!(
            "rust/{f}: module `{m}` is in no layer of xtask/src/layers.rs"
        ));
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_top_level_module() {
        let src = "use crate::{\n    cq::{Cq, Cqe}, // crate::verbs in a comment\n    ffi::{bindings, entry::x},\n    new_irq_spinlock,\n};\nfn f() { crate::qp::Qp::new(); crate::new_irq_spinlock!(); }\n";
        assert_eq!(
            named(src),
            vec!["cq", "ffi", "ffi::entry", "new_irq_spinlock", "qp"]
        );
    }

    #[test]
    fn a_lower_layer_naming_a_higher_one_is_caught() {
        let dir = std::env::temp_dir().join(format!("rsiw-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rust/engine")).unwrap();
        std::fs::write(dir.join("rust/engine/mod.rs"), "use crate::qp::Qp;\n").unwrap();
        std::fs::write(dir.join("rust/qp.rs"), "use crate::engine::Conn;\n").unwrap();
        let bad = check(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("`engine` (engine) names `qp` (objects)"),
            "{bad:?}"
        );
    }

    /// The module as it is: no lower layer names a higher one.
    #[test]
    fn module_layers() {
        let bad = check(&checked_root()).unwrap();
        assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
    }
}
