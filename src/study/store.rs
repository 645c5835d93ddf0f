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
//!   added as they first appear.
//!
//! Every run is written in one transaction, so a sweep killed at any moment leaves
//! whole rows only, and a run is in the store once whatever the number of restarts.

use super::spec::{Point, NOT_APPLICABLE, RESERVED};
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The layout this build reads and writes; bump it when a table changes.
pub const SCHEMA: u32 = 1;
const FORMAT: &str = "tiersim-sweep";

/// An open results store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Columns of `runs`.
    columns: HashSet<String>,
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
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| anyhow!("{shown}: not a SQLite database ({e})"))?;
        if tables.is_empty() {
            if !create {
                bail!("{shown}: an empty database, not a tiersim sweep store");
            }
            conn.execute_batch(&format!(
                "PRAGMA journal_mode = WAL;
                 BEGIN;
                 CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('format', '{FORMAT}'), ('schema', '{SCHEMA}'), ('created_by', 'tiersim {}');
                 CREATE TABLE sweeps (name TEXT PRIMARY KEY, spec TEXT NOT NULL, axes TEXT NOT NULL, baseline TEXT);
                 CREATE TABLE runs (sweep TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
                     error TEXT, options TEXT NOT NULL, wall_seconds REAL, finished REAL, report TEXT,
                     PRIMARY KEY (sweep, key));
                 COMMIT;",
                env!("CARGO_PKG_VERSION")
            ))
            .map_err(|e| anyhow!("{shown}: cannot create the store: {e}"))?;
        } else {
            let meta = |k: &str| -> Option<String> { conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0)).ok() };
            if !tables.iter().any(|t| t == "meta") || meta("format").as_deref() != Some(FORMAT) {
                bail!("{shown}: not a tiersim sweep store (no tiersim `meta` table)");
            }
            let schema = meta("schema").unwrap_or_default();
            if schema != SCHEMA.to_string() {
                let by = meta("created_by").unwrap_or_else(|| "an unknown version".into());
                bail!("{shown}: written by {by} in store schema {schema}; this tiersim ({}) reads schema {SCHEMA}: use a new database or that version", env!("CARGO_PKG_VERSION"));
            }
        }
        let columns = conn
            .prepare("SELECT name FROM pragma_table_info('runs')")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| anyhow!("{shown}: {e}"))?;
        Ok(Store { conn, path: path.to_path_buf(), columns })
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

    fn add_column(&mut self, name: &str) -> Result<()> {
        if self.columns.contains(name) {
            return Ok(());
        }
        self.conn.execute(&format!("ALTER TABLE runs ADD COLUMN {}", ident(name)), []).map_err(|e| self.err(e))?;
        self.columns.insert(name.to_string());
        Ok(())
    }

    /// The keys of sweep `sweep`'s finished runs (failed runs are not finished: a
    /// restart runs them again).
    pub fn finished_keys(&self, sweep: &str) -> Result<HashSet<String>> {
        let mut s = self.conn.prepare("SELECT key FROM runs WHERE sweep = ?1 AND status = 'ok'").map_err(|e| self.err(e))?;
        let keys = s.query_map([sweep], |r| r.get(0)).and_then(|m| m.collect()).map_err(|e| self.err(e))?;
        Ok(keys)
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
    /// run with its summary columns, `Err(message)` as a failed one.
    pub fn record(&mut self, sweep: &str, p: &Point, outcome: std::result::Result<&serde_json::Value, &str>, wall_seconds: f64) -> Result<()> {
        use rusqlite::types::Value as Sql;
        let finished = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
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
        let tx = self.conn.transaction().map_err(|e| anyhow!("{shown}: {e}"))?;
        tx.execute(&sql, rusqlite::params_from_iter(columns.into_iter().map(|(_, v)| v))).map_err(|e| anyhow!("{shown}: {e}"))?;
        tx.commit().map_err(|e| anyhow!("{shown}: {e}"))
    }

    /// Sets the grid position of the runs already stored, after a spec changed.
    pub fn renumber(&mut self, sweep: &str, points: &[Point]) -> Result<()> {
        let tx = self.conn.transaction().map_err(|e| anyhow!("{}: {e}", self.path.display()))?;
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
