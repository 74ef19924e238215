// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The DKMS preflight (`dkms/rsiw-kbuild.sh check`) on fake kernel trees and fake
//! toolchains: each missing thing is one line naming its fix; the checks of a tree it
//! finds made (the harness's, given to the install test); and the provider's `Depends:`.

use super::depends_of;
use std::path::{Path, PathBuf};
use std::process::Command;

const REL: &str = "7.3.4+deb13-amd64";
const RUSTC: &str = "rustc 1.85.1 (4eb161250 2025-03-15) (built from a source tarball)";

/// A fake system: `modules/<REL>/build` (the headers), `src/` (where linux-source goes),
/// `state/` (/var/lib/rsiw), `bin/` (the only PATH the script gets).
struct Fake {
    dir: PathBuf,
}

impl Fake {
    fn new(name: &str) -> Fake {
        let dir =
            std::env::temp_dir().join(format!("rsiw-preflight-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in [
            "modules",
            "src",
            "state",
            "bin",
            "sysroot/lib/rustlib/src/rust/library/core/src",
        ] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(
            dir.join("sysroot/lib/rustlib/src/rust/library/core/src/lib.rs"),
            "",
        )
        .unwrap();
        let f = Fake { dir };
        // The tools the script itself uses, from the host.
        f.host(&["sed", "head"]);
        f
    }

    /// The host's `tools` in the fake PATH.
    fn host(&self, tools: &[&str]) -> &Self {
        for tool in tools {
            let real = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(tool))
                .find(|p| p.exists())
                .unwrap();
            std::os::unix::fs::symlink(real, self.dir.join("bin").join(tool)).unwrap();
        }
        self
    }

    /// The headers' .config: Debian's 7.3 settings, with `rust` as CONFIG_RUST.
    fn headers(&self, rust: bool) -> &Self {
        let b = self.dir.join("modules").join(REL).join("build");
        std::fs::create_dir_all(&b).unwrap();
        let rust = if rust {
            "CONFIG_RUST=y"
        } else {
            "# CONFIG_RUST is not set"
        };
        std::fs::write(
            b.join(".config"),
            format!(
                "CONFIG_CC_VERSION_TEXT=\"x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0\"\n\
                 CONFIG_CC_IS_GCC=y\n{rust}\nCONFIG_RUSTC_VERSION_TEXT=\"{RUSTC}\"\n\
                 CONFIG_BINDGEN_VERSION_TEXT=\"bindgen 0.71.1\"\nCONFIG_INFINIBAND=m\n"
            ),
        )
        .unwrap();
        self
    }

    /// Headers that carry the Rust products (as Ubuntu's linux-lib-rust adds them).
    fn products(&self) -> &Self {
        let r = self.dir.join("modules").join(REL).join("build/rust");
        std::fs::create_dir_all(r.join("bindings")).unwrap();
        for f in [
            "libkernel.rmeta",
            "libmacros.so",
            "bindings/bindings_generated.rs",
        ] {
            std::fs::write(r.join(f), "").unwrap();
        }
        self
    }

    fn source(&self) -> &Self {
        std::fs::write(self.dir.join("src/linux-source-7.3.tar.xz"), "").unwrap();
        self
    }

    /// A fake program `name` printing `version` for `--version`.
    fn tool(&self, name: &str, version: &str) -> &Self {
        let sysroot = self.dir.join("sysroot");
        let p = self.dir.join("bin").join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\ncase $1 in --version) echo '{version}' ;; --print) echo '{}' ;; esac\n",
                sysroot.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        self
    }

    /// Every tool the build needs, rustc as Debian's.
    fn toolchain(&self) -> &Self {
        self.tool("rustc", RUSTC).tool("bindgen", "bindgen 0.71.1");
        for t in [
            "x86_64-linux-gnu-gcc-14",
            "make",
            "flex",
            "bison",
            "bc",
            "xz",
            "nm",
        ] {
            self.tool(t, t);
        }
        self
    }

    /// `rsiw-kbuild.sh CMD REL`: exit status, stdout, and the `rsiw:` lines of stderr.
    fn run(&self, cmd: &str) -> (i32, String, Vec<String>) {
        let (code, out, err) = self.run_tree(cmd, None);
        let lines = err
            .lines()
            .filter(|l| l.starts_with(&format!("rsiw: {REL}: ")) && !l.contains("missing above"))
            .map(String::from)
            .collect();
        (code, out, lines)
    }

    /// `rsiw-kbuild.sh CMD REL` with `RSIW_TREE=tree`: exit status, stdout, stderr.
    fn run_tree(&self, cmd: &str, tree: Option<&Path>) -> (i32, String, String) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dkms/rsiw-kbuild.sh");
        let mut c = Command::new("/bin/sh");
        c.arg(script)
            .args([cmd, REL])
            .env_clear()
            .env("PATH", self.dir.join("bin"))
            .env("RSIW_MODULES_DIR", self.dir.join("modules"))
            .env("RSIW_SRC_DIR", self.dir.join("src"))
            .env("RSIW_STATE_DIR", self.dir.join("state"));
        if let Some(t) = tree {
            c.env("RSIW_TREE", t);
        }
        let out = c.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `rsiw-kbuild.sh CMD` on `f` fails, and its preflight printed exactly one line,
/// holding every piece of `want`.
fn one_problem(f: &Fake, cmd: &str, want: &[&str]) {
    let (code, _, lines) = f.run(cmd);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    for w in want {
        assert!(lines[0].contains(w), "`{w}` not in {}", lines[0]);
    }
}

#[test]
fn complete_system_passes_and_uses_headers_with_products() {
    let f = Fake::new("ok");
    f.headers(true).products().toolchain();
    let (code, _, lines) = f.run("check");
    assert_eq!((code, lines.len()), (0, 0), "{lines:#?}");
    let (code, out, _) = f.run("kdir");
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        f.dir
            .join("modules")
            .join(REL)
            .join("build")
            .display()
            .to_string()
    );
}

#[test]
fn no_headers() {
    let f = Fake::new("nohdr");
    f.toolchain();
    one_problem(
        &f,
        "check",
        &[
            "no kernel headers",
            &format!("apt install linux-headers-{REL}"),
        ],
    );
}

#[test]
fn rust_off() {
    let f = Fake::new("norust");
    f.headers(false).toolchain().source();
    one_problem(
        &f,
        "build",
        &[
            "CONFIG_RUST is off",
            "apt install -t trixie-backports linux-image-amd64",
        ],
    );
}

#[test]
fn headers_without_products_and_no_source() {
    let f = Fake::new("nosrc");
    f.headers(true).toolchain();
    one_problem(
        &f,
        "check",
        &[
            "lack the Rust build products",
            "libkernel.rmeta",
            "apt install linux-source-7.3",
        ],
    );
    // With the source installed the products can be made: nothing is missing.
    f.source();
    let (code, _, lines) = f.run("check");
    assert_eq!((code, lines.len()), (0, 0), "{lines:#?}");
}

/// A rustc or bindgen of another version than the kernel's `.config` records.
#[test]
fn rustc_or_bindgen_differs_from_the_kernels() {
    let rustc_want = format!("built with '{RUSTC}'");
    let cases: [(&str, &str, [&str; 3]); 2] = [
        (
            "rustc",
            "rustc 1.90.0 (1159e78c4 2025-09-14)",
            [
                "rustc is 'rustc 1.90.0 (1159e78c4 2025-09-14)'",
                &rustc_want,
                "apt install rustc",
            ],
        ),
        (
            "bindgen",
            "bindgen 0.69.5",
            [
                "bindgen is 'bindgen 0.69.5'",
                "built with 'bindgen 0.71.1'",
                "apt install bindgen",
            ],
        ),
    ];
    for (tool, version, want) in cases {
        let f = Fake::new(tool);
        f.headers(true).products().toolchain().tool(tool, version);
        one_problem(&f, "check", &want);
    }
}

#[test]
fn rustc_and_bindgen_missing_and_no_source_each_named() {
    let f = Fake::new("all");
    f.headers(true).toolchain();
    for t in ["rustc", "bindgen"] {
        std::fs::remove_file(f.dir.join("bin").join(t)).unwrap();
    }
    let (code, _, lines) = f.run("build");
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[0].contains("rustc is not installed") && lines[0].contains(RUSTC),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("bindgen is not installed") && lines[1].contains("apt install bindgen"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("apt install linux-source-7.3"),
        "{}",
        lines[2]
    );
}

#[test]
fn compiler_and_rust_src_missing() {
    let f = Fake::new("cc");
    f.headers(true).products().toolchain();
    std::fs::remove_file(f.dir.join("bin/x86_64-linux-gnu-gcc-14")).unwrap();
    std::fs::remove_file(
        f.dir
            .join("sysroot/lib/rustlib/src/rust/library/core/src/lib.rs"),
    )
    .unwrap();
    let (code, _, lines) = f.run("check");
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].contains("apt install rust-src"), "{}", lines[0]);
    assert!(
        lines[1].contains("x86_64-linux-gnu-gcc-14 is not installed")
            && lines[1].contains("apt install gcc-14"),
        "{}",
        lines[1]
    );
}

/// The headers' identity files, and a tree made for REL at `tree` (as `rsiw-kbuild.sh`
/// or the harness leaves it): `.rsiw-prepared`, the headers' `.config` with `extra`
/// appended, the products, and a `rust/kernel.o` for which the fake `nm` lists `defined`.
/// The tree's `Module.symvers` is a hard link to `<dir>/other/Module.symvers` ("old"),
/// as in a tree of hard links to another one.
fn made_tree(f: &Fake, tree: &Path, extra: &str, defined: &str) {
    let b = f.dir.join("modules").join(REL).join("build");
    std::fs::create_dir_all(b.join("include/generated")).unwrap();
    std::fs::create_dir_all(b.join("include/config")).unwrap();
    std::fs::write(
        b.join("Module.symvers"),
        "0x12345678\t_RNvNtCs1a_6kernel5alloc3foo\tvmlinux\tEXPORT_SYMBOL_GPL\t\n\
         0x9abcdef0\tib_register_device\tdrivers/infiniband/core/ib_core\tEXPORT_SYMBOL\t\n",
    )
    .unwrap();
    std::fs::write(b.join("include/generated/utsrelease.h"), REL).unwrap();
    std::fs::write(b.join("include/config/kernel.release"), REL).unwrap();
    for d in ["rust/bindings", "include/generated", "include/config"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    let config = std::fs::read_to_string(b.join(".config")).unwrap();
    std::fs::write(tree.join(".config"), config + extra).unwrap();
    for p in [
        ".rsiw-prepared",
        "rust/libkernel.rmeta",
        "rust/libmacros.so",
        "rust/bindings/bindings_generated.rs",
        "rust/kernel.o",
        "include/generated/utsrelease.h",
        "include/config/kernel.release",
    ] {
        std::fs::write(tree.join(p), "").unwrap();
    }
    std::fs::create_dir_all(f.dir.join("other")).unwrap();
    std::fs::write(f.dir.join("other/Module.symvers"), "old").unwrap();
    std::fs::hard_link(
        f.dir.join("other/Module.symvers"),
        tree.join("Module.symvers"),
    )
    .unwrap();
    let nm = f.dir.join("bin/nm");
    std::fs::write(
        &nm,
        format!("#!/bin/sh\n[ \"$1\" = --version ] && exec echo nm\necho '0000000000000000 T {defined}'\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&nm, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.host(&[
        "mkdir", "cmp", "cp", "mv", "rm", "awk", "sort", "comm", "grep", "wc",
    ]);
}

/// A tree found where RSIW_TREE says, made for this kernel, is checked and used: no
/// product is made again, the headers' files replace the tree's without writing into
/// a file the tree shares with another.
#[test]
fn found_tree_is_checked_and_used() {
    let f = Fake::new("found");
    f.headers(true).toolchain().source();
    let tree = f.dir.join("cache/linux");
    made_tree(&f, &tree, "", "_RNvNtCs1a_6kernel5alloc3foo");
    let (code, out, err) = f.run_tree("kdir", Some(&tree));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), tree.display().to_string());
    assert!(!err.contains("making"), "{err}");
    assert!(err.contains("1 Rust symbols"), "{err}");
    let symvers = std::fs::read_to_string(tree.join("Module.symvers")).unwrap();
    assert!(symvers.contains("ib_register_device"), "{symvers}");
    assert_eq!(
        std::fs::read_to_string(f.dir.join("other/Module.symvers")).unwrap(),
        "old"
    );
}

/// A found tree whose rust/*.o lack a Rust symbol of the kernel's Module.symvers is
/// refused, naming the count and what to remove.
#[test]
fn found_tree_missing_symbols_refused() {
    let f = Fake::new("symbols");
    f.headers(true).toolchain().source();
    let tree = f.dir.join("state").join(REL).join("linux");
    made_tree(&f, &tree, "", "_RNvNtCs2b_6kernel5alloc3foo");
    let (code, out, err) = f.run_tree("kdir", None);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            "1 Rust symbols of the kernel's Module.symvers are not in the rebuilt products"
        ) && err.contains(&format!("remove {}", tree.display())),
        "{err}"
    );
}

/// A found tree prepared with another .config is not used: it is made again.
#[test]
fn found_tree_of_another_config_made_again() {
    let f = Fake::new("config");
    f.headers(true).toolchain().source();
    let tree = f.dir.join("cache/linux");
    made_tree(
        &f,
        &tree,
        "CONFIG_OTHER=y\n",
        "_RNvNtCs1a_6kernel5alloc3foo",
    );
    // No tar here: the remake stops at unpacking the source.
    let (code, _, err) = f.run_tree("kdir", Some(&tree));
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("was prepared with another .config")
            && err.contains("making the Rust build products"),
        "{err}"
    );
    assert!(!tree.join(".rsiw-prepared").exists());
    assert_eq!(
        std::fs::read_to_string(f.dir.join("other/Module.symvers")).unwrap(),
        "old"
    );
}

#[test]
fn provider_depends() {
    let dynamic = "  NEEDED               libibverbs.so.1\n  NEEDED               libgcc_s.so.1\n  NEEDED               libc.so.6\n";
    let symbols = "0000 DF *UND* 0000 (GLIBC_2.2.5) memcpy\n0000 DF *UND* 0000 (GLIBC_2.34) __libc_start_main\n0000 DF *UND* 0000 (GLIBC_2.28) fcntl64\n0000 DF *UND* 0000 IBVERBS_PRIVATE_34 execute_ioctl\n";
    assert_eq!(
        depends_of(dynamic, symbols).unwrap(),
        "libc6 (>= 2.34), libibverbs1 (>= 34), libgcc-s1"
    );
    assert!(depends_of("  NEEDED libfoo.so.3\n", "").is_err());
}
