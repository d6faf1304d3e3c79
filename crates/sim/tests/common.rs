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

/// A dumbbell whose 100 Mbit/s bottleneck and access links (1000-packet queues) are not the limit,
/// `n` bulk flows, and an edge gateway at `left` on the bottleneck. `head`: the scenario's
/// top-level keys and its `[tcp]` table; `gateway`: the box's keys after `kind = "gateway"`.
pub fn gateway_dumbbell(head: &str, n: u32, gateway: &str) -> String {
    format!(
        r#"
{head}
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "100Mbit/s", delay = "20ms", queue = "1000pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
kind = "bulk"
count = {n}
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
{gateway}
"#
    )
}

/// Paper 002's two-way case: an upload from `local` and a download to it (from 100 ms) over an
/// asymmetric access link `access` from router `gw` to `isp`, whose uplink has `uplink` (its rate
/// and queue keys) and whose downlink is 2.1 Mbit/s behind a 100-packet FIFO; Reno without SACK,
/// delayed ACKs every 2 segments. `middlebox`: anything after the flows (a `[[middlebox]]`).
pub fn asymmetric_two_way(duration: &str, uplink: &str, middlebox: &str) -> String {
    format!(
        r#"
seed = 2
duration = "{duration}"
warmup = "10s"
[tcp]
cc = "reno"
sack = false
delack = 2
max_window = "200pkt"
[topology]
kind = "graph"
nodes = [{{ name = "local", kind = "host" }}, {{ name = "gw", kind = "router" }}, {{ name = "isp", kind = "router" }}, {{ name = "remote", kind = "host" }}]
links = [
  {{ name = "home", a = "local", b = "gw", rate = "100Mbit/s", delay = "100us" }},
  {{ name = "access", a = "gw", b = "isp", {uplink}, delay = "10ms", reverse = {{ rate = "2.1Mbit/s", qdisc = {{ kind = "fifo", limit_pkts = 100 }} }} }},
  {{ name = "internet", a = "isp", b = "remote", rate = "100Mbit/s", delay = "20ms" }},
]
[[flows]]
name = "upload"
from = "local"
to = "remote"
[[flows]]
name = "download"
from = "remote"
to = "local"
start = "100ms"
{middlebox}
"#
    )
}
