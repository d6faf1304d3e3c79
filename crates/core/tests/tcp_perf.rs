//! Throughput of the TCP endpoints alone (ignored by default; run with
//! `cargo test -p ackshape-core --release --test tcp_perf -- --ignored --nocapture`).
//! Reports packets handled per wall-second; asserts nothing about speed (see DESIGN.md §7).

use ackshape_core::tcp::*;
use ackshape_core::time::{Dur, Time};
use std::collections::VecDeque;

#[test]
#[ignore]
fn endpoint_packets_per_second() {
    for (name, cfg, drop_every) in [
        ("sack+ts", TcpConfig::default(), 0u64),
        ("sack+ts, 1% periodic loss", TcpConfig::default(), 100),
        (
            "newreno no-opts",
            TcpConfig { cc: CcAlgo::NewReno, sack: false, timestamps: false, ..TcpConfig::default() },
            0,
        ),
        ("cubic", TcpConfig { cc: CcAlgo::Cubic, ..TcpConfig::default() }, 0),
    ] {
        let one_way = Dur::from_millis(10);
        let mut a = Connection::connect(
            cfg.clone(),
            "10.0.0.1:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
            1,
            Time::ZERO,
        );
        let mut b: Option<Connection> = None;
        // Constant delay → FIFO per direction; a 1 Gb/s rate limit on A→B.
        let mut ab: VecDeque<(Time, ackshape_wire::Packet)> = VecDeque::new();
        let mut ba: VecDeque<(Time, ackshape_wire::Packet)> = VecDeque::new();
        let mut busy = Time::ZERO;
        let rate = 1_000_000_000u64;
        let n_bytes: u64 = 4_000_000_000;
        a.write(n_bytes);
        let mut now = Time::ZERO;
        let mut pkts = 0u64;
        let mut sent_a = 0u64;
        let wall = std::time::Instant::now();
        loop {
            while let Some(p) = a.poll_transmit(now) {
                sent_a += 1;
                if drop_every > 0 && sent_a == drop_every {
                    sent_a = 0;
                    continue;
                }
                let start = now.max(busy);
                busy = start + Dur::tx_time(p.ip_len(), rate);
                ab.push_back((busy + one_way, p));
            }
            if let Some(b) = b.as_mut() {
                while let Some(p) = b.poll_transmit(now) {
                    ba.push_back((now + one_way, p));
                }
                while b.poll_event().is_some() {}
            }
            while a.poll_event().is_some() {}
            if a.stats().bytes_acked >= n_bytes {
                break;
            }
            let mut next = Time::MAX;
            for t in [
                ab.front().map(|x| x.0),
                ba.front().map(|x| x.0),
                a.poll_timeout(),
                b.as_ref().and_then(|b| b.poll_timeout()),
            ]
            .into_iter()
            .flatten()
            {
                next = next.min(t);
            }
            assert!(next < Time::MAX);
            now = next;
            while ab.front().is_some_and(|x| x.0 <= now) {
                let (_, p) = ab.pop_front().unwrap();
                pkts += 1;
                match b.as_mut() {
                    Some(b) => b.handle_packet(now, &p),
                    None => b = Connection::accept(cfg.clone(), &p, 7, now),
                }
                if let Some(b) = b.as_mut() {
                    while let Some(p) = b.poll_transmit(now) {
                        ba.push_back((now + one_way, p));
                    }
                }
            }
            while ba.front().is_some_and(|x| x.0 <= now) {
                let (_, p) = ba.pop_front().unwrap();
                pkts += 1;
                a.handle_packet(now, &p);
            }
            if a.poll_timeout().is_some_and(|t| t <= now) {
                a.handle_timeout(now);
            }
            if let Some(b) = b.as_mut() {
                if b.poll_timeout().is_some_and(|t| t <= now) {
                    b.handle_timeout(now);
                }
            }
        }
        let secs = wall.elapsed().as_secs_f64();
        eprintln!(
            "{name}: {pkts} packets handled (retrans {}, timeouts {}) in {secs:.3} s wall = {:.2} M packets/s (sim time {now:?}, {} data segs, {} acks)",
            a.stats().retrans_segs,
            a.stats().timeouts,
            pkts as f64 / secs / 1e6,
            a.stats().data_segs_sent,
            b.as_ref().unwrap().stats().acks_sent
        );
    }
}
