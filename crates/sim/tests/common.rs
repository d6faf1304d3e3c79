#![allow(dead_code)]
use ackshape_core::time::Time;
use ackshape_sim::link::Capture;
use ackshape_sim::{RunOptions, Scenario, Sim, Summary};
use ackshape_wire::Packet;
use std::sync::{Arc, Mutex};

pub fn parse(text: &str) -> Scenario {
    Scenario::parse(text, "test.toml").unwrap_or_else(|e| panic!("scenario: {e}"))
}

pub fn run(text: &str) -> Summary {
    run_with(text, RunOptions::default()).0
}

pub fn run_with(text: &str, opts: RunOptions) -> (Summary, Sim) {
    let sc = parse(text);
    let mut sim = Sim::build(&sc, "test.toml", None, opts).unwrap_or_else(|e| panic!("build: {e}"));
    sim.run(None);
    (sim.summary(0.0), sim)
}

/// Records (time, packet) of every packet a link starts transmitting.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<(Time, Packet)>>>);
impl Capture for Recorder {
    fn capture(&mut self, t: Time, pkt: &Packet) {
        self.0.lock().unwrap().push((t, pkt.clone()));
    }
}
