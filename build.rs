//! Builds tiersim's QEMU plugin (the `tiersim-qemu` crate of this workspace) so
//! that the tiersim binary can carry it: `tiersim record --via qemu` hands QEMU the
//! plugin from memory, so the binary needs no file beside it. The plugin is built
//! by a nested cargo with its own target directory (the outer build holds the
//! lock on the workspace's) and always optimised, since it runs for every access
//! of the recorded program.

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
}
