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

pub use crate::report::geometric_mean;
use super::spec::{axes_label, Spec};
use super::store::{Store, StoredRun, StoredSweep};
use super::sweep::other_builds_note;
use std::collections::BTreeMap;
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
    /// What differs from the paper's setting, printed under the table; figures of the
    /// runs themselves (how many intervals they lasted) are read from `Results`.
    pub setting: fn(quick: bool, res: &Results) -> String,
    /// Our figures beside the paper's.
    pub table: fn(&Results) -> Vec<Row>,
    /// Whether `reproduce --all` scores its claims: false for the validations of a
    /// mode against detailed runs (`sampled`, `epochs`), which compare tiersim with
    /// itself.
    pub on_scoreboard: bool,
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
    /// For a row that carries a claim of the paper: the claim as a figure and ours in
    /// the same unit (none when not run). A row without one (a detail, a count the
    /// paper gives no figure for) has no verdict.
    pub judged: Option<(Claim, Option<f64>)>,
    /// Why ours differs from the paper's, from the model (shown when the verdict is
    /// not `reproduced`).
    pub cause: Option<&'static str>,
    /// For a row measured under an assumption of the paper's model instead of ours (a
    /// switch such as uncached page walks): the assumption. Such a row stands beside
    /// the row of our model and is judged, but not counted among the paper's claims.
    pub assumption: Option<&'static str>,
}

impl Row {
    pub fn new(section: &str, what: impl Into<String>, paper: &str, ours: Option<String>) -> Row {
        Row {
            section: section.into(),
            what: what.into(),
            paper: paper.into(),
            ours: ours.unwrap_or_else(|| "not run".into()),
            judged: None,
            cause: None,
            assumption: None,
        }
    }

    /// The row as measured under `assumption`, the paper's model where ours differs
    /// (the runs made with a switch that adopts it); its figure says so.
    pub fn under(mut self, assumption: &'static str) -> Row {
        self.what = format!("{} — under the paper's assumption, not our model: {assumption}", self.what);
        self.assumption = Some(assumption);
        self
    }

    /// The row judged as claim `claim` of the paper, against our figure `value` in the
    /// claim's unit (none when not run).
    pub fn judge(mut self, claim: Claim, value: Option<f64>) -> Row {
        self.judged = Some((claim, value.filter(|v| v.is_finite())));
        self
    }

    /// A row whose figure `ours` — the number judged and the text that shows it, made
    /// by one computation so that they cannot drift apart — is judged as `claim`.
    pub fn measured(section: &str, what: impl Into<String>, paper: &str, ours: Option<(f64, String)>, claim: Claim) -> Row {
        let value = ours.as_ref().map(|o| o.0);
        Row::new(section, what, paper, ours.map(|o| o.1)).judge(claim, value)
    }

    /// The row with the cause of its difference from the paper.
    pub fn because(mut self, cause: &'static str) -> Row {
        self.cause = Some(cause);
        self
    }

    /// The row's verdict; none for a row that carries no claim.
    pub fn verdict(&self) -> Option<Verdict> {
        self.judged.map(|(claim, value)| value.map_or(Verdict::NotMeasured, |v| claim.judge(v)))
    }
}

/// A paper's claim in a form our figure can be held against. Changes and factors
/// are the paper's effect; bounds are limits the paper says its system keeps
/// (docs/fidelity.md, "Verdicts").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Claim {
    /// A change by this signed fraction of the compared figure (+0.20 for +20 %,
    /// −0.998 for −99.8 %); ours in the same unit.
    Change(f64),
    /// A factor (×40, 5.6×); ours as a factor.
    Factor(f64),
    /// At most this value, in the unit of ours (a 3 % slowdown target: 3.0 for ours
    /// in %).
    AtMost(f64),
    /// At least this value.
    AtLeast(f64),
    /// No change larger than this fraction either way.
    NoChange(f64),
    /// A figure the paper measured (a 4 KiB move takes 3 µs), in the unit of ours.
    Figure(f64),
}

/// How far an effect must go, either way, to count as one: 1 % of the compared
/// figure (a change of 0.01, a factor of 1.01). Our choice: below it, a run's
/// noise between seeds is of the same size.
pub const NO_EFFECT: f64 = 0.01;

impl Claim {
    /// The verdict on our figure `ours` (docs/fidelity.md, "Verdicts"):
    /// - a change or factor is reproduced when ours goes the same way, is an effect
    ///   (beyond [`NO_EFFECT`]) and is within a factor of 2 of the paper's (for a
    ///   factor, of the factor itself); partly when it only goes the same way; not
    ///   when it goes the other way or is no effect;
    /// - a bound is reproduced when ours keeps it, partly when ours is within twice
    ///   the bound (half of it for an `AtLeast`), not otherwise;
    /// - a claim of no change likewise, with the tolerance as its bound;
    /// - a measured figure is reproduced within a factor of 2 of it, partly within a
    ///   factor of 4 (our choice), not otherwise.
    pub fn judge(self, ours: f64) -> Verdict {
        let within2 = |ratio: f64| (0.5..=2.0).contains(&ratio);
        match self {
            Claim::Change(paper) | Claim::Factor(paper) => {
                let (p, o) = if let Claim::Factor(_) = self { (paper - 1.0, ours - 1.0) } else { (paper, ours) };
                let ratio = if let Claim::Factor(_) = self { ours / paper } else { o / p };
                if o.abs() < NO_EFFECT || o.signum() != p.signum() {
                    Verdict::Not
                } else if within2(ratio) {
                    Verdict::Reproduced
                } else {
                    Verdict::Partly
                }
            }
            Claim::AtMost(bound) => Self::bounded(ours <= bound, ours <= 2.0 * bound),
            Claim::AtLeast(bound) => Self::bounded(ours >= bound, ours >= 0.5 * bound),
            Claim::NoChange(tolerance) => Self::bounded(ours.abs() <= tolerance, ours.abs() <= 2.0 * tolerance),
            Claim::Figure(paper) => {
                let ratio = ours / paper;
                Self::bounded(within2(ratio), (0.25..=4.0).contains(&ratio))
            }
        }
    }

    /// Which way our figure `ours` goes: for a change or a factor the sign of its
    /// effect (0 when it is no effect), for a bound or a claim of no change whether
    /// it is kept (1) or not (−1). A quick matrix must go the same way as the full one
    /// on every row it keeps.
    pub fn direction(self, ours: f64) -> i8 {
        let sign = |effect: f64| if effect.abs() < NO_EFFECT { 0 } else if effect > 0.0 { 1 } else { -1 };
        match self {
            Claim::Change(_) => sign(ours),
            Claim::Factor(_) => sign(ours - 1.0),
            Claim::AtMost(_) | Claim::AtLeast(_) | Claim::NoChange(_) | Claim::Figure(_) => {
                if self.judge(ours) == Verdict::Reproduced {
                    1
                } else {
                    -1
                }
            }
        }
    }

    fn bounded(kept: bool, within_twice: bool) -> Verdict {
        if kept {
            Verdict::Reproduced
        } else if within_twice {
            Verdict::Partly
        } else {
            Verdict::Not
        }
    }
}

/// How our figure compares with a paper's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Reproduced,
    Partly,
    Not,
    NotMeasured,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [Verdict::Reproduced, Verdict::Partly, Verdict::Not, Verdict::NotMeasured];

    /// The word the tables print.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Partly => "partly",
            Verdict::Not => "not",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// The count of each verdict among `rows`, as the line that ends a paper's table
/// (`4 claims: 1 reproduced, 2 partly, 1 not, 0 not measured`). Rows measured under
/// an assumption of the paper's ([`Row::under`]) are counted apart, after the claims.
pub fn verdict_counts(rows: &[Row]) -> String {
    let count = |under: bool| {
        let verdicts: Vec<Verdict> = rows.iter().filter(|r| r.assumption.is_some() == under).filter_map(Row::verdict).collect();
        let counts: Vec<String> = Verdict::ALL.iter().map(|v| format!("{} {}", verdicts.iter().filter(|x| *x == v).count(), v.label())).collect();
        (verdicts.len(), counts.join(", "))
    };
    let (n, claims) = count(false);
    let mut out = format!("{n} claims: {claims}");
    if let (n @ 1.., under) = count(true) {
        out += &format!("; beside them, {n} under the paper's assumptions (not counted): {under}");
    }
    out
}

/// The rule of the verdicts, as the scoreboard states it.
pub const VERDICT_RULE: &str = "A row that carries one of the paper's claims is judged by the figure the claim is about. \
A change (+20 %) or a factor (×40) is **reproduced** when ours goes the same way, is an effect (beyond 1 % of the figure, \
our bound for run-to-run noise) and is within a factor of 2 of the paper's (from half to twice it; for a factor, of the factor itself); \
**partly** when ours only goes the same way; **not** when it goes the other way or is no effect. \
A bound the paper says its system keeps (≤ 3 %, < 30 MB/s) is reproduced when ours keeps it, partly when ours is within twice it \
(half of it for a lower bound), not otherwise; a claim of no change likewise, with its tolerance as the bound. \
A figure the paper measured (a 4 KiB move takes 3 µs) is reproduced when ours is within a factor of 2 of it, partly within a factor of 4 (our choice), not otherwise. \
**Not measured**: a run the row needs did not finish. Rows without a claim (details, counts the paper gives no figure for) are not scored. \
A row marked *under the paper's assumption* is a claim measured again with a switch that runs an assumption of the paper's model where ours differs \
(a row whose cause is that assumption); it stands after our model's row with its own verdict and is not counted.";

/// A paper's table as the scoreboard shows it.
pub struct ScoredPaper {
    pub paper: &'static Paper,
    pub rows: Vec<Row>,
    /// What differs from the paper's setting (`Paper::setting`), the row's scale.
    pub setting: String,
    /// For a quick scoreboard, the same paper's rows from its full matrix when its
    /// store is there (`reproduce-PAPER.db`), to check that quick goes the same way.
    pub full: Option<Vec<Row>>,
    /// The runs in which a policy never acted ([`Results::never_acted`]).
    pub never_acted: Vec<String>,
    /// Its stored runs that builds other than this one simulated, by commit
    /// (`SweepOutcome::other_builds`).
    pub other_builds: BTreeMap<String, usize>,
}

/// The row of `rows` that compares the same figure as `row` (the same section and
/// figure) and carries a claim.
fn same_row<'a>(rows: &'a [Row], row: &Row) -> Option<&'a Row> {
    rows.iter().find(|r| r.judged.is_some() && r.section == row.section && r.what == row.what)
}

/// The judged rows of `quick` whose figure goes another way than the same row of
/// `full` (both measured), with that row.
pub fn disagreements<'a>(quick: &'a [Row], full: &'a [Row]) -> Vec<(&'a Row, &'a Row)> {
    quick
        .iter()
        .filter_map(|q| {
            let f = same_row(full, q)?;
            let ((claim, Some(a)), (_, Some(b))) = (q.judged?, f.judged?) else { return None };
            (claim.direction(a) != claim.direction(b)).then_some((q, f))
        })
        .collect()
}

/// The scoreboard across `papers` (Markdown): the rule, the counts per paper, then
/// each paper's claims with ours, the verdict and, where not reproduced, the cause;
/// `failed` names runs that failed (their rows are not measured).
pub fn scoreboard(papers: &[ScoredPaper], quick: bool, commit: &str, failed: &[(String, String)]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let command = if quick { "tiersim reproduce --all --quick" } else { "tiersim reproduce --all" };
    let mut out = format!("# Fidelity: the papers' claims beside tiersim's runs\n\nGenerated by `{command}` on tiersim commit {commit}; run the command again rather than editing this file. ");
    out += if quick {
        "These are the **quick** matrices (each paper's scale is under its table): smaller and shorter than the full ones, which `tiersim reproduce --all` runs in hours.\n\n"
    } else {
        "These are the full matrices, each paper's as its doc describes (its scale is under its table).\n\n"
    };
    let kept: Vec<String> = papers.iter().filter_map(|p| other_builds_note(&p.other_builds).map(|n| format!("{}: {n}", p.paper.name))).collect();
    if !kept.is_empty() {
        out += &format!("**Runs from other builds.** Some rows draw on stored runs that another commit simulated: {}.\n\n", kept.join("; "));
    }
    out += &format!("## Verdicts\n\n{VERDICT_RULE}\n\n## Counts\n\n| paper | claims | reproduced | partly | not | not measured |\n|---|---|---|---|---|---|\n");
    // Rows measured under a paper's assumption stand beside the claims, not among them.
    let count = |rows: &[&Row], v: Verdict| rows.iter().filter(|r| r.verdict() == Some(v)).count();
    let scored = |r: &&Row| r.judged.is_some() && r.assumption.is_none();
    let all: Vec<&Row> = papers.iter().flat_map(|p| p.rows.iter().filter(scored)).collect();
    for p in papers {
        let rows: Vec<&Row> = p.rows.iter().filter(scored).collect();
        let counts: Vec<String> = Verdict::ALL.iter().map(|&v| count(&rows, v).to_string()).collect();
        out += &format!("| [{}](#{}) | {} | {} |\n", p.paper.name, p.paper.name, rows.len(), counts.join(" | "));
    }
    let counts: Vec<String> = Verdict::ALL.iter().map(|&v| format!("**{}**", count(&all, v))).collect();
    out += &format!("| all | **{}** | {} |\n", all.len(), counts.join(" | "));
    for p in papers {
        out += &format!("\n<a id=\"{}\"></a>\n## {}: {}\n\n", p.paper.name, p.paper.name, cell(p.paper.title));
        out += &format!("Scale: {} Discussion: [{}]({}).\n\n", cell(&p.setting), p.paper.doc, p.paper.doc.trim_start_matches("docs/"));
        if let Some(full) = &p.full {
            let both = p.rows.iter().filter(|q| q.verdict().is_some_and(|v| v != Verdict::NotMeasured) && same_row(full, q).is_some_and(|f| f.verdict() != Some(Verdict::NotMeasured))).count();
            let off = disagreements(&p.rows, full);
            out += &format!("Quick against the full matrix (its store is there): {} of {both} rows measured in both go the same way", both - off.len());
            out += &if off.is_empty() { ".\n\n".to_string() } else {
                format!("; not: {}.\n\n", off.iter().map(|(q, f)| format!("{} (quick {}, full {})", cell(&q.what), cell(&q.ours), cell(&f.ours))).collect::<Vec<_>>().join("; "))
            };
        }
        if quick && p.full.is_none() {
            out += &format!(
                "Quick against the full matrix: not checked (its store, reproduce-{0}.db, was not there; `tiersim reproduce {0}` makes it).\n\n",
                p.paper.name
            );
        }
        if !p.never_acted.is_empty() {
            out += &format!(
                "Runs in which a policy never acted or moved no page ({}; rows drawn from them show the initial placement, not the policy):\n\n{}\n",
                p.never_acted.len(),
                p.never_acted.iter().map(|n| format!("- {}\n", cell(n))).collect::<String>()
            );
        }
        let full_column = p.full.is_some();
        out += if full_column {
            "| section | claim | paper | tiersim | verdict | full matrix | cause of the difference |\n|---|---|---|---|---|---|---|\n"
        } else {
            "| section | claim | paper | tiersim | verdict | cause of the difference |\n|---|---|---|---|---|---|\n"
        };
        for r in p.rows.iter().filter(|r| r.judged.is_some()) {
            let verdict = r.verdict().map_or("", Verdict::label);
            let cause = if matches!(r.verdict(), Some(Verdict::Partly | Verdict::Not)) { r.cause.unwrap_or("") } else { "" };
            let full = p.full.as_deref().map(|f| same_row(f, r).and_then(Row::verdict).map_or("—", Verdict::label));
            let full = full.map_or(String::new(), |v| format!(" {v} |"));
            out += &format!("| {} | {} | {} | {} | {verdict} |{full} {} |\n", cell(&r.section), cell(&r.what), cell(&r.paper), cell(&r.ours), cell(cause));
        }
    }
    if !failed.is_empty() {
        out += "\n## Runs that failed\n\nTheir rows are not measured; the same command runs them again.\n\n";
        for (label, msg) in failed {
            out += &format!("- {}: {}\n", cell(label), cell(msg));
        }
    }
    out
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

    /// The finished runs in which a policy never acted (the report's `never_acted`:
    /// its first period never came due, or it moved no page), as `sweep: axes: note`.
    /// A row drawn from one of them shows the initial placement, not the policy.
    pub fn never_acted(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (s, runs) in &self.sweeps {
            for r in runs {
                if let Some(note) = r.report.as_ref().and_then(|v| v["never_acted"].as_str()) {
                    out.push(format!("{}: {}: {note}", s.name, axes_label(&r.axes)));
                }
            }
        }
        out
    }

    /// Whether sweep `sweep` is part of the matrix that ran (a `--quick` matrix has
    /// fewer sweeps).
    pub fn has(&self, sweep: &str) -> bool {
        self.sweeps.iter().any(|(s, _)| s.name == sweep)
    }
}

/// Results of one sweep `name` whose runs have the axes and reports given, for the
/// papers' table tests.
#[cfg(test)]
pub fn results_of(name: &str, runs: Vec<(&[(&str, &str)], Value)>) -> Results {
    // The spec lists every axis value the runs have, in the order first met.
    let mut axes: Vec<(&str, Vec<&str>)> = Vec::new();
    for (k, v) in runs.iter().flat_map(|r| r.0.iter()) {
        match axes.iter_mut().find(|a| a.0 == *k) {
            Some(a) if !a.1.contains(v) => a.1.push(v),
            Some(_) => {}
            None => axes.push((k, vec![v])),
        }
    }
    let lines: Vec<String> = axes.iter().map(|(k, v)| format!("'{k}' = [{}]", v.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", "))).collect();
    let spec = format!("[axes]\n{}\n", lines.join("\n"));
    let sweep = StoredSweep { name: name.into(), spec, axes: axes.iter().map(|a| a.0.to_string()).collect(), baseline: None };
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, (axes, report))| StoredRun {
            sweep: name.into(),
            key: i.to_string(),
            seq: i as i64,
            axes: axes.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            error: None,
            report: Some(report),
        })
        .collect();
    Results { sweeps: vec![(sweep, runs)] }
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

/// The core and the tenant that run workload `name` in run `r`, from its `workloads`
/// (the first slot that runs it), so that a row names a VM by what it runs rather than
/// by its place in the layout.
pub fn slot_of(r: &Value, name: &str) -> Option<(usize, usize)> {
    let slot = r["workloads"].as_array()?.iter().find(|w| w["workload"]["name"] == name)?;
    Some((slot["core"].as_u64()? as usize, slot["tenant"].as_u64()? as usize))
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

/// The table as aligned text, its verdicts counted under it, then the cause of each
/// claim not reproduced.
pub fn table_text(rows: &[Row]) -> String {
    let head = ["section", "figure", "paper", "tiersim", "verdict"];
    let cells: Vec<[&str; 5]> =
        rows.iter().map(|r| [r.section.as_str(), r.what.as_str(), r.paper.as_str(), r.ours.as_str(), r.verdict().map_or("", Verdict::label)]).collect();
    let width = |i: usize| cells.iter().map(|c| c[i].chars().count()).chain([head[i].len()]).max().unwrap_or(0);
    let w = [width(0), width(1), width(2), width(3)];
    let line = |c: [&str; 5]| {
        format!("{:<a$}  {:<b$}  {:<c$}  {:<d$}  {}", c[0], c[1], c[2], c[3], c[4], a = w[0], b = w[1], c = w[2], d = w[3]).trim_end().to_string() + "\n"
    };
    let mut out = line(head);
    out += &line(["-".repeat(w[0]).as_str(), "-".repeat(w[1]).as_str(), "-".repeat(w[2]).as_str(), "-".repeat(w[3]).as_str(), "-------"]);
    for c in cells {
        out += &line(c);
    }
    out += &format!("\n{}\n", verdict_counts(rows));
    let causes: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.verdict(), Some(Verdict::Partly | Verdict::Not)))
        .map(|r| format!("  {} {} ({}): {}\n", r.section, r.what, r.verdict().map_or("", Verdict::label), r.cause.unwrap_or("no cause written yet")))
        .collect();
    if !causes.is_empty() {
        out += &format!("Why not (fully) reproduced:\n{}", causes.concat());
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
                    // A baseline must be one of the sweep's policies: the report
                    // normalises to it once every run is done.
                    if let Some(b) = &s.baseline {
                        let policies: Vec<&str> = s.axes.iter().filter(|(k, _)| k == "policy").flat_map(|(_, v)| v.iter().map(|x| x.0.as_str())).collect();
                        assert!(policies.contains(&b.as_str()), "{} {}: baseline {b} is not among the policies {policies:?}", p.name, s.name);
                    }
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
    fn runs_in_which_a_policy_never_acted_are_named() {
        let idle = serde_json::json!({ "never_acted": "policy memos never acted: its first period (20 s) did not come due" });
        let res = results_of("m", vec![(&[("policy", "memos"), ("workload", "kv")], idle), (&[("policy", "memos"), ("workload", "gups")], serde_json::json!({}))]);
        assert_eq!(res.never_acted(), ["m: policy=memos workload=kv: policy memos never acted: its first period (20 s) did not come due"]);
    }

    #[test]
    fn a_workload_is_found_by_name_not_by_place() {
        let r = serde_json::json!({
            "workloads": [
                { "core": 0, "tenant": 1, "workload": { "name": "kv" } },
                { "core": 1, "tenant": 0, "workload": { "name": "pagerank" } },
            ],
        });
        assert_eq!(slot_of(&r, "pagerank"), Some((1, 0)));
        assert_eq!(slot_of(&r, "kv"), Some((0, 1)));
        assert_eq!(slot_of(&r, "stream"), None);
    }

    #[test]
    fn the_table_lines_up() {
        assert_eq!(signed_pct(-4.54, 1), "−4.5 %");
        assert_eq!(signed_pct(2.0, 2), "+2.00 %");
        let rows = vec![
            Row::new("§1", "a", "3 %", Some("2.9 %".into())).judge(Claim::Change(0.03), Some(0.029)),
            Row::new("§5.1, Fig. 11", "longer figure", "< 30 MB/s", None).judge(Claim::AtMost(30.0), None),
            Row::new("§2", "b", "+20 %", Some("−5 %".into())).judge(Claim::Change(0.2), Some(-0.05)).because("the model's reason"),
            Row::new("§3", "a detail", "more", Some("1".into())),
        ];
        let t = table_text(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "section        figure         paper      tiersim  verdict");
        assert_eq!(lines[2], "§1             a              3 %        2.9 %    reproduced");
        assert_eq!(lines[3], "§5.1, Fig. 11  longer figure  < 30 MB/s  not run  not measured");
        assert_eq!(lines[5], "§3             a detail       more       1");
        assert_eq!(lines[7], "3 claims: 1 reproduced, 0 partly, 1 not, 1 not measured");
        assert_eq!(lines[8], "Why not (fully) reproduced:");
        assert_eq!(lines[9], "  §2 b (not): the model's reason");
        assert_eq!(lines.len(), 10);
    }

    #[test]
    fn verdicts_follow_the_written_rule() {
        use Verdict::*;
        // A change: the same way and within a factor of 2 (+10 % … +40 % for +20 %),
        // the same way only, the other way, or no effect (under 1 %).
        let plus20 = Claim::Change(0.20);
        assert_eq!([0.10, 0.40, 0.41, 0.05, 0.009, -0.3].map(|o| plus20.judge(o)), [Reproduced, Reproduced, Partly, Partly, Not, Not]);
        let minus998 = Claim::Change(-0.998);
        assert_eq!([-0.995, -0.6, -0.4, 0.1].map(|o| minus998.judge(o)), [Reproduced, Reproduced, Partly, Not]);
        // A factor is judged on the factor: ×40 is reproduced from ×20 to ×80; ×1.005
        // is no effect; ×0.5 goes the other way.
        let x40 = Claim::Factor(40.0);
        assert_eq!([20.0, 80.0, 19.0, 1.5, 1.005, 0.5].map(|o| x40.judge(o)), [Reproduced, Reproduced, Partly, Partly, Not, Not]);
        // Bounds: kept, within twice the bound (half for at least), or not.
        assert_eq!([3.0, 6.0, 6.1].map(|o| Claim::AtMost(3.0).judge(o)), [Reproduced, Partly, Not]);
        assert_eq!([0.8, 0.4, 0.39].map(|o| Claim::AtLeast(0.8).judge(o)), [Reproduced, Partly, Not]);
        assert_eq!([-0.02, 0.04, 0.05].map(|o| Claim::NoChange(0.02).judge(o)), [Reproduced, Partly, Not]);
        // A measured figure: 3 µs is reproduced from 1.5 to 6, partly from 0.75 to 12.
        assert_eq!([3.12, 1.5, 6.0, 0.75, 12.5].map(|o| Claim::Figure(3.0).judge(o)), [Reproduced, Reproduced, Reproduced, Partly, Not]);
        // A figure that is not a number (0/0) counts as not measured.
        let row = Row::new("§1", "a", "b", Some("NaN".into())).judge(plus20, Some(f64::NAN));
        assert_eq!(row.verdict(), Some(NotMeasured));
        assert_eq!(Row::new("§1", "a", "b", None).verdict(), None);
    }

    #[test]
    fn the_scoreboard_counts_verdicts_and_checks_quick_against_full() {
        let claim = |what: &str, ours: f64| Row::new("§1", what, "+20 %", Some(format!("{ours}"))).judge(Claim::Change(0.2), Some(ours)).because("a | cause");
        // Quick: a reproduced (+0.15), a partly (+0.5), a not (−0.1); full: the first
        // two the same way, the third level (−0.005 is no effect), so quick's third
        // row goes another way.
        let quick = vec![claim("a", 0.15), claim("b", 0.5), claim("c", -0.1), Row::new("§2", "detail", "-", Some("1".into()))];
        let full = vec![claim("a", 0.25), claim("b", 0.3), claim("c", -0.005)];
        let off = disagreements(&quick, &full);
        assert_eq!(off.len(), 1);
        assert_eq!((off[0].0.what.as_str(), off[0].1.ours.as_str()), ("c", "-0.005"));
        let idle = vec!["memos-kv: policy=memos: policy memos never acted: its first period (20 s) did not come due".to_string()];
        let kept = BTreeMap::from([("0123abcd".to_string(), 2), (crate::study::UNRECORDED.to_string(), 1)]);
        let papers = [ScoredPaper { paper: PAPERS[0], rows: quick, setting: "small.".into(), full: Some(full), never_acted: idle, other_builds: kept }];
        let text = scoreboard(&papers, true, "abc123", &[("spar: x".into(), "boom".into())]);
        let name = PAPERS[0].name;
        assert!(text.contains("Generated by `tiersim reproduce --all --quick` on tiersim commit abc123"), "{text}");
        assert!(text.contains(&format!("| [{name}](#{name}) | 3 | 1 | 1 | 1 | 0 |\n| all | **3** | **1** | **1** | **1** | **0** |")), "{text}");
        assert!(text.contains("2 of 3 rows measured in both go the same way; not: c (quick -0.1, full -0.005)."), "{text}");
        // The cause is shown where the claim is not reproduced, with `|` escaped; the
        // detail row is not scored.
        assert!(text.contains("| §1 | a | +20 % | 0.15 | reproduced | reproduced |  |\n"), "{text}");
        assert!(text.contains("| §1 | c | +20 % | -0.1 | not | not | a \\| cause |\n"), "{text}");
        assert!(!text.contains("| §2 | detail"));
        assert!(text.contains("## Runs that failed") && text.contains("- spar: x: boom"));
        assert!(text.contains(&format!("**Runs from other builds.** Some rows draw on stored runs that another commit simulated: {name}: 3 stored runs were simulated by another build of tiersim (2 by 0123abcd, 1 by an older build that did not record its commit), not this one")), "{text}");
        assert!(text.contains("Runs in which a policy never acted or moved no page (1; rows drawn from them show the initial placement, not the policy):\n\n- memos-kv: policy=memos: policy memos never acted"), "{text}");
        let without = [ScoredPaper { paper: PAPERS[0], rows: Vec::new(), setting: String::new(), full: None, never_acted: Vec::new(), other_builds: BTreeMap::new() }];
        assert!(scoreboard(&without, true, "abc123", &[]).contains(&format!("Quick against the full matrix: not checked (its store, reproduce-{name}.db, was not there")));
    }

    #[test]
    fn a_row_under_the_papers_assumption_stands_beside_the_claim_and_is_not_counted() {
        let claim = |ours: f64| Row::new("§1", "a", "+20 %", Some(format!("{ours}"))).judge(Claim::Change(0.2), Some(ours)).because("the model");
        // Ours goes the other way (not); under the paper's assumption +15 % (reproduced).
        let rows = vec![claim(-0.1), claim(0.15).under("walks read memory")];
        assert_eq!(rows[1].what, "a — under the paper's assumption, not our model: walks read memory");
        assert_eq!(verdict_counts(&rows), "1 claims: 0 reproduced, 0 partly, 1 not, 0 not measured; beside them, 1 under the paper's assumptions (not counted): 1 reproduced, 0 partly, 0 not, 0 not measured");
        assert_eq!(verdict_counts(&rows[..1]), "1 claims: 0 reproduced, 0 partly, 1 not, 0 not measured");
        let papers = [ScoredPaper { paper: PAPERS[0], rows, setting: String::new(), full: None, never_acted: Vec::new(), other_builds: BTreeMap::new() }];
        let text = scoreboard(&papers, false, "abc123", &[]);
        let name = PAPERS[0].name;
        assert!(text.contains(&format!("| [{name}](#{name}) | 1 | 0 | 0 | 1 | 0 |\n| all | **1** | **0** | **0** | **1** | **0** |")), "{text}");
        assert!(text.contains("| §1 | a | +20 % | -0.1 | not | the model |\n| §1 | a — under the paper's assumption, not our model: walks read memory | +20 % | 0.15 | reproduced |  |\n"), "{text}");
    }

    #[test]
    fn every_claim_names_the_cause_of_a_difference() {
        // From an empty store every table has its rows, each not run: a row that
        // carries a claim must say what would make ours differ.
        let dir = crate::scratch::Scratch::new("reproduce-causes");
        let store = Store::open(&dir.join("r.db"), true).unwrap();
        for p in PAPERS {
            for quick in [true, false] {
                let res = Results::load(&store, &(p.sweeps)(quick)).unwrap();
                for r in (p.table)(&res) {
                    if r.judged.is_some() {
                        assert!(r.cause.is_some_and(|c| !c.is_empty()), "{} {}: {} carries a claim and no cause", p.name, r.section, r.what);
                        assert_eq!(r.verdict(), Some(Verdict::NotMeasured), "{} {}", p.name, r.what);
                    }
                }
            }
        }
    }
}
