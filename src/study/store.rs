//! The results store: one SQLite database per study, any number of sweeps in it.
//!
//! Tables:
//! - `meta`: `format` (`tiersim-sweep`), `schema` (this module's [`SCHEMA`]) and the
//!   tiersim version that created it. A database of another schema is refused.
//! - `sweeps`: per sweep its `name`, the resolved `spec` (TOML), its `axes` (a JSON
//!   list, in order) and `baseline`.
//! - `runs`: one row per run, keyed by `(sweep, key)` where `key` is the run's
//!   options as canonical JSON ([`Point::key`]). Columns: `seq` (grid position),
//!   `status` (`ok` or `failed`), `error`, `options` (JSON), `wall_seconds`,
//!   `finished` (Unix time), `report` (the whole JSON report), then one column per
//!   axis (named as the axis, e.g. `policy`, `machine.tiers.fast.capacity`) and one
//!   per summary figure (`cycles`, `ipc`, `amat_ns`, … as in the report's `summary`),
//!   added as they first appear. The report names the commit of the build that
//!   simulated the run (`sim.commit`); [`Store::finished_builds`] reads it.
//! - `claims`: the runs sweeps are simulating now, keyed by `(sweep, key)`, with the
//!   `host` and `pid` of the sweep and its last `beat` (Unix time). A table added to
//!   schema 1 without changing it: a store that lacks it gets it when a sweep opens it.
//!
//! Every run is written in one transaction, so a sweep killed at any moment leaves
//! whole rows only, and a run is in the store once whatever the number of restarts.
//!
//! Several sweeps may use one store at once. The tables are made with `IF NOT EXISTS`
//! in an immediate transaction, so sweeps started together on a new file all find it
//! made; every write waits for the others (a busy timeout). A sweep claims a run
//! before it simulates it ([`Store::claim`]), so two sweeps of one spec share the
//! runs out and each is simulated once. A claim whose process is gone (same host, no
//! such pid) or that has not beaten for [`CLAIM_STALE_S`] is free again.

use super::spec::{Point, NOT_APPLICABLE, RESERVED};
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The layout this build reads and writes; bump it when a table changes.
pub const SCHEMA: u32 = 1;
const FORMAT: &str = "tiersim-sweep";

/// Seconds after which a claim whose sweep has not beaten is free: a sweep beats
/// every [`CLAIM_BEAT_S`] while it runs, so this is a sweep that stopped without
/// releasing its claims on a host whose processes this one cannot see.
pub const CLAIM_STALE_S: f64 = 60.0;
/// Seconds between two beats of a running sweep's claims.
pub const CLAIM_BEAT_S: f64 = 10.0;

/// The tables, each made only if missing: sweeps that start together on a new file
/// each run this, one after the other.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE IF NOT EXISTS sweeps (name TEXT PRIMARY KEY, spec TEXT NOT NULL, axes TEXT NOT NULL, baseline TEXT);
     CREATE TABLE IF NOT EXISTS runs (sweep TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
         error TEXT, options TEXT NOT NULL, wall_seconds REAL, finished REAL, report TEXT,
         PRIMARY KEY (sweep, key));";
const CLAIMS: &str = "CREATE TABLE IF NOT EXISTS claims (sweep TEXT NOT NULL, key TEXT NOT NULL, host TEXT NOT NULL,
     pid INTEGER NOT NULL, beat REAL NOT NULL, PRIMARY KEY (sweep, key));";

/// What [`Store::claim`] found of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The run is this sweep's to simulate.
    Mine,
    /// Another sweep recorded it since this one started: `None` finished, or the
    /// message it failed with.
    Done(Option<String>),
    /// Another sweep, alive, is simulating it.
    Taken,
}

/// Unix time in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// This machine's host name, which claims carry beside the pid.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into the buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Whether process `pid` of this host exists (kill(2) with no signal: EPERM is
/// another user's process, alive).
fn process_exists(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill(2) only checks that the process exists.
    let sent = unsafe { libc::kill(pid, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// An open results store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Columns of `runs`.
    columns: HashSet<String>,
    /// This process's host and pid, as its claims carry them.
    host: String,
    pid: i64,
}

/// A row of `runs` as read back.
#[derive(Clone, Debug)]
pub struct StoredRun {
    pub sweep: String,
    pub key: String,
    pub seq: i64,
    pub axes: Vec<(String, String)>,
    pub error: Option<String>,
    pub report: Option<serde_json::Value>,
}

/// A sweep as recorded in `sweeps`.
#[derive(Clone, Debug)]
pub struct StoredSweep {
    pub name: String,
    pub spec: String,
    pub axes: Vec<String>,
    pub baseline: Option<String>,
}

/// A column name as an SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Store {
    /// Opens the store at `path`, creating it when `create` and it does not exist.
    /// The error names the file: not a database, not a tiersim store, or one of
    /// another schema.
    pub fn open(path: &Path, create: bool) -> Result<Store> {
        let shown = path.display();
        if !create && !path.exists() {
            bail!("{shown}: no such file");
        }
        if path.is_dir() {
            bail!("{shown}: is a directory; give a database file");
        }
        let conn = Connection::open(path).map_err(|e| anyhow!("{shown}: cannot open: {e}"))?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| anyhow!("{shown}: {e}"))?;
        let tables = |conn: &Connection| -> rusqlite::Result<Vec<String>> {
            conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        };
        let found = tables(&conn).map_err(|e| anyhow!("{shown}: not a SQLite database ({e})"))?;
        if found.is_empty() {
            if !create {
                bail!("{shown}: an empty database, not a tiersim sweep store");
            }
            // Every sweep started at once on a new file gets here: the first makes the
            // tables, the others find them made.
            conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| anyhow!("{shown}: cannot create the store: {e}"))?;
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE;
                 {TABLES}
                 {CLAIMS}
                 INSERT OR IGNORE INTO meta VALUES ('format', '{FORMAT}'), ('schema', '{SCHEMA}'), ('created_by', 'tiersim {}');
                 COMMIT;",
                env!("CARGO_PKG_VERSION")
            ))
            .map_err(|e| anyhow!("{shown}: cannot create the store: {e}"))?;
        }
        let meta = |k: &str| -> Option<String> { conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0)).ok() };
        let found = tables(&conn).map_err(|e| anyhow!("{shown}: {e}"))?;
        if !found.iter().any(|t| t == "meta") || meta("format").as_deref() != Some(FORMAT) {
            bail!("{shown}: not a tiersim sweep store (no tiersim `meta` table)");
        }
        let schema = meta("schema").unwrap_or_default();
        if schema != SCHEMA.to_string() {
            let by = meta("created_by").unwrap_or_else(|| "an unknown version".into());
            bail!("{shown}: written by {by} in store schema {schema}; this tiersim ({}) reads schema {SCHEMA}: use a new database or that version", env!("CARGO_PKG_VERSION"));
        }
        if create && !found.iter().any(|t| t == "claims") {
            // A store made before claims: the table is added, the schema unchanged.
            conn.execute_batch(CLAIMS).map_err(|e| anyhow!("{shown}: {e}"))?;
        }
        let columns = conn
            .prepare("SELECT name FROM pragma_table_info('runs')")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| anyhow!("{shown}: {e}"))?;
        Ok(Store { conn, path: path.to_path_buf(), columns, host: host_name(), pid: std::process::id() as i64 })
    }

    fn err(&self, e: rusqlite::Error) -> anyhow::Error {
        anyhow!("{}: {e}", self.path.display())
    }

    /// Records sweep `name` (its resolved spec, axes and baseline), replacing what an
    /// earlier run of the same sweep recorded.
    pub fn begin_sweep(&mut self, name: &str, spec: &str, axes: &[String], baseline: Option<&str>) -> Result<()> {
        for a in axes {
            self.add_column(a)?;
        }
        self.conn
            .execute(
                "INSERT INTO sweeps (name, spec, axes, baseline) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO UPDATE SET spec = ?2, axes = ?3, baseline = ?4",
                params![name, spec, serde_json::to_string(axes)?, baseline],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Adds column `name` to `runs` unless it is there: another sweep on the store may
    /// have added it since this one read the columns.
    fn add_column(&mut self, name: &str) -> Result<()> {
        if self.columns.contains(name) {
            return Ok(());
        }
        let shown = self.path.display().to_string();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| anyhow!("{shown}: {e}"))?;
        let columns: HashSet<String> = tx
            .prepare("SELECT name FROM pragma_table_info('runs')")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| anyhow!("{shown}: {e}"))?;
        if !columns.contains(name) {
            tx.execute(&format!("ALTER TABLE runs ADD COLUMN {}", ident(name)), []).map_err(|e| anyhow!("{shown}: {e}"))?;
        }
        tx.commit().map_err(|e| anyhow!("{shown}: {e}"))?;
        self.columns = columns;
        self.columns.insert(name.to_string());
        Ok(())
    }

    /// Claims run `key` of sweep `sweep` for this process before it is simulated, in
    /// one immediate transaction: [`Claim::Done`] when another sweep recorded it at or
    /// after `since` (this sweep's start; a run recorded before it, failed or of another
    /// build, is run again),
    /// [`Claim::Taken`] when a live sweep holds it, else the claim is this process's.
    pub fn claim(&mut self, sweep: &str, key: &str, since: f64) -> Result<Claim> {
        let shown = self.path.display().to_string();
        let e = |e: rusqlite::Error| anyhow!("{shown}: {e}");
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        let stored: Option<(String, Option<String>, Option<f64>)> = tx
            .query_row("SELECT status, error, finished FROM runs WHERE sweep = ?1 AND key = ?2", params![sweep, key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(e)?;
        // A run recorded before `since` is one this sweep chose to run again: it
        // failed, or another build simulated it (`--rerun-other-builds`).
        if let Some((status, error, finished)) = stored {
            if finished.is_some_and(|f| f >= since) {
                return Ok(Claim::Done(if status == "ok" { None } else { Some(error.unwrap_or_default()) }));
            }
        }
        let holder: Option<(String, i64, f64)> = tx
            .query_row("SELECT host, pid, beat FROM claims WHERE sweep = ?1 AND key = ?2", params![sweep, key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(e)?;
        if let Some((host, pid, beat)) = holder {
            let mine = host == self.host && pid == self.pid;
            let gone = (host == self.host && !process_exists(pid)) || unix_now() - beat > CLAIM_STALE_S;
            if !mine && !gone {
                return Ok(Claim::Taken);
            }
        }
        tx.execute("INSERT OR REPLACE INTO claims (sweep, key, host, pid, beat) VALUES (?1, ?2, ?3, ?4, ?5)", params![sweep, key, self.host, self.pid, unix_now()])
            .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(Claim::Mine)
    }

    /// Tells other sweeps that this process's claims are alive.
    pub fn beat(&mut self) -> Result<()> {
        self.conn.execute("UPDATE claims SET beat = ?1 WHERE host = ?2 AND pid = ?3", params![unix_now(), self.host, self.pid]).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Gives up this process's claims (runs it stopped, or the end of its sweep).
    pub fn release_claims(&mut self) -> Result<()> {
        self.conn.execute("DELETE FROM claims WHERE host = ?1 AND pid = ?2", params![self.host, self.pid]).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The keys of sweep `sweep`'s finished runs (failed runs are not finished: a
    /// restart runs them again).
    pub fn finished_keys(&self, sweep: &str) -> Result<HashSet<String>> {
        Ok(self.finished_builds(sweep)?.into_keys().collect())
    }

    /// Sweep `sweep`'s finished runs by key, each with the commit of the tiersim build
    /// that simulated it (its report's `sim.commit`): `None` for a run stored before
    /// reports named their commit.
    pub fn finished_builds(&self, sweep: &str) -> Result<BTreeMap<String, Option<String>>> {
        let mut s = self
            .conn
            .prepare("SELECT key, json_extract(report, '$.sim.commit') FROM runs WHERE sweep = ?1 AND status = 'ok'")
            .map_err(|e| self.err(e))?;
        let rows = s.query_map([sweep], |r| Ok((r.get(0)?, r.get(1)?))).and_then(|m| m.collect()).map_err(|e| self.err(e))?;
        Ok(rows)
    }

    /// The keys of every run of sweep `sweep` the store holds, finished or failed.
    pub fn keys(&self, sweep: &str) -> Result<HashSet<String>> {
        let mut s = self.conn.prepare("SELECT key FROM runs WHERE sweep = ?1").map_err(|e| self.err(e))?;
        let keys = s.query_map([sweep], |r| r.get(0)).and_then(|m| m.collect()).map_err(|e| self.err(e))?;
        Ok(keys)
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes point `p` of sweep `sweep`, in one transaction: `Ok(report)` as a finished
    /// run with its summary columns, `Err(message)` as a failed one; its claim goes in
    /// the same transaction.
    pub fn record(&mut self, sweep: &str, p: &Point, outcome: std::result::Result<&serde_json::Value, &str>, wall_seconds: f64) -> Result<()> {
        use rusqlite::types::Value as Sql;
        let finished = unix_now();
        let (status, error, report) = match outcome {
            Ok(r) => ("ok", Sql::Null, Sql::Text(serde_json::to_string(r)?)),
            Err(m) => ("failed", Sql::Text(m.to_string()), Sql::Null),
        };
        let mut columns: Vec<(String, Sql)> = vec![
            ("sweep".into(), Sql::Text(sweep.into())),
            ("key".into(), Sql::Text(p.key())),
            ("seq".into(), Sql::Integer(p.seq as i64)),
            ("status".into(), Sql::Text(status.into())),
            ("error".into(), error),
            ("options".into(), Sql::Text(serde_json::to_string(&p.options)?)),
            ("wall_seconds".into(), Sql::Real(wall_seconds)),
            ("finished".into(), Sql::Real(finished)),
            ("report".into(), report),
        ];
        // Axis and summary columns follow the fixed ones, added to the table as they appear.
        let fixed = columns.len();
        columns.extend(p.axes.iter().map(|(k, v)| (k.clone(), Sql::Text(v.clone()))));
        if let Ok(r) = outcome {
            let summary = r.get("summary").and_then(|s| s.as_object()).ok_or_else(|| anyhow!("the report has no summary"))?;
            for (k, v) in summary.iter().filter(|(k, _)| !RESERVED.contains(&k.as_str())) {
                let value = match v {
                    serde_json::Value::Number(n) => n.as_i64().map_or_else(|| Sql::Real(n.as_f64().unwrap_or(f64::NAN)), Sql::Integer),
                    serde_json::Value::Null => Sql::Null,
                    other => Sql::Text(other.to_string()),
                };
                columns.push((k.clone(), value));
            }
        }
        for (name, _) in &columns[fixed..] {
            self.add_column(name)?;
        }
        let sql = format!(
            "INSERT OR REPLACE INTO runs ({}) VALUES ({})",
            columns.iter().map(|(n, _)| ident(n)).collect::<Vec<_>>().join(", "),
            (1..=columns.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
        );
        let shown = self.path.display().to_string();
        let key = p.key();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| anyhow!("{shown}: {e}"))?;
        tx.execute(&sql, rusqlite::params_from_iter(columns.into_iter().map(|(_, v)| v))).map_err(|e| anyhow!("{shown}: {e}"))?;
        tx.execute("DELETE FROM claims WHERE sweep = ?1 AND key = ?2", params![sweep, key]).map_err(|e| anyhow!("{shown}: {e}"))?;
        tx.commit().map_err(|e| anyhow!("{shown}: {e}"))
    }

    /// Sets the grid position of the runs already stored, after a spec changed.
    pub fn renumber(&mut self, sweep: &str, points: &[Point]) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| anyhow!("{}: {e}", self.path.display()))?;
        for p in points {
            tx.execute("UPDATE runs SET seq = ?1 WHERE sweep = ?2 AND key = ?3", params![p.seq as i64, sweep, p.key()])
                .map_err(|e| anyhow!("{}: {e}", self.path.display()))?;
        }
        tx.commit().map_err(|e| anyhow!("{}: {e}", self.path.display()))
    }

    /// The sweeps in the store, by name.
    pub fn sweeps(&self) -> Result<Vec<StoredSweep>> {
        let mut s = self.conn.prepare("SELECT name, spec, axes, baseline FROM sweeps ORDER BY name").map_err(|e| self.err(e))?;
        let rows: Vec<(String, String, String, Option<String>)> =
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).and_then(|m| m.collect()).map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|(name, spec, axes, baseline)| {
                let axes = serde_json::from_str(&axes).with_context(|| format!("{}: sweep {name}: bad axes", self.path.display()))?;
                Ok(StoredSweep { name, spec, axes, baseline })
            })
            .collect()
    }

    /// The runs of sweep `sweep` in grid order, with their reports.
    pub fn runs(&self, sweep: &StoredSweep) -> Result<Vec<StoredRun>> {
        let mut s = self
            .conn
            .prepare("SELECT key, seq, status, error, options, report FROM runs WHERE sweep = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        type Row = (String, i64, String, Option<String>, String, Option<String>);
        let rows: Vec<Row> = s
            .query_map([&sweep.name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
            .and_then(|m| m.collect())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for (key, seq, status, error, options, report) in rows {
            let options: BTreeMap<String, String> = serde_json::from_str(&options).with_context(|| format!("{}: run {key}: bad options", self.path.display()))?;
            let axes = sweep.axes.iter().map(|a| (a.clone(), options.get(a).map_or_else(|| NOT_APPLICABLE.to_string(), |v| shown(v)))).collect();
            let report = match (&*status, report) {
                ("ok", Some(r)) => Some(serde_json::from_str(&r).with_context(|| format!("{}: run {key}: bad report", self.path.display()))?),
                _ => None,
            };
            out.push(StoredRun { sweep: sweep.name.clone(), key, seq, axes, error: if status == "ok" { None } else { Some(error.unwrap_or_default()) }, report });
        }
        Ok(out)
    }

    /// Sweep `name`, or the only sweep of the store when `name` is `None`.
    pub fn sweep(&self, name: Option<&str>) -> Result<StoredSweep> {
        let all = self.sweeps()?;
        let names = || all.iter().map(|s| s.name.clone()).collect::<Vec<_>>().join(", ");
        match name {
            Some(n) => all.iter().find(|s| s.name == n).cloned().ok_or_else(|| anyhow!("{}: no sweep named {n} (it has: {})", self.path.display(), names())),
            None if all.len() == 1 => Ok(all[0].clone()),
            None if all.is_empty() => bail!("{}: holds no sweep yet", self.path.display()),
            None => bail!("{}: holds several sweeps ({}); name one with --sweep", self.path.display(), names()),
        }
    }

    /// The finished runs of sweep `sweep` in which the policy never acted (their
    /// report's `never_acted`), in grid order: key and the report's note.
    pub fn never_acted(&self, sweep: &str) -> Result<Vec<(String, String)>> {
        let mut s = self
            .conn
            .prepare(
                "SELECT key, note FROM (SELECT key, seq, json_extract(report, '$.never_acted') AS note FROM runs WHERE sweep = ?1 AND status = 'ok') WHERE note IS NOT NULL ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let rows = s.query_map([sweep], |r| Ok((r.get(0)?, r.get(1)?))).and_then(|m| m.collect()).map_err(|e| self.err(e))?;
        Ok(rows)
    }

    /// Whether a run with `key` of sweep `sweep` is stored, and its status.
    pub fn status(&self, sweep: &str, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT status FROM runs WHERE sweep = ?1 AND key = ?2", params![sweep, key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }
}

impl StoredRun {
    /// The run as the HTML report takes it.
    pub fn into_sweep_run(self) -> crate::report::html::SweepRun {
        crate::report::html::SweepRun { axes: self.axes, error: self.error, report: self.report }
    }
}

/// An option value as shown: a quoted TOML string without its quotes.
fn shown(value: &str) -> String {
    match toml::from_str::<toml::Table>(&format!("v = {value}")).ok().and_then(|mut t| t.remove("v")) {
        Some(toml::Value::String(s)) => s,
        _ => value.to_string(),
    }
}
