//! `tiersim reproduce PAPER [--quick]`: a paper's documented matrix of runs as
//! sweeps into one store, and our figures beside the paper's in one table, each row
//! with the paper's section.
//!
//! One file per paper. A [`Paper`] gives its sweeps (the full matrix of its doc, or a
//! `--quick` one that finishes in a few minutes) as TOML specs, and a function that
//! reads the finished runs ([`Results`]) into [`Row`]s. Add a paper by writing its
//! file and adding it to [`PAPERS`].

mod epochs;
mod hmm_v;
mod hmm_v_baselines;
mod linux;
mod memos;
mod rainbow;
mod sampled;
mod spar;
mod thermostat;

use super::spec::Spec;
use super::store::{Store, StoredRun, StoredSweep};
use anyhow::{anyhow, Result};
use serde_json::Value;

/// A paper whose figures tiersim reproduces.
pub struct Paper {
    /// The name `tiersim reproduce` takes.
    pub name: &'static str,
    /// The paper, as cited.
    pub title: &'static str,
    /// The doc that describes the setting and discusses the results.
    pub doc: &'static str,
    /// The sweeps: the doc's matrix, or with `quick` a smaller one of a few minutes.
    pub sweeps: fn(quick: bool) -> Vec<Spec>,
    /// What differs from the paper's setting, printed under the table.
    pub setting: fn(quick: bool) -> &'static str,
    /// Our figures beside the paper's.
    pub table: fn(&Results) -> Vec<Row>,
}

/// Every paper `reproduce` knows.
pub const PAPERS: &[&Paper] = &[&thermostat::PAPER, &memos::PAPER, &rainbow::PAPER, &spar::PAPER, &hmm_v::PAPER, &hmm_v_baselines::PAPER, &linux::PAPER, &sampled::PAPER, &epochs::PAPER];

/// The paper named `name`; the error lists the known ones.
pub fn paper(name: &str) -> Result<&'static Paper> {
    PAPERS.iter().copied().find(|p| p.name == name).ok_or_else(|| {
        anyhow!("PAPER: unknown paper `{name}` (known: {})", PAPERS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))
    })
}

/// One line of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Where the paper gives the figure (`§5.1, Fig. 11`).
    pub section: String,
    /// What is compared, with the setting (`kv-hot, x = 3 %: throughput loss`).
    pub what: String,
    /// The paper's figure or claim.
    pub paper: String,
    /// Ours, or `not run` when a run it needs is missing or failed.
    pub ours: String,
}

impl Row {
    pub fn new(section: &str, what: impl Into<String>, paper: &str, ours: Option<String>) -> Row {
        Row { section: section.into(), what: what.into(), paper: paper.into(), ours: ours.unwrap_or_else(|| "not run".into()) }
    }
}

/// A spec from a paper's TOML text; the texts are checked by the tests, so a bad one
/// is a bug.
pub fn spec(name: &str, text: &str) -> Spec {
    Spec::parse(text, name, name).unwrap_or_else(|e| panic!("the built-in spec {name} is invalid: {e:#}"))
}

/// Sweep `name`: its runs share the options `run` (TOML lines of its `[run]` table)
/// and cross the axes `axes` (the text of its `[axes]` table). Reports normalise to
/// `all-fast` where it is on the policy axis.
pub fn sweep(name: &str, run: &[&str], axes: &str) -> Spec {
    let mut s = spec(name, &format!("[run]\n{}\n[axes]\n{axes}\n", run.join("\n")));
    if s.axes.iter().any(|(k, v)| k == "policy" && v.iter().any(|(shown, _)| shown == "all-fast")) {
        s.baseline = Some("all-fast".into());
    }
    s
}

/// The finished runs of a paper's sweeps.
pub struct Results {
    pub sweeps: Vec<(StoredSweep, Vec<StoredRun>)>,
}

impl Results {
    /// Reads sweeps `specs` from `store`. A sweep the store does not hold yet (the
    /// command was stopped before it began) is there with no runs, so that the table
    /// shows its rows as not run.
    pub fn load(store: &Store, specs: &[Spec]) -> Result<Results> {
        let stored = store.sweeps()?;
        let mut sweeps = Vec::new();
        for spec in specs {
            let s = stored.iter().find(|s| s.name == spec.name).cloned().unwrap_or_else(|| StoredSweep {
                name: spec.name.clone(),
                spec: spec.to_toml(),
                axes: spec.axis_names(),
                baseline: spec.baseline.clone(),
            });
            let runs = store.runs(&s)?;
            sweeps.push((s, runs));
        }
        Ok(Results { sweeps })
    }

    /// The report of the finished run of sweep `sweep` whose axes have the values
    /// `axes` (axes not named may have any value; the first match is taken).
    pub fn find(&self, sweep: &str, axes: &[(&str, &str)]) -> Option<&Value> {
        let (_, runs) = self.sweeps.iter().find(|(s, _)| s.name == sweep)?;
        runs.iter()
            .filter(|r| axes.iter().all(|(k, v)| r.axes.iter().any(|(a, b)| a == k && b == v)))
            .find_map(|r| r.report.as_ref())
    }

    /// The values of axis `axis` of sweep `sweep`, as its stored spec lists them
    /// (whether their runs finished or not), in order.
    pub fn axis_values(&self, sweep: &str, axis: &str) -> Vec<String> {
        self.sweeps
            .iter()
            .filter(|(s, _)| s.name == sweep)
            .filter_map(|(s, _)| Spec::parse(&s.spec, &s.name, &s.name).ok())
            .flat_map(|spec| spec.axes.into_iter().filter(|(k, _)| k == axis).flat_map(|(_, values)| values.into_iter().map(|v| v.0)))
            .collect()
    }

    /// Whether sweep `sweep` is part of the matrix that ran (a `--quick` matrix has
    /// fewer sweeps).
    pub fn has(&self, sweep: &str) -> bool {
        self.sweeps.iter().any(|(s, _)| s.name == sweep)
    }
}

/// A number of a report by its JSON pointer (`/summary/cycles`).
pub fn number(r: &Value, pointer: &str) -> Option<f64> {
    r.pointer(pointer).and_then(Value::as_f64)
}

/// The cycle at which run `r` had issued `refs` references, from its epoch series
/// (linear within an epoch), as [`crate::report::Report::cycle_at_reference`].
pub fn cycle_at_reference(r: &Value, refs: f64) -> f64 {
    let (mut done, mut start) = (0.0, 0.0);
    for e in r["epochs"].as_array().into_iter().flatten() {
        let n = e["references"].as_f64().unwrap_or(0.0);
        let end = e["end_cycle"].as_f64().unwrap_or(0.0);
        if n > 0.0 && done + n >= refs {
            return start + (end - start) * (refs - done) / n;
        }
        done += n;
        start = end;
    }
    number(r, "/summary/cycles").unwrap_or(0.0)
}

/// The performance of run `r` relative to run `base` (the same input under another
/// policy, usually all-fast), as `base`'s time / `r`'s time in %, over the references
/// after the first fraction `warmup` of them (0: the whole run).
pub fn relative_performance_pct(r: &Value, base: &Value, warmup: f64) -> Option<f64> {
    let r0 = warmup * number(r, "/summary/references")?;
    let own = number(r, "/summary/cycles")? - cycle_at_reference(r, r0);
    let theirs = number(base, "/summary/cycles")? - cycle_at_reference(base, r0);
    (own > 0.0).then(|| 100.0 * theirs / own)
}

/// The references run `r` had issued by cycle `cycle`, from its epoch series (linear
/// within an epoch): the inverse of [`cycle_at_reference`].
pub fn reference_at_cycle(r: &Value, cycle: f64) -> f64 {
    let (mut done, mut start) = (0.0, 0.0);
    for e in r["epochs"].as_array().into_iter().flatten() {
        let n = e["references"].as_f64().unwrap_or(0.0);
        let end = e["end_cycle"].as_f64().unwrap_or(0.0);
        if end >= cycle && end > start {
            return done + n * (cycle - start).max(0.0) / (end - start);
        }
        done += n;
        start = end;
    }
    number(r, "/summary/references").unwrap_or(done)
}

/// The throughput of run `r` relative to run `base`, in %, for runs bounded by
/// simulated time rather than by references (they then do different work): the
/// references each issued per cycle after the first fraction `warmup` of its own
/// cycles, `r`'s over `base`'s.
pub fn relative_throughput_pct(r: &Value, base: &Value, warmup: f64) -> Option<f64> {
    let rate = |x: &Value| -> Option<f64> {
        let cycles = number(x, "/summary/cycles")?;
        let from = warmup * cycles;
        let refs = number(x, "/summary/references")? - reference_at_cycle(x, from);
        (cycles > from).then(|| refs / (cycles - from))
    };
    let theirs = rate(base)?;
    let own = rate(r)?;
    (theirs > 0.0).then(|| 100.0 * own / theirs)
}

/// The geometric mean of `xs`, all positive; none when there are none.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// `x` with `digits` decimals and a unit.
pub fn fmt(x: f64, digits: usize, unit: &str) -> String {
    format!("{x:.digits$}{unit}")
}

/// `x` as a signed change in % with `digits` decimals, with the minus sign (−) the
/// papers print.
pub fn signed_pct(x: f64, digits: usize) -> String {
    format!("{x:+.digits$} %").replacen('-', "−", 1)
}

/// The table as aligned text.
pub fn table_text(rows: &[Row]) -> String {
    let head = ["section", "figure", "paper", "tiersim"];
    let cells: Vec<[&str; 4]> = rows.iter().map(|r| [r.section.as_str(), r.what.as_str(), r.paper.as_str(), r.ours.as_str()]).collect();
    let width = |i: usize| cells.iter().map(|c| c[i].chars().count()).chain([head[i].len()]).max().unwrap_or(0);
    let w = [width(0), width(1), width(2), width(3)];
    let line = |c: [&str; 4]| format!("{:<a$}  {:<b$}  {:<c$}  {}\n", c[0], c[1], c[2], c[3], a = w[0], b = w[1], c = w[2]).trim_end().to_string() + "\n";
    let mut out = line(head);
    out += &line(["-".repeat(w[0]).as_str(), "-".repeat(w[1]).as_str(), "-".repeat(w[2]).as_str(), "-".repeat(w[3]).as_str()]);
    for c in cells {
        out += &line(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_papers_specs_parse_and_load() {
        for p in PAPERS {
            for quick in [true, false] {
                let sweeps = (p.sweeps)(quick);
                assert!(!sweeps.is_empty(), "{}", p.name);
                let mut names: Vec<&str> = sweeps.iter().map(|s| s.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                assert_eq!(names.len(), sweeps.len(), "{}: sweep names are unique", p.name);
                for s in &sweeps {
                    s.check_runs(&s.points()).unwrap_or_else(|e| panic!("{} {}: {e:#}", p.name, s.name));
                }
            }
        }
    }

    #[test]
    fn a_sweep_not_begun_shows_its_grid_and_no_runs() {
        let dir = crate::scratch::Scratch::new("reproduce");
        let path = dir.join("reproduce.db");
        let store = Store::open(&path, true).unwrap();
        let s = sweep("s", &["workload = \"kv\""], "policy = [\"first-touch\", \"all-fast\"]\nseed = [1, 2]");
        assert_eq!(s.baseline.as_deref(), Some("all-fast"));
        let res = Results::load(&store, &[s]).unwrap();
        assert!(res.has("s") && !res.has("t"));
        assert_eq!(res.axis_values("s", "policy"), ["first-touch", "all-fast"]);
        assert_eq!(res.axis_values("s", "seed"), ["1", "2"]);
        assert!(res.axis_values("t", "seed").is_empty());
        assert!(res.find("s", &[("policy", "all-fast")]).is_none());
        drop(store);
    }

    #[test]
    fn performance_counts_the_references_after_the_warm_up() {
        let report = |cycles: [u64; 2]| {
            serde_json::json!({
                "summary": { "references": 100, "cycles": cycles[1] },
                "epochs": [{ "references": 50, "end_cycle": cycles[0] }, { "references": 50, "end_cycle": cycles[1] }],
            })
        };
        let (run, base) = (report([150, 200]), report([50, 100]));
        assert_eq!(relative_performance_pct(&run, &base, 0.0), Some(50.0));
        assert_eq!(relative_performance_pct(&run, &base, 0.5), Some(100.0));
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
    }

    #[test]
    fn throughput_counts_the_cycles_after_the_warm_up() {
        // `run`: 50 references in 100 cycles, then 150 in the next 100; `base`: 100
        // and 100. Over the whole run 200 against 200 references; over the second
        // half 150 against 100.
        let report = |refs: [u64; 2]| {
            serde_json::json!({
                "summary": { "references": refs[0] + refs[1], "cycles": 200 },
                "epochs": [{ "references": refs[0], "end_cycle": 100 }, { "references": refs[1], "end_cycle": 200 }],
            })
        };
        let (run, base) = (report([50, 150]), report([100, 100]));
        assert_eq!(reference_at_cycle(&run, 150.0), 125.0);
        assert_eq!(relative_throughput_pct(&run, &base, 0.0), Some(100.0));
        assert_eq!(relative_throughput_pct(&run, &base, 0.5), Some(150.0));
        assert_eq!(relative_throughput_pct(&run, &base, 0.75), Some(150.0));
    }

    #[test]
    fn the_table_lines_up() {
        assert_eq!(signed_pct(-4.54, 1), "−4.5 %");
        assert_eq!(signed_pct(2.0, 2), "+2.00 %");
        let rows = vec![Row::new("§1", "a", "3 %", Some("2.9 %".into())), Row::new("§5.1, Fig. 11", "longer figure", "< 30 MB/s", None)];
        let t = table_text(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "section        figure         paper      tiersim");
        assert_eq!(lines[3], "§5.1, Fig. 11  longer figure  < 30 MB/s  not run");
    }
}
