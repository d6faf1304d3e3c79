//! Running an experiment's simulations: the context an experiment runs in ([`Ctx`]: quick mode,
//! seed, progress, where the runs go), one run ([`SimJob`]) and what an experiment reads of a
//! finished run ([`RunView`]). The crate's root re-exports them.

use ackshape_core::tcp::TcpStats;
use ackshape_sim::metrics::Summary;
use ackshape_sim::parallel::{run_parallel, workers};
use ackshape_sim::scenario::Scenario;
use ackshape_sim::sweep::{RunJob, RunRecord, Runner};
use ackshape_sim::world::{RunOptions, Sim};

/// Run settings shared by all experiments.
pub struct Ctx<'a> {
    /// Fewer seeds / shorter runs / fewer sweep points (used by the test suite); the report says so.
    pub quick: bool,
    /// Base seed; experiments derive their seeds from it.
    pub seed: u64,
    /// Progress callback: (fraction of this experiment done).
    pub progress: Option<&'a mut dyn FnMut(f64)>,
    /// Build every run with the mechanisms under test switched off (TCR, PostACK, RED/ECN marking, the
    /// asymmetric-link disciplines, VPS and MulTCP, the tap): the vacuity check. Claims about a
    /// mechanism must then fail or be not assessable.
    pub mechanism_off: bool,
    /// Also run the file's `[[paper.readings]]` ([`run_experiment`](crate::run_experiment)).
    pub readings: bool,
    /// Where the simulations run: `None`, on [`workers`] threads of this process; else on this
    /// runner (the sweep's seam: `reproduce --dask`, or a Python executor), each run handing back
    /// its [`RunRecord`], so that the results are the same wherever the runs ran.
    pub runner: Option<&'a mut dyn Runner>,
}

impl<'a> Ctx<'a> {
    /// A context without a progress callback, readings on, mechanisms on, runs on threads here
    /// (of any lifetime, so that `..Ctx::new(..)` can fill a context that borrows a callback).
    pub fn new(quick: bool, seed: u64) -> Ctx<'a> {
        Ctx { quick, seed, progress: None, mechanism_off: false, readings: true, runner: None }
    }

    pub fn progress(&mut self, f: f64) {
        if let Some(p) = self.progress.as_mut() {
            p(f);
        }
    }

    /// Run independent simulations on [`workers`] threads; progress goes from 0 to 1 of this
    /// experiment. Results are in the order of `jobs` (see [`run_parallel`]).
    pub fn run_sims(&mut self, jobs: &[SimJob]) -> Vec<Result<Summary, String>> {
        self.run_sims_span(jobs, 0.0, 1.0)
    }

    /// [`run_sims`](Self::run_sims) for an experiment that runs several batches: this batch's
    /// progress is mapped onto `[from, to]` of the experiment's.
    pub fn run_sims_span(&mut self, jobs: &[SimJob], from: f64, to: f64) -> Vec<Result<Summary, String>> {
        self.run_jobs_span(jobs, from, to, |_, s| s)
    }

    /// Like [`run_sims_span`](Self::run_sims_span), but `extract` also reads the finished
    /// simulation (e.g. its goodput time series) and returns what the experiment keeps.
    pub fn run_jobs_span<T, F>(&mut self, jobs: &[SimJob], from: f64, to: f64, extract: F) -> Vec<Result<T, String>>
    where
        T: Send,
        F: Fn(&dyn RunView, Summary) -> T + Sync,
    {
        let n = jobs.len().max(1) as f64;
        let Ctx { progress: parent, runner, .. } = self;
        let mut progress = |done: usize| {
            if let Some(p) = parent.as_mut() {
                p(from + (to - from) * done as f64 / n)
            }
        };
        let Some(runner) = runner.as_deref_mut() else {
            return run_parallel(jobs, workers(), |j| j.run_with(&extract), &mut progress);
        };
        // Elsewhere: each job goes as its resolved scenario and comes back as a run record.
        let mut out: Vec<Option<Result<T, String>>> = Vec::with_capacity(jobs.len());
        let mut sent = Vec::new();
        for (i, j) in jobs.iter().enumerate() {
            match j.run_job(i) {
                Ok(r) => {
                    sent.push(r);
                    out.push(None);
                }
                Err(e) => out.push(Some(Err(e))),
            }
        }
        let texts = runner.run(&sent, &|_, _| Ok(()), &mut progress);
        for (r, text) in sent.iter().zip(texts) {
            let j = &jobs[r.point];
            out[r.point] = Some(
                text.and_then(|t| RunRecord::from_text(&t)).map_err(|e| format!("{} ({}): {e}", j.label, j.file)).map(
                    |rec| {
                        let view = Recorded { goodput_series: rec.goodput_series, sender_stats: rec.sender_stats };
                        extract(&view, rec.summary)
                    },
                ),
            );
        }
        out.into_iter().map(|r| r.unwrap_or_else(|| Err("the runner handed back no result".into()))).collect()
    }
}

/// The runner of a context, for a context that lives shorter.
pub(crate) fn reborrow<'s>(r: &'s mut Option<&mut dyn Runner>) -> Option<&'s mut dyn Runner> {
    match r {
        Some(r) => Some(&mut **r),
        None => None,
    }
}

/// What an experiment reads of a finished run besides its summary: the simulation itself when it
/// ran here, or what a [`RunRecord`] brought back when it ran elsewhere.
pub trait RunView {
    /// (bin end s, flow, goodput bit/s): [`Sim::goodput_series`].
    fn goodput_series(&self) -> Vec<(f64, u32, f64)>;
    /// Flow `i`'s sending TCP counters over the whole run (`summary.flows` order); `None` for a
    /// UDP flow or no such flow: [`Sim::flow_sender_stats`].
    fn flow_sender_stats(&self, i: usize) -> Option<TcpStats>;
}

impl RunView for Sim {
    fn goodput_series(&self) -> Vec<(f64, u32, f64)> {
        Sim::goodput_series(self)
    }
    fn flow_sender_stats(&self, i: usize) -> Option<TcpStats> {
        Sim::flow_sender_stats(self, i)
    }
}

/// A run made elsewhere: what its [`RunRecord`] brought back besides the summary.
struct Recorded {
    goodput_series: Vec<(f64, u32, f64)>,
    sender_stats: Vec<Option<TcpStats>>,
}

impl RunView for Recorded {
    fn goodput_series(&self) -> Vec<(f64, u32, f64)> {
        self.goodput_series.clone()
    }
    fn flow_sender_stats(&self, i: usize) -> Option<TcpStats> {
        self.sender_stats.get(i).cloned().flatten()
    }
}

/// One independent simulation run of an experiment.
#[derive(Clone, Debug)]
pub struct SimJob {
    /// What this run is (e.g. `afvq delay=20ms seed=3`), for error messages.
    pub label: String,
    pub scenario: Scenario,
    /// The scenario as a TOML document (what [`Scenario::from_table`] made `scenario` of), for a
    /// run elsewhere.
    pub doc: toml::Table,
    /// The experiment file, for error messages.
    pub file: String,
    pub seed: u64,
}

impl SimJob {
    /// The job of the scenario `doc` (checked here); errors name the file.
    pub fn new(label: String, doc: toml::Table, file: &str, seed: u64) -> Result<SimJob, String> {
        let scenario = Scenario::from_table(doc.clone(), file).map_err(|e| e.to_string())?;
        Ok(SimJob { label, scenario, doc, file: file.to_string(), seed })
    }

    /// Build and run the simulation; errors name the file and the run.
    pub fn run(&self) -> Result<Summary, String> {
        self.run_with(&|_, s| s)
    }

    /// As a [`Runner`]'s job (number `i` of its batch, in `point`): the resolved scenario as TOML
    /// text, handing back a run record.
    fn run_job(&self, i: usize) -> Result<RunJob, String> {
        let err = |e: String| format!("{} ({}): {e}", self.label, self.file);
        let resolved = ackshape_sim::store::resolve(&self.doc, &self.file).map_err(err)?;
        let scenario = toml::to_string(&resolved).map_err(|e| err(e.to_string()))?;
        Ok(RunJob {
            point: i,
            seed: self.seed,
            hash: ackshape_sim::store::scenario_hash(&resolved),
            scenario,
            file: self.file.clone(),
            set: self.scenario.set.clone(),
            record: true,
        })
    }

    fn run_with<T>(&self, extract: &(impl Fn(&dyn RunView, Summary) -> T + ?Sized)) -> Result<T, String> {
        let mut sim = Sim::build(&self.scenario, &self.file, Some(self.seed), RunOptions::default())
            .map_err(|e| format!("{} ({}): {e}", self.label, self.file))?;
        let t0 = std::time::Instant::now();
        sim.run(None);
        let s = sim.summary(t0.elapsed().as_secs_f64());
        Ok(extract(&sim, s))
    }
}
