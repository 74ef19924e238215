// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The initramfs's contents as a tree, written in the "newc" cpio format the kernel
//! unpacks (the `cpio` crate writes the headers; the kernel's `usr/gen_init_cpio` would
//! need a spec file, a temporary file per literal entry and a built kernel tree).

use anyhow::{Context, Result};
use cpio::NewcBuilder;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
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
        let mut out = Vec::new();
        for (ino, (path, e)) in (1..).zip(&self.entries) {
            let (mode, rdev, data) = match e {
                Entry::Dir => (0o040755, (0, 0), Cow::Borrowed(&[][..])),
                Entry::CharDev(major, minor) => {
                    (0o020600, (*major, *minor), Cow::Borrowed(&[][..]))
                }
                Entry::Data(d, mode) => (0o100000 | mode, (0, 0), Cow::Borrowed(&d[..])),
                Entry::File(src, mode) => {
                    let d =
                        std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
                    (0o100000 | mode, (0, 0), Cow::Owned(d))
                }
                Entry::Symlink(t) => (0o120777, (0, 0), Cow::Borrowed(t.as_bytes())),
            };
            let nlink = if matches!(e, Entry::Dir) { 2 } else { 1 };
            let h = NewcBuilder::new(path).ino(ino).mode(mode).nlink(nlink);
            let mut w = h
                .rdev_major(rdev.0)
                .rdev_minor(rdev.1)
                .write(&mut out, size(&data)?);
            w.write_all(&data)?;
            w.finish()?;
        }
        let ino = self.entries.len() as u32 + 1;
        NewcBuilder::new("TRAILER!!!")
            .ino(ino)
            .write(&mut out, 0)
            .finish()?;
        Ok(out)
    }
}

/// A newc header's 8 hex digits of file size.
fn size(data: &[u8]) -> Result<u32> {
    u32::try_from(data.len()).context("a file of the image is over 4 GiB")
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
