//! A sweep's specification: the options every run shares and the axes whose values
//! are crossed, read from a TOML file (`tiersim sweep SPEC.toml`) or built from
//! flags, and expanded into the grid of [`Point`]s.
//!
//! ```toml
//! name = "kv-policies"          # optional: the file's stem
//! db = "kv-policies.db"         # optional: the spec's path with `.db`
//! baseline = "first-touch"      # optional: the policy reports normalise to
//!
//! [run]                          # what every run shares, as `tiersim run` takes it
//! preset = "cxl"
//! workload = "kv"
//! footprint = "1GiB"
//! refs = 10_000_000
//! set = { "machine.tiers.fast.capacity" = "25%" }
//!
//! [axes]                         # crossed, first axis outermost
//! policy = ["first-touch", "tpp", "thermostat"]
//! seed = [1, 2]
//! "machine.tiers.fast.capacity" = ["12.5%", "25%"]
//! ```
//!
//! Keys are the run options `preset`, `config`, `policy`, `workload`, `footprint`,
//! `refs`, `seed`, `mode`, `tenant_kind`, `mix`, `tenants`, `trace`, `format`,
//! `verify`, or any configuration key by its dotted `--set` path. A run is identified by all its
//! options together ([`Point::key`]), so the same run reached from two specs, or
//! from a spec and from flags, is the same row of the store.

use crate::cli::ConfigArgs;
use crate::config::Config;
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Value;

/// The run options a spec may name besides dotted configuration paths: name and
/// what its value is.
pub const OPTIONS: &[(&str, &str)] = &[
    ("preset", "a built-in preset"),
    ("config", "a TOML configuration file"),
    ("policy", "the policy"),
    ("workload", "a synthetic workload"),
    ("footprint", "the workload's footprint, e.g. 1GiB"),
    ("refs", "references to simulate"),
    ("seconds", "simulated seconds to run (without refs, the references are then not limited)"),
    ("seed", "the random seed"),
    ("mode", "detailed, sampled or epochs"),
    ("tenant_kind", "process or vm: the kind of tenant the single workload runs in"),
    ("mix", "one workload per core, e.g. \"gups,zipf\""),
    ("tenants", "one tenant per core, e.g. \"vm:kv:25%,vm:stream:25%\""),
    ("trace", "trace files, one per core"),
    ("format", "the traces' format"),
    ("verify", "shadow-memory verification (true or false)"),
];

/// Options whose value is a list (a TOML array, or one string with commas).
const LISTS: &[&str] = &["mix", "tenants", "trace"];

/// Columns of the store's `runs` table that an axis must not shadow.
pub const RESERVED: &[&str] = &["sweep", "key", "seq", "status", "error", "options", "wall_seconds", "finished", "report"];

/// The value shown on a `policy.<name>.…` axis for a run of another policy (the
/// report, a layer below, defines it).
pub(crate) use crate::report::html::NOT_APPLICABLE;

/// One run of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Its position in the grid (first axis outermost).
    pub seq: usize,
    /// Its value on each axis, in the spec's axis order, as text (`tpp`, `25%`, `1`).
    pub axes: Vec<(String, String)>,
    /// Every option of the run: option name or dotted path → value (a dotted path's
    /// value is a TOML literal, e.g. `"25%"` with its quotes, or `3`).
    pub options: BTreeMap<String, String>,
}

impl Point {
    /// The run's identity in the store: its options as canonical JSON.
    pub fn key(&self) -> String {
        serde_json::to_string(&self.options).expect("strings serialize")
    }

    /// The run's options as the command line's.
    pub fn config_args(&self) -> Result<ConfigArgs> {
        config_args(&self.options)
    }

    /// Whether the run verifies every read (`verify = true`).
    pub fn verify(&self) -> bool {
        self.options.get("verify").is_some_and(|v| v == "true")
    }

    /// The run's configuration; the error names the point by its axis values.
    pub fn config(&self) -> Result<Config> {
        self.config_args().and_then(|a| a.load()).with_context(|| format!("run {}", self.label()))
    }

    /// The axis values as `policy=tpp seed=1` (`(no axes)` for a one-run sweep).
    pub fn label(&self) -> String {
        axes_label(&self.axes)
    }
}

/// A run's values on its sweep's axes as `policy=tpp seed=1` (`(no axes)` for a
/// one-run sweep).
pub fn axes_label(axes: &[(String, String)]) -> String {
    if axes.is_empty() {
        return "(no axes)".into();
    }
    axes.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Builds the command line's options from a run's `options`.
pub fn config_args(options: &BTreeMap<String, String>) -> Result<ConfigArgs> {
    let mut a = ConfigArgs::default();
    let list = |v: &str| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect::<Vec<_>>();
    for (k, v) in options {
        match k.as_str() {
            "preset" => a.preset = Some(v.clone()),
            "config" => a.config = Some(PathBuf::from(v)),
            "policy" => a.policy = Some(v.clone()),
            "workload" => a.workload = Some(v.clone()),
            "footprint" => a.footprint = Some(v.clone()),
            "refs" => a.refs = Some(v.clone()),
            "seconds" => a.seconds = Some(v.clone()),
            "seed" => a.seed = Some(v.clone()),
            "mode" => a.mode = Some(v.clone()),
            // A top-level configuration key: its path has no dot to mark it as one.
            "tenant_kind" => a.sets.push(format!("tenant_kind={}", Value::String(v.clone()))),
            "mix" => a.mix = list(v),
            "tenants" => a.tenants = list(v),
            "trace" => a.traces = list(v),
            "format" => a.format = Some(v.clone()),
            "verify" => {}
            path if path.contains('.') => a.sets.push(format!("{path}={v}")),
            other => bail!("`{other}`: not a run option ({}) nor a dotted configuration path", option_names()),
        }
    }
    Ok(a)
}

fn option_names() -> String {
    OPTIONS.iter().map(|o| o.0).collect::<Vec<_>>().join(", ")
}

/// A sweep: its name, where its results go, the options every run shares and the axes.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub name: String,
    /// The results store (a SQLite database).
    pub db: Option<PathBuf>,
    /// The policy reports normalise to.
    pub baseline: Option<String>,
    /// Options every run shares (as in [`Point::options`]).
    pub base: BTreeMap<String, String>,
    /// Axis name → its values: (text shown, option value), in the spec's order.
    pub axes: Vec<(String, Vec<(String, String)>)>,
}

/// The option value and the text shown for `value` under option `key`; `at` names
/// the place in the spec for errors.
fn option_value(key: &str, value: &Value, at: &str) -> Result<(String, String)> {
    if key.contains('.') {
        // A configuration path: the value goes to `--set` as a TOML literal.
        let shown = match value {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        return Ok((shown, value.to_string()));
    }
    if !OPTIONS.iter().any(|o| o.0 == key) {
        bail!("{at}: `{key}` is not a run option ({}) nor a dotted configuration path", option_names());
    }
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Integer(i) if *i >= 0 => i.to_string(),
        Value::Integer(i) => bail!("{at}: `{key}` must not be negative, got {i}"),
        Value::Boolean(b) if key == "verify" => b.to_string(),
        Value::Float(x) if key == "seconds" => format!("{x:?}"),
        Value::Array(items) if LISTS.contains(&key) => items
            .iter()
            .map(|i| i.as_str().map(String::from).ok_or_else(|| anyhow!("{at}: `{key}` lists strings, got {i}")))
            .collect::<Result<Vec<_>>>()?
            .join(","),
        v => bail!(
            "{at}: `{key}` takes {}, got {v}",
            match key {
                "verify" => "true or false",
                "seconds" => "a number of seconds",
                _ => "a string or a whole number",
            }
        ),
    };
    if key == "verify" && text != "true" && text != "false" {
        bail!("{at}: `verify` takes true or false, got {text}");
    }
    Ok((text.clone(), text))
}

/// The option value of `--axis`/`--set`-style text `text` under option `key`: text
/// is read as a TOML value where it is one (`3`, `true`, `"a"`), else as a string.
pub fn option_value_from_text(key: &str, text: &str, at: &str) -> Result<(String, String)> {
    let value = match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(text.into())),
        Err(_) => Value::String(text.into()),
    };
    let value = match (key.contains('.'), &value) {
        // A run option given as text stays text (`refs=1e6` is not a float here).
        (false, Value::Float(_)) => Value::String(text.into()),
        _ => value,
    };
    option_value(key, &value, at)
}

/// Checks that no two of an axis's `values` give a run the same option value (`tpp`
/// twice, or `1` and `"1"`): the grid would hold the run once, not as many times as
/// the spec lists it.
fn check_distinct(values: &[(String, String)], at: &str) -> Result<()> {
    for (i, (shown, value)) in values.iter().enumerate() {
        if let Some(j) = values[..i].iter().position(|v| v.1 == *value) {
            bail!("{at}: values {} and {} are both `{shown}`; give each value once", j + 1, i + 1);
        }
    }
    Ok(())
}

/// The error for spec `text` (named `origin`) that is not TOML: `origin:LINE:COLUMN:
/// message`, on one line.
fn toml_error(origin: &str, text: &str, e: &toml::de::Error) -> anyhow::Error {
    let message = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            anyhow!("{origin}:{line}:{column}: {message}")
        }
        None => anyhow!("{origin}: {message}"),
    }
}

/// Checks that `name` can be an axis (a column of the store).
fn check_axis_name(name: &str, at: &str) -> Result<()> {
    if RESERVED.contains(&name) {
        bail!("{at}: `{name}` cannot be an axis (it names a column of the store)");
    }
    Ok(())
}

impl Spec {
    /// Reads the spec file at `path`.
    pub fn read(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "sweep".into());
        let mut spec = Spec::parse(&text, &path.display().to_string(), &stem)?;
        if spec.db.is_none() {
            spec.db = Some(path.with_extension("db"));
        } else if let Some(db) = spec.db.take() {
            // A relative `db` is relative to the spec's folder.
            spec.db = Some(if db.is_relative() { path.parent().unwrap_or(Path::new("")).join(db) } else { db });
        }
        Ok(spec)
    }

    /// Parses spec `text`; `origin` names it in errors, `default_name` is the sweep's
    /// name when the text gives none.
    pub fn parse(text: &str, origin: &str, default_name: &str) -> Result<Spec> {
        let root: toml::Table = toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
        let mut spec = Spec { name: default_name.to_string(), ..Default::default() };
        for (k, v) in &root {
            let at = format!("{origin}: {k}");
            match (k.as_str(), v) {
                ("name", Value::String(s)) => spec.name = s.clone(),
                ("db", Value::String(s)) => spec.db = Some(PathBuf::from(s)),
                ("baseline", Value::String(s)) => spec.baseline = Some(s.clone()),
                ("name" | "db" | "baseline", v) => bail!("{at}: expected a string, got {v}"),
                ("run", Value::Table(t)) => {
                    for (key, value) in t {
                        if key == "set" {
                            let Value::Table(sets) = value else { bail!("{origin}: run.set: expected a table of dotted paths") };
                            for (path, v) in sets {
                                if !path.contains('.') {
                                    bail!("{origin}: run.set.{path}: expected a dotted configuration path");
                                }
                                spec.base.insert(path.clone(), option_value(path, v, &format!("{origin}: run.set"))?.1);
                            }
                        } else {
                            spec.base.insert(key.clone(), option_value(key, value, &format!("{origin}: run"))?.1);
                        }
                    }
                }
                ("axes", Value::Table(t)) => {
                    for (key, values) in t {
                        let at = format!("{origin}: axes.{key}");
                        check_axis_name(key, &at)?;
                        if !key.contains('.') && !OPTIONS.iter().any(|o| o.0 == key) {
                            bail!("{at}: `{key}` is not a run option ({}) nor a dotted configuration path", option_names());
                        }
                        let Value::Array(items) = values else { bail!("{at}: expected a list of values") };
                        if items.is_empty() {
                            bail!("{at}: an axis needs at least one value");
                        }
                        let vals = items.iter().map(|v| option_value(key, v, &at)).collect::<Result<Vec<_>>>()?;
                        check_distinct(&vals, &at)?;
                        spec.axes.push((key.clone(), vals));
                    }
                }
                ("run" | "axes", _) => bail!("{at}: expected a table"),
                _ => bail!("{at}: unknown key (expected name, db, baseline, [run], [axes])"),
            }
        }
        // The axes keep the file's order (the first is outermost), which the
        // table above does not remember.
        if let Ok(doc) = text.parse::<toml_edit::DocumentMut>() {
            if let Some(t) = doc.get("axes").and_then(|a| a.as_table_like()) {
                let order: Vec<String> = t.iter().map(|(k, _)| k.to_string()).collect();
                spec.axes.sort_by_key(|(k, _)| order.iter().position(|o| o == k));
            }
        }
        spec.check()?;
        Ok(spec)
    }

    /// Adds an axis from `--axis KEY=V1,V2,…`.
    pub fn add_axis_text(&mut self, text: &str) -> Result<()> {
        let at = format!("--axis {text}");
        let (key, values) = text.split_once('=').ok_or_else(|| anyhow!("{at}: expected KEY=V1,V2,…"))?;
        let key = key.trim();
        check_axis_name(key, &at)?;
        if self.axes.iter().any(|(k, _)| k == key) {
            bail!("{at}: the axis `{key}` is given twice");
        }
        let vals = values.split(',').map(str::trim).filter(|v| !v.is_empty()).map(|v| option_value_from_text(key, v, &at)).collect::<Result<Vec<_>>>()?;
        if vals.is_empty() {
            bail!("{at}: an axis needs at least one value");
        }
        check_distinct(&vals, &at)?;
        self.axes.push((key.to_string(), vals));
        self.check()
    }

    /// Checks that no option is both shared and an axis, and that no axis is given
    /// twice.
    pub fn check(&self) -> Result<()> {
        for (k, _) in &self.axes {
            if self.base.contains_key(k) {
                bail!("`{k}`: is both an axis and an option of every run; keep one");
            }
            if self.axes.iter().filter(|(o, _)| o == k).count() > 1 {
                bail!("axes.{k}: given twice");
            }
        }
        Ok(())
    }

    /// Checks that the baseline, when the sweep has one and a policy axis, is one of
    /// that axis's policies.
    pub fn check_baseline(&self) -> Result<()> {
        let Some(b) = &self.baseline else { return Ok(()) };
        let policies: Vec<&str> = self.axes.iter().filter(|a| a.0 == "policy").flat_map(|a| a.1.iter().map(|v| v.0.as_str())).collect();
        if !policies.is_empty() && !policies.contains(&b.as_str()) {
            bail!("baseline: `{b}` is not a value of the policy axis ({})", policies.join(", "));
        }
        Ok(())
    }

    /// The grid: every combination of axis values, first axis outermost.
    pub fn points(&self) -> Vec<Point> {
        let mut points = vec![Point { seq: 0, axes: Vec::new(), options: self.base.clone() }];
        for (name, values) in &self.axes {
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |(shown, value)| {
                        let mut q = p.clone();
                        q.axes.push((name.clone(), shown.clone()));
                        q.options.insert(name.clone(), value.clone());
                        q
                    })
                })
                .collect();
        }
        // A policy reads only its own `policy.<name>` table: another policy's
        // parameters are dropped from a run, so that crossing `policy` with one
        // policy's parameter runs every other policy once.
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for mut p in points {
            if let Some(policy) = p.options.get("policy").cloned() {
                let foreign = |k: &str| k.strip_prefix("policy.").is_some_and(|rest| rest.split('.').next() != Some(policy.as_str()));
                p.options.retain(|k, _| !foreign(k));
                for (k, v) in p.axes.iter_mut() {
                    if foreign(k) {
                        *v = NOT_APPLICABLE.to_string();
                    }
                }
            }
            if seen.insert(p.key()) {
                out.push(p);
            }
        }
        for (i, p) in out.iter_mut().enumerate() {
            p.seq = i;
        }
        out
    }

    /// How `other` differs from this spec in its shared options and its axes, one
    /// item per option or axis (`refs 300000 → 200000`, `axis seed [1, 2] → [1]`).
    pub fn differences(&self, other: &Spec) -> Vec<String> {
        let none = "(none)".to_string();
        let mut out = Vec::new();
        let keys: std::collections::BTreeSet<&String> = self.base.keys().chain(other.base.keys()).collect();
        for k in keys {
            let (a, b) = (self.base.get(k), other.base.get(k));
            if a != b {
                out.push(format!("{k} {} → {}", a.unwrap_or(&none), b.unwrap_or(&none)));
            }
        }
        let shown = |s: &Spec, k: &str| match s.axes.iter().find(|a| a.0 == k) {
            Some((_, v)) => format!("[{}]", v.iter().map(|x| x.0.as_str()).collect::<Vec<_>>().join(", ")),
            None => none.clone(),
        };
        let names = self.axes.iter().chain(&other.axes).map(|a| a.0.as_str());
        let mut seen = std::collections::HashSet::new();
        for k in names.filter(|k| seen.insert(*k)) {
            let (a, b) = (shown(self, k), shown(other, k));
            if a != b {
                out.push(format!("axis {k} {a} → {b}"));
            }
        }
        out
    }

    /// The axis names, in order.
    pub fn axis_names(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.0.clone()).collect()
    }

    /// Loads every point's configuration and opens its traces, so that an unknown
    /// key, policy or preset, or a missing trace, stops the sweep before any run
    /// starts (and before its store is made); the error names the run and the key or
    /// file.
    pub fn check_runs(&self, points: &[Point]) -> Result<()> {
        for p in points {
            let cfg = p.config()?;
            for slot in cfg.slots().with_context(|| format!("run {}", p.label()))? {
                let Some(t) = slot.trace.filter(|t| t.path != "-") else { continue };
                if let Err(e) = std::fs::File::open(&t.path) {
                    bail!("run {}: trace {}: cannot open: {}", p.label(), t.path, crate::cli::output::io_reason(&e));
                }
            }
        }
        Ok(())
    }

    /// The spec as TOML with everything resolved (flags included): what the store
    /// keeps, and what `tiersim report` shows as the sweep's configuration.
    pub fn to_toml(&self) -> String {
        let mut out = format!("name = {}\n", Value::String(self.name.clone()));
        if let Some(b) = &self.baseline {
            out += &format!("baseline = {}\n", Value::String(b.clone()));
        }
        out += "\n[run]\n";
        let mut sets = Vec::new();
        for (k, v) in &self.base {
            if k.contains('.') {
                sets.push(format!("{} = {v}", Value::String(k.clone())));
            } else {
                out += &format!("{k} = {}\n", shorthand_literal(k, v));
            }
        }
        if !sets.is_empty() {
            out += &format!("set = {{ {} }}\n", sets.join(", "));
        }
        out += "\n[axes]\n";
        for (k, values) in &self.axes {
            let vals: Vec<String> = values.iter().map(|(_, v)| if k.contains('.') { v.clone() } else { shorthand_literal(k, v) }).collect();
            let key = if k.contains('.') { Value::String(k.clone()).to_string() } else { k.clone() };
            out += &format!("{key} = [{}]\n", vals.join(", "));
        }
        out
    }
}

/// A run option's value as a TOML literal (`verify` stays a boolean).
fn shorthand_literal(key: &str, value: &str) -> String {
    if key == "verify" {
        value.to_string()
    } else {
        Value::String(value.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
        name = "t"
        baseline = "first-touch"
        [run]
        workload = "kv"
        footprint = "64MiB"
        refs = 1000
        set = { "machine.tiers.fast.capacity" = "25%" }
        [axes]
        policy = ["first-touch", "tpp"]
        seed = [1, 2, 3]
        "engine.epoch_cycles" = [1000000, 2000000]
    "#;

    #[test]
    fn the_grid_crosses_the_axes_first_outermost() {
        let s = Spec::parse(SPEC, "t.toml", "x").unwrap();
        let pts = s.points();
        // 2 policies × 3 seeds × 2 epoch lengths.
        assert_eq!(pts.len(), 12);
        assert_eq!(pts[0].label(), "policy=first-touch seed=1 engine.epoch_cycles=1000000");
        assert_eq!(pts[1].label(), "policy=first-touch seed=1 engine.epoch_cycles=2000000");
        assert_eq!(pts[11].label(), "policy=tpp seed=3 engine.epoch_cycles=2000000");
        assert_eq!(pts[11].seq, 11);
        let keys: std::collections::BTreeSet<String> = pts.iter().map(Point::key).collect();
        assert_eq!(keys.len(), 12, "every run has its own key");
        let a = pts[4].config_args().unwrap();
        assert_eq!(a.policy.as_deref(), Some("first-touch"));
        assert!(a.sets.contains(&"machine.tiers.fast.capacity=\"25%\"".to_string()), "{:?}", a.sets);
        assert!(a.sets.contains(&"engine.epoch_cycles=1000000".to_string()), "{:?}", a.sets);
        assert_eq!(pts[4].config().unwrap().workload.seed, 3);
    }

    #[test]
    fn flags_and_file_give_the_same_keys() {
        let file = Spec::parse(SPEC, "t.toml", "x").unwrap();
        let mut flags = Spec::parse(
            "[run]\nworkload = \"kv\"\nfootprint = \"64MiB\"\nrefs = 1000\nset = { \"machine.tiers.fast.capacity\" = \"25%\" }\n",
            "flags",
            "x",
        )
        .unwrap();
        for a in ["policy=first-touch,tpp", "seed=1,2,3", "engine.epoch_cycles=1000000,2000000"] {
            flags.add_axis_text(a).unwrap();
        }
        let k = |s: &Spec| s.points().iter().map(Point::key).collect::<Vec<_>>();
        assert_eq!(k(&file), k(&flags));
        let again = Spec::parse(&file.to_toml(), "resolved", "x").unwrap();
        assert_eq!(k(&again), k(&file), "the resolved TOML describes the same runs:\n{}", file.to_toml());
    }

    #[test]
    fn another_policys_parameters_do_not_multiply_its_runs() {
        let s = Spec::parse(
            "[axes]\npolicy = [\"all-fast\", \"thermostat\"]\n\"policy.thermostat.tolerable_slowdown_pct\" = [3, 6, 10]",
            "t",
            "x",
        )
        .unwrap();
        let labels: Vec<String> = s.points().iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "policy=all-fast policy.thermostat.tolerable_slowdown_pct=-",
                "policy=thermostat policy.thermostat.tolerable_slowdown_pct=3",
                "policy=thermostat policy.thermostat.tolerable_slowdown_pct=6",
                "policy=thermostat policy.thermostat.tolerable_slowdown_pct=10",
            ]
        );
        assert_eq!(s.points()[3].seq, 3);
        assert!(!s.points()[0].options.contains_key("policy.thermostat.tolerable_slowdown_pct"));
    }

    #[test]
    fn tenant_kind_puts_the_single_workload_in_a_vm() {
        let s = Spec::parse("[run]\ntenant_kind = \"vm\"\nworkload = \"kv\"\nfootprint = \"64MiB\"", "t", "x").unwrap();
        let p = &s.points()[0];
        assert_eq!(p.config().unwrap().tenant_kind, crate::machine::space::TenantKind::Vm);
        let again = Spec::parse(&s.to_toml(), "resolved", "x").unwrap();
        assert_eq!(again.points()[0].key(), p.key(), "the resolved TOML describes the same run:\n{}", s.to_toml());
    }

    #[test]
    fn bad_specs_name_what_is_wrong() {
        let err = |t: &str| Spec::parse(t, "s.toml", "x").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err("[axes]\npolcy = [\"a\"]").contains("s.toml: axes.polcy: `polcy` is not a run option"), "{}", err("[axes]\npolcy = [\"a\"]"));
        assert!(err("[axes]\npolicy = []").contains("at least one value"));
        assert!(err("[axes]\npolicy = \"tpp\"").contains("expected a list"));
        assert!(err("[axes]\nstatus = [1]").contains("cannot be an axis"));
        assert!(err("[run]\npolicy = \"tpp\"\n[axes]\npolicy = [\"lru\"]").contains("both an axis and an option"));
        assert!(err("runs = 3").contains("s.toml: runs: unknown key"));
        assert!(err("[run]\nrefs = 1.5").contains("a string or a whole number"));
        assert!(err("[run]\nseconds = true").contains("`seconds` takes a number of seconds"));
        assert!(err("[run\n").starts_with("s.toml:"));
        assert_eq!(err("[run]\nworkload = \"kv\"\n[axes\nseed = [1]\n"), "s.toml:3:6: invalid table header; expected `.`, `]`");
        assert_eq!(err("[run]\nrefs = -1"), "s.toml: run: `refs` must not be negative, got -1");
        assert_eq!(err("[axes]\npolicy = [\"tpp\", \"lru\", \"tpp\"]"), "s.toml: axes.policy: values 1 and 3 are both `tpp`; give each value once");
        assert_eq!(err("[axes]\nseed = [1, \"1\"]"), "s.toml: axes.seed: values 1 and 2 are both `1`; give each value once");
        let mut flags = Spec::default();
        let e = flags.add_axis_text("seed=1,2,1").unwrap_err().to_string();
        assert_eq!(e, "--axis seed=1,2,1: values 1 and 3 are both `1`; give each value once");
        let s = Spec::parse("[axes]\npolicy = [\"nope\"]", "s.toml", "x").unwrap();
        let e = format!("{:#}", s.check_runs(&s.points()).unwrap_err());
        assert!(e.contains("run policy=nope") && e.contains("unknown policy `nope`"), "{e}");
        let s = Spec::parse("[axes]\n\"machine.nope\" = [1]", "s.toml", "x").unwrap();
        let e = format!("{:#}", s.check_runs(&s.points()).unwrap_err());
        assert!(e.contains("machine.nope") && e.contains("unknown field"), "{e}");
    }
}
