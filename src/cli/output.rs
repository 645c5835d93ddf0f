//! Output files, written so that no command destroys its input or leaves a damaged
//! file under a final name.
//!
//! Every output (`--json`, `--csv`, `convert`'s and `record`'s trace, `inspect
//! --json`) is opened by [`OutputFile::create`] before the command does any work:
//! the path must not be a directory, its directory must exist, it must not be the
//! same file as any input (device and inode are compared, so hard and symbolic
//! links and `./f` against `f` are caught), nor the same as another output. A
//! temporary file is created next to it at once, which proves the directory
//! writable; the command writes there and [`OutputFile::commit`] renames it over the
//! final name when everything is written. A failed or aborted command removes the
//! temporary file and leaves whatever was at the final name untouched.
//!
//! A path that names an existing file which is not a regular file (`/dev/null`,
//! `/dev/stdout`, a FIFO) is written in place: renaming over it would replace it.

use super::interrupt;
use anyhow::{anyhow, bail, Context, Result};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Numbers the temporary files of this process.
static NEXT_TEMP: AtomicU32 = AtomicU32::new(0);

/// An output being written: a temporary file renamed into place by [`commit`].
///
/// [`commit`]: OutputFile::commit
pub struct OutputFile {
    /// How messages name it: the option and the path as given.
    shown: String,
    /// The file the output replaces (a symbolic link's target).
    target: PathBuf,
    /// The temporary file, or `None` when writing in place to a non-regular file.
    temp: Option<(PathBuf, Option<usize>)>,
    file: File,
}

/// The device and inode of an existing file (following links).
fn identity(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether this process may write the existing file `path` (access(2) with the real
/// user's rights; root may write any file, so a file without any write bit is
/// refused separately).
fn writable(path: &Path) -> bool {
    match std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) {
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        Ok(c) => unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 },
        Err(_) => false,
    }
}

/// The directory and name of `target`, with the directory made canonical, so that
/// two spellings of one future file compare equal.
fn location(target: &Path) -> Option<(PathBuf, OsString)> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some((fs::canonicalize(dir).ok()?, target.file_name()?.to_os_string()))
}

impl OutputFile {
    /// Checks the output `path` of option `option` (e.g. `--json`; empty for a
    /// positional argument) against the command's `inputs` (paths; `-` is skipped)
    /// and the outputs already opened, and creates its temporary file. The error
    /// names the option and the path.
    pub fn create(option: &str, path: &Path, inputs: &[&str], others: &[&OutputFile]) -> Result<OutputFile> {
        let shown = if option.is_empty() { path.display().to_string() } else { format!("{option} {}", path.display()) };
        let link = fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false);
        // A link is followed: the file it points to is what gets replaced (or created,
        // when the link dangles).
        let target = match (link, fs::canonicalize(path)) {
            (false, _) => path.to_path_buf(),
            (true, Ok(t)) => t,
            (true, Err(_)) => {
                let to = fs::read_link(path).with_context(|| format!("{shown}: cannot read the link"))?;
                path.parent().unwrap_or(Path::new("")).join(to)
            }
        };
        let meta = fs::metadata(&target).ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            bail!("{shown}: is a directory; give a file name");
        }
        if path.file_name().is_none() {
            bail!("{shown}: not a file name");
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            bail!("{shown}: directory {} does not exist", dir.display());
        }
        if let Some(id) = identity(&target) {
            for input in inputs.iter().filter(|i| **i != "-") {
                if identity(Path::new(input)) == Some(id) {
                    bail!("{shown}: is the same file as the input {input}; tiersim never writes over its input");
                }
            }
        }
        let here = location(&target);
        for o in others {
            if here.is_some() && location(&o.target) == here {
                bail!("{shown}: is the same file as {}", o.shown);
            }
        }
        if meta.as_ref().is_some_and(|m| m.is_file() && (m.permissions().readonly() || !writable(&target))) {
            bail!("{shown}: the file is read-only; tiersim does not replace a file it may not write (make it writable or give another name)");
        }
        if meta.is_some_and(|m| !m.is_file()) {
            let file = fs::OpenOptions::new().write(true).open(&target).with_context(|| format!("{shown}: cannot open for writing"))?;
            return Ok(OutputFile { shown, target, temp: None, file });
        }
        let name = target.file_name().expect("checked above").to_string_lossy();
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.tiersim-{}-{n}.tmp", std::process::id()));
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| anyhow!("{shown}: cannot create a file in {}: {}", dir.display(), io_reason(&e)))?;
        let slot = interrupt::register_temp(&temp);
        let out = OutputFile { shown, target, temp: Some((temp, slot)), file };
        if let Some(perm) = fs::metadata(&out.target).ok().map(|m| m.permissions()) {
            // A replaced file keeps its permissions.
            fs::set_permissions(&out.temp.as_ref().expect("just made").0, perm).with_context(|| format!("{}: cannot set permissions", out.shown))?;
        }
        Ok(out)
    }

    /// Opens an optional output (`None` when the option was not given).
    pub fn create_opt(option: &str, path: &Option<PathBuf>, inputs: &[&str], others: &[&OutputFile]) -> Result<Option<OutputFile>> {
        path.as_deref().map(|p| OutputFile::create(option, p, inputs, others)).transpose()
    }

    /// A second handle on the file, for a writer that must own one; write through it,
    /// then [`OutputFile::commit`].
    pub fn handle(&self) -> Result<File> {
        self.file.try_clone().with_context(|| format!("{}: cannot write", self.shown))
    }

    /// Writes `bytes` and commits.
    pub fn write_all_and_commit(mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).with_context(|| format!("{}: cannot write", self.shown))?;
        self.commit()
    }

    /// Puts the finished output under its final name.
    pub fn commit(mut self) -> Result<()> {
        self.file.flush().with_context(|| format!("{}: cannot write", self.shown))?;
        if let Some((temp, slot)) = self.temp.take() {
            let renamed = fs::rename(&temp, &self.target);
            if let Some(s) = slot {
                interrupt::forget_temp(s);
            }
            if let Err(e) = renamed {
                let _ = fs::remove_file(&temp);
                bail!("{}: cannot put the output in place: {}", self.shown, io_reason(&e));
            }
        }
        Ok(())
    }
}

impl Drop for OutputFile {
    /// An output dropped before [`OutputFile::commit`] leaves nothing behind.
    fn drop(&mut self) {
        if let Some((temp, slot)) = self.temp.take() {
            let _ = fs::remove_file(&temp);
            if let Some(s) = slot {
                interrupt::forget_temp(s);
            }
        }
    }
}

/// An I/O error's reason without Rust's "(os error N)" suffix.
pub(crate) fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    fn dir(name: &str) -> Scratch {
        Scratch::new(&format!("out-{name}"))
    }

    #[test]
    fn committed_output_replaces_the_file_and_a_dropped_one_leaves_it() {
        let d = dir("commit");
        let path = d.join("r.json");
        fs::write(&path, "old").unwrap();
        let o = OutputFile::create("--json", &path, &[], &[]).unwrap();
        drop(o);
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        let o = OutputFile::create("--json", &path, &[], &[]).unwrap();
        o.write_all_and_commit(b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn inputs_links_and_other_outputs_are_refused() {
        let d = dir("same");
        let input = d.join("t.lk");
        fs::write(&input, "x").unwrap();
        let input_s = input.to_str().unwrap();
        let e = |p: &Path| OutputFile::create("--json", p, &[input_s], &[]).err().unwrap().to_string();
        assert!(e(&input).contains("same file as the input"), "{}", e(&input));
        let link = d.join("link");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        assert!(e(&link).contains("same file as the input"));
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        OutputFile::create("--json", &dangling, &[], &[]).unwrap().write_all_and_commit(b"{}").unwrap();
        assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read_to_string(d.join("made.json")).unwrap(), "{}");
        let hard = d.join("hard");
        fs::hard_link(&input, &hard).unwrap();
        assert!(e(&hard).contains("same file as the input"));
        assert!(e(&d.join(".").join("t.lk")).contains("same file as the input"));
        assert!(e(&d).contains("is a directory"));
        assert!(e(&d.join("no/such/dir/r.json")).contains("does not exist"));
        let first = OutputFile::create("--json", &d.join("r"), &[], &[]).unwrap();
        let again = OutputFile::create("--csv", &d.join(".").join("r"), &[], &[&first]).err().unwrap().to_string();
        assert!(again.contains("same file as --json"), "{again}");
    }
}
