//! `openvsl._native`: the Python package's native module. Every function
//! calls the `vsl` command line's library (`vsl_cli`): a run from Python is
//! parsed and executed exactly as `vsl run` would, and a sweep runs on the
//! same pool as `vsl sweep`. Results cross into Python as the JSON `vsl`
//! writes; `python/openvsl/__init__.py` turns them into dicts and pandas
//! DataFrames. Errors are `openvsl.OpenvslError` with `vsl`'s one-line
//! message.
//!
//! Without the `python` feature (the workspace's builds and tests) the
//! crate is empty; maturin turns on `extension-module`.

#[cfg(feature = "python")]
mod native {
    use pyo3::create_exception;
    use pyo3::exceptions::PyException;
    use pyo3::prelude::*;
    use std::path::Path;
    use vsl_cli::cmd_run::{execute, Silent};
    use vsl_cli::sweep::{self, parse_run, Plan};

    create_exception!(
        _native,
        OpenvslError,
        PyException,
        "An openvsl run, plan or sweep failed; the message is vsl's one-line error."
    );

    fn err(e: anyhow::Error) -> PyErr {
        OpenvslError::new_err(format!("{e:#}"))
    }

    /// Runs `vsl run` ARGV (without the program name) on a modelled card
    /// and returns what `vsl run --json` writes.
    #[pyfunction]
    fn run_json(py: Python<'_>, argv: Vec<String>) -> PyResult<String> {
        py.detach(|| -> anyhow::Result<String> {
            let args = parse_run(&argv)?;
            let done = execute(&args, &Silent)?;
            Ok(serde_json::to_string(&done.report())?)
        })
        .map_err(err)
    }

    /// The device presets as JSON (what `vsl devices --json` prints).
    #[pyfunction]
    fn devices_json() -> PyResult<String> {
        serde_json::to_string(device::presets()).map_err(|e| err(e.into()))
    }

    /// The named workload profiles: (name, description) pairs.
    #[pyfunction]
    fn profiles() -> Vec<(String, String)> {
        workload::Profile::all()
            .iter()
            .map(|p| (p.name.to_string(), p.description.to_string()))
            .collect()
    }

    /// The GC victim policies (`vsl policies`): (spelling, summary, source).
    #[pyfunction]
    fn policies() -> Vec<(String, String, String)> {
        ftl::POLICIES
            .iter()
            .map(|p| (p.spelling.into(), p.summary.into(), p.source.into()))
            .collect()
    }

    /// The placement policies (`vsl policies`, `--placement`): (spelling,
    /// summary, source).
    #[pyfunction]
    fn placements() -> Vec<(String, String, String)> {
        ftl::PLACEMENTS
            .iter()
            .map(|p| (p.spelling.into(), p.summary.into(), p.source.into()))
            .collect()
    }

    /// A planned run as Python sees it: (key, options, argv).
    type PlannedTuple = (String, Vec<(String, String)>, Vec<String>);

    fn load(text: &str, is_json: bool, name: &str) -> anyhow::Result<Plan> {
        if is_json {
            Plan::from_json(text, name)
        } else {
            Plan::from_toml(text, name)
        }
    }

    /// Expands a plan (TOML text, or JSON when IS_JSON) into its runs:
    /// (key, options, argv) each.
    #[pyfunction]
    fn plan(text: &str, is_json: bool, name: &str) -> PyResult<Vec<PlannedTuple>> {
        let p = load(text, is_json, name).map_err(err)?;
        Ok(p.runs
            .into_iter()
            .map(|r| (r.key, r.params.into_iter().collect(), r.argv))
            .collect())
    }

    /// Runs one planned run (its key and argv, from `plan`) and returns the
    /// JSON `runs/<key>.json` holds. What a Ray task calls.
    #[pyfunction]
    fn run_planned(
        py: Python<'_>,
        text: &str,
        is_json: bool,
        name: &str,
        key: &str,
    ) -> PyResult<String> {
        py.detach(|| -> anyhow::Result<String> {
            let p = load(text, is_json, name)?;
            let run = p
                .runs
                .iter()
                .find(|r| r.key == key)
                .ok_or_else(|| anyhow::anyhow!("{name}: no run with key {key}"))?;
            sweep::run_one(run, &Silent)
        })
        .map_err(err)
    }

    #[pyfunction]
    fn is_done(out: &str, key: &str) -> bool {
        sweep::is_done(Path::new(out), key)
    }

    #[pyfunction]
    fn store(out: &str, key: &str, json: &str) -> PyResult<()> {
        sweep::store(Path::new(out), key, json).map_err(err)
    }

    /// Writes results.csv and index.html and raises if any run failed
    /// (after writing). FAILED: (key, message) of the runs that failed.
    #[pyfunction]
    #[allow(clippy::too_many_arguments)]
    fn finish(
        text: &str,
        is_json: bool,
        name: &str,
        out: &str,
        ran: usize,
        skipped: usize,
        failed: Vec<(String, String)>,
        quiet: bool,
    ) -> PyResult<String> {
        let p = load(text, is_json, name).map_err(err)?;
        let outcome = sweep::Outcome {
            skipped,
            ran,
            failed,
        };
        sweep::finish(&p, Path::new(out), &outcome, quiet).map_err(err)?;
        Ok(Path::new(out).join("results.csv").display().to_string())
    }

    /// `vsl sweep` on the local pool; returns the path of results.csv.
    #[pyfunction]
    #[pyo3(signature = (text, is_json, name, out, workers=None, quiet=true))]
    fn sweep_local(
        py: Python<'_>,
        text: &str,
        is_json: bool,
        name: &str,
        out: &str,
        workers: Option<usize>,
        quiet: bool,
    ) -> PyResult<String> {
        py.detach(|| -> anyhow::Result<String> {
            let p = load(text, is_json, name)?;
            let out = Path::new(out);
            let outcome = sweep::run_local(
                &p,
                out,
                workers.unwrap_or_else(sweep::default_workers),
                quiet,
            )?;
            sweep::finish(&p, out, &outcome, quiet)?;
            Ok(out.join("results.csv").display().to_string())
        })
        .map_err(err)
    }

    #[pymodule]
    fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("OpenvslError", m.py().get_type::<OpenvslError>())?;
        m.add_function(wrap_pyfunction!(run_json, m)?)?;
        m.add_function(wrap_pyfunction!(devices_json, m)?)?;
        m.add_function(wrap_pyfunction!(profiles, m)?)?;
        m.add_function(wrap_pyfunction!(policies, m)?)?;
        m.add_function(wrap_pyfunction!(placements, m)?)?;
        m.add_function(wrap_pyfunction!(plan, m)?)?;
        m.add_function(wrap_pyfunction!(run_planned, m)?)?;
        m.add_function(wrap_pyfunction!(is_done, m)?)?;
        m.add_function(wrap_pyfunction!(store, m)?)?;
        m.add_function(wrap_pyfunction!(finish, m)?)?;
        m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
        Ok(())
    }
}
