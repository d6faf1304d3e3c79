//! VPS (paper 003): the thesis's worked examples of ACK translation, Eq. 2, and the group in a
//! small multi-flow network against ordinary TCP.

mod vps_harness;

use ackshape_core::rng;
use ackshape_core::tcp::vps::*;
use ackshape_core::tcp::{CcAlgo, Connection, DelAckConfig, RtoConfig, TcpConfig};
use ackshape_core::time::{Dur, Time};
use proptest::prelude::*;
use vps_harness::*;

// ---------------------------------------------------------------- translation (Ch. 3–4)
//
// Units as in the thesis: unit-size segments, A_i[j] is actual segment [j, j+1) of actual flow
// i, V_i[j] virtual segment j of virtual flow i, both numbered from 1. Flows are 0-based in the
// code: A_1 is actual flow 0, V_2 virtual flow 1. "ACK of X[j]" has cumulative point j + 1.

const A1: usize = 0;
const A2: usize = 1;
const V1: usize = 0;
const V2: usize = 1;

fn tr(subs: &[(usize, u64, usize, u64)]) -> Translator {
    tr_opt(subs, true)
}

fn tr_opt(subs: &[(usize, u64, usize, u64)], suppression: bool) -> Translator {
    let mut t = Translator::new(2, 2, suppression);
    t.set_virtual_base(V1, 1);
    t.set_virtual_base(V2, 1);
    for &(a, aseq, v, vseq) in subs {
        t.substitute(a, aseq, 1, v, vseq);
    }
    t
}

/// Translate an ACK of actual flow `a`: cumulative point, SACK blocks `[l, r)`.
fn ack(t: &mut Translator, a: usize, cum: u64, sacks: &[(u64, u64)]) -> Vec<VirtualAck> {
    let hi = sacks.iter().map(|s| s.1).max();
    let mut out = Vec::new();
    t.on_actual_ack(a, cum, sacks, hi, &mut out);
    out
}

fn va(v: usize, cum: u64, sacks: &[(u64, u64)]) -> VirtualAck {
    VirtualAck { v, cum, sacks: sacks.to_vec() }
}

fn state(t: &Translator, a: usize, aseq: u64) -> PsrState {
    t.find_actual(a, aseq).unwrap_or_else(|| panic!("no PSR for A_{}[{aseq}]", a + 1)).state
}

/// Fig. 5/6 and trap P3-1. The text says ratio 1:2 with "two of every three to flow 2", but
/// its groups {A_1[1], A_1[2], A_2[1]} and Fig. 6's mapping give flow 1 two of every three.
/// Eq. 2 decides the ratio (flow 2 gets two of every three for w = 1:2); the figure's mapping,
/// taken literally, translates as the thesis says.
#[test]
fn fig6_in_order_translation_and_p3_1() {
    let mut d = Distributor::new(&[1.0, 2.0]).unwrap();
    let mut r = rng::stream(1, "t", 0);
    let mut given = [0u64; 2];
    for _ in 0..3000 {
        let i = d.select(&[0, 1], &mut r).unwrap();
        d.assign(i);
        given[i] += 1;
    }
    assert_eq!(given, [1000, 2000], "Eq. 2 with w = 1:2 gives flow 2 two of every three");

    // The figure's mapping: A_1[1] → V_1[1], A_1[2] → V_2[1], A_2[1] → V_1[2].
    let mut t = tr(&[(A1, 1, V1, 1), (A1, 2, V2, 1), (A2, 1, V1, 2)]);
    assert_eq!(ack(&mut t, A1, 2, &[]), vec![va(V1, 2, &[])], "ACK of A_1[1] → virtual ACK of V_1[1]");
    assert_eq!(state(&t, A1, 2), PsrState::U);
    assert_eq!(ack(&mut t, A1, 3, &[]), vec![va(V2, 2, &[])], "ACK of A_1[2] → V_2[1]");
    assert_eq!(ack(&mut t, A2, 2, &[]), vec![va(V1, 3, &[])], "ACK of A_2[1] → V_1[2]");
    assert_eq!(t.live(), 0, "every PSR freed once both edges passed it");
    assert_eq!(t.stats().virtual_dupacks, 0);
}

/// Fig. 10: A_2[1] (→ V_1[2]) is lost. V_1 gets duplicate ACKs of V_1[1] with SACK {V_1[3]},
/// {V_1[3]–V_1[4]}, {V_1[3]–V_1[5]}, and on the third halves cwnd and retransmits V_1[2].
#[test]
fn fig10_loss_gives_virtual_dupacks_and_fast_retransmit() {
    // Two of every three to flow 1 (the figure's groups).
    let subs = [
        (A1, 1, V1, 1),
        (A1, 2, V2, 1),
        (A2, 1, V1, 2),
        (A1, 3, V1, 3),
        (A1, 4, V2, 2),
        (A2, 2, V2, 3),
        (A1, 5, V1, 4),
        (A1, 6, V1, 5),
        (A2, 3, V2, 4),
    ];
    let mut t = tr(&subs);
    let mut v1 = Vec::new();
    let mut all = Vec::new();
    let mut step = |t: &mut Translator, a, cum, s: &[(u64, u64)]| {
        let out = ack(t, a, cum, s);
        all.extend(out.clone());
        v1.extend(out.into_iter().filter(|x| x.v == V1));
    };
    step(&mut t, A1, 2, &[]); // A_1[1]
    step(&mut t, A1, 3, &[]); // A_1[2]
    step(&mut t, A1, 4, &[]); // A_1[3]: V_1[2] (A_2[1]) still U → buffered
    assert_eq!(state(&t, A1, 3), PsrState::B, "A_1[3] buffered behind the unacknowledged A_2[1]");
    step(&mut t, A1, 5, &[]); // A_1[4]
    step(&mut t, A2, 1, &[(2, 3)]); // receiver 2: dupACK with SACK {A_2[2]} → A_2[1] lost
    assert_eq!(state(&t, A2, 1), PsrState::L);
    step(&mut t, A1, 6, &[]); // A_1[5]
    step(&mut t, A1, 7, &[]); // A_1[6]
    assert_eq!(
        v1,
        vec![va(V1, 2, &[]), va(V1, 2, &[(3, 4)]), va(V1, 2, &[(3, 5)]), va(V1, 2, &[(3, 6)])],
        "V_1: ACK of V_1[1], then three duplicate ACKs with growing SACK"
    );

    // The virtual flow is a standard SACK sender: the third duplicate ACK halves its window
    // and it retransmits V_1[2].
    const MSS: u64 = 1000;
    let cfg = TcpConfig { mss: MSS as u32, initial_window: 5, ..TcpConfig::default() };
    let mut s = Connection::virtual_sender(cfg);
    let now = Time::ZERO;
    for k in 0..5 {
        assert_eq!(s.poll_segment(now), Some((k * MSS, (k + 1) * MSS, false)));
    }
    let cwnd0 = s.cwnd_bytes();
    for (k, x) in v1.iter().enumerate() {
        let sk: Vec<(u64, u64)> = x.sacks.iter().map(|&(l, r)| ((l - 1) * MSS, (r - 1) * MSS)).collect();
        s.virtual_ack(now, (x.cum - 1) * MSS, &sk);
        if k < 3 {
            assert_eq!(s.stats().fast_retransmits, 0);
        }
    }
    assert_eq!(s.stats().fast_retransmits, 1, "third virtual duplicate ACK → fast retransmit");
    assert!(s.cwnd_bytes() < cwnd0, "cwnd reduced");
    assert_eq!(s.poll_segment(now), Some((MSS, 2 * MSS, true)), "retransmits V_1[2]");
    // The actual retransmission of A_2[1] arrives: V_1 gets the cumulative ACK of V_1[5].
    let out = ack(&mut t, A2, 3, &[]);
    assert_eq!(out, vec![va(V1, 6, &[])], "cumulative ACK of V_1[5]");
    assert_eq!(state(&t, A2, 3), PsrState::U, "A_2[3] not yet acknowledged");
    assert_eq!(t.stats().lost_acked, 1);
    let _ = all;
}

/// Fig. 14: A_1[2] (→ V_2[1]) is lost; A_1[3] was SACKed. The timeout resets A_1[3] to U,
/// A_1[2] is retransmitted and V_2 (named in its PSR) times out with cwnd = 1.
#[test]
fn fig14_timeout_resets_psrs_and_names_the_virtual_flow() {
    let subs = [(A1, 1, V1, 1), (A1, 2, V2, 1), (A2, 1, V1, 2), (A1, 3, V1, 3)];
    let mut t = tr(&subs);
    ack(&mut t, A1, 2, &[]);
    ack(&mut t, A2, 2, &[]);
    let out = ack(&mut t, A1, 2, &[(3, 4)]); // dupACK of A_1[1] with SACK {A_1[3]}
    assert_eq!(out, vec![va(V1, 4, &[])], "V_1[1..3] all acknowledged");
    assert_eq!(state(&t, A1, 2), PsrState::L);
    assert_eq!(state(&t, A1, 3), PsrState::R);
    assert_eq!(t.on_actual_timeout(A1, 2), Some(V2), "the PSR of the retransmitted A_1[2] names V_2");
    assert_eq!(state(&t, A1, 3), PsrState::U, "scoreboard cleared: A_1[3] back to U");
    assert_eq!(state(&t, A1, 2), PsrState::U);
    // The retransmission is acknowledged with A_1[3]: V_2 gets its ACK; V_1[3] is not acked twice.
    let out = ack(&mut t, A1, 4, &[]);
    assert_eq!(out, vec![va(V2, 2, &[])]);
    assert_eq!(t.live(), 0);

    // The virtual side of the timeout: cwnd = 1 segment, go-back-N from its highest ACK.
    let cfg = TcpConfig { mss: 1000, initial_window: 4, ..TcpConfig::default() };
    let mut s = Connection::virtual_sender(cfg);
    for _ in 0..4 {
        s.poll_segment(Time::ZERO).unwrap();
    }
    s.virtual_timeout(Time(1_500_000_000));
    assert_eq!(s.cwnd_bytes(), 1000);
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!(s.poll_segment(Time(1_500_000_000)), Some((0, 1000, true)));
    assert_eq!(s.poll_segment(Time(1_500_000_000)), None, "one segment per cwnd");
    assert_eq!(s.poll_timeout(), None, "a virtual flow has no RTO timer of its own");
}

/// Fig. 15/16: ACK reordering. The ACK of A_1[4] arrives before that of A_1[3]: one virtual
/// ACK per virtual flow involved (two here, where TCP would grow cwnd once); the late ACK is old.
#[test]
fn fig16_ack_reordering() {
    let subs = [(A1, 1, V1, 1), (A1, 2, V1, 2), (A2, 1, V2, 1), (A1, 3, V1, 3), (A1, 4, V2, 2)];
    let mut t = tr(&subs);
    ack(&mut t, A1, 3, &[]);
    ack(&mut t, A2, 2, &[]);
    let out = ack(&mut t, A1, 5, &[]);
    assert_eq!(out, vec![va(V1, 4, &[]), va(V2, 3, &[])]);
    assert_eq!(ack(&mut t, A1, 5, &[]), vec![], "the late ACK of A_1[3] is old: nothing");
    // Both on one virtual flow: one virtual ACK, as in TCP.
    let mut t = tr(&[(A1, 1, V1, 1), (A1, 2, V1, 2)]);
    assert_eq!(ack(&mut t, A1, 3, &[]), vec![va(V1, 3, &[])]);
}

/// Fig. 17: packet reordering. A_1[4] (→ V_2[2]) arrives before A_1[3] (→ V_1[3]): the ACK of
/// A_1[2] with SACK {A_1[4]} marks A_1[3] lost at once (P3-6, literally) and acknowledges V_2[2];
/// the ACK of A_1[4] then turns A_1[3] from L to R and acknowledges V_1[3].
#[test]
fn fig17_packet_reordering() {
    let subs = [(A1, 1, V1, 1), (A1, 2, V1, 2), (A2, 1, V2, 1), (A1, 3, V1, 3), (A1, 4, V2, 2)];
    let mut t = tr(&subs);
    ack(&mut t, A1, 3, &[]);
    ack(&mut t, A2, 2, &[]);
    assert_eq!(ack(&mut t, A1, 3, &[(4, 5)]), vec![va(V2, 3, &[])]);
    assert_eq!(state(&t, A1, 3), PsrState::L, "one SACK block above → lost");
    assert_eq!(ack(&mut t, A1, 5, &[]), vec![va(V1, 4, &[])]);
    assert_eq!(t.stats().lost_acked, 1);
    // Both on one virtual flow: first a duplicate ACK, then the new ACK, as in TCP.
    let mut t = tr(&[(A1, 1, V1, 1), (A1, 2, V1, 2), (A1, 3, V1, 3), (A1, 4, V1, 4)]);
    ack(&mut t, A1, 3, &[]);
    assert_eq!(ack(&mut t, A1, 3, &[(4, 5)]), vec![va(V1, 3, &[(4, 5)])]);
    assert_eq!(ack(&mut t, A1, 5, &[]), vec![va(V1, 5, &[])]);
    assert_eq!(t.stats().virtual_dupacks, 1);
}

/// Fig. 18/19: receiver 2 is nearer, so the ACK of A_2[2] (→ V_2[3]) overtakes those of A_1[3]
/// and A_1[4] (→ V_2[2]). Without suppression that is a false duplicate ACK of V_2[1] with SACK
/// {V_2[3]}; with it, A_2[2] is buffered and V_2[2] then V_2[3] are released when A_1[4] is
/// acknowledged.
#[test]
fn fig19_false_dupack_suppression() {
    let subs = [(A1, 1, V1, 1), (A1, 2, V2, 1), (A2, 1, V1, 2), (A1, 3, V1, 3), (A1, 4, V2, 2), (A2, 2, V2, 3)];
    for suppression in [true, false] {
        let mut t = tr_opt(&subs, suppression);
        ack(&mut t, A1, 2, &[]);
        ack(&mut t, A1, 3, &[]);
        ack(&mut t, A2, 2, &[]);
        let out = ack(&mut t, A2, 3, &[]); // A_2[2] first
        if !suppression {
            assert_eq!(out, vec![va(V2, 2, &[(3, 4)])], "a false duplicate ACK");
            continue;
        }
        assert_eq!(out, vec![], "suppressed");
        assert_eq!(state(&t, A2, 2), PsrState::B);
        assert_eq!(t.stats().buffered, 1);
        assert_eq!(ack(&mut t, A1, 4, &[]), vec![va(V1, 4, &[])]);
        assert_eq!(ack(&mut t, A1, 5, &[]), vec![va(V2, 3, &[]), va(V2, 4, &[])], "V_2[2], then the buffered V_2[3]");
        assert_eq!(t.stats().virtual_dupacks, 0);
        assert_eq!(t.live(), 0);
    }
}

/// Fig. 20: true losses are not suppressed. A_1[3] (→ V_1[3]) is lost: once declared lost, the
/// ACK with SACK {A_1[4]–A_1[5]} gives V_1 a duplicate ACK for A_1[5] (→ V_1[4]).
#[test]
fn fig20_true_loss_not_suppressed() {
    let subs = [(A1, 1, V1, 1), (A1, 2, V1, 2), (A1, 3, V1, 3), (A1, 4, V2, 1), (A1, 5, V1, 4)];
    let mut t = tr(&subs);
    ack(&mut t, A1, 3, &[]);
    assert_eq!(ack(&mut t, A1, 3, &[(4, 5)]), vec![va(V2, 2, &[])]);
    assert_eq!(state(&t, A1, 3), PsrState::L);
    assert_eq!(ack(&mut t, A1, 3, &[(4, 6)]), vec![va(V1, 3, &[(4, 5)])], "duplicate ACK above the lost V_1[3]");
    // A SACK hole that was U when its successor was acknowledged: buffered until marked lost.
    let mut t = tr(&[(A1, 1, V1, 1), (A2, 1, V1, 2), (A1, 2, V1, 3), (A2, 2, V2, 1)]);
    assert_eq!(ack(&mut t, A1, 2, &[]), vec![va(V1, 2, &[])]);
    assert_eq!(ack(&mut t, A1, 3, &[]), vec![], "V_1[3] waits: A_2[1] is only unacknowledged");
    // Receiver 2 reports A_2[2] above a hole: A_2[1] lost, V_1[3]'s ACK released as a dupACK.
    let out = ack(&mut t, A2, 1, &[(2, 3)]);
    assert_eq!(out, vec![va(V1, 2, &[(3, 4)]), va(V2, 2, &[])]);
}

/// Memory: a PSR lives until both the actual and the virtual cumulative ACK passed it.
#[test]
fn psr_freed_when_both_edges_pass() {
    let mut t = tr(&[(A1, 1, V1, 1), (A2, 1, V1, 2), (A1, 2, V1, 3)]);
    assert_eq!(t.live(), 3);
    ack(&mut t, A1, 2, &[]);
    assert_eq!(t.live(), 2, "A_1[1]/V_1[1] freed");
    // A_1[2] SACK-less cumulative ACK: actual edge passes it, virtual edge waits on V_1[2].
    ack(&mut t, A1, 3, &[]);
    assert_eq!(t.live(), 2, "A_1[2] held by the virtual list (buffered)");
    assert_eq!(t.retained(A1), 1, "A_1[2]: passed by A_1's edge, still held for V_1");
    assert_eq!(t.retained(A2), 0);
    ack(&mut t, A2, 2, &[]);
    assert_eq!(t.live(), 0);
    assert_eq!(t.retained(A1), 0, "released with the virtual edge");
    assert_eq!(t.stats().psr_created, 3);
    assert_eq!(t.stats().psr_freed, 3);
    const { assert!(PSR_BYTES <= 24) };
}

// ---------------------------------------------------------------- Eq. 2 (Sec. 5.1)

proptest! {
    /// Eq. 2 never divides by zero: for any positive weights and any sequence of eligible
    /// sets, `select` returns a member of a non-empty set (None for an empty one), the
    /// probabilities are finite and sum to 1, and an always-eligible flow never runs more than
    /// one packet ahead of its share.
    #[test]
    fn eq2_never_divides_by_zero(
        w in prop::collection::vec(0.05f64..50.0, 1..8),
        masks in prop::collection::vec(any::<u8>(), 1..400),
        seed in any::<u64>(),
    ) {
        let n = w.len();
        let mut d = Distributor::new(&w).unwrap();
        let mut r = rng::stream(seed, "eq2", 0);
        for (step, m) in masks.iter().enumerate() {
            let k: Vec<usize> = (0..n).filter(|i| m & (1 << i) != 0).collect();
            let p = d.probabilities(&k);
            if k.is_empty() {
                prop_assert!(p.is_empty());
                prop_assert_eq!(d.select(&k, &mut r), None);
                continue;
            }
            prop_assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0));
            prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "sum {:?}", p);
            let i = d.select(&k, &mut r).unwrap();
            prop_assert!(k.contains(&i));
            if step % 3 != 0 {
                d.assign(i);
            }
            for (j, &wj) in w.iter().enumerate() {
                prop_assert!((d.given(j) as f64) <= wj * d.round() as f64 + 1.0 + 1e-9);
            }
        }
    }
}

/// With integer weights and every flow eligible, each round gives flow i exactly w_i packets.
#[test]
fn eq2_rounds_give_exact_shares() {
    let w = [1.0, 2.0, 3.0];
    let mut d = Distributor::new(&w).unwrap();
    let mut r = rng::stream(3, "eq2", 0);
    for round in 1..=50u64 {
        for _ in 0..6 {
            let i = d.select(&[0, 1, 2], &mut r).unwrap();
            d.assign(i);
        }
        assert_eq!((d.given(0), d.given(1), d.given(2)), (round, 2 * round, 3 * round));
    }
    assert_eq!(d.rounds, 50);
    assert_eq!(d.fallbacks, 0);
    // Flow 2 ineligible: its share goes to the others (P3-8 fallback advances the round).
    for _ in 0..300 {
        let i = d.select(&[0, 1], &mut r).unwrap();
        d.assign(i);
    }
    assert!(d.fallbacks > 0);
    let (a, b) = (d.given(0) - 50, d.given(1) - 100);
    assert!((b as f64 / a as f64 - 2.0).abs() < 0.05, "{a} {b}");
    assert!(Distributor::new(&[1.0, 0.0]).is_err());
    assert!(Distributor::new(&[f64::NAN]).is_err());
}

// ---------------------------------------------------------------- the group in a network

fn tcp_cfg() -> TcpConfig {
    TcpConfig {
        cc: CcAlgo::Sack,
        mss: 1000,
        initial_window: 2,
        max_burst: 4,
        timestamps: false,
        delack: DelAckConfig { every: 1, ..Default::default() },
        rto: RtoConfig { min: Dur::from_millis(200), ..Default::default() },
        ..TcpConfig::default()
    }
}

fn vps_cfg(w: &[f64]) -> VpsConfig {
    VpsConfig { weights: w.to_vec(), ..VpsConfig::default() }
}

/// The group's aggregate cwnd evolves exactly like that of n independent Reno/SACK flows on the
/// same ACK stream: lossless, one FIFO bottleneck, equal RTTs (the ACK stream's timing then does
/// not depend on which actual flow carries a packet). Slow start up to 8 segments, then
/// congestion avoidance; RTOs out of reach (the queue only grows).
#[test]
fn aggregate_cwnd_equals_n_reno_flows_lossless() {
    let w = [1.0, 2.0, 3.0];
    let net = || NetCfg { rate_bps: 2_000_000, delay: Dur::from_millis(20), queue: 10_000, ..NetCfg::default() };
    let mut tcp = tcp_cfg();
    tcp.initial_ssthresh = 8;
    tcp.rto = RtoConfig { min: Dur::from_secs(60), ..Default::default() };
    let g = VpsGroup::new(vps_cfg(&w), tcp.clone(), rng::stream(1, "vps", 0)).unwrap();
    let mut a = Net::new(net(), Box::new(g), 3);
    let mut b = Net::new(net(), Box::new(TcpSet::new(tcp, 3)), 3);
    a.run(secs(30));
    b.run(secs(30));
    assert!(a.cwnd_trace.len() > 5000, "{}", a.cwnd_trace.len());
    let last = *a.cwnd_trace.last().unwrap();
    assert!(last > 30.0 && last < 1000.0, "congestion avoidance, not slow start: {last}");
    assert_eq!(a.cwnd_trace.len(), b.cwnd_trace.len());
    for (k, (x, y)) in a.cwnd_trace.iter().zip(&b.cwnd_trace).enumerate() {
        assert!((x - y).abs() < 1e-9, "ACK {k}: VPS aggregate cwnd {x} vs TCP {y}");
    }
    let ra = a.delivered();
    let tot: u64 = ra.iter().sum();
    assert_eq!(tot, b.delivered().iter().sum::<u64>(), "same aggregate");
    for i in 0..3 {
        let share = ra[i] as f64 / tot as f64;
        assert!((share / (w[i] / 6.0) - 1.0).abs() < 0.02, "flow {i} share {share}");
    }
}

/// With losses the group is not byte-identical to n TCP flows, but a loss of one actual packet
/// is one loss of one virtual flow: virtual fast retransmits match actual losses, none is false
/// (same RTTs), and the aggregate cwnd stays within the range of n TCP flows'.
#[test]
fn losses_map_to_virtual_fast_retransmits() {
    let w = [1.0, 2.0, 3.0];
    let net = NetCfg { rate_bps: 2_000_000, delay: Dur::from_millis(20), queue: 20, ..NetCfg::default() };
    let g = VpsGroup::new(vps_cfg(&w), tcp_cfg(), rng::stream(1, "vps", 0)).unwrap();
    let mut a = Net::new(net.clone(), Box::new(g), 3);
    a.run(secs(120));
    let mut b = Net::new(net, Box::new(TcpSet::new(tcp_cfg(), 3)), 3);
    b.run(secs(120));
    let st = a.vps().stats();
    eprintln!("{st:#?}");
    assert!(a.drops > 20, "drops {}", a.drops);
    assert_eq!(st.virtual_fr_false, 0, "no false virtual fast retransmits with equal RTTs");
    let vfr: u64 = (0..3).map(|v| a.vps().virtual_flow(v).stats().fast_retransmits).sum();
    let vto: u64 = (0..3).map(|v| a.vps().virtual_flow(v).stats().timeouts).sum();
    assert!(vfr + vto > 5, "virtual flows react to losses: {vfr} fast retransmits, {vto} timeouts");
    // Aggregate throughput as n TCP flows' (same bottleneck, same buffer): within 5%.
    let (ta, tb) = (a.delivered().iter().sum::<u64>() as f64, b.delivered().iter().sum::<u64>() as f64);
    assert!((ta / tb - 1.0).abs() < 0.05, "VPS {ta} vs TCP {tb}");
    // Allocation accuracy over the run.
    let r = a.delivered();
    let tot: u64 = r.iter().sum();
    for i in 0..3 {
        let acc = (r[i] as f64 / tot as f64) / (w[i] / 6.0);
        assert!((acc - 1.0).abs() < 0.03, "flow {i}: A_i = {acc}");
    }
    assert!(a.vps().translator().live() <= st.translator.psr_live_max);
    assert!(st.translator.psr_live_max < 3 * 128, "PSRs bounded by the windows: {}", st.translator.psr_live_max);
}

/// Fig. 14 in a network: the tail of a window is lost, the actual flow times out, and the
/// virtual flow named in the PSR of the retransmitted packet times out too (cwnd = 1).
#[test]
fn actual_timeout_propagates_to_virtual_flow() {
    let net = NetCfg { rate_bps: 2_000_000, delay: Dur::from_millis(20), queue: 10_000, ..NetCfg::default() };
    let g = VpsGroup::new(vps_cfg(&[1.0, 1.0]), tcp_cfg(), rng::stream(1, "vps", 0)).unwrap();
    let mut a = Net::new(net, Box::new(g), 2);
    a.write_limit = Some(40_000); // 40 segments per flow, then idle
                                  // Drop the last 4 first transmissions of actual flow 0: only an RTO recovers them.
    a.drop_tail_of = Some((0, 36_000));
    a.run(secs(10));
    let st = a.vps().stats();
    let to = a.vps().flow_stats(0).unwrap().timeouts;
    assert!(to >= 1, "actual flow 0 timed out");
    assert_eq!(st.virtual_timeouts, to, "every actual timeout propagated");
    let vto: u64 = (0..2).map(|v| a.vps().virtual_flow(v).stats().timeouts).sum();
    assert_eq!(vto, to);
    assert_eq!(a.delivered(), vec![40_000, 40_000], "everything delivered");
    assert_eq!(a.vps().translator().live(), 0, "every PSR freed");
}

/// After an RTO the actual flow is suspended like a TCP in slow start (`rto_suspension`, our
/// assumption) until its retransmission is acknowledged; without it (the thesis's literal
/// Sec. 4.2/5.2) it keeps taking virtual packets while the hole waits for the next RTO.
#[test]
fn rto_suspension_holds_new_data_until_the_hole_is_repaired() {
    let run = |rto_suspension: bool| {
        let net = NetCfg { rate_bps: 2_000_000, delay: Dur::from_millis(20), queue: 10_000, ..NetCfg::default() };
        let cfg = VpsConfig { rto_suspension, ..vps_cfg(&[1.0, 1.0]) };
        let g = VpsGroup::new(cfg, tcp_cfg(), rng::stream(1, "vps", 0)).unwrap();
        let mut a = Net::new(net, Box::new(g), 2);
        // The segment at 50 kB of flow 0: lost, its fast retransmit lost, its first RTO
        // retransmission lost; the second RTO repairs it.
        a.drop_seg = Some((0, 50_000, 3));
        // Highest new data sent at the first RTO, and just before the hole is repaired.
        let (mut nxt_at_rto, mut nxt_before_repair, mut repaired) = (None, 0, None);
        let mut t = Time::ZERO;
        while t < secs(20) && repaired.is_none() {
            t += Dur::from_millis(1);
            a.run(t);
            let c = a.vps().actual(0).unwrap();
            if nxt_at_rto.is_none() && c.stats().timeouts >= 1 {
                nxt_at_rto = Some(c.nxt_off());
            }
            if c.una_off() > 50_000 {
                repaired = Some(c.stats().timeouts);
            } else {
                nxt_before_repair = c.nxt_off();
            }
        }
        let (n1, n2, to) = (nxt_at_rto.expect("an RTO"), nxt_before_repair, repaired.expect("the hole repaired"));
        assert!(to >= 2, "the first RTO retransmission was lost too: {to} timeouts");
        a.run(secs(30));
        assert!(a.delivered().iter().all(|&d| d > 1_000_000), "both flows keep going: {:?}", a.delivered());
        n2 - n1
    };
    assert_eq!(run(true), 0, "suspended: no new data between the RTO and the repair");
    assert!(run(false) >= 5_000, "literal reading: new data goes out while the hole waits");
}

/// Receivers with different RTTs: suppression buffers translations and no virtual fast
/// retransmit is false; without it, false duplicate ACKs trigger false fast retransmits.
#[test]
fn heterogeneous_rtts_false_dupacks_suppressed() {
    let run = |suppression: bool| {
        let net = NetCfg {
            rate_bps: 2_000_000,
            delay: Dur::from_millis(10),
            extra: vec![Dur::ZERO, Dur::from_millis(15), Dur::from_millis(30)],
            queue: 10_000,
        };
        let cfg = VpsConfig { suppression, ..vps_cfg(&[1.0, 2.0, 3.0]) };
        let g = VpsGroup::new(cfg, tcp_cfg(), rng::stream(1, "vps", 0)).unwrap();
        let mut a = Net::new(net, Box::new(g), 3);
        a.run(secs(20));
        (a.vps().stats(), a.drops)
    };
    let (on, d_on) = run(true);
    let (off, _) = run(false);
    eprintln!("on: {on:?}\noff: {off:?}");
    assert_eq!(d_on, 0, "lossless");
    assert!(on.translator.buffered > 100, "translations buffered: {}", on.translator.buffered);
    assert_eq!(on.virtual_fr_false + on.virtual_fr_lost, 0, "no virtual fast retransmit without loss");
    assert!(off.virtual_fr_false > 0, "without suppression RTT differences fake losses");
}

/// A receive-window-limited flow gives its share to the others (Sec. 5.3); changing the
/// weights at run time changes the split.
#[test]
fn rwnd_limit_and_runtime_weights() {
    let net = NetCfg { rate_bps: 4_000_000, delay: Dur::from_millis(20), queue: 50, ..NetCfg::default() };
    // Receiver 2 offers 19 segments per RTT (40 ms plus up to 100 ms of queue): under its
    // 2:1:1 share of 2 Mbit/s once the queue fills.
    let mut tcp = tcp_cfg();
    tcp.rcv_buf = 1 << 20;
    let g = VpsGroup::new(vps_cfg(&[1.0, 1.0, 2.0]), tcp, rng::stream(1, "vps", 0)).unwrap();
    let mut a = Net::new(net, Box::new(g), 3);
    a.rcv_buf = vec![1 << 20, 1 << 20, 20_000];
    a.run(secs(20));
    let r0 = a.delivered();
    let tot: u64 = r0.iter().sum();
    assert!(tot as f64 * 8.0 / 20.0 > 3.0e6, "the link stays full: {tot}");
    assert!(r0[0] as f64 / r0[1] as f64 > 0.95 && (r0[0] as f64 / r0[1] as f64) < 1.05, "{r0:?}");
    assert!(r0[2] < 2 * r0[0] * 9 / 10, "the limited flow gets less than its 2:1 share: {r0:?}");
    assert!(a.vps().stats().round_fallbacks > 0, "its share went to the others");
    // New weights 3:1:1 with flow 2 no longer limited by much.
    // Flow 2's share, 1/5 of 4 Mbit/s, is now under its receive-window limit.
    a.vps_mut().set_weights(&[3.0, 1.0, 1.0]).unwrap();
    let before = a.delivered();
    a.run(secs(40));
    let d: Vec<u64> = a.delivered().iter().zip(&before).map(|(x, y)| x - y).collect();
    let q = d[0] as f64 / d[1] as f64;
    assert!((q - 3.0).abs() < 0.3, "after set_weights: {d:?}");
}
