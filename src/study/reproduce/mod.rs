//! `tiersim reproduce PAPER [--quick]`: a paper's documented matrix of runs as
//! sweeps into one store, and our figures beside the paper's in one table, each row
//! with the paper's section.
//!
//! One file per paper. A [`Paper`] gives its sweeps (the full matrix of its doc, or a
//! `--quick` one that finishes in a few minutes) as TOML specs, and a function that
//! reads the finished runs ([`Results`]) into [`Row`]s. Add a paper by writing its
//! file and adding it to [`PAPERS`].

mod memos;
mod rainbow;
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
pub const PAPERS: &[&Paper] = &[&thermostat::PAPER, &memos::PAPER, &rainbow::PAPER, &spar::PAPER];

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

/// The finished runs of a paper's sweeps.
pub struct Results {
    pub sweeps: Vec<(StoredSweep, Vec<StoredRun>)>,
}

impl Results {
    /// Reads sweeps `names` from `store`.
    pub fn load(store: &Store, names: &[String]) -> Result<Results> {
        let mut sweeps = Vec::new();
        for n in names {
            let s = store.sweep(Some(n))?;
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
