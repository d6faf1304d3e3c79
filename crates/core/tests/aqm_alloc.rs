//! No allocation per packet in steady state for the AQM disciplines: after a warm-up, long
//! enqueue/dequeue runs perform zero heap allocations (counted per thread by a wrapping global
//! allocator) — with a standing queue below target, and in overload, where every discipline
//! drops (head drops, drops from the fattest flow, BLUE, the buffer limit).

use ackshape_core::queue::QueueDisc;
use ackshape_core::shape::aqm::workload::{build, Source, NAMES};

mod alloc_counter;
use alloc_counter::allocs;

#[test]
fn steady_state_does_not_allocate() {
    for &name in NAMES {
        for flows in [16u16, 1024] {
            let mut src = Source::new(flows);
            let mut q = build(name);
            src.prefill(q.as_mut(), 50);
            src.run(q.as_mut(), 50_000);
            let before = allocs();
            src.run(q.as_mut(), 200_000);
            assert_eq!(allocs() - before, 0, "{name}, {flows} flows: allocations in steady state");
        }
    }
}

#[test]
fn overload_does_not_allocate() {
    // Three arrivals per departure: the buffers fill and every discipline drops (at its limit,
    // from the fattest flow, by BLUE once overflows raised it).
    for &name in NAMES {
        let mut src = Source::new(16);
        let mut q = build(name);
        let round = |q: &mut dyn QueueDisc, src: &mut Source| {
            for _ in 0..3 {
                let p = src.next();
                let _ = q.enqueue(src.now(), p);
            }
            let _ = q.dequeue(src.now());
        };
        for _ in 0..20_000 {
            round(q.as_mut(), &mut src);
        }
        let before = allocs();
        for _ in 0..50_000 {
            round(q.as_mut(), &mut src);
        }
        assert_eq!(allocs() - before, 0, "{name}: allocations in overload");
        let dropped = q.counters().iter().filter(|(k, _)| k.contains("drop")).map(|(_, v)| v).sum::<u64>();
        assert!(name == "drop-tail" || dropped > 0, "{name} dropped nothing: {:?}", q.counters());
    }
}
