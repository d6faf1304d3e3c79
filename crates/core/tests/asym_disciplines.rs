//! Unit tests of the asymmetric-link disciplines' rules (issue 4, "done when" 4 and 5).

use ackshape_core::queue::{Enqueue, QueueDisc};
use ackshape_core::rng::stream;
use ackshape_core::shape::asym::*;
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Ecn, IpHdr, Packet, SackBlock, SeqNum, TcpFlags, TcpHdr, TcpOptions, UdpHdr, L4};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr};

fn ip(src: u8) -> IpHdr {
    IpHdr {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, src)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
        ttl: 64,
        dscp: 0,
        ecn: Ecn::NotEct,
        id: 0,
    }
}

fn tcp(sport: u16, ack: u32, payload: u32, flags: TcpFlags, opts: TcpOptions) -> Packet {
    Packet {
        ip: ip(1),
        l4: L4::Tcp(TcpHdr {
            sport,
            dport: 80,
            seq: SeqNum(1),
            ack: SeqNum(ack),
            flags,
            window: 1000,
            urgent: 0,
            opts,
        }),
        payload_len: payload,
        payload: None,
    }
}

/// Pure ACK of flow `sport` acknowledging `ack`.
fn ack(sport: u16, a: u32) -> Packet {
    tcp(sport, a, 0, TcpFlags::ACK, TcpOptions::default())
}
fn ack_ece(sport: u16, a: u32) -> Packet {
    tcp(sport, a, 0, TcpFlags::ACK | TcpFlags::ECE, TcpOptions::default())
}
fn ack_sack(sport: u16, a: u32, blocks: &[(u32, u32)]) -> Packet {
    let mut o = TcpOptions::default();
    let b: Vec<SackBlock> = blocks.iter().map(|&(l, r)| SackBlock { left: SeqNum(l), right: SeqNum(r) }).collect();
    o.set_sack_blocks(&b);
    tcp(sport, a, 0, TcpFlags::ACK, o)
}
/// A full-size TCP data segment (1500 B IP).
fn data(sport: u16) -> Packet {
    tcp(sport, 1, 1460, TcpFlags::ACK | TcpFlags::PSH, TcpOptions::default())
}
/// A full-size UDP datagram (1500 B IP).
fn udp() -> Packet {
    Packet { ip: ip(9), l4: L4::Udp(UdpHdr { sport: 5000, dport: 5001 }), payload_len: 1472, payload: None }
}

fn ack_no(p: &Packet) -> u32 {
    p.tcp().map(|t| t.ack.0).unwrap_or(0)
}

const T0: Time = Time(0);

fn drain(q: &mut dyn QueueDisc) -> Vec<Packet> {
    let mut v = Vec::new();
    while let Some(p) = q.dequeue(T0) {
        v.push(p);
    }
    v
}

fn queued(r: Enqueue) -> bool {
    matches!(r, Enqueue::Queued)
}

// ---------------------------------------------------------------- Eq. 16

#[test]
fn eq16_sizes_default_parameters() {
    let cases = [(0, 5), (1, 5), (7, 5), (8, 4), (18, 3), (28, 2), (29, 1), (35, 1), (36, 1), (100, 1)];
    for (n, s) in cases {
        assert_eq!(eq16_ack_queue_size(n, 5, 36), s, "n = {n}");
    }
    // Integer form equals the paper's real-valued formula everywhere below the threshold.
    for n in 0..36usize {
        let real = (-(5.0 / 36.0) * n as f64 + 5.0).ceil() as usize;
        assert_eq!(eq16_ack_queue_size(n, 5, 36), real.max(1), "n = {n}");
    }
}

#[test]
fn eq16_sizes_configured_parameters() {
    // s_max = 10, n_thr = 20: s = ceil(10 - n/2).
    let cases = [(0, 10), (1, 10), (5, 8), (18, 1), (19, 1), (20, 1), (100, 1)];
    for (n, s) in cases {
        assert_eq!(eq16_ack_queue_size(n, 10, 20), s, "n = {n}");
    }
    assert_eq!(eq16_ack_queue_size(3, 10, 20), 9);
    // Degenerate configurations never give 0.
    assert_eq!(eq16_ack_queue_size(0, 0, 36), 1);
    assert_eq!(eq16_ack_queue_size(0, 5, 0), 1);
}

#[test]
fn afvq_enforces_eq16_size_from_data_queue() {
    for (n_data, want) in [(0usize, 5usize), (1, 5), (18, 3), (35, 1), (36, 1), (100, 1)] {
        let cfg = AfvqConfig { data_limit: 1000, ..AfvqConfig::default() };
        let mut q = Afvq::new(cfg, stream(1, "afvq-test", 0));
        for _ in 0..n_data {
            assert!(queued(q.enqueue(T0, data(1))));
        }
        for i in 0..20 {
            q.enqueue(T0, ack(2, 1000 + i));
        }
        assert_eq!(q.ack_queue_size(), want, "n = {n_data}");
        assert_eq!(q.stats().ack_q_len, want, "n = {n_data}");
        assert_eq!(q.stats().drops.ack_random_drop, 20 - want as u64);
    }
}

// ---------------------------------------------------------------- AFVQ random drop

#[derive(Clone, Debug)]
enum Op {
    Ack(u16),
    Data,
    Udp,
    Deq,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u16..8).prop_map(Op::Ack),
        3 => Just(Op::Data),
        1 => Just(Op::Udp),
        3 => Just(Op::Deq),
        1 => (1u64..400).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// After any ACK arrival the ACK queue holds at least one ACK and at most `s`; the random
    /// drop never empties it. Counters stay conserved per class.
    #[test]
    fn afvq_random_drop_never_empties_ack_queue(
        ops in proptest::collection::vec(op(), 1..400),
        s_max in 1usize..8,
        n_thr in 1usize..50,
        sampled in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let modifier = if sampled { SizeModifier::Sampled { period: Dur::from_millis(100) } } else { SizeModifier::Continuous };
        let cfg = AfvqConfig { s_max, n_thr, data_limit: 60, non_tcp_limit: 20, modifier, quantum_bytes: 1500 };
        let mut q = Afvq::new(cfg, stream(seed, "afvq-prop", 0));
        let mut now = Time(0);
        let mut acks_seen = 0u32;
        for o in ops {
            match o {
                Op::Ack(f) => {
                    acks_seen += 1;
                    let before = q.stats().ack_q_len;
                    q.enqueue(now, ack(f, acks_seen));
                    let st = q.stats();
                    prop_assert!(st.ack_q_len >= 1, "ACK queue emptied");
                    prop_assert!(st.ack_q_len <= q.ack_queue_size().max(before), "ACK queue above its size");
                    if before < q.ack_queue_size() {
                        prop_assert_eq!(st.ack_q_len, before + 1, "dropped although below s");
                    }
                }
                Op::Data => { q.enqueue(now, data(1)); }
                Op::Udp => { q.enqueue(now, udp()); }
                Op::Deq => { q.dequeue(now); }
                Op::Wait(ms) => now += Dur::from_millis(ms),
            }
            let st = q.stats();
            let qa = st.arrived.ack - st.dequeued.ack - st.dropped.ack;
            let qd = st.arrived.data - st.dequeued.data - st.dropped.data;
            let qo = st.arrived.non_tcp - st.dequeued.non_tcp - st.dropped.non_tcp;
            prop_assert_eq!(qa as usize, st.ack_q_len);
            prop_assert_eq!(qd as usize, st.data_q_len);
            prop_assert_eq!(qo as usize, st.non_tcp_q_len);
            prop_assert_eq!(q.len_pkts(), st.ack_q_len + st.data_q_len + st.non_tcp_q_len);
        }
    }
}

#[test]
fn afvq_random_drop_picks_queued_and_arriving() {
    // s = 1 (data queue past threshold): over many arrivals both the arriving ACK and the
    // queued one must sometimes be the victim (uniform among s + 1 = 2).
    let cfg = AfvqConfig { data_limit: 100, ..AfvqConfig::default() };
    let mut q = Afvq::new(cfg, stream(7, "afvq-test", 0));
    for _ in 0..40 {
        q.enqueue(T0, data(1));
    }
    q.enqueue(T0, ack(2, 1));
    let (mut arriving, mut queued_victim) = (0, 0);
    for i in 2..2000u32 {
        match q.enqueue(T0, ack(2, i)) {
            Enqueue::Dropped(_) => arriving += 1,
            Enqueue::Queued => queued_victim += 1,
        }
        assert_eq!(q.stats().ack_q_len, 1);
    }
    let frac = arriving as f64 / (arriving + queued_victim) as f64;
    assert!((0.45..0.55).contains(&frac), "arriving ACK dropped in {frac:.3} of overflows, want ~0.5");
}

#[test]
fn afvq_acks_first_then_round_robin() {
    let mut q = Afvq::new(AfvqConfig::default(), stream(1, "afvq-test", 0));
    q.enqueue(T0, data(1));
    q.enqueue(T0, udp());
    q.enqueue(T0, data(1));
    q.enqueue(T0, udp());
    q.enqueue(T0, ack(2, 10));
    let order: Vec<PktClass> = drain(&mut q).iter().map(classify).collect();
    assert_eq!(order[0], PktClass::TcpAck);
    // Then alternating TCP data / non-TCP (equal sizes, equal quanta).
    assert_ne!(order[1], order[2]);
    assert_ne!(order[3], order[4]);
}

/// Issue 4 "done when" 5: a UDP flood fills the non-TCP queue; TCP data still gets about half
/// of the data dequeues under AFVQ (and clearly less under a FIFO).
#[test]
fn udp_alongside_tcp_tcp_data_is_not_starved() {
    fn run(q: &mut dyn AsymQueue) -> f64 {
        let (mut tcp_out, mut udp_out) = (0u64, 0u64);
        for step in 0..20_000u64 {
            let now = Time(step * 1_000_000);
            for _ in 0..6 {
                q.enqueue(now, udp());
            }
            for _ in 0..2 {
                q.enqueue(now, data(1));
            }
            for _ in 0..2 {
                match q.dequeue(now).map(|p| classify(&p)) {
                    Some(PktClass::TcpData) => tcp_out += 1,
                    Some(PktClass::NonTcp) => udp_out += 1,
                    _ => {}
                }
            }
        }
        let st = q.stats();
        assert!(st.non_tcp_q_len > 0, "UDP queue should be full");
        tcp_out as f64 / (tcp_out + udp_out) as f64
    }
    let mut afvq = Afvq::new(AfvqConfig::default(), stream(3, "afvq-udp", 0));
    let share = run(&mut afvq);
    println!("AFVQ: TCP data share of dequeues under UDP flood = {share:.3} (want ~0.5)");
    assert!((0.47..0.53).contains(&share), "TCP share {share}");
    let mut fifo = Fifo::new(ackshape_core::queue::Limit::Packets(100));
    let fshare = run(&mut fifo);
    println!("FIFO: TCP data share = {fshare:.3}");
    assert!(fshare < 0.3, "FIFO control: TCP share {fshare}");
}

#[test]
fn afvq_sampled_and_continuous_differ_within_a_period() {
    let mk =
        |m| Afvq::new(AfvqConfig { modifier: m, data_limit: 1000, ..AfvqConfig::default() }, stream(5, "afvq-test", 0));
    let mut cont = mk(SizeModifier::Continuous);
    let mut samp = mk(SizeModifier::Sampled { period: Dur::from_secs(1) });
    for q in [&mut cont, &mut samp] {
        // t = 0: the sampled modifier samples n = 0 -> s = 5.
        q.enqueue(Time::ZERO, udp());
        // t = 0.1 s: 40 data packets queue up (n >= n_thr -> s = 1 for the continuous one).
        for _ in 0..40 {
            q.enqueue(Time::from_secs_f64(0.1), data(1));
        }
        for i in 0..8 {
            q.enqueue(Time::from_secs_f64(0.5), ack(2, 100 + i));
        }
    }
    assert_eq!(cont.ack_queue_size(), 1);
    assert_eq!(cont.stats().ack_q_len, 1);
    assert_eq!(samp.ack_queue_size(), 5, "sampled modifier must keep s until the next period");
    assert_eq!(samp.stats().ack_q_len, 5);
    // Crossing the period boundary, the sampled modifier catches up.
    samp.enqueue(Time::from_secs_f64(1.0), ack(2, 200));
    assert_eq!(samp.ack_queue_size(), 1);
    assert_eq!(samp.stats().ack_q_len, 1);
}

// ---------------------------------------------------------------- ACKs-first

#[test]
fn acks_first_dequeues_acks_before_data() {
    let mut q = AcksFirst::new(10, 10);
    q.enqueue(T0, data(1));
    q.enqueue(T0, udp());
    q.enqueue(T0, ack(2, 5));
    q.enqueue(T0, data(1));
    q.enqueue(T0, ack(3, 7));
    let out = drain(&mut q);
    let cls: Vec<PktClass> = out.iter().map(classify).collect();
    assert_eq!(cls, [PktClass::TcpAck, PktClass::TcpAck, PktClass::TcpData, PktClass::NonTcp, PktClass::TcpData]);
    assert_eq!(ack_no(&out[0]), 5);
    assert_eq!(ack_no(&out[1]), 7);
    // Separate limits.
    let mut q = AcksFirst::new(1, 1);
    assert!(queued(q.enqueue(T0, ack(1, 1))));
    assert!(!queued(q.enqueue(T0, ack(1, 2))));
    assert!(queued(q.enqueue(T0, data(1))));
    assert_eq!(q.stats().drops.queue_full, 1);
}

// ---------------------------------------------------------------- classic filter

#[test]
fn classic_filter_keeps_newest_ack_one_per_flow() {
    let mut q = AckFilterClassic::new(100, false);
    q.enqueue(T0, ack(1, 100));
    q.enqueue(T0, data(9));
    q.enqueue(T0, ack(2, 50));
    q.enqueue(T0, ack(1, 200));
    q.enqueue(T0, data(9));
    q.enqueue(T0, ack(1, 300));
    assert_eq!(q.stats().ack_q_len, 2);
    assert_eq!(q.stats().drops.ack_filtered, 2);
    let out = drain(&mut q);
    let acks: Vec<(u16, u32)> =
        out.iter().filter(|p| p.is_pure_ack()).map(|p| (p.tcp().map(|t| t.sport).unwrap_or(0), ack_no(p))).collect();
    assert_eq!(acks, [(2, 50), (1, 300)], "one ACK per flow, the newest, at the tail");
    assert_eq!(out.len(), 4);
    // After the flow's ACK left, a new one queues normally.
    q.enqueue(T0, ack(1, 400));
    assert_eq!(q.stats().ack_q_len, 1);
}

#[test]
fn classic_filter_keeps_duplicate_acks_and_purges_them_on_a_newer_ack() {
    // ns-2's reference AF (semantic-packetqueue.cc, filterAcks) removes only queued ACKs with a
    // smaller number: a run of dupACKs survives, so the sender can still fast-retransmit.
    let mut q = AckFilterClassic::new(100, false);
    q.enqueue(T0, ack(1, 100));
    q.enqueue(T0, data(9));
    for _ in 0..3 {
        assert!(queued(q.enqueue(T0, ack(1, 200))));
    }
    // The 100 went (older than 200); the three dupACKs of 200 all stay.
    assert_eq!(q.stats().drops.ack_filtered, 1);
    assert_eq!(q.stats().ack_q_len, 3);
    // One of them leaves; a fourth dupACK joins the remaining two.
    let first = q.dequeue(T0).expect("data");
    assert!(!first.is_pure_ack());
    assert_eq!(ack_no(&q.dequeue(T0).expect("dupACK")), 200);
    assert!(queued(q.enqueue(T0, ack(1, 200))));
    assert_eq!(q.stats().ack_q_len, 3);
    // A newer cumulative ACK makes every queued dupACK redundant.
    assert!(queued(q.enqueue(T0, ack(1, 300))));
    assert_eq!(q.stats().drops.ack_filtered, 4);
    let out: Vec<u32> = drain(&mut q).iter().map(ack_no).collect();
    assert_eq!(out, [300]);
    // keep_position (ns-2's replace_head_) also purges equal ACKs: the newest takes the
    // place of the oldest, so dupACKs are thinned to one.
    let mut q = AckFilterClassic::new(100, true);
    q.enqueue(T0, ack(1, 200));
    q.enqueue(T0, data(9));
    q.enqueue(T0, ack(1, 200));
    q.enqueue(T0, ack(1, 200));
    assert_eq!(q.stats().ack_q_len, 1);
    let out = drain(&mut q);
    assert_eq!(out.len(), 2);
    assert!(out[0].is_pure_ack() && !out[1].is_pure_ack(), "the ACK kept the head position");
}

#[test]
fn classic_filter_keep_position_and_stale_ack() {
    let mut q = AckFilterClassic::new(100, true);
    q.enqueue(T0, ack(1, 100));
    q.enqueue(T0, data(9));
    q.enqueue(T0, ack(1, 300));
    // Stale (reordered) ACK: dropped, the newer stays.
    assert!(!queued(q.enqueue(T0, ack(1, 200))));
    let out = drain(&mut q);
    assert_eq!(out.len(), 2);
    assert_eq!(ack_no(&out[0]), 300, "newest ACK took the older one's place at the head");
    assert!(!out[1].is_pure_ack());
}

// ---------------------------------------------------------------- CAKE-safe filter

fn cake(mode: CakeMode, pkts: Vec<Packet>) -> (AckFilterCake, Vec<u32>) {
    let mut q = AckFilterCake::new(100, mode);
    for p in pkts {
        q.enqueue(T0, p);
    }
    let st_filtered = q.stats().drops.ack_filtered;
    let out: Vec<u32> = drain(&mut q).iter().map(ack_no).collect();
    assert_eq!(q.stats().drops.ack_filtered, st_filtered);
    (q, out)
}

#[test]
fn cake_drops_redundant_ack() {
    // Conservative: two older eligible ACKs -> the oldest goes.
    let (q, out) = cake(CakeMode::Conservative, vec![ack(1, 100), ack(1, 200), ack(1, 300)]);
    assert_eq!(out, [200, 300]);
    assert_eq!(q.stats().drops.ack_filtered, 1);
    // Conservative keeps a single older ACK; aggressive drops it.
    let (_, out) = cake(CakeMode::Conservative, vec![ack(1, 100), ack(1, 200)]);
    assert_eq!(out, [100, 200]);
    let (_, out) = cake(CakeMode::Aggressive, vec![ack(1, 100), ack(1, 200)]);
    assert_eq!(out, [200]);
    // Other flows are not touched.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack(1, 100), ack(2, 200)]);
    assert_eq!(out, [100, 200]);
    // A data segment's cumulative ACK can make a pure ACK redundant.
    let mut d = data(1);
    if let Some(t) = d.tcp_mut() {
        t.ack = SeqNum(500);
    }
    let (_, out) = cake(CakeMode::Aggressive, vec![ack(1, 100), d]);
    assert_eq!(out, [500]);
}

#[test]
fn cake_never_drops_duplicate_acks() {
    for mode in [CakeMode::Conservative, CakeMode::Aggressive] {
        let (q, out) = cake(mode, vec![ack(1, 100), ack(1, 100), ack(1, 100), ack(1, 100)]);
        assert_eq!(out, [100, 100, 100, 100], "{mode:?}");
        assert_eq!(q.stats().drops.ack_filtered, 0);
    }
}

#[test]
fn cake_never_drops_ack_with_uncovered_sack() {
    // The candidate SACKs [500,600); the trigger acknowledges further but does not cover it.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack_sack(1, 100, &[(500, 600)]), ack_sack(1, 150, &[(200, 300)])]);
    assert_eq!(out, [100, 150]);
    // Trigger with no SACK at all: kept too.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack_sack(1, 100, &[(500, 600)]), ack(1, 150)]);
    assert_eq!(out, [100, 150]);
    // D-SACK (block below the cumulative ACK): kept.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack_sack(1, 100, &[(50, 80)]), ack_sack(1, 150, &[(40, 90)])]);
    assert_eq!(out, [100, 150]);
    // Control: covered blocks -> dropped.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack_sack(1, 100, &[(500, 600)]), ack_sack(1, 100, &[(500, 700)])]);
    assert_eq!(out, [100]);
}

#[test]
fn cake_never_drops_ack_with_unknown_option() {
    let o = TcpOptions { has_other: true, ..TcpOptions::default() };
    let (_, out) = cake(CakeMode::Aggressive, vec![tcp(1, 100, 0, TcpFlags::ACK, o), ack(1, 200)]);
    assert_eq!(out, [100, 200]);
    // Window scale / MSS (options other than TS/SACK/NOP) also protect.
    let o = TcpOptions { wscale: Some(7), ..TcpOptions::default() };
    let (_, out) = cake(CakeMode::Aggressive, vec![tcp(1, 100, 0, TcpFlags::ACK, o), ack(1, 200)]);
    assert_eq!(out, [100, 200]);
    // Timestamps alone do not protect (when not newer than the trigger's)...
    let ts = |v| TcpOptions { timestamps: Some((v, 1)), ..TcpOptions::default() };
    let (_, out) =
        cake(CakeMode::Aggressive, vec![tcp(1, 100, 0, TcpFlags::ACK, ts(10)), tcp(1, 200, 0, TcpFlags::ACK, ts(11))]);
    assert_eq!(out, [200]);
    // ...but a newer TSval than the trigger's does.
    let (_, out) =
        cake(CakeMode::Aggressive, vec![tcp(1, 100, 0, TcpFlags::ACK, ts(12)), tcp(1, 200, 0, TcpFlags::ACK, ts(11))]);
    assert_eq!(out, [100, 200]);
}

#[test]
fn cake_never_drops_across_ece_transition() {
    // Aggressive: the single older ACK differs in ECE from the trigger -> kept.
    let (_, out) = cake(CakeMode::Aggressive, vec![ack(1, 100), ack_ece(1, 200)]);
    assert_eq!(out, [100, 200]);
    // Conservative: ECE flips between the two older ACKs -> the eligible set restarts, so
    // the last non-ECE ACK is kept.
    let (_, out) = cake(CakeMode::Conservative, vec![ack(1, 100), ack_ece(1, 150), ack_ece(1, 200)]);
    assert_eq!(out, [100, 150, 200]);
    // Control: without the transition the oldest goes.
    let (_, out) = cake(CakeMode::Conservative, vec![ack_ece(1, 100), ack_ece(1, 150), ack_ece(1, 200)]);
    assert_eq!(out, [150, 200]);
}

#[test]
fn cake_counts_and_limit() {
    let mut q = AckFilterCake::new(2, CakeMode::Aggressive);
    assert!(queued(q.enqueue(T0, data(5))));
    assert!(queued(q.enqueue(T0, ack(1, 100))));
    // Full, but the trigger makes the queued ACK redundant: it replaces it.
    assert!(queued(q.enqueue(T0, ack(1, 200))));
    assert!(!queued(q.enqueue(T0, ack(2, 1))));
    let st = q.stats();
    assert_eq!((st.drops.ack_filtered, st.drops.queue_full), (1, 1));
    assert_eq!(q.len_pkts(), 2);
}

// ---------------------------------------------------------------- ACQ

#[test]
fn acq_weights_follow_the_less_utilised_direction() {
    // Uplink 1 Mb/s, downlink 10 Mb/s. Both classes backlogged; the ACKs acknowledge little
    // (U_fwd small) while data fills the uplink (U_rev large): the ACK weight must grow.
    let mut q = Acq::new(AcqConfig::new(1_000_000, 10_000_000));
    let w0 = q.ack_weight();
    let mut a = 0u32;
    for step in 0..2000u64 {
        let now = Time(step * 1_000_000);
        for _ in 0..3 {
            a += 10; // 10 bytes newly acknowledged per ACK: tiny forward goodput
            q.enqueue(now, ack(1, a));
        }
        q.enqueue(now, data(7));
        for _ in 0..2 {
            q.dequeue(now);
        }
    }
    assert!(q.ack_weight() > w0 + 0.2, "ACK weight {} should have grown from {w0}", q.ack_weight());
    assert!((q.stats().ack_weight - q.ack_weight()).abs() < 1e-12);
}

// ---------------------------------------------------------------- all disciplines

#[test]
fn every_spec_kind_builds_and_conserves_packets() {
    let specs: Vec<AsymDiscSpec> = vec![
        AsymDiscSpec::Fifo { limit_pkts: 50 },
        AsymDiscSpec::AcksFirst { ack_limit_pkts: 20, data_limit_pkts: 50 },
        AsymDiscSpec::AckFilterClassic { limit_pkts: 50, keep_position: false },
        AsymDiscSpec::AckFilterCake { limit_pkts: 50, mode: CakeMode::Aggressive },
        AsymDiscSpec::Acq {
            rate_bps: 1_000_000,
            reverse_rate_bps: 10_000_000,
            ack_limit_pkts: 20,
            data_limit_pkts: 50,
            period_ms: 50,
            step: 0.05,
            initial_ack_weight: 0.5,
            round_bytes: 3000,
        },
        AsymDiscSpec::Afvq {
            s_max: 5,
            n_thr: 36,
            data_limit_pkts: 50,
            non_tcp_limit_pkts: 50,
            modifier: SizeModifierSpec::Sampled,
            period_ms: 100,
            quantum_bytes: 1500,
        },
    ];
    for spec in specs {
        spec.validate().unwrap();
        let mut q = spec.build_asym(stream(11, spec.kind(), 0));
        assert_eq!(q.kind(), spec.kind());
        let (mut inn, mut out, mut dropped_arriving) = (0u64, 0u64, 0u64);
        for i in 0..5000u32 {
            let now = Time(i as u64 * 100_000);
            let p = match i % 5 {
                0 | 1 => ack((i % 16) as u16, i),
                2 | 3 => data((i % 16) as u16),
                _ => udp(),
            };
            inn += 1;
            if let Enqueue::Dropped(_) = q.enqueue(now, p) {
                dropped_arriving += 1;
            }
            if i % 3 != 0 && q.dequeue(now).is_some() {
                out += 1;
            }
        }
        let st = q.stats().clone();
        assert_eq!(st.arrived.total(), inn, "{}", spec.kind());
        assert_eq!(st.dequeued.total(), out, "{}", spec.kind());
        assert!(st.dropped.total() >= dropped_arriving);
        assert_eq!(st.dropped.total(), st.drops.total());
        assert_eq!(inn - out - st.dropped.total(), q.len_pkts() as u64, "{}", spec.kind());
        assert_eq!(q.len_pkts(), st.ack_q_len + st.data_q_len + st.non_tcp_q_len, "{}", spec.kind());
        let mut bytes = 0;
        while let Some(p) = q.dequeue(Time(1 << 40)) {
            bytes += p.ip_len();
        }
        assert_eq!(q.len_bytes(), 0);
        assert!(bytes > 0);
        // The plain QueueDisc form builds too.
        let mut plain = spec.build(stream(11, spec.kind(), 0));
        assert!(queued(plain.enqueue(T0, data(1))));
        assert_eq!(plain.len_pkts(), 1);
    }
}

/// A spoofed ACK further ahead than any window allows (+2^30, +2^31 − 1) evicts no real ACK from
/// either ACK filter; it queues behind them (the sender discards it: RFC 5961 §5.2).
#[test]
fn a_far_ahead_spoofed_ack_evicts_no_real_ones() {
    for off in [1u32 << 30, (1u32 << 31) - 1] {
        let spoof = 1000u32.wrapping_add(off);
        for keep in [false, true] {
            let mut q = AckFilterClassic::new(100, keep);
            for a in [1000, 2000, 3000] {
                q.enqueue(Time::ZERO, ack(1, a));
            }
            assert!(queued(q.enqueue(Time::ZERO, ack(1, spoof))));
            let got: Vec<u32> = drain(&mut q).iter().map(ack_no).collect();
            assert!(got.contains(&3000), "classic keep={keep} +{off}: {got:?}");
        }
        for mode in [CakeMode::Conservative, CakeMode::Aggressive] {
            let (_, got) = cake(mode, vec![ack(1, 1000), ack(1, 2000), ack(1, spoof)]);
            // Conservative would drop 1000 for a real 3000 (two eligible); aggressive already
            // dropped 1000 for the real 2000. The spoof drops nothing more.
            let want: &[u32] = if mode == CakeMode::Conservative { &[1000, 2000] } else { &[2000] };
            assert!(want.iter().all(|a| got.contains(a)), "cake {mode:?} +{off}: {got:?}");
        }
    }
}
