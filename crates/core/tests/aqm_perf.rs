//! The AQM workload for instruction counting (ignored by default; `scripts/aqm_instr.sh` runs it
//! under callgrind with 0 and N operations and prints instructions per packet). Settings from
//! the environment: `AQM_KIND` (a name of `core::shape::aqm::workload::NAMES`), `AQM_OPS`
//! (enqueue + dequeue rounds), `AQM_FLOWS`. Asserts nothing about speed.

use ackshape_core::shape::aqm::workload::{build, Source};

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

#[test]
#[ignore]
fn workload() {
    let kind: String = env("AQM_KIND", "fq-codel".to_string());
    let ops: usize = env("AQM_OPS", 100_000);
    let flows: u16 = env("AQM_FLOWS", 16);
    let mut src = Source::new(flows);
    let mut q = build(&kind);
    src.prefill(q.as_mut(), 50);
    src.run(q.as_mut(), 20_000);
    src.run(q.as_mut(), ops);
}
