//! Scratch directories that remove themselves: the tests' (the unit tests' and,
//! through `tests/common`, the integration tests'), and the one that holds the
//! resolved spec `sweep --scheduler` hands over. Not part of the simulator's
//! interface.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory `tiersim-LABEL-PID-N` under the system temp dir, its own
/// to one user (a test, a command); dropping the guard removes it and everything in
/// it, also on an error return or when a test panics.
pub struct Scratch(PathBuf);

impl Scratch {
    /// Creates the directory, or says why it could not be, naming it.
    pub fn create(label: &str) -> anyhow::Result<Scratch> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tiersim-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: cannot create ({e})", dir.display()))?;
        Ok(Scratch(dir))
    }

    /// [`Scratch::create`] for tests: panics when the directory cannot be made.
    pub fn new(label: &str) -> Scratch {
        Scratch::create(label).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The path of file `name` in the directory, as a command-line argument.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("a UTF-8 temp dir").to_string()
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
