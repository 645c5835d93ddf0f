//! `tiersim._native`: the part of the Python package written in Rust. It parses and
//! checks grids with the same [`Spec`] code as `tiersim sweep`, runs one simulation
//! with [`run_point`] (the interpreter lock released while it runs, so Python threads
//! run several at once), and writes runs through [`tiersim::study::Store`], so that
//! the command line and Python share one implementation of the store's schema.
//!
//! The Python side (`tiersim/`) decides what to run where (threads or a Dask
//! cluster) and turns the results into pandas tables.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tiersim::progress::Progress;
use tiersim::study::spec::config_args;
use tiersim::study::{run_point, Point, Spec};

create_exception!(tiersim, RunError, PyException, "A run that started and failed (memory exhausted, a malformed trace line, a stale read under verification); the message is one line.");
create_exception!(tiersim, StoreError, PyException, "A results store that cannot be opened, read or written: not a tiersim store, of another schema, or a file error.");

/// The error's first line with its causes, as the command line prints it.
fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or("error").to_string()
}

fn value_error(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(one_line(&e))
}

fn store_error(e: anyhow::Error) -> PyErr {
    StoreError::new_err(one_line(&e))
}

/// A run of a grid as Python sees it: its key, grid position and axis values.
type GridPoint = (String, usize, Vec<(String, String)>);

/// A sweep's grid: its spec parsed and resolved, and every run's configuration
/// checked, so that a bad key, policy or preset is refused before any run starts.
#[pyclass(frozen, module = "tiersim._native")]
struct Grid {
    spec: Spec,
    points: Vec<Point>,
}

impl Grid {
    /// Applies the caller's name and baseline, then checks the baseline and every
    /// run's configuration; the interpreter lock is released while configurations load.
    fn new(py: Python<'_>, mut spec: Spec, name: Option<String>, baseline: Option<String>) -> PyResult<Grid> {
        if let Some(n) = name {
            spec.name = n;
        }
        if baseline.is_some() {
            spec.baseline = baseline;
        }
        spec.check_baseline().map_err(value_error)?;
        let points = spec.points();
        py.allow_threads(|| spec.check_runs(&points)).map_err(value_error)?;
        Ok(Grid { spec, points })
    }
}

#[pymethods]
impl Grid {
    /// Parses spec text (TOML, as a spec file holds); `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin, name=None, baseline=None))]
    fn parse(py: Python<'_>, text: &str, origin: &str, name: Option<String>, baseline: Option<String>) -> PyResult<Grid> {
        let spec = Spec::parse(text, origin, "sweep").map_err(value_error)?;
        Grid::new(py, spec, name, baseline)
    }

    /// Reads the spec file at `path` (its name defaults to the file's stem, its store
    /// to the path with `.db`, as for `tiersim sweep SPEC.toml`).
    #[staticmethod]
    #[pyo3(signature = (path, name=None, baseline=None))]
    fn read(py: Python<'_>, path: PathBuf, name: Option<String>, baseline: Option<String>) -> PyResult<Grid> {
        let spec = Spec::read(&path).map_err(value_error)?;
        Grid::new(py, spec, name, baseline)
    }

    /// The sweep's name in the store.
    #[getter]
    fn name(&self) -> &str {
        &self.spec.name
    }

    /// The policy reports normalise to, if any.
    #[getter]
    fn baseline(&self) -> Option<&str> {
        self.spec.baseline.as_deref()
    }

    /// The store the spec names (spec files only).
    #[getter]
    fn db(&self) -> Option<PathBuf> {
        self.spec.db.clone()
    }

    /// The axis names, first (outermost) first.
    #[getter]
    fn axes(&self) -> Vec<String> {
        self.spec.axis_names()
    }

    /// The spec resolved to TOML, as the store keeps it.
    #[getter]
    fn spec(&self) -> String {
        self.spec.to_toml()
    }

    /// Every run of the grid as `(key, seq, axes)`: its key in the store (its options
    /// as JSON, which is also what `run` takes), its grid position, and its
    /// `(axis, value)` pairs.
    #[getter]
    fn points(&self) -> Vec<GridPoint> {
        self.points.iter().map(|p| (p.key(), p.seq, p.axes.clone())).collect()
    }
}

/// The options of a spec without axes (`tiersim.run`'s keyword arguments written as
/// a spec), as the JSON that `run` takes. Configurations are not loaded here: `run`
/// does it.
#[pyfunction]
fn run_options(text: &str, origin: &str) -> PyResult<String> {
    let spec = Spec::parse(text, origin, "run").map_err(value_error)?;
    if let Some((axis, _)) = spec.axes.first() {
        return Err(PyValueError::new_err(format!("{origin}: `{axis}`: a single run has no axes; use tiersim.sweep")));
    }
    Ok(spec.points().swap_remove(0).key())
}

/// A flag that stops the runs it is given at their next epoch boundary (how a sweep
/// interrupted by Ctrl-C stops its threads). Each flag lives as long as the process:
/// the engine takes a `'static` flag, and a flag is a byte, made once per sweep or
/// `tiersim.run` call.
#[pyclass(frozen, module = "tiersim._native")]
struct StopFlag(&'static AtomicBool);

#[pymethods]
impl StopFlag {
    #[new]
    fn new() -> StopFlag {
        StopFlag(Box::leak(Box::new(AtomicBool::new(false))))
    }

    /// Asks every run given this flag to stop.
    fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag was set.
    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Runs one simulation with `options` (a grid point's key: its options as JSON) and
/// returns the report as JSON. Raises `ValueError` when the options do not make a
/// configuration and `RunError` when the run fails (or was stopped by `stop`).
#[pyfunction]
#[pyo3(signature = (options, stop=None))]
fn run(py: Python<'_>, options: &str, stop: Option<PyRef<'_, StopFlag>>) -> PyResult<String> {
    let options: BTreeMap<String, String> =
        serde_json::from_str(options).map_err(|e| PyValueError::new_err(format!("options: expected a JSON object of strings ({e})")))?;
    config_args(&options).and_then(|a| a.load()).map_err(value_error)?;
    let point = Point { seq: 0, axes: Vec::new(), options };
    let flag = stop.map(|s| s.0);
    py.allow_threads(|| run_point(&point, &Progress::default(), flag).map(|report| report.to_string())).map_err(RunError::new_err)
}

/// An open results store (`tiersim::study::Store`). Writes are serialised: one
/// process writes a sweep, one transaction per run.
#[pyclass(frozen, module = "tiersim._native")]
struct Store(Mutex<tiersim::study::Store>);

impl Store {
    /// Runs `f` on the store without the interpreter lock.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut tiersim::study::Store) -> anyhow::Result<T> + Send) -> PyResult<T> {
        py.allow_threads(|| {
            let mut store = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut store)
        })
        .map_err(store_error)
    }
}

#[pymethods]
impl Store {
    /// Opens the store at `path`, creating it when `create` and it does not exist.
    /// Raises `StoreError` naming the file when it is not a tiersim store or has
    /// another schema.
    #[new]
    #[pyo3(signature = (path, create=false))]
    fn open(py: Python<'_>, path: PathBuf, create: bool) -> PyResult<Store> {
        let store = py.allow_threads(|| tiersim::study::Store::open(&path, create)).map_err(store_error)?;
        Ok(Store(Mutex::new(store)))
    }

    /// Records `grid`'s sweep (its resolved spec, axes and baseline, replacing an
    /// earlier record of the same name), sets the grid positions of the runs already
    /// stored, and returns the keys of its finished runs.
    fn begin(&self, py: Python<'_>, grid: PyRef<'_, Grid>) -> PyResult<HashSet<String>> {
        let grid = &*grid;
        self.with(py, |s| {
            s.begin_sweep(&grid.spec.name, &grid.spec.to_toml(), &grid.spec.axis_names(), grid.spec.baseline.as_deref())?;
            s.renumber(&grid.spec.name, &grid.points)?;
            s.finished_keys(&grid.spec.name)
        })
    }

    /// The keys of sweep `sweep`'s finished runs.
    fn finished_keys(&self, py: Python<'_>, sweep: &str) -> PyResult<HashSet<String>> {
        self.with(py, |s| s.finished_keys(sweep))
    }

    /// Writes run `seq` of `grid` in one transaction: finished with its `report`
    /// (JSON), or failed with its `error` message; give exactly one of them.
    #[pyo3(signature = (grid, seq, wall_seconds, report=None, error=None))]
    fn record(&self, py: Python<'_>, grid: PyRef<'_, Grid>, seq: usize, wall_seconds: f64, report: Option<&str>, error: Option<&str>) -> PyResult<()> {
        let grid = &*grid;
        let point = grid.points.get(seq).ok_or_else(|| PyValueError::new_err(format!("seq {seq}: the grid has {} runs", grid.points.len())))?;
        let outcome = match (report, error) {
            (Some(r), None) => Ok(serde_json::from_str::<serde_json::Value>(r).map_err(|e| PyValueError::new_err(format!("report: not JSON ({e})")))?),
            (None, Some(e)) => Err(e),
            _ => return Err(PyValueError::new_err("record: give either report or error")),
        };
        self.with(py, |s| s.record(&grid.spec.name, point, outcome.as_ref().map_err(|e| *e), wall_seconds))
    }

    /// The sweeps in the store as `(name, axes)`, by name.
    fn sweeps(&self, py: Python<'_>) -> PyResult<Vec<(String, Vec<String>)>> {
        self.with(py, |s| Ok(s.sweeps()?.into_iter().map(|w| (w.name, w.axes)).collect()))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add("StoreError", m.py().get_type::<StoreError>())?;
    m.add("SCHEMA", tiersim::study::store::SCHEMA)?;
    m.add("RESERVED_COLUMNS", tiersim::study::spec::RESERVED.to_vec())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Grid>()?;
    m.add_class::<StopFlag>()?;
    m.add_class::<Store>()?;
    m.add_function(wrap_pyfunction!(run_options, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
