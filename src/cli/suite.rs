//! `tiersim record --suite NAME`: the real-program suite. Each program is a recipe
//! — the Debian packages it needs, how its input is made, the command recorded and,
//! for a server, the load run against it — sized by `--size` (`small`, `full` or the
//! bytes of data the program holds).
//!
//! The inputs and the load come from `studies/real/driver.py`, which the binary
//! carries and writes into a work directory under `$TMPDIR` (removed at the end)
//! with every input. The driver prepares inputs natively before the recording
//! starts, so only the program itself is recorded. A server (redis, memcached) is
//! recorded while the driver, a separate process that is not recorded, loads it
//! over a socket and finally shuts it down, which ends the recording. The numeric
//! and graph programs are the driver itself run by Debian's `/usr/bin/python3`, so
//! the trace holds the interpreter, numpy/OpenBLAS, SciPy or igraph at work, their
//! threads as cores.

use super::record::{record_into, Beside};
use crate::trace::record::{find_on_path, Via};
use crate::trace::window::Sampling;
use crate::units::Size;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The driver of the suite's inputs and loads.
static DRIVER: &str = include_str!("../../studies/real/driver.py");

/// The Python that runs the driver: Debian's, which finds the python3-* packages
/// (a pyenv or virtualenv `python3` on PATH would not, and a shim is a script).
const PYTHON: &str = "/usr/bin/python3";

/// The seed of every input and load.
const SEED: &str = "1";

/// What a program needs installed, and the Debian package that provides it.
#[derive(Clone, Copy)]
enum Need {
    /// A command on PATH.
    Command(&'static str, &'static str),
    /// A module that `/usr/bin/python3` imports.
    Module(&'static str, &'static str),
    /// GCC's compiler proper, `cc1`, as `gcc -print-prog-name=cc1` finds it.
    Cc1,
}

impl Need {
    fn package(self) -> &'static str {
        match self {
            Need::Command(_, p) | Need::Module(_, p) => p,
            Need::Cc1 => "gcc",
        }
    }

    fn describe(self) -> String {
        match self {
            Need::Command(c, _) => format!("command {c}"),
            Need::Module(m, _) => format!("Python module {m} for {PYTHON}"),
            Need::Cc1 => "gcc's cc1".to_string(),
        }
    }
}

/// One program of the suite.
struct Program {
    name: &'static str,
    about: &'static str,
    needs: &'static [Need],
    /// Bytes of data at `--size small` and `--size full`.
    small: u64,
    full: u64,
}

const PY: Need = Need::Command("python3", "python3");
const NUMPY: Need = Need::Module("numpy", "python3-numpy");

const PROGRAMS: &[Program] = &[
    Program {
        name: "redis",
        about: "redis-server under a YCSB-B-like load: every 1000-byte record set, then as many zipfian gets (95 %) and sets",
        needs: &[Need::Command("redis-server", "redis-server"), PY],
        small: 16 << 20,
        full: 4 << 30,
    },
    Program {
        name: "memcached",
        about: "memcached (4 worker threads) under the same YCSB-B-like load",
        needs: &[Need::Command("memcached", "memcached"), PY],
        small: 16 << 20,
        full: 4 << 30,
    },
    Program {
        name: "sqlite3",
        about: "sqlite3 on a generated orders table: an aggregate, indexed lookups, range scans, updates; page cache = database",
        needs: &[Need::Command("sqlite3", "sqlite3"), PY],
        small: 4 << 20,
        full: 1 << 30,
    },
    Program {
        name: "xz",
        about: "xz -1 with a dictionary as large as its generated log-like input",
        needs: &[Need::Command("xz", "xz-utils"), PY],
        small: 1 << 20,
        full: 1 << 30,
    },
    Program {
        name: "zstd",
        about: "zstd -3 -T2 --long with a window as large as its generated input",
        needs: &[Need::Command("zstd", "zstd"), PY],
        small: 4 << 20,
        full: 1 << 30,
    },
    Program {
        name: "gcc",
        about: "cc1 -O2 on one generated translation unit (about 256 KiB of cc1's memory a function)",
        needs: &[Need::Cc1, PY],
        small: 1 << 20,
        full: 1 << 30,
    },
    Program {
        name: "dgemm",
        about: "numpy A @ B (OpenBLAS DGEMM, its threads as cores) on three n x n matrices",
        needs: &[PY, NUMPY],
        small: 4 << 20,
        full: 1 << 30,
    },
    Program {
        name: "lu",
        about: "numpy.linalg.solve: LU with partial pivoting (LAPACK dgesv), as HPL",
        needs: &[PY, NUMPY],
        small: 4 << 20,
        full: 1 << 30,
    },
    Program {
        name: "cg",
        about: "scipy.sparse.linalg.cg, 25 iterations on a random sparse SPD matrix, as NPB CG",
        needs: &[PY, NUMPY, Need::Module("scipy", "python3-scipy")],
        small: 8 << 20,
        full: 1 << 30,
    },
    Program {
        name: "bfs",
        about: "igraph BFS from 8 roots on a Graph500 Kronecker graph (A=.57, B=.19, C=.19, edge factor 16)",
        needs: &[PY, NUMPY, Need::Module("igraph", "python3-igraph")],
        small: 4 << 20,
        full: 4 << 30,
    },
    Program {
        name: "pagerank",
        about: "igraph PageRank (PRPACK) on the same Kronecker graph",
        needs: &[PY, NUMPY, Need::Module("igraph", "python3-igraph")],
        small: 4 << 20,
        full: 4 << 30,
    },
];

/// The needs of `p` that are missing here.
fn missing(p: &Program) -> Vec<Need> {
    let modules: Vec<&str> = p.needs.iter().filter_map(|n| if let Need::Module(m, _) = n { Some(*m) } else { None }).collect();
    // One interpreter start for all the modules: which of them fail to import.
    let failed_modules: Vec<String> = if modules.is_empty() || !Path::new(PYTHON).is_file() {
        modules.iter().map(|m| m.to_string()).collect()
    } else {
        let probe = format!("import importlib.util as u\nfor m in {modules:?}:\n    print(m if u.find_spec(m) is None else '')");
        match Command::new(PYTHON).args(["-c", &probe]).output() {
            Ok(o) => String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).map(String::from).collect(),
            Err(_) => modules.iter().map(|m| m.to_string()).collect(),
        }
    };
    p.needs
        .iter()
        .copied()
        .filter(|n| match *n {
            Need::Command("python3", _) => !Path::new(PYTHON).is_file(),
            Need::Command(c, _) => find_on_path(c).is_none(),
            Need::Module(m, _) => failed_modules.iter().any(|f| f == m),
            Need::Cc1 => cc1().is_none(),
        })
        .collect()
}

/// The path of GCC's cc1, if gcc is installed.
fn cc1() -> Option<String> {
    let out = Command::new("gcc").arg("-print-prog-name=cc1").output().ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    Path::new(&path).is_file().then_some(path)
}

/// `record --suite list`: the programs, their sizes and what is missing.
fn list() {
    println!("{:<10} {:>7} {:>6}  {:<40} what", "program", "small", "full", "needs (Debian packages)");
    for p in PROGRAMS {
        let mut pkgs: Vec<&str> = p.needs.iter().map(|n| n.package()).collect();
        pkgs.dedup();
        let lacking = missing(p);
        let state = if lacking.is_empty() { String::new() } else { format!(" [missing {}]", lacking.iter().map(|n| n.package()).collect::<Vec<_>>().join(", ")) };
        println!("{:<10} {:>7} {:>6}  {:<40} {}", p.name, Size(p.small).to_string(), Size(p.full).to_string(), format!("{}{state}", pkgs.join(" ")), p.about);
    }
    println!("record one: tiersim record --suite NAME [--size small|full|BYTES] [--out FILE] (docs/real-programs.md)");
}

/// A work directory that removes itself, inputs and all.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a preparation command natively; its error names the suite program.
fn prepare(name: &str, args: &[String]) -> Result<()> {
    let status = Command::new(&args[0]).args(&args[1..]).status().with_context(|| format!("record --suite {name}: cannot run {}", args[0]))?;
    if !status.success() {
        bail!("record --suite {name}: preparing the input failed ({status}): {}", args.join(" "));
    }
    Ok(())
}

/// A free TCP port on 127.0.0.1 for a recorded server.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("record --suite: cannot find a free TCP port")?;
    Ok(listener.local_addr()?.port())
}

/// The load driver beside a recorded server: waits for the recorder to start, runs
/// `load`, and stops the recorder when the load fails (a server left running would
/// keep the recording going for ever).
fn load_beside(name: &'static str, load: Vec<String>) -> Beside {
    Box::new(move |started| {
        let Ok(pid) = started.recv() else { return Ok(()) };
        let status = Command::new(&load[0]).args(&load[1..]).status();
        match status {
            Ok(s) if s.success() => Ok(()),
            failed => {
                // SAFETY: kill(2) on the recorder this process started and has not reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                let why = failed.map_or_else(|e| e.to_string(), |s| s.to_string());
                Err(anyhow!("record --suite {name}: the load driver failed ({why}); the server was stopped and no trace written"))
            }
        }
    })
}

/// `tiersim record --suite NAME [--size SIZE]`.
pub fn record(name: &str, size: Option<&str>, out: Option<PathBuf>, via: Via, sampling: Sampling) -> Result<()> {
    if name == "list" {
        list();
        return Ok(());
    }
    let Some(p) = PROGRAMS.iter().find(|p| p.name == name) else {
        bail!("--suite: unknown program `{name}` (known: {}; `--suite list` describes them)", PROGRAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "));
    };
    let (bytes, label) = match size.unwrap_or("small") {
        "small" => (p.small, "small".to_string()),
        "full" => (p.full, "full".to_string()),
        other => {
            let b = Size::parse(other).map_err(|e| anyhow!("--size: {e}, or small or full"))?.bytes();
            if b == 0 {
                bail!("--size: must be more than 0 bytes");
            }
            (b, Size(b).to_string())
        }
    };
    let lacking = missing(p);
    if !lacking.is_empty() {
        let mut pkgs: Vec<&str> = lacking.iter().map(|n| n.package()).collect();
        pkgs.dedup();
        bail!(
            "record --suite {name}: missing {}; install with: apt-get install -y {}",
            lacking.iter().map(|n| format!("{} ({})", n.describe(), n.package())).collect::<Vec<_>>().join(", "),
            pkgs.join(" ")
        );
    }
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{name}-{label}.tsim")));
    let work = WorkDir(std::env::temp_dir().join(format!("tiersim-suite-{name}-{}", std::process::id())));
    std::fs::create_dir_all(&work.0).with_context(|| format!("record --suite {name}: cannot create {}", work.0.display()))?;
    let file = |f: &str| work.0.join(f).display().to_string();
    let driver = file("driver.py");
    std::fs::write(&driver, DRIVER).with_context(|| format!("record --suite {name}: cannot write {driver}"))?;
    let size = bytes.to_string();
    let py = |args: &[&str]| -> Vec<String> { [PYTHON, &driver].iter().chain(args).map(|s| s.to_string()).collect() };
    let strings = |args: &[&str]| -> Vec<String> { args.iter().map(|s| s.to_string()).collect() };
    let started = std::time::Instant::now();
    let mut beside = None;
    let program: Vec<String> = match p.name {
        "redis" | "memcached" => {
            let port = free_port()?.to_string();
            beside = Some(load_beside(p.name, py(&[p.name, &port, &size, SEED])));
            if p.name == "redis" {
                strings(&["redis-server", "--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"])
            } else {
                // Room for the records and memcached's own overhead per item.
                let megabytes = (bytes * 3 / 2 >> 20) + 64;
                let mut args = strings(&["memcached", "-p", &port, "-l", "127.0.0.1", "-U", "0", "-t", "4", "-A", "-m", &megabytes.to_string()]);
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    // memcached refuses to run as root unless told whom to run as.
                    args.extend(strings(&["-u", "root"]));
                }
                args
            }
        }
        "sqlite3" => {
            let (db, queries) = (file("orders.db"), file("queries.sql"));
            prepare(name, &py(&["sqlite", &db, &queries, &size, SEED]))?;
            strings(&["sqlite3", &db, &format!(".read {queries}")])
        }
        "xz" => {
            let input = file("input.txt");
            prepare(name, &py(&["text", &input, &size, SEED]))?;
            // xz's dictionary: at least 4 KiB, at most 1.5 GiB.
            let dict = bytes.clamp(4 << 10, 1536 << 20);
            strings(&["xz", "-k", "-q", "-T1", &format!("--lzma2=preset=1,dict={dict}"), &input])
        }
        "zstd" => {
            let input = file("input.txt");
            prepare(name, &py(&["text", &input, &size, SEED]))?;
            // zstd's long-distance window: 2^10 to 2^31 bytes, covering the input.
            let window = (64 - (bytes.max(2) - 1).leading_zeros()).clamp(10, 31);
            strings(&["zstd", "-3", "-T2", "-q", &format!("--long={window}"), &input, "-o", &file("input.txt.zst")])
        }
        "gcc" => {
            let source = file("generated.c");
            prepare(name, &py(&["csource", &source, &size, SEED]))?;
            let cc1 = cc1().ok_or_else(|| anyhow!("record --suite gcc: gcc's cc1 not found"))?;
            vec![cc1, "-quiet".into(), "-O2".into(), source, "-o".into(), file("generated.s")]
        }
        "dgemm" | "lu" | "cg" => py(&[p.name, &size, SEED]),
        "bfs" | "pagerank" => {
            let graph = file("kronecker.npy");
            prepare(name, &py(&["kronecker", &graph, &size, SEED]))?;
            if p.name == "bfs" {
                py(&["bfs", &graph, SEED])
            } else {
                py(&["pagerank", &graph])
            }
        }
        other => unreachable!("suite program {other} has no recipe"),
    };
    let prepared = started.elapsed().as_secs_f64();
    println!("{name} at {label} ({} of data): inputs prepared in {prepared:.1} s; recording", Size(bytes));
    record_into(&program, &out, via, sampling, beside)
}
