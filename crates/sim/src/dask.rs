//! A sweep's runs on a Dask cluster (`ackshape sweep --dask ADDRESS`, `reproduce --dask`): a
//! [`Runner`] for [`crate::sweep`].
//!
//! The caller keeps everything but the simulations: it plans the sweep, reads and fills the
//! result store, reduces and writes the outputs. The runs go, as resolved scenarios (TOML text)
//! with their seeds, to a Python process of the `ackshape` package (`python -m
//! ackshape._dask_bridge`, the interpreter named by `ACKSHAPE_PYTHON`, default `python3`), which
//! submits them to the cluster's scheduler and hands back each summary.json as it finishes. The
//! exchange is one JSON object per line on the child's stdin and stdout:
//!
//! - child → us, first: `{"ackshape": {version, commit, dirty, source}, "workers": N}` or `{"error": "…"}`;
//! - us → child, per batch: `{"i": K, "scenario": TOML, "file": F, "set": [..], "seed": S, "record": B}` lines,
//!   then `{"end": true}` (`record`: hand back a run record, `RunRecord::to_text`, not a summary.json);
//! - child → us, per run as it finishes: `{"i": K, "summary": TEXT}` or `{"i": K, "error": "…"}`.
//!
//! Every summary must come from the same build as this binary (version, commit, sources):
//! results of different builds are never mixed.

use crate::provenance::Provenance;
use crate::store::summary_provenance;
use crate::sweep::{RunJob, Runner};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The Python interpreter that runs the bridge.
fn python() -> String {
    std::env::var("ACKSHAPE_PYTHON").ok().filter(|p| !p.trim().is_empty()).unwrap_or_else(|| "python3".into())
}

const INSTALL: &str = "install the Python package with its dask extra (`pip install './crates/py[dask]'`, \
                       or scripts/setup.sh), or name a Python that has it with ACKSHAPE_PYTHON";

pub struct DaskRunner {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    python: String,
    this: Provenance,
}

impl DaskRunner {
    /// Start the bridge and connect it to the scheduler at `address`; errors say what is missing.
    pub fn connect(address: &str) -> Result<DaskRunner, String> {
        let python = python();
        let mut child = Command::new(&python)
            .args(["-m", "ackshape._dask_bridge", "--scheduler", address])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {python}: {e}; {INSTALL}"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut r = DaskRunner { child, stdin, stdout, python, this: Provenance::this() };
        let hello = match r.read_line() {
            Some(v) => v,
            None => {
                let status = r.child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(format!(
                    "{} -m ackshape._dask_bridge ended before it connected ({status}; its error is above): {INSTALL}",
                    r.python
                ));
            }
        };
        if let Some(e) = hello["error"].as_str() {
            return Err(e.to_string());
        }
        let theirs: Provenance = serde_json::from_value(hello["ackshape"].clone())
            .map_err(|e| format!("{}: the bridge did not say its build ({e}): {INSTALL}", r.python))?;
        if theirs != r.this {
            return Err(format!(
                "the Python package in {} is {theirs}, this command is {}: results of different builds are never \
                 mixed; rebuild the package from this tree (scripts/setup.sh)",
                r.python, r.this
            ));
        }
        eprintln!("dask: {address}, {} workers", hello["workers"]);
        Ok(r)
    }

    /// The next JSON line from the bridge (None at its end or on a line that is not JSON, which is
    /// reported).
    fn read_line(&mut self) -> Option<serde_json::Value> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => match serde_json::from_str(&line) {
                Ok(v) => Some(v),
                Err(e) => {
                    eprintln!("error: the Dask bridge wrote a line that is not JSON ({e}): {}", line.trim());
                    None
                }
            },
        }
    }

    fn send(&mut self, jobs: &[RunJob]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("the Dask bridge has ended")?;
        let mut w = std::io::BufWriter::new(stdin);
        for (i, j) in jobs.iter().enumerate() {
            let line = serde_json::json!({"i": i, "scenario": j.scenario, "file": j.file, "set": j.set, "seed": j.seed, "record": j.record});
            writeln!(w, "{line}").map_err(|e| format!("the Dask bridge: {e}"))?;
        }
        writeln!(w, "{}", serde_json::json!({"end": true})).map_err(|e| format!("the Dask bridge: {e}"))?;
        w.flush().map_err(|e| format!("the Dask bridge: {e}"))
    }
}

impl Runner for DaskRunner {
    fn run(
        &mut self,
        jobs: &[RunJob],
        keep: &(dyn Fn(&RunJob, &str) -> Result<(), String> + Sync),
        progress: &mut dyn FnMut(usize),
    ) -> Vec<Result<String, String>> {
        let mut out: Vec<Option<Result<String, String>>> = vec![None; jobs.len()];
        if jobs.is_empty() {
            return Vec::new();
        }
        if let Err(e) = self.send(jobs) {
            return jobs.iter().map(|_| Err(e.clone())).collect();
        }
        let mut done = 0;
        while done < jobs.len() {
            let Some(v) = self.read_line() else { break };
            let Some(i) = v["i"].as_u64().map(|i| i as usize).filter(|&i| i < jobs.len() && out[i].is_none()) else {
                continue;
            };
            let r = match (v["summary"].as_str(), v["error"].as_str()) {
                (Some(text), _) => match summary_provenance(text) {
                    Ok(p) if p == self.this => keep(&jobs[i], text).map(|_| text.to_string()),
                    Ok(p) => Err(format!(
                        "a Dask worker runs {p}, this command is {}: results of different builds are never mixed \
                         (install the same build on every worker)",
                        self.this
                    )),
                    Err(e) => Err(format!("a Dask worker's result: {e}")),
                },
                (None, Some(e)) => Err(e.to_string()),
                (None, None) => Err("a Dask worker's result has neither a summary nor an error".into()),
            };
            out[i] = Some(r);
            done += 1;
            progress(done);
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err("the Dask bridge ended before this run finished (its error is above)".into()))
            })
            .collect()
    }
}

impl Drop for DaskRunner {
    fn drop(&mut self) {
        // End of stdin ends the bridge, which closes its client.
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
