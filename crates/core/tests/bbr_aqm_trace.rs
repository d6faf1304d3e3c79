//! A trace of the simulator's BBR in an AQM class (ignored by default; asserts nothing): 4 flows
//! between distinct hosts, as the simulator places them, through one discipline served at
//! 10 Mbit/s (charging 14 bytes of Ethernet header per packet), 10 ms each way — the set-up of
//! `experiments/live/aqm-class-*.toml` without the gateway around the discipline. Every 0.5 s
//! from 4 s it prints the queue and each flow's BBR state (mode, max-bandwidth estimate, min RTT,
//! pacing gain), cwnd and RTOs so far; then the largest queue after 4 s, each flow's RTOs and
//! retransmissions and the discipline's counters. docs/live.md
//! ("FQ-CoDel and CAKE classes") uses it to show why CAKE's simulated queue is larger with bbr.
//! `Q=cake CC=bbr cargo test --release -p ackshape-core --test bbr_aqm_trace -- --ignored --nocapture`
//! (`Q`: a qdisc kind with its defaults, `fq-codel` if unset; `CC`: `bbr` or `cubic`).
use ackshape_core::rng::stream;
use ackshape_core::shape::qdisc_spec::QdiscSpec;
use ackshape_core::tcp::{CcAlgo, Connection, TcpConfig};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

fn spec(s: &str) -> QdiscSpec {
    let t: toml::Table = format!("q = {s}").parse().unwrap();
    serde::Deserialize::deserialize(t["q"].clone()).unwrap()
}

#[test]
#[ignore]
fn bbr_state_in_an_aqm_class() {
    let kind = std::env::var("Q").unwrap_or("fq-codel".into());
    let cc = std::env::var("CC").unwrap_or("bbr".into());
    let cfg = TcpConfig { cc: if cc == "bbr" { CcAlgo::Bbr } else { CcAlgo::Cubic }, ..TcpConfig::default() };
    let rate = 10_000_000u64;
    let mut q = spec(&format!("{{ kind = \"{kind}\" }}")).build(rate, stream(1, "bbr_aqm_trace", 0));
    let n = 4;
    let mut a: Vec<Connection> = (0..n)
        .map(|i| {
            Connection::connect(
                cfg.clone(),
                format!("10.0.0.{}:{}", 1 + 2 * i, 40000 + i).parse().unwrap(),
                format!("10.0.0.{}:5001", 2 + 2 * i).parse().unwrap(),
                1 + i as u32,
                Time::ZERO,
            )
        })
        .collect();
    for c in a.iter_mut() {
        c.write(u64::MAX / 4);
    }
    let mut b: Vec<Option<Connection>> = (0..n).map(|_| None).collect();
    let one_way = Dur::from_millis(10);
    let mut busy = Time::ZERO;
    let mut ab: VecDeque<(Time, usize, Packet)> = VecDeque::new();
    let mut ba: VecDeque<(Time, usize, Packet)> = VecDeque::new();
    let end = Time::ZERO + Dur::from_secs_f64(14.0);
    let mut now = Time::ZERO;
    let mut next_print = Time::ZERO + Dur::from_millis(4000);
    let mut qmax = 0;
    let idx = |p: &Packet| -> usize { (p.tcp().unwrap().sport as usize).wrapping_sub(40000).min(n - 1) };
    while now < end {
        while ab.front().is_some_and(|x| x.0 <= now) {
            let (_, i, p) = ab.pop_front().unwrap();
            match b[i].as_mut() {
                Some(c) => c.handle_packet(now, &p),
                None => b[i] = Connection::accept(cfg.clone(), &p, 7, now),
            }
        }
        for (i, bb) in b.iter_mut().enumerate() {
            if let Some(c) = bb.as_mut() {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
                while let Some(p) = c.poll_transmit(now) {
                    ba.push_back((now + one_way, i, p));
                }
                while c.poll_event().is_some() {}
                while c.read().is_some() {}
            }
        }
        while ba.front().is_some_and(|x| x.0 <= now) {
            let (_, i, p) = ba.pop_front().unwrap();
            a[i].handle_packet(now, &p);
        }
        for c in a.iter_mut() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            while c.poll_event().is_some() {}
            while let Some(p) = c.poll_transmit(now) {
                let _ = q.enqueue(now, p);
            }
        }
        while busy <= now {
            let Some(p) = q.dequeue(now) else { break };
            busy = busy.max(now) + Dur::tx_time(p.ip_len() + 14, rate);
            let i = idx(&p);
            ab.push_back((busy + one_way, i, p));
        }
        if now >= Time::ZERO + Dur::from_millis(4000) {
            qmax = qmax.max(q.len_pkts());
        }
        if now >= next_print {
            next_print += Dur::from_millis(500);
            let st: Vec<String> = a
                .iter()
                .map(|c| match c.bbr_state() {
                    Some((m, bw, mr, g, _)) => format!(
                        "{:?} bw {:.2}Mb minrtt {:.1}ms g {:.2} cwnd {} to {}",
                        m,
                        bw * 8.0 / 1e6,
                        mr.map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0),
                        g,
                        c.cwnd_bytes() / 1448,
                        c.stats().timeouts
                    ),
                    None => format!("cwnd {} to {}", c.cwnd_bytes() / 1448, c.stats().timeouts),
                })
                .collect();
            println!("{:.1} q {} | {}", now.as_secs_f64(), q.len_pkts(), st.join(" | "));
        }
        let mut nx = end;
        let qs = q.len_pkts() > 0;
        for t in [
            ab.front().map(|x| x.0),
            ba.front().map(|x| x.0),
            qs.then_some(busy.max(now + Dur::from_nanos(1))),
            q.next_ready(now),
        ]
        .into_iter()
        .flatten()
        .chain(a.iter().filter_map(|c| c.poll_timeout()))
        .chain(b.iter().flatten().filter_map(|c| c.poll_timeout()))
        {
            nx = nx.min(t);
        }
        now = nx.max(now + Dur::from_nanos(1));
    }
    println!("qmax after 4 s: {qmax}");
    let rtos: Vec<u64> = a.iter().map(|c| c.stats().timeouts).collect();
    let rtx: Vec<u64> = a.iter().map(|c| c.stats().retrans_segs).collect();
    println!("RTOs per flow {rtos:?}, retransmissions {rtx:?}, discipline counters {:?}", q.counters());
}
