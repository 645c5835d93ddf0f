//! Builds tiersim's QEMU plugin (the `tiersim-qemu` crate of this workspace) so
//! that the tiersim binary can carry it: `tiersim record --via qemu` hands QEMU the
//! plugin from memory, so the binary needs no file beside it. The plugin is built
//! by a nested cargo with its own target directory (the outer build holds the
//! lock on the workspace's) and always optimised, since it runs for every access
//! of the recorded program.
//!
//! It also records the commit the binary is built from (`TIERSIM_COMMIT`, with
//! `+modified` when tracked files differ from it), which `tiersim reproduce --all`
//! writes on its scoreboard; `unknown` outside a git checkout.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cargo = std::env::var_os("CARGO").expect("cargo sets CARGO");
    let target_dir = out.join("qemu-plugin");
    let status = Command::new(cargo)
        .args(["build", "--release", "--offline", "--package", "tiersim-qemu", "--target-dir"])
        .arg(&target_dir)
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .expect("cargo runs");
    if !status.success() {
        panic!("building the QEMU plugin (crates/qemu-plugin) failed: {status}");
    }
    println!("cargo:rustc-env=TIERSIM_QEMU_PLUGIN={}", target_dir.join("release/libtiersim_qemu.so").display());
    println!("cargo:rerun-if-changed=crates/qemu-plugin");
    println!("cargo:rerun-if-changed=crates/ring");
    // The plugin's profile is in the workspace manifest.
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rustc-env=TIERSIM_COMMIT={}", commit());
    for path in [".git/HEAD", ".git/index", ".git/refs/heads", ".git/packed-refs", "src"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The commit of the checkout (`HEAD`'s short hash), `+modified` when tracked files
/// differ from it, or `unknown` without git.
fn commit() -> String {
    let git = |args: &[&str]| Command::new("git").args(args).output().ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) if !hash.is_empty() => {
            let modified = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if modified { format!("{hash}+modified") } else { hash }
        }
        _ => "unknown".into(),
    }
}
