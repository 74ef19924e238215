// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A writer for the "newc" cpio format the kernel unpacks as an initramfs.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One entry of the image, keyed by its path inside the guest (no leading `/`).
pub enum Entry {
    /// A directory.
    Dir,
    /// A host file copied in, with its mode bits.
    File(PathBuf, u32),
    /// Literal contents, with mode bits.
    Data(Vec<u8>, u32),
    /// A symbolic link to the given target.
    Symlink(String),
    /// A character device node (major, minor), mode 0600.
    CharDev(u32, u32),
}

/// The image's contents before they are written; later insertions replace earlier ones.
#[derive(Default)]
pub struct Tree {
    entries: BTreeMap<String, Entry>,
}

impl Tree {
    /// Add (or replace) `path` and create its parent directories.
    pub fn insert(&mut self, path: &str, e: Entry) {
        let path = path.trim_start_matches('/').to_string();
        let mut p = Path::new(&path).parent();
        while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
            self.entries
                .entry(dir.to_string_lossy().into_owned())
                .or_insert(Entry::Dir);
            p = dir.parent();
        }
        self.entries.insert(path, e);
    }

    /// Whether `path` is already in the tree.
    #[cfg(test)]
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(path.trim_start_matches('/'))
    }

    /// Add the host directory `src` recursively under `dest`, keeping modes and symlinks.
    pub fn insert_dir(&mut self, src: &Path, dest: &str) -> Result<()> {
        self.insert_dir_filtered(src, dest, &|_| false)
    }

    /// [`Tree::insert_dir`] without the host paths for which `skip` is true (and
    /// without what is under such a directory).
    pub fn insert_dir_filtered(
        &mut self,
        src: &Path,
        dest: &str,
        skip: &dyn Fn(&Path) -> bool,
    ) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![(src.to_path_buf(), dest.trim_end_matches('/').to_string())];
        while let Some((dir, at)) = stack.pop() {
            self.insert(&at, Entry::Dir);
            for e in
                std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
            {
                let e = e?;
                let path = e.path();
                if skip(&path) {
                    continue;
                }
                let name = format!("{at}/{}", e.file_name().to_string_lossy());
                let meta = std::fs::symlink_metadata(&path)?;
                if meta.file_type().is_symlink() {
                    let t = std::fs::read_link(&path)?;
                    self.insert(&name, Entry::Symlink(t.to_string_lossy().into_owned()));
                } else if meta.is_dir() {
                    stack.push((path, name));
                } else {
                    self.insert(&name, Entry::File(path, meta.permissions().mode() & 0o7777));
                }
            }
        }
        Ok(())
    }

    /// Serialise the tree as a newc archive, padded to 4 bytes so more archives can follow.
    pub fn to_cpio(&self) -> Result<Vec<u8>> {
        let mut w = Writer::default();
        for (path, e) in &self.entries {
            match e {
                Entry::Dir => w.entry(path, 0o040755, &[]),
                Entry::CharDev(major, minor) => w.node(path, 0o020600, *major, *minor),
                Entry::Data(d, mode) => w.entry(path, 0o100000 | mode, d),
                Entry::File(src, mode) => {
                    let d =
                        std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
                    w.entry(path, 0o100000 | mode, &d)
                }
                Entry::Symlink(t) => w.entry(path, 0o120777, t.as_bytes()),
            }
        }
        w.entry("TRAILER!!!", 0, &[]);
        Ok(w.buf)
    }
}

#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
    ino: u32,
}

impl Writer {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.header(name, mode, data, (0, 0));
    }

    fn node(&mut self, name: &str, mode: u32, major: u32, minor: u32) {
        self.header(name, mode, &[], (major, minor));
    }

    fn header(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.ino += 1;
        let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        let fields = [
            self.ino,
            mode,
            0,
            0,
            nlink,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
        self.buf.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_layout_of_one_file() {
        let mut t = Tree::default();
        t.insert("a", Entry::Data(b"xyz".to_vec(), 0o644));
        let c = t.to_cpio().unwrap();
        // Header (110 bytes) + "a\0" padded to 112, data padded to 116, then the trailer.
        assert_eq!(&c[..6], b"070701");
        assert_eq!(&c[14..22], b"000081a4"); // regular file, 0644
        assert_eq!(&c[54..62], b"00000003"); // filesize
        assert_eq!(&c[94..102], b"00000002"); // namesize includes the NUL
        assert_eq!(&c[110..112], b"a\0");
        assert_eq!(&c[112..115], b"xyz");
        assert_eq!(&c[116..122], b"070701");
        assert_eq!(c.len() % 4, 0);
        assert!(c.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    #[test]
    fn parents_are_created_and_later_entries_win() {
        let mut t = Tree::default();
        t.insert("/usr/bin/x", Entry::Symlink("busybox".into()));
        t.insert("usr/bin/x", Entry::Data(vec![1], 0o755));
        assert!(t.contains("usr") && t.contains("/usr/bin"));
        assert!(matches!(t.entries.get("usr/bin/x"), Some(Entry::Data(..))));
        assert_eq!(t.entries.len(), 3);
    }
}
