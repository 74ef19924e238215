// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module's shape (`Documentation/module.md`, "Layers"): no source file of the
//! module over [`MAX_FILE_LINES`] lines, and every `extern "C"` function a thin entry of
//! at most [`MAX_ENTRY_LINES`] lines that converts its arguments and calls safe code.
//! A host test reads `rust/` (the protocol core and ABI crates and the generated
//! bindings aside, as for the layers) and names each file or entry over its bound.

use std::path::Path;

/// Lines a module source file may have.
pub const MAX_FILE_LINES: usize = 800;
/// Lines an `extern "C"` function may span, signature and closing brace included.
pub const MAX_ENTRY_LINES: usize = 25;

/// The `extern "C"` functions of `src` that span more than [`MAX_ENTRY_LINES`] lines:
/// `(first line, lines, name)`. A function ends at the first `}` at its own indentation
/// after the line that opens its body.
pub fn long_entries(src: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let code = l.split("//").next().unwrap_or("");
        let Some(at) = code.find("extern \"C\" fn ") else {
            continue;
        };
        let name: String = code[at + "extern \"C\" fn ".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = l.len() - l.trim_start().len();
        // The signature may span lines; a declaration (`;`) has no body.
        let Some(open) = (i..lines.len()).find(|&j| {
            let t = lines[j].trim_end();
            t.ends_with('{') || t.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let end = (open + 1..lines.len()).find(|&k| {
            let t = lines[k];
            t.len() - t.trim_start().len() == indent && t.trim_start().starts_with('}')
        });
        let n = end.unwrap_or(lines.len() - 1) - i + 1;
        if n > MAX_ENTRY_LINES {
            out.push((i + 1, n, name));
        }
    }
    out
}

/// Every bound `root/rust` exceeds, one line each.
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let base = root.join("rust");
    let mut files = Vec::new();
    crate::layers::sources(&base, &mut files)?;
    files.sort();
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&base).unwrap_or(&f).display().to_string();
        let src = std::fs::read_to_string(&f)?;
        let n = src.lines().count();
        if n > MAX_FILE_LINES {
            bad.push(format!(
                "rust/{rel}: {n} lines, over {MAX_FILE_LINES}: split it by concern"
            ));
        }
        for (line, len, name) in long_entries(&src) {
            bad.push(format!(
                "rust/{rel}:{line}: extern \"C\" fn {name} spans {len} lines, over \
                 {MAX_ENTRY_LINES}: move its body into safe code"
            ));
        }
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_entry_is_named_and_a_short_one_is_not() {
        let body = "    x();\n".repeat(MAX_ENTRY_LINES);
        let src = format!(
            "unsafe extern \"C\" fn short(a: i32) -> i32 {{\n    a\n}}\n\n\
             pub(crate) unsafe extern \"C\" fn long(\n    a: i32,\n) -> i32 {{\n{body}    \
             if a == 0 {{\n    }}\n}}\nextern \"C\" {{\n    fn declared();\n}}\n"
        );
        let got = long_entries(&src);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].2, "long");
        assert_eq!(got[0].0, 5);
        assert_eq!(got[0].1, MAX_ENTRY_LINES + 6);
    }

    #[test]
    fn a_long_file_is_named() {
        let dir = std::env::temp_dir().join(format!("rsiw-sizes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rust/proto")).unwrap();
        let long = "// x\n".repeat(MAX_FILE_LINES + 1);
        std::fs::write(dir.join("rust/big.rs"), &long).unwrap();
        // The protocol core is its own crate, with its own tests.
        std::fs::write(dir.join("rust/proto/big.rs"), &long).unwrap();
        std::fs::write(dir.join("rust/small.rs"), "// x\n").unwrap();
        let bad = check(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("rust/big.rs: 801 lines"), "{bad:?}");
    }

    /// The module as it is.
    #[test]
    fn module_shape() {
        let bad = check(&crate::layers::checked_root()).unwrap();
        assert!(
            bad.is_empty(),
            "over the module's bounds:\n{}",
            bad.join("\n")
        );
    }
}
