//! Behavioural tests of the sans-IO TCP endpoint, driven by a small deterministic harness.

mod tcp_harness;

use ackshape_core::tcp::*;
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Ecn, TcpFlags};
use tcp_harness::*;

const MSS: u64 = 1448;

fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}
fn secs(x: u64) -> Time {
    Time(Dur::from_secs(x).0)
}

fn cfg(cc: CcAlgo) -> TcpConfig {
    TcpConfig { cc, ..TcpConfig::default() }
}

#[test]
fn handshake_and_small_transfer() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    let t = s.bulk(100_000, secs(10));
    assert_eq!(s.a.state(), TcpState::Established);
    assert_eq!(s.b().state(), TcpState::Established);
    assert_eq!(s.b().stats().bytes_delivered, 100_000);
    assert_eq!(s.a.stats().retrans_segs, 0);
    assert!(t < secs(1), "took {t:?}");
    assert_eq!(s.count(true, |e| *e == TcpEvent::Established), 1);
    assert_eq!(s.count(false, |e| *e == TcpEvent::Established), 1);
}

/// Index among A→B data segments of the first transmission of byte offset `off`, i.e. the
/// helper tests use to reason about scripted drops.
fn data_sent_a(s: &Sim) -> Vec<&Sent> {
    s.sent.iter().filter(|x| x.from_a && x.pkt.payload_len > 0).collect()
}

#[test]
fn option_negotiation_matrix() {
    for wa in [None, Some(7u8)] {
        for wb in [None, Some(3u8)] {
            for (sa, sb) in [(true, true), (true, false), (false, true)] {
                for (ta, tb) in [(true, true), (false, true), (true, false)] {
                    for (ea, eb) in [(true, true), (true, false), (false, true), (false, false)] {
                        let ca = TcpConfig { wscale: wa, sack: sa, timestamps: ta, ecn: ea, mss: 1448, ..base_cfg() };
                        let cb = TcpConfig { wscale: wb, sack: sb, timestamps: tb, ecn: eb, mss: 1000, ..base_cfg() };
                        let mut s = Sim::new(ca, cb, ms(5));
                        s.bulk(10_000, secs(5));
                        let na = s.a.negotiated();
                        let nb = s.b().negotiated();
                        let ws = wa.is_some() && wb.is_some();
                        assert_eq!(na.mss, 1000);
                        assert_eq!(nb.mss, 1000);
                        assert_eq!(na.wscale, if ws { Some((3, 7)) } else { None });
                        assert_eq!(nb.wscale, if ws { Some((7, 3)) } else { None });
                        assert_eq!(na.sack, sa && sb);
                        assert_eq!(nb.sack, sa && sb);
                        assert_eq!(na.timestamps, ta && tb);
                        assert_eq!(nb.timestamps, ta && tb);
                        assert_eq!(na.ecn, ea && eb);
                        assert_eq!(nb.ecn, ea && eb);
                        // Wire: SYN offers exactly A's options; SYN-ACK answers only what both do.
                        let syn = &s.sent[0].pkt;
                        let t = syn.tcp().unwrap();
                        assert!(t.flags.contains(TcpFlags::SYN) && !t.flags.contains(TcpFlags::ACK));
                        assert_eq!(t.opts.wscale, wa);
                        assert_eq!(t.flags.contains(TcpFlags::ECE) && t.flags.contains(TcpFlags::CWR), ea);
                        let synack = s.sent.iter().find(|x| !x.from_a).unwrap().pkt.tcp().unwrap().clone();
                        assert!(synack.flags.contains(TcpFlags::SYN | TcpFlags::ACK));
                        assert_eq!(synack.opts.wscale.is_some(), ws);
                        assert_eq!(synack.opts.sack_permitted, sa && sb);
                        assert_eq!(synack.opts.timestamps.is_some(), ta && tb);
                        assert_eq!(synack.flags.contains(TcpFlags::ECE), ea && eb);
                        assert!(!synack.flags.contains(TcpFlags::CWR));
                        // Data segments are ECT(0) exactly when ECN was negotiated.
                        let d = data_sent_a(&s);
                        assert!(!d.is_empty());
                        assert!(d.iter().all(|x| (x.pkt.ip.ecn == Ecn::Ect0) == (ea && eb)));
                        assert!(d.iter().all(|x| x.pkt.payload_len <= 1000));
                        assert_eq!(s.b().stats().bytes_delivered, 10_000);
                    }
                }
            }
        }
    }
}

#[test]
fn syn_retransmission_after_initial_rto() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    // Lose the first SYN.
    let mut n = 0;
    s.ab.drop_pkt = Some(Box::new(move |p| {
        let syn = p.tcp().unwrap().flags.contains(TcpFlags::SYN);
        n += syn as u32;
        syn && n == 1
    }));
    s.a.write(5000);
    s.run_until(secs(5), |s| s.a.stats().bytes_acked >= 5000);
    let est = s.event_time(true, |e| *e == TcpEvent::Established).unwrap();
    // Initial RTO 1 s, then one RTT of 20 ms.
    assert!(est >= Time::from_secs_f64(1.0) && est < Time::from_secs_f64(1.1), "established at {est:?}");
    assert_eq!(s.a.stats().syn_retrans, 1);
    assert_eq!(s.b().stats().bytes_delivered, 5000);
}

fn check_exact_delivery(cc: CcAlgo, sack: bool, ts: bool, seed: u64) {
    let n: u64 = 600_000;
    let c = TcpConfig { cc, sack, timestamps: ts, carry_payload: true, rto: rto_linux(), ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(20));
    s.ab = Path::new(ms(20), seed);
    s.ba = Path::new(ms(20), seed + 100);
    s.ab.rate_bps = Some(20_000_000);
    s.ab.loss_p = 0.02;
    s.ab.reorder_p = 0.05;
    s.ab.reorder_extra = ms(3);
    s.ba.loss_p = 0.01;
    s.ba.reorder_p = 0.05;
    s.ba.reorder_extra = ms(3);
    s.record = false;
    s.auto_close = true;
    s.a.write(n);
    s.a.close();
    s.run_until(secs(600), |s| {
        s.a.state() == TcpState::Closed && s.b.as_ref().is_some_and(|b| b.state() == TcpState::Closed)
    });
    let b = s.b();
    assert_eq!(b.stats().bytes_delivered, n, "{cc:?} sack={sack} seed={seed}");
    assert_eq!(s.read_b.len() as u64, n);
    assert!(s.read_b == pattern_bytes(0, n as usize), "content mismatch {cc:?} sack={sack}");
    assert!(s.a.stats().retrans_segs > 0, "losses must have caused retransmissions");
    assert_eq!(s.a.state(), TcpState::Closed, "{cc:?} sack={sack} seed={seed}");
    assert_eq!(b.state(), TcpState::Closed);
    assert_eq!(s.count(false, |e| *e == TcpEvent::PeerFin), 1);
}

fn rto_linux() -> RtoConfig {
    RtoConfig { min: ms(200), max: Dur::from_secs(60), initial: Dur::from_secs(1), granularity: ms(1) }
}

#[test]
fn exact_delivery_under_loss_and_reordering() {
    for (i, cc) in [CcAlgo::Sack, CcAlgo::NewReno, CcAlgo::Reno, CcAlgo::Tahoe, CcAlgo::Cubic, CcAlgo::Misbehaving]
        .into_iter()
        .enumerate()
    {
        check_exact_delivery(cc, true, true, 7 + i as u64);
        check_exact_delivery(cc, false, false, 17 + i as u64);
    }
}

#[test]
fn two_way_transfer_piggybacks_acks() {
    let c = TcpConfig { carry_payload: true, ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(10));
    s.a.write(300_000);
    s.run_until(secs(1), |s| s.b.is_some());
    s.b.as_mut().unwrap().write_bytes(bytes::Bytes::from(vec![0xAB; 200_000]));
    s.run_until(secs(20), |s| {
        s.a.stats().bytes_acked >= 300_000 && s.b.as_ref().unwrap().stats().bytes_acked >= 200_000
    });
    assert_eq!(s.read_b, pattern_bytes(0, 300_000));
    assert_eq!(s.read_a, vec![0xAB; 200_000]);
    // Piggy-backing: B's data segments carry ACKs for A's data, so B sends fewer pure ACKs
    // than A's data segments / 2.
    let a_data = s.a.stats().data_segs_sent;
    let b_pure = s.b().stats().acks_sent;
    assert!(b_pure < a_data / 2, "pure acks {b_pure} vs data {a_data}");
}

/// Single drop with a large window: one fast retransmit, no timeout.
#[test]
fn single_drop_fast_retransmit() {
    for cc in [CcAlgo::NewReno, CcAlgo::Sack, CcAlgo::Cubic, CcAlgo::Reno] {
        let mut s = Sim::new(cfg(cc), cfg(cc), ms(20));
        s.ab.drop_data = vec![60];
        s.bulk(200 * MSS, secs(30));
        let st = s.a.stats();
        assert_eq!(st.fast_retransmits, 1, "{cc:?}");
        assert_eq!(st.timeouts, 0, "{cc:?}");
        assert_eq!(st.retrans_segs, 1, "{cc:?}");
        assert_eq!(s.b().stats().bytes_delivered, 200 * MSS);
        assert_eq!(s.count(true, |e| matches!(e, TcpEvent::FastRetransmit { .. })), 1);
    }
}

/// The tiny-window effect (paper 000): with a window of ≤ 3 segments, a single drop cannot
/// produce 3 dupACKs (no limited transmit), so the sender waits for the RTO; with 4 it can.
fn tiny_window(win_segs: u64, rto: RtoConfig, limited_transmit: bool) -> (TcpStats, Dur) {
    tiny_window_with(win_segs, rto, RtoModel::default(), limited_transmit)
}

fn tiny_window_with(win_segs: u64, rto: RtoConfig, rto_model: RtoModel, limited_transmit: bool) -> (TcpStats, Dur) {
    let c = TcpConfig { max_cwnd_bytes: win_segs * MSS, rto, rto_model, limited_transmit, ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(10));
    s.ab.drop_data = vec![20];
    s.bulk(60 * MSS, secs(60));
    let d = data_sent_a(&s);
    let lost_seq = d[20].pkt.tcp().unwrap().seq;
    let rtx = d.iter().skip(21).find(|x| x.pkt.tcp().unwrap().seq == lost_seq).expect("retransmitted");
    (s.a.stats().clone(), rtx.t.since(d[20].t))
}

#[test]
fn tiny_window_needs_timeout() {
    let (st3, _) = tiny_window(3, rto_linux(), false);
    assert_eq!(st3.timeouts, 1);
    assert_eq!(st3.fast_retransmits, 0);
    let (st4, stall4) = tiny_window(4, rto_linux(), false);
    assert_eq!(st4.timeouts, 0);
    assert_eq!(st4.fast_retransmits, 1);
    assert!(stall4 < ms(100), "{stall4:?}");
    // Limited transmit (RFC 3042) rescues the 3-segment window.
    let (st3lt, _) = tiny_window(3, rto_linux(), true);
    assert_eq!(st3lt.timeouts, 0);
    assert_eq!(st3lt.fast_retransmits, 1);
}

#[test]
fn tiny_initial_window_first_flight_drop_times_out() {
    // initial_window 3, a 3-segment transfer, second segment lost: only one dupACK → RTO.
    let c = TcpConfig { initial_window: 3, rto: rto_linux(), ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(10));
    s.ab.drop_data = vec![1];
    s.bulk(3 * MSS, secs(10));
    assert_eq!(s.a.stats().timeouts, 1);
    assert_eq!(s.a.stats().fast_retransmits, 0);
    assert_eq!(s.b().stats().bytes_delivered, 3 * MSS);
}

#[test]
fn coarse_timer_granularity_stall() {
    let coarse =
        RtoConfig { min: Dur::from_secs(1), max: Dur::from_secs(64), initial: Dur::from_secs(3), granularity: ms(500) };
    // The BSD slow timer: RFC 6298's RTO on 500 ms ticks (Linux's would add the 1 s minimum to
    // SRTT instead of flooring it: 1.5 s).
    let (st, stall) = tiny_window_with(3, coarse, RtoModel::Rfc6298, false);
    assert_eq!(st.timeouts, 1);
    assert!(stall >= ms(900) && stall <= ms(1600), "coarse stall {stall:?}");
    let (st, stall_fine) = tiny_window(3, rto_linux(), false);
    assert_eq!(st.timeouts, 1);
    assert!(stall_fine >= ms(200) && stall_fine <= ms(300), "fine stall {stall_fine:?}");
    eprintln!("stall coarse {stall:?} fine {stall_fine:?}");
}

#[test]
fn coarse_timer_fires_on_tick_boundaries() {
    let coarse =
        RtoConfig { min: Dur::from_secs(1), max: Dur::from_secs(64), initial: Dur::from_secs(3), granularity: ms(500) };
    let c = TcpConfig { max_cwnd_bytes: 3 * MSS, rto: coarse, ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(7));
    s.ab.drop_data = vec![20];
    s.bulk(40 * MSS, secs(60));
    let t = s.event_time(true, |e| matches!(e, TcpEvent::Timeout { .. })).unwrap();
    assert_eq!(t.0 % Dur::from_millis(500).0, 0, "timeout at {t:?}");
}

/// NewReno with two drops in one window: one fast retransmit, the partial ACK retransmits
/// the second hole, no timeout.
#[test]
fn newreno_partial_ack() {
    let mut s = Sim::new(cfg(CcAlgo::NewReno), cfg(CcAlgo::NewReno), ms(20));
    s.ab.drop_data = vec![60, 64];
    s.bulk(200 * MSS, secs(30));
    let st = s.a.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.retrans_segs, 2);
    assert!(st.partial_acks >= 1);
    assert_eq!(s.b().stats().bytes_delivered, 200 * MSS);
}

#[test]
fn sack_recovers_multiple_drops_in_one_rtt() {
    let mut s = Sim::new(cfg(CcAlgo::Sack), cfg(CcAlgo::Sack), ms(20));
    s.ab.drop_data = vec![60, 62, 64, 66];
    let t0 = s.bulk(200 * MSS, secs(30));
    let st = s.a.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.retrans_segs, 4);
    // All four holes were repaired within about one RTT of the fast retransmit.
    let d = data_sent_a(&s);
    let fr = s.event_time(true, |e| matches!(e, TcpEvent::FastRetransmit { .. })).unwrap();
    let hi = d[67].pkt.tcp().unwrap().seq;
    let last_rtx = d.iter().rfind(|x| x.t >= fr && x.pkt.tcp().unwrap().seq < hi).unwrap().t;
    assert!(last_rtx.since(fr) < ms(60), "{:?}", last_rtx.since(fr));
    let _ = t0;
}

/// Reno with several drops in a window does worse than NewReno, which does no better than SACK.
#[test]
fn reno_worse_than_newreno_and_sack_with_multiple_drops() {
    let run = |cc: CcAlgo| {
        let c = TcpConfig { rto: rto_linux(), ..cfg(cc) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.rate_bps = Some(20_000_000);
        s.ab.drop_data = vec![60, 62, 64, 66];
        let t = s.bulk(400 * MSS, secs(60));
        (t, s.a.stats().clone())
    };
    let (t_reno, reno) = run(CcAlgo::Reno);
    let (t_nr, nr) = run(CcAlgo::NewReno);
    let (t_sack, sack) = run(CcAlgo::Sack);
    eprintln!("reno {t_reno:?} {reno:?}\nnewreno {t_nr:?}\nsack {t_sack:?}");
    assert_eq!(nr.timeouts, 0);
    assert_eq!(sack.timeouts, 0);
    assert!(reno.timeouts > 0 || reno.fast_retransmits > 1);
    assert!(t_reno > t_nr, "reno {t_reno:?} newreno {t_nr:?}");
    assert!(t_sack <= t_nr, "sack {t_sack:?} newreno {t_nr:?}");
}

/// Receiver-window-limited transfer: rate ≈ rwnd / RTT.
#[test]
fn rwnd_limited_rate() {
    let rwnd = 65536;
    let cb = TcpConfig { rcv_buf: rwnd as u32, ..base_cfg() };
    let mut s = Sim::new(base_cfg(), cb, ms(50));
    s.record = false;
    s.a.write(20000 * MSS);
    s.run_until(secs(2), |_| false);
    let b0 = s.b().stats().bytes_delivered;
    s.run_until(secs(12), |_| false);
    let rate = (s.b().stats().bytes_delivered - b0) as f64 / 10.0;
    let expect = rwnd as f64 / 0.1;
    eprintln!("rwnd-limited rate {rate:.0} B/s, rwnd/RTT {expect:.0} B/s");
    assert!((rate / expect - 1.0).abs() < 0.03, "rate {rate} expect {expect}");
    assert_eq!(s.a.trace().rwnd_seen_bytes, rwnd);
}

#[test]
fn delayed_ack_ratio() {
    for (every, lo, hi) in [(2u32, 1.9, 2.1), (1, 0.99, 1.01)] {
        let cb = TcpConfig { delack: DelAckConfig { every, timeout: ms(40) }, ..base_cfg() };
        let mut s = Sim::new(base_cfg(), cb, ms(20));
        s.ab.rate_bps = Some(10_000_000);
        s.record = false;
        s.bulk(2000 * MSS, secs(60));
        let ratio = s.a.stats().data_segs_sent as f64 / s.b().stats().acks_sent as f64;
        eprintln!("delack every={every}: {ratio:.3} data segments per ACK");
        assert!(ratio >= lo && ratio <= hi, "every={every} ratio {ratio}");
    }
}

#[test]
fn delayed_ack_timer_fires_for_odd_segment() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(20));
    s.a.write(MSS); // one segment: no second one to trigger the ACK
    s.run_until(secs(5), |s| s.a.stats().bytes_acked >= MSS);
    let sent = data_sent_a(&s)[0].t;
    let ack = s.event_time(true, |e| *e == TcpEvent::AllAcked).unwrap();
    let rtt = ack.since(sent);
    assert!(rtt >= ms(80) && rtt < ms(81), "ack after {rtt:?} (40 ms RTT + 40 ms delack)");
}

#[test]
fn window_scaling_4mib() {
    let c = TcpConfig { rcv_buf: 4 << 20, wscale: Some(7), ..base_cfg() };
    let mut s = Sim::new(c.clone(), c.clone(), ms(10));
    s.bulk(100 * MSS, secs(10));
    assert_eq!(s.a.trace().rwnd_seen_bytes, 4 << 20);
    let ack = s.sent.iter().filter(|x| !x.from_a && x.pkt.is_pure_ack()).last().unwrap();
    assert_eq!(ack.pkt.tcp().unwrap().window, ((4u64 << 20) >> 7) as u16);
    // SYN-ACK window is unscaled and capped at 65535.
    let synack = s.sent.iter().find(|x| !x.from_a).unwrap();
    assert_eq!(synack.pkt.tcp().unwrap().window, 65535);
    // Without scaling on one side the window is capped at 65535 bytes.
    let nows = TcpConfig { wscale: None, ..c.clone() };
    let mut s = Sim::new(nows, c, ms(10));
    s.bulk(100 * MSS, secs(10));
    assert_eq!(s.a.trace().rwnd_seen_bytes, 65535);
    // A large transfer over a long fat path reaches windows far above 64 KiB.
    let c = TcpConfig { rcv_buf: 4 << 20, wscale: Some(7), ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(50));
    s.record = false;
    s.bulk(3000 * MSS, secs(30));
    assert!(s.a.trace().cwnd_bytes > 1 << 20, "cwnd {}", s.a.trace().cwnd_bytes);
}

#[test]
fn timestamps_echoed() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(25));
    s.bulk(200 * MSS, secs(10));
    let a_tsvals: Vec<u32> =
        s.sent.iter().filter(|x| x.from_a).filter_map(|x| x.pkt.tcp().unwrap().opts.timestamps.map(|t| t.0)).collect();
    let b_pkts: Vec<_> = s.sent.iter().filter(|x| !x.from_a).collect();
    assert!(b_pkts.iter().all(|x| x.pkt.tcp().unwrap().opts.timestamps.is_some()));
    for x in &b_pkts {
        let ecr = x.pkt.tcp().unwrap().opts.timestamps.unwrap().1;
        assert!(a_tsvals.contains(&ecr), "TSecr {ecr} was never sent by A");
    }
    // TSecr of the ACKs tracks the data: strictly increasing over the transfer.
    let ecrs: Vec<u32> = b_pkts.iter().map(|x| x.pkt.tcp().unwrap().opts.timestamps.unwrap().1).collect();
    assert!(ecrs.last() > ecrs.get(1));
    let srtt = s.a.trace().srtt;
    let st = s.a.stats();
    assert!(st.rtt_samples > 50);
    assert!(st.rtt_min_ns >= ms(50).0 && st.rtt_min_ns < ms(51).0, "min rtt {}", st.rtt_min_ns);
    assert!(srtt >= ms(50) && srtt < ms(95), "srtt {srtt:?}");
}

#[test]
fn rtt_without_timestamps_uses_karn() {
    let c = TcpConfig { timestamps: false, ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(25));
    s.ab.drop_data = vec![30];
    s.bulk(200 * MSS, secs(10));
    let st = s.a.stats();
    assert!(st.rtt_samples >= 5);
    assert!(st.rtt_min_ns >= ms(50).0, "{}", st.rtt_min_ns);
    assert!(st.rtt_max_ns < ms(150).0, "{}", st.rtt_max_ns);
}

#[test]
fn ecn_ce_mark_one_reduction_no_retransmission() {
    for cc in [CcAlgo::Sack, CcAlgo::NewReno, CcAlgo::Cubic] {
        let c = TcpConfig { ecn: true, ..cfg(cc) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.ce_data = vec![80];
        s.a.write(300 * MSS);
        s.run_until(secs(30), |_| false);
        let st = s.a.stats();
        assert_eq!(s.b().stats().ce_rcvd, 1, "{cc:?}");
        assert!(st.ece_rcvd >= 1, "{cc:?}");
        assert_eq!(st.ecn_reductions, 1, "{cc:?}");
        assert_eq!(st.cwnd_reductions, 1, "{cc:?}");
        assert_eq!(st.retrans_segs, 0, "{cc:?}");
        assert_eq!(st.fast_retransmits + st.timeouts, 0, "{cc:?}");
        // The sender confirmed with CWR on a new data segment, and B stopped echoing.
        let cwr = data_sent_a(&s).iter().filter(|x| x.pkt.tcp().unwrap().flags.contains(TcpFlags::CWR)).count();
        assert_eq!(cwr, 1, "{cc:?}");
        let last_ack = s.sent.iter().rfind(|x| !x.from_a).unwrap();
        assert!(!last_ack.pkt.tcp().unwrap().flags.contains(TcpFlags::ECE));
        assert_eq!(s.b().stats().bytes_delivered, 300 * MSS);
    }
}

#[test]
fn ecn_reduction_halves_cwnd() {
    let c = TcpConfig { ecn: true, ..cfg(CcAlgo::NewReno) };
    let mut s = Sim::new(c.clone(), c, ms(20));
    s.ab.ce_data = vec![80];
    s.a.write(300 * MSS);
    s.run_until(secs(30), |s| s.a.stats().ece_rcvd > 0);
    let before_cwnd = s.a.trace().cwnd_bytes;
    assert_eq!(s.a.stats().ecn_reductions, 1);
    assert_eq!(s.a.trace().ssthresh_bytes, before_cwnd);
    assert!(before_cwnd < 60 * MSS);
}

#[test]
fn misbehaving_keeps_growing_after_losses() {
    let c = TcpConfig { rto: rto_linux(), ..cfg(CcAlgo::Misbehaving) };
    let mut s = Sim::new(c.clone(), c, ms(20));
    s.ab.drop_data = vec![40, 100, 101, 300];
    s.record = false;
    let mut min_after_loss = u64::MAX;
    let mut at_first_loss = 0;
    let cws = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let c2 = cws.clone();
    s.on_step =
        Some(Box::new(move |t, a, _| c2.borrow_mut().push((t, a.trace().cwnd_bytes, a.stats().fast_retransmits))));
    s.bulk(3000 * MSS, secs(60));
    for &(_, cw, fr) in cws.borrow().iter() {
        if fr >= 1 {
            if at_first_loss == 0 {
                at_first_loss = cw;
            }
            min_after_loss = min_after_loss.min(cw);
        }
    }
    let st = s.a.stats();
    assert!(st.retrans_segs >= 4, "losses retransmitted: {}", st.retrans_segs);
    assert_eq!(st.cwnd_reductions, 0);
    assert!(min_after_loss >= at_first_loss, "cwnd reduced: {min_after_loss} < {at_first_loss}");
    let end = s.a.trace().cwnd_bytes;
    assert!(end > 4 * at_first_loss, "cwnd end {end} at first loss {at_first_loss}");
    assert_eq!(s.b().stats().bytes_delivered, 3000 * MSS);
}

/// Reno without congestion avoidance (paper 001 §2.4, read as in trap P1-10): it halves on a
/// loss like Reno, then keeps doubling per RTT where Reno grows by one MSS per RTT.
#[test]
fn reno_without_congestion_avoidance_halves_then_grows_exponentially() {
    let run = |no_ca: bool| {
        let c = TcpConfig { no_congestion_avoidance: no_ca, initial_window: 2, ..cfg(CcAlgo::Reno) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.drop_data = vec![30];
        s.a.write(100_000 * MSS);
        s.run_until(secs(30), |s| s.a.stats().fast_retransmits > 0);
        let at_loss = s.a.trace().ssthresh_bytes;
        s.run_until(secs(30), |s| s.a.stats().bytes_acked >= 200 * MSS);
        let t0 = s.now;
        // Eight RTTs after recovery.
        s.run_until(Time(t0.0 + ms(8 * 40).0), |_| false);
        (s.a.stats().clone(), at_loss, s.a.trace().cwnd_bytes)
    };
    let (reno, reno_ss, reno_cw) = run(false);
    let (noca, noca_ss, noca_cw) = run(true);
    assert_eq!(reno.cwnd_reductions, 1);
    assert_eq!(noca.cwnd_reductions, 1, "the loss still halves the window");
    assert_eq!(reno_ss, noca_ss, "same halving");
    // Reno: about ssthresh + 8 MSS; without CA the window has doubled several times.
    assert!(reno_cw < reno_ss + 12 * MSS, "reno {reno_cw} from {reno_ss}");
    assert!(noca_cw > 4 * noca_ss, "no-CA cwnd {noca_cw} from ssthresh {noca_ss}");
}

#[test]
fn tahoe_cwnd_one_on_triple_dupack() {
    let mut s = Sim::new(cfg(CcAlgo::Tahoe), cfg(CcAlgo::Tahoe), ms(20));
    s.ab.drop_data = vec![60];
    s.a.write(300 * MSS);
    s.run_until(secs(30), |s| s.a.stats().fast_retransmits > 0);
    let tr = s.a.trace();
    assert_eq!(tr.cwnd_bytes, MSS);
    assert!(tr.ssthresh_bytes >= 2 * MSS && tr.ssthresh_bytes < 60 * MSS);
    s.run_until(secs(30), |s| s.a.stats().bytes_acked >= 300 * MSS);
    assert_eq!(s.a.stats().timeouts, 0);
    assert_eq!(s.b().stats().bytes_delivered, 300 * MSS);
}

#[test]
fn reno_cwnd_halves_on_triple_dupack() {
    let mut s = Sim::new(cfg(CcAlgo::Reno), cfg(CcAlgo::Reno), ms(20));
    s.ab.drop_data = vec![60];
    s.a.write(300 * MSS);
    s.run_until(secs(30), |s| s.a.stats().fast_retransmits > 0);
    let tr = s.a.trace();
    // ssthresh = FlightSize/2 and cwnd = ssthresh + 3 MSS during fast recovery.
    assert_eq!(tr.cwnd_bytes, tr.ssthresh_bytes + 3 * MSS);
    s.run_until(secs(30), |s| s.a.stats().bytes_acked >= 300 * MSS);
    assert_eq!(s.a.stats().timeouts, 0);
}

#[test]
fn fin_teardown_both_sides_closed() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    s.a.write(50_000);
    s.a.close();
    s.run_until(secs(10), |s| s.b.as_ref().is_some_and(|b| b.state() == TcpState::CloseWait));
    assert_eq!(s.b().state(), TcpState::CloseWait);
    assert!(matches!(s.a.state(), TcpState::FinWait2 | TcpState::FinWait1));
    assert_eq!(s.b().stats().bytes_delivered, 50_000);
    // The passive side sends some data back, then closes.
    s.b.as_mut().unwrap().write(10_000);
    s.b.as_mut().unwrap().close();
    s.run_until(secs(20), |_| false);
    assert_eq!(s.a.state(), TcpState::Closed);
    assert_eq!(s.b().state(), TcpState::Closed);
    assert_eq!(s.a.stats().bytes_delivered, 10_000);
    assert_eq!(s.count(true, |e| *e == TcpEvent::Closed), 1);
    assert_eq!(s.count(false, |e| *e == TcpEvent::Closed), 1);
    assert_eq!(s.count(true, |e| *e == TcpEvent::PeerFin), 1);
    // TIME_WAIT on the active closer lasted 2×SRTT (≈ 40 ms), so A closed after B.
    let ta = s.event_time(true, |e| *e == TcpEvent::Closed).unwrap();
    let tb = s.event_time(false, |e| *e == TcpEvent::Closed).unwrap();
    assert!(ta > tb);
    assert_eq!(s.a.poll_timeout(), None);
}

#[test]
fn simultaneous_close_and_fin_loss() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    s.a.write(20_000);
    s.run_until(secs(1), |s| s.a.stats().bytes_acked >= 20_000);
    // Both close at once; B's first FIN and A's first FIN are lost.
    for path in [&mut s.ab, &mut s.ba] {
        let mut n = 0;
        path.drop_pkt = Some(Box::new(move |p| {
            let fin = p.tcp().unwrap().flags.contains(TcpFlags::FIN);
            n += fin as u32;
            fin && n == 1
        }));
    }
    s.a.close();
    s.b.as_mut().unwrap().close();
    s.run_until(secs(30), |_| false);
    assert_eq!(s.a.state(), TcpState::Closed);
    assert_eq!(s.b().state(), TcpState::Closed);
    assert!(s.a.stats().timeouts >= 1 && s.b().stats().timeouts >= 1);
    assert_eq!(s.count(true, |e| *e == TcpEvent::Closed), 1);
    assert_eq!(s.count(false, |e| *e == TcpEvent::Closed), 1);
}

#[test]
fn max_burst_limits_segments_per_ack() {
    let c = TcpConfig { max_burst: 2, initial_window: 10, ..base_cfg() };
    let mut s = Sim::new(c.clone(), base_cfg(), ms(20));
    s.ab.drop_data = vec![30];
    s.bulk(200 * MSS, secs(30));
    // Count A's data segments sent at the same instant, and B's segments (ACKs) arriving then:
    // the path has no rate limit, so several ACKs (e.g. duplicate ACKs) can arrive together.
    let d = data_sent_a(&s);
    let mut worst = 0.0f64;
    let mut i = 0;
    while i < d.len() {
        let j = d[i..].iter().take_while(|x| x.t == d[i].t).count();
        let t = d[i].t;
        let acks = s.sent.iter().filter(|x| !x.from_a && !x.dropped && x.t + ms(20) == t).count();
        // The initial window goes out on the (non-ACK) write: the harness pumps after the
        // handshake ACK, so even that is capped (counted as one ACK).
        worst = worst.max(j as f64 / acks.max(1) as f64);
        i += j;
    }
    assert!(worst <= 2.0, "{worst} segments per ACK");
    assert_eq!(s.b().stats().bytes_delivered, 200 * MSS);
}

#[test]
fn cubic_grows_faster_than_reno_on_long_fat_path() {
    let run = |cc: CcAlgo| {
        let c = TcpConfig { rto: rto_linux(), ..cfg(cc) };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.ab.rate_bps = Some(100_000_000);
        s.ab.drop_data = vec![300];
        s.record = false;
        s.a.write(1 << 40);
        s.run_until(secs(20), |_| false);
        s.b().stats().bytes_delivered
    };
    let cubic = run(CcAlgo::Cubic);
    let nr = run(CcAlgo::NewReno);
    eprintln!("cubic {cubic} newreno {nr}");
    assert!(cubic as f64 > nr as f64 * 1.2);
}

#[test]
fn persist_probe_on_zero_window() {
    // A middlebox rewrites B's window to zero for 2 s: the sender stalls, probes with the
    // persist timer (backing off), and resumes once the window reopens.
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    s.ba.mutate = Some(Box::new(|t, p| {
        if t >= Time::from_secs_f64(0.2) && t < Time::from_secs_f64(2.2) {
            p.tcp_mut().unwrap().window = 0;
        }
    }));
    s.a.write(2000 * MSS);
    s.run_until(Time::from_secs_f64(2.1), |_| false);
    assert_eq!(s.a.trace().rwnd_seen_bytes, 0);
    let acked = s.a.stats().bytes_acked;
    let probes = s.a.stats().persist_probes;
    assert!((1..=3).contains(&probes), "probes {probes}");
    assert_eq!(s.a.stats().timeouts, 0);
    // No data beyond the zero window was sent while stalled.
    let late = data_sent_a(&s).iter().filter(|x| x.t > Time::from_secs_f64(0.3)).count();
    assert_eq!(late, 0);
    s.run_until(secs(60), |s| s.a.stats().bytes_acked >= 2000 * MSS);
    assert!(s.a.stats().bytes_acked > acked);
    assert_eq!(s.b().stats().bytes_delivered, 2000 * MSS);
    eprintln!("persist probes {probes}, done at {:?}", s.now);
}

#[test]
fn zero_window_duplicate_is_not_a_dupack() {
    // RFC 5681: an ACK that changes the window is not a duplicate ACK (paper 004 P4-9).
    let mut s = Sim::new(cfg(CcAlgo::NewReno), cfg(CcAlgo::NewReno), ms(10));
    s.a.write(400 * MSS);
    s.run_until(secs(1), |s| s.a.stats().bytes_acked >= 50 * MSS);
    let now = s.now;
    let ack =
        s.sent.iter().filter(|x| !x.from_a && x.pkt.is_pure_ack() && x.t + ms(10) < now).last().unwrap().pkt.clone();
    let mut ack = ack;
    ack.tcp_mut().unwrap().ack = s.a.snd_una();
    let mut z = ack.clone();
    z.tcp_mut().unwrap().window = 0;
    let before = s.a.stats().dupacks_rcvd;
    // Zero-window copies interleaved with the original: each changes the window, none counts.
    for _ in 0..5 {
        s.a.handle_packet(now, &z);
        s.a.handle_packet(now, &ack);
    }
    assert_eq!(s.a.stats().dupacks_rcvd, before);
    assert_eq!(s.a.stats().fast_retransmits, 0);
    // Five exact duplicates of the (current) ACK would count.
    let mut s2 = Sim::new(cfg(CcAlgo::NewReno), cfg(CcAlgo::NewReno), ms(10));
    s2.a.write(400 * MSS);
    s2.run_until(secs(1), |s| s.a.stats().bytes_acked >= 50 * MSS);
    let now = s2.now;
    // The last pure ACK A has already received (sent ≥ one-way delay ago).
    let last =
        s2.sent.iter().filter(|x| !x.from_a && x.pkt.is_pure_ack() && x.t + ms(10) < now).last().unwrap().pkt.clone();
    let mut last = last;
    last.tcp_mut().unwrap().ack = s2.a.snd_una();
    let before = s2.a.stats().dupacks_rcvd;
    for _ in 0..3 {
        s2.a.handle_packet(now, &last);
    }
    assert_eq!(s2.a.stats().dupacks_rcvd, before + 3);
    assert_eq!(s2.a.stats().fast_retransmits, 1);
}

#[test]
fn zero_window_copy_closes_the_window_only_under_rfc793() {
    // Paper 004's zero-window copy: the current ACK again, window 0. RFC 793's SND.WL1/WL2 rule
    // takes it (SEG.ACK = SND.WL2); BSD's and Linux's take a same-numbered segment only if it
    // grows the window. Either way the receiver's next ACK reopens it.
    for (rule, closes) in [(WindowUpdate::Rfc793, true), (WindowUpdate::Bsd, false)] {
        let c = TcpConfig { window_update: rule, ..cfg(CcAlgo::NewReno) };
        let mut s = Sim::new(c.clone(), c, ms(10));
        s.a.write(400 * MSS);
        s.run_until(secs(1), |s| s.a.stats().bytes_acked >= 50 * MSS);
        let now = s.now;
        let mut ack = s
            .sent
            .iter()
            .filter(|x| !x.from_a && x.pkt.is_pure_ack() && x.t + ms(10) < now)
            .last()
            .unwrap()
            .pkt
            .clone();
        ack.tcp_mut().unwrap().ack = s.a.snd_una();
        assert!(s.a.trace().rwnd_seen_bytes > 0);
        let mut z = ack.clone();
        z.tcp_mut().unwrap().window = 0;
        s.a.handle_packet(now, &z);
        assert_eq!(s.a.trace().rwnd_seen_bytes == 0, closes, "{rule:?}");
        assert_eq!(s.a.stats().zero_windows, closes as u64, "{rule:?}");
        s.a.handle_packet(now + ms(1), &ack);
        assert!(s.a.trace().rwnd_seen_bytes > 0, "{rule:?}");
        assert_eq!(s.a.stats().zero_window_ns, if closes { ms(1).0 } else { 0 }, "{rule:?}");
        // The copy changes the window, so it is never a duplicate ACK; the original again is one
        // only where the copy was ignored (BSD: same window as before), not where it reopens.
        assert_eq!(s.a.stats().dupacks_rcvd, !closes as u64, "{rule:?}");
        // An ACK that advances SND.UNA may shrink the window under both rules.
        if s.a.snd_nxt() != s.a.snd_una() {
            let mut adv = z.clone();
            adv.tcp_mut().unwrap().ack = s.a.snd_una() + MSS as u32;
            s.a.handle_packet(now + ms(2), &adv);
            assert_eq!(s.a.trace().rwnd_seen_bytes, 0, "{rule:?}");
        }
    }
}

#[test]
fn abc_slow_start_counts_bytes() {
    // With delayed ACKs, per-ACK slow start grows ×1.5 per RTT; ABC (L = 2) ×2.
    let grow = |abc: bool| {
        let c = TcpConfig { abc, initial_window: 2, ..base_cfg() };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.a.write(1 << 30);
        s.run_until(Time::from_secs_f64(0.1 + 0.1 * 5.0 + 0.01), |_| false);
        s.a.trace().cwnd_bytes / MSS
    };
    let per_ack = grow(false);
    let abc = grow(true);
    eprintln!("cwnd after 5 RTTs: per-ack {per_ack} abc {abc}");
    assert!(abc > per_ack + per_ack / 2);
}

#[test]
fn deterministic() {
    let run = || {
        let c = TcpConfig { rto: rto_linux(), ..base_cfg() };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.loss_p = 0.02;
        s.ab.rate_bps = Some(10_000_000);
        s.bulk(1000 * MSS, secs(100));
        (s.now, s.a.stats().clone(), s.sent.len())
    };
    assert_eq!(run(), run());
}

#[test]
fn sack_rto_does_not_resend_sacked_data() {
    let mut s = Sim::new(cfg(CcAlgo::Sack), cfg(CcAlgo::Sack), ms(20));
    let mut target = None;
    let mut hits = 0;
    s.ab.drop_fn = Some(Box::new(move |p, idx| {
        let seq = p.tcp().unwrap().seq;
        if idx == 60 {
            target = Some(seq);
        }
        if Some(seq) == target && hits < 2 {
            hits += 1;
            return true;
        }
        false
    }));
    s.bulk(200 * MSS, secs(30));
    let st = s.a.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 1);
    assert_eq!(st.retrans_segs, 2, "only the lost segment is resent: {st:?}");
    assert_eq!(s.b().stats().bytes_delivered, 200 * MSS);
}

#[test]
fn cubic_reduces_by_beta() {
    let mut s = Sim::new(cfg(CcAlgo::Cubic), cfg(CcAlgo::Cubic), ms(20));
    s.ab.drop_data = vec![150];
    s.ab.rate_bps = Some(50_000_000);
    s.a.write(1000 * MSS);
    let last_cwnd = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let lc = last_cwnd.clone();
    s.on_step = Some(Box::new(move |_, a, _| {
        if a.stats().fast_retransmits == 0 {
            lc.set(a.trace().cwnd_bytes);
        }
    }));
    s.run_until(secs(30), |s| s.a.stats().fast_retransmits > 0);
    let tr = s.a.trace();
    let pre = last_cwnd.get() as f64;
    let ratio = tr.ssthresh_bytes as f64 / pre;
    eprintln!("cubic: cwnd before {pre} ssthresh {} ratio {ratio:.3}", tr.ssthresh_bytes);
    assert!((ratio - 0.7).abs() < 0.03, "ratio {ratio}");
    assert_eq!(tr.cwnd_bytes, tr.ssthresh_bytes);
    s.run_until(secs(30), |s| s.a.stats().bytes_acked >= 1000 * MSS);
    assert_eq!(s.a.stats().timeouts, 0);
}

#[test]
fn cwnd_validation_stops_growth_when_rwnd_limited() {
    let run = |v: bool| {
        let ca = TcpConfig { cwnd_validation: v, ..base_cfg() };
        let cb = TcpConfig { rcv_buf: 20 * MSS as u32, ..base_cfg() };
        let mut s = Sim::new(ca, cb, ms(20));
        s.record = false;
        s.bulk(2000 * MSS, secs(60));
        s.a.trace().cwnd_bytes
    };
    let plain = run(false);
    let validated = run(true);
    assert!(plain > 100 * MSS, "{plain}");
    assert!(validated <= 42 * MSS, "{validated}");
}

/// Randomised robustness: every algorithm, options on/off, loss + reordering + duplication in
/// both directions, two-way data, sequence numbers wrapping. Everything is delivered exactly
/// once and in order, and both sides close.
#[test]
fn randomised_two_way_exact_delivery() {
    let algos = [CcAlgo::Sack, CcAlgo::NewReno, CcAlgo::Reno, CcAlgo::Tahoe, CcAlgo::Cubic, CcAlgo::Misbehaving];
    for seed in 0..120u64 {
        let cc = algos[(seed % 6) as usize];
        let opt = seed / 6;
        let c = TcpConfig {
            cc,
            sack: opt % 2 == 0,
            timestamps: opt % 3 != 1,
            ecn: opt % 2 == 1,
            wscale: if opt == 3 { None } else { Some(7) },
            carry_payload: true,
            rcv_buf: if opt == 4 { 30_000 } else { 1 << 20 },
            mss: if opt == 5 { 536 } else { 1448 },
            delack: DelAckConfig { every: 1 + (seed % 2) as u32, timeout: ms(40) },
            rescue_retransmission: seed % 4 == 0,
            limited_transmit: seed % 5 == 0,
            abc: seed % 3 == 0,
            cwnd_validation: seed % 7 == 0,
            max_burst: if seed % 4 == 1 { 3 } else { 0 },
            rto: rto_linux(),
            ..base_cfg()
        };
        let mut s = Sim::with_iss(c.clone(), c, ms(15), u32::MAX - 200_000 + seed as u32, u32::MAX - 77);
        s.ab = Path::new(ms(15), 1000 + seed);
        s.ba = Path::new(ms(15), 2000 + seed);
        for p in [&mut s.ab, &mut s.ba] {
            p.rate_bps = Some(5_000_000);
            p.loss_p = [0.01, 0.03, 0.12][(seed % 3) as usize];
            p.reorder_p = 0.05;
            p.reorder_extra = ms(4);
            p.dup_p = 0.02;
        }
        s.record = false;
        s.auto_close = true;
        let na = 300_000 + seed * 1000;
        let nb = 100_000 + seed * 777;
        s.a.write(na);
        s.a.close();
        s.run_until(secs(120), |s| s.b.is_some());
        let b = s.b.as_mut().unwrap();
        b.write_bytes(bytes::Bytes::from(pattern_bytes(12345, nb as usize)));
        s.run_until(secs(900), |s| {
            s.a.state() == TcpState::Closed && s.b.as_ref().is_some_and(|b| b.state() == TcpState::Closed)
        });
        let tag = format!("seed {seed} {cc:?} opt {opt}");
        assert_eq!(s.read_b.len() as u64, na, "{tag}");
        assert!(s.read_b == pattern_bytes(0, na as usize), "{tag}");
        assert_eq!(s.read_a.len() as u64, nb, "{tag}");
        assert!(s.read_a == pattern_bytes(12345, nb as usize), "{tag}");
        assert_eq!(s.a.stats().bytes_delivered, nb, "{tag}");
        assert_eq!(s.b().stats().bytes_delivered, na, "{tag}");
        assert_eq!(s.a.state(), TcpState::Closed, "{tag}");
        assert_eq!(s.b().state(), TcpState::Closed, "{tag}");
        assert!(s.ab.dropped + s.ba.dropped > 0, "{tag}");
    }
}

/// RFC 2018: the first SACK block holds the most recently received segment, then the most
/// recently reported other blocks; at most 3 blocks with timestamps, 4 without.
#[test]
fn sack_blocks_most_recent_first() {
    for ts in [true, false] {
        let c = TcpConfig { timestamps: ts, ..cfg(CcAlgo::Sack) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.rate_bps = Some(10_000_000);
        s.ab.drop_data = vec![40, 42, 44, 46, 48];
        s.bulk(100 * MSS, secs(30));
        let d = data_sent_a(&s);
        let seg = |i: usize| d[i].pkt.tcp().unwrap().seq;
        // The dupACKs B sent, in order.
        let acks: Vec<_> = s
            .sent
            .iter()
            .filter(|x| !x.from_a && x.pkt.tcp().unwrap().opts.sack_len > 0)
            .map(|x| x.pkt.tcp().unwrap().opts.clone())
            .collect();
        assert!(!acks.is_empty());
        // ACK triggered by segment 43: blocks [43,44) then [41,42).
        let a43 = acks.iter().find(|o| o.sack_blocks()[0].left == seg(43)).unwrap();
        assert_eq!(a43.sack_blocks()[0].right, seg(44));
        assert_eq!(a43.sack_blocks()[1].left, seg(41));
        assert_eq!(a43.sack_blocks()[1].right, seg(42));
        // ACK triggered by segment 49: [49,…) first, then 47, 45, (43 without timestamps).
        let a49 = acks.iter().find(|o| o.sack_blocks()[0].left == seg(49)).unwrap();
        let n = if ts { 3 } else { 4 };
        assert_eq!(a49.sack_len as usize, n);
        assert_eq!(a49.sack_blocks()[1].left, seg(47));
        assert_eq!(a49.sack_blocks()[2].left, seg(45));
        if !ts {
            assert_eq!(a49.sack_blocks()[3].left, seg(43));
        }
        assert!(acks.iter().all(|o| o.sack_len as usize <= n));
        assert_eq!(s.a.stats().timeouts, 0);
        assert_eq!(s.a.stats().retrans_segs, 5);
    }
}

#[test]
fn coarse_timer_first_flight_drop() {
    // The brief's scenario: initial window 3, 2nd segment of the first flight dropped, a
    // BSD-like 500 ms tick: the connection stalls for about one second.
    let coarse =
        RtoConfig { min: Dur::from_secs(1), max: Dur::from_secs(64), initial: Dur::from_secs(3), granularity: ms(500) };
    for (rto, rto_model, lo, hi) in [(coarse, RtoModel::Rfc6298, 900, 1600), (rto_linux(), RtoModel::Linux, 200, 300)] {
        let c = TcpConfig { initial_window: 3, rto, rto_model, ..base_cfg() };
        let mut s = Sim::new(c.clone(), c, ms(10));
        s.ab.drop_data = vec![1];
        s.bulk(3 * MSS, secs(10));
        let d = data_sent_a(&s);
        let stall = d[3].t.since(d[1].t);
        eprintln!("first-flight stall {stall:?}");
        assert_eq!(d[3].pkt.tcp().unwrap().seq, d[1].pkt.tcp().unwrap().seq);
        assert!(stall >= ms(lo) && stall <= ms(hi), "stall {stall:?}");
        assert_eq!(s.a.stats().timeouts, 1);
    }
}

#[test]
fn all_acked_and_delivered_events() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    s.bulk(50_000, secs(10));
    s.run_until(secs(1), |_| false);
    s.a.write(20_000);
    s.run_until(secs(10), |_| false);
    assert_eq!(s.count(true, |e| *e == TcpEvent::AllAcked), 2);
    let delivered: u64 = s
        .events
        .iter()
        .filter(|(_, a, _)| !*a)
        .map(|(_, _, e)| if let TcpEvent::Delivered { bytes } = e { *bytes } else { 0 })
        .sum();
    assert_eq!(delivered, 70_000);
}

/// A middlebox clamps the advertised window below one MSS (paper 000, TCR with W_w < 1):
/// sender SWS avoidance holds the data back until the persist timer sends a window-sized
/// segment, so the transfer completes, one sub-MSS segment per persist interval.
#[test]
fn sub_mss_window_makes_progress_via_persist() {
    let c = TcpConfig { rto: rto_linux(), ..base_cfg() };
    let mut s = Sim::new(c.clone(), c, ms(10));
    s.ba.mutate = Some(Box::new(|_, p| {
        let t = p.tcp_mut().unwrap();
        if !t.flags.contains(TcpFlags::SYN) {
            t.window = t.window.min(700 >> 7);
        }
    }));
    s.bulk(30_000, secs(60));
    assert_eq!(s.b().stats().bytes_delivered, 30_000);
    let d = data_sent_a(&s);
    // After the first flight (sent on the SYN-ACK's window) every segment fits 5 << 7 = 640 bytes.
    let later: Vec<_> = d.iter().filter(|x| x.t > Time(ms(30).0)).map(|x| x.pkt.payload_len).collect();
    assert!(!later.is_empty());
    assert!(later.iter().all(|&l| l <= 640), "{later:?}");
    eprintln!(
        "sub-MSS window: {} segments after the first flight, done at {:?}, {:?}",
        later.len(),
        s.now,
        s.a.stats()
    );
    assert!(s.a.stats().persist_probes >= 3, "{:?}", s.a.stats());
}

/// Sanity check of the whole loss/recovery/CA loop against the Mathis model with delayed
/// ACKs: goodput ≈ MSS/RTT · √(3/(2·b·p)), b = 2. Loose band: the model ignores timeouts and
/// recovery dynamics (ns-3 measures 0.80 of it for NewReno, see shared/peers/README.md).
#[test]
fn random_loss_goodput_near_mathis() {
    let p: f64 = 0.01;
    let rtt: f64 = 0.1;
    let mathis = MSS as f64 / rtt * (3.0 / (2.0 * 2.0 * p)).sqrt();
    for cc in [CcAlgo::NewReno, CcAlgo::Sack] {
        let c = TcpConfig { rto: rto_linux(), ..cfg(cc) };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.ab = Path::new(ms(50), 99);
        s.ab.loss_p = p;
        s.record = false;
        s.a.write(1 << 40);
        s.run_until(secs(20), |_| false);
        let b0 = s.b().stats().bytes_delivered;
        s.run_until(secs(320), |_| false);
        let g = (s.b().stats().bytes_delivered - b0) as f64 / 300.0;
        let ratio = g / mathis;
        eprintln!("{cc:?}: goodput {g:.0} B/s, Mathis(b=2) {mathis:.0} B/s, ratio {ratio:.2}, {:?}", s.a.stats());
        assert!(ratio > 0.6 && ratio < 1.4, "{cc:?} ratio {ratio}");
    }
}

/// The advertised window is the free receive buffer (out-of-order data occupies it), and
/// the right edge (ACK + window·2^shift) never moves left.
#[test]
fn advertised_right_edge_never_shrinks() {
    let cb = TcpConfig { rcv_buf: 40 * MSS as u32, ..base_cfg() };
    let mut s = Sim::new(base_cfg(), cb, ms(20));
    s.ab.drop_data = vec![30, 31, 50, 70, 71, 72];
    s.bulk(300 * MSS, secs(60));
    let mut last_edge: Option<ackshape_wire::SeqNum> = None;
    let mut min_wnd = u64::MAX;
    for x in s.sent.iter().filter(|x| !x.from_a) {
        let t = x.pkt.tcp().unwrap();
        if t.flags.contains(TcpFlags::SYN) {
            continue;
        }
        let wnd = (t.window as u64) << 7;
        min_wnd = min_wnd.min(wnd);
        let edge = t.ack + wnd as u32;
        if let Some(e) = last_edge {
            assert!(edge >= e, "right edge moved left: {e:?} -> {edge:?}");
        }
        last_edge = Some(edge);
    }
    // While holes were open the window shrank by the out-of-order bytes held.
    assert!(min_wnd < 40 * MSS - 2 * MSS, "min window {min_wnd}");
    assert_eq!(s.b().stats().bytes_delivered, 300 * MSS);
}

#[test]
fn synack_loss_recovers() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    let mut n = 0;
    s.ba.drop_pkt = Some(Box::new(move |p| {
        let syn = p.tcp().unwrap().flags.contains(TcpFlags::SYN);
        n += syn as u32;
        syn && n == 1
    }));
    s.bulk(5000, secs(10));
    let est = s.event_time(true, |e| *e == TcpEvent::Established).unwrap();
    assert!(est >= secs(1) && est < Time::from_secs_f64(1.1), "{est:?}");
    assert_eq!(s.b().stats().bytes_delivered, 5000);
    assert!(s.a.stats().syn_retrans + s.b().stats().syn_retrans >= 1);
}

#[test]
fn rst_closes_connection() {
    let mut s = Sim::new(base_cfg(), base_cfg(), ms(10));
    s.a.write(1_000_000);
    s.run_until(secs(1), |s| s.a.stats().bytes_acked > 100_000);
    // B resets: forge an RST from B's current state (seq = B's next sequence number).
    let last_b = s.sent.iter().rfind(|x| !x.from_a).unwrap().pkt.clone();
    let mut rst = last_b;
    let t = rst.tcp_mut().unwrap();
    t.flags = TcpFlags::RST;
    rst.payload_len = 0;
    let now = s.now + ms(10);
    s.a.handle_packet(now, &rst);
    assert_eq!(s.a.state(), TcpState::Closed);
    assert_eq!(s.a.poll_event(), Some(TcpEvent::Closed));
    assert_eq!(s.a.poll_timeout(), None);
    // A closed connection answers a segment with an RST.
    s.a.handle_packet(now, s.sent.iter().rfind(|x| !x.from_a).map(|x| &x.pkt).unwrap());
    let r = s.a.poll_transmit(now).unwrap();
    assert!(r.tcp().unwrap().flags.contains(TcpFlags::RST));
    assert!(s.a.poll_transmit(now).is_none());
}

/// RFC 6675 rescue retransmission: a tail loss inside a recovery episode (nothing SACKed
/// above it) is repaired without waiting for the RTO.
#[test]
fn rescue_retransmission_repairs_tail_loss() {
    let run = |rescue: bool| {
        let c = TcpConfig { rescue_retransmission: rescue, ..cfg(CcAlgo::Sack) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.drop_data = vec![90, 99];
        s.bulk(100 * MSS, secs(30));
        assert_eq!(s.b().stats().bytes_delivered, 100 * MSS);
        (s.now, s.a.stats().clone())
    };
    let (t_plain, plain) = run(false);
    let (t_rescue, rescue) = run(true);
    eprintln!(
        "tail loss: plain {t_plain:?} timeouts {}, rescue {t_rescue:?} timeouts {}",
        plain.timeouts, rescue.timeouts
    );
    assert_eq!(plain.timeouts, 1);
    assert_eq!(plain.rescue_retrans, 0);
    assert_eq!(rescue.timeouts, 0);
    assert_eq!(rescue.rescue_retrans, 1);
    assert!(t_rescue < t_plain);
}

/// MulTCP(N) under random loss gets about N·sqrt(2 − 1/(2N))/sqrt(1.5) times Reno's window
/// (AIMD(a = N, b = 1/(2N)) vs AIMD(1, 1/2)), and MulTCP(1) is exactly the SACK sender.
#[test]
fn multcp_acts_like_n_flows() {
    let run = |cc: CcAlgo, n: f64| {
        let c = TcpConfig {
            rto: rto_linux(),
            multcp_n: n,
            delack: DelAckConfig { every: 1, ..Default::default() },
            ..cfg(cc)
        };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.ab = Path::new(ms(50), 7);
        s.ab.loss_p = 0.005;
        s.record = false;
        s.a.write(1 << 40);
        s.run_until(secs(20), |_| false);
        let b0 = s.b().stats().bytes_delivered;
        s.run_until(secs(420), |_| false);
        ((s.b().stats().bytes_delivered - b0) as f64 / 400.0, s.a.stats().clone())
    };
    let (reno, st_sack) = run(CcAlgo::Sack, 1.0);
    let (m1, st_m1) = run(CcAlgo::MulTcp, 1.0);
    assert_eq!(reno, m1, "MulTCP(1) differs from SACK");
    assert_eq!(st_sack, st_m1);
    let (m4, _) = run(CcAlgo::MulTcp, 4.0);
    let expect = 4.0 * (2.0f64 - 1.0 / 8.0).sqrt() / 1.5f64.sqrt();
    let ratio = m4 / reno;
    eprintln!("reno {reno:.0} B/s, MulTCP(4) {m4:.0} B/s: ratio {ratio:.2} (AIMD model {expect:.2})");
    assert!(ratio > 0.7 * expect && ratio < 1.3 * expect, "ratio {ratio}, model {expect}");
}

/// `multcp_slow_start = "n-flows"`: MulTCP(N) triples its window per round trip (two MSS per ACK)
/// until 3^(ln N / ln 1.5) segments, where N windows doubling from one segment each are caught
/// up, and then doubles like them; Reno's slow start (the default) doubles from the start, and
/// with N = 1 the two are the same sender.
#[test]
fn multcp_n_flows_slow_start_catches_up_with_n_flows() {
    let cwnd_after = |n: f64, ss: MultcpSlowStart, rtts: &[u32]| {
        let c = TcpConfig {
            initial_window: 1,
            multcp_n: n,
            multcp_slow_start: ss,
            delack: DelAckConfig { every: 1, ..Default::default() },
            ..cfg(CcAlgo::MulTcp)
        };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.a.write(1 << 30);
        let mut out = Vec::new();
        for &k in rtts {
            s.run_until(Time::from_secs_f64(0.1 + 0.1 * k as f64 + 0.01), |_| false);
            out.push(s.a.trace().cwnd_bytes / MSS);
        }
        (out, s.a.stats().clone())
    };
    let rtts = [1, 2, 3, 4, 5];
    let (reno, _) = cwnd_after(4.0, MultcpSlowStart::Reno, &rtts);
    let (nf, _) = cwnd_after(4.0, MultcpSlowStart::NFlows, &rtts);
    let knee = multcp_catch_up_segments(4.0);
    eprintln!("cwnd after 1..5 RTTs: reno {reno:?}, n-flows {nf:?} (catch-up at {knee:.1} segments)");
    assert_eq!(reno, vec![2, 4, 8, 16, 32]);
    // ×3 per round trip while below the knee (42.7 segments for N = 4) ...
    assert_eq!(&nf[..3], &[3, 9, 27]);
    // ... then the rest of the 4th round trip's ACKs add one each: 27 + 2·8 + 19 = 62, within
    // one segment of what four flows doubling from one segment would have (4·2^4 = 64) ...
    assert!((62..=64).contains(&nf[3]), "{nf:?}");
    // ... and from there it doubles, as they do.
    assert_eq!(nf[4], 2 * nf[3], "{nf:?}");
    // N = 1: the knee is one segment, never above cwnd, so it is Reno's slow start exactly.
    assert_eq!(multcp_catch_up_segments(1.0), 1.0);
    assert_eq!(cwnd_after(1.0, MultcpSlowStart::NFlows, &rtts), cwnd_after(1.0, MultcpSlowStart::Reno, &rtts));
}

#[test]
fn new_data_on_fast_retransmit_only_when_allowed() {
    // A Reno sender in slow start with 3 segments in flight gets three duplicates of its last
    // ACK: ssthresh = 2 MSS, cwnd = 2 + 3 = 5 MSS, so the inflated window has room for two new
    // segments. Linux (and our default) sends them with the retransmission; 4.4BSD's
    // tcp_input and ns-2's FullTcp send only the retransmission, and new data waits for the
    // next ACK (paper 004's agents).
    for allowed in [true, false] {
        let c = TcpConfig {
            cc: CcAlgo::Reno,
            initial_window: 2,
            sack: false,
            timestamps: false,
            new_data_on_fast_retransmit: allowed,
            ..base_cfg()
        };
        let mut s = Sim::new(c.clone(), c, ms(50));
        s.a.write(100 * MSS);
        s.run_until(secs(2), |s| s.a.stats().bytes_acked >= MSS);
        let now = s.now;
        let una = s.a.snd_una();
        let nxt = s.a.snd_nxt();
        let flight = (nxt - una) as u64;
        assert_eq!(flight, 3 * MSS, "slow start after one ACK: 3 segments in flight");
        let mut dup = s.sent.iter().filter(|x| !x.from_a && x.pkt.is_pure_ack()).last().unwrap().pkt.clone();
        dup.tcp_mut().unwrap().ack = una;
        for _ in 0..3 {
            s.a.handle_packet(now, &dup);
        }
        assert_eq!(s.a.stats().fast_retransmits, 1);
        assert_eq!(s.a.trace().cwnd_bytes, 5 * MSS);
        let mut out = Vec::new();
        while let Some(p) = s.a.poll_transmit(now) {
            out.push(p.tcp().unwrap().seq);
        }
        let new: Vec<_> = out.iter().filter(|&&q| q >= nxt).collect();
        assert_eq!(out.first(), Some(&una), "the retransmission goes first ({allowed})");
        assert_eq!(new.len(), if allowed { 2 } else { 0 }, "new segments at entry ({allowed}): {out:?}");
        // The next ACK covers the three original segments (Reno leaves recovery, cwnd deflates
        // to ssthresh = 2 MSS): the held sender now sends its two, the other has them in flight.
        let mut next = dup.clone();
        next.tcp_mut().unwrap().ack = nxt;
        s.a.handle_packet(now + ms(1), &next);
        let mut after = 0;
        while let Some(p) = s.a.poll_transmit(now + ms(1)) {
            assert!(p.tcp().unwrap().seq >= nxt);
            after += 1;
        }
        assert_eq!(after, if allowed { 0 } else { 2 }, "new segments on the next ACK ({allowed})");
        assert_eq!(s.a.trace().cwnd_bytes / MSS, 2, "{allowed}");
    }
}

/// A BBR sender paces: its first window leaves one segment per len / pacing rate (the initial
/// rate, 2.885 × initial window per millisecond × 0.99, before any ACK of data), where a SACK
/// sender sends the whole window at once.
#[test]
fn bbr_paces_its_first_window() {
    let first_window = |cc: CcAlgo| {
        let mut s = Sim::new(cfg(cc), cfg(cc), ms(20));
        let rate = s.a.pacing_rate();
        s.bulk(200_000, secs(10));
        assert_eq!(s.b().stats().bytes_delivered, 200_000, "{cc:?}");
        let d = data_sent_a(&s);
        let times: Vec<(Time, u32)> = d.iter().take(10).map(|x| (x.t, x.pkt.payload_len)).collect();
        (rate, times)
    };
    let (rate, bbr) = first_window(CcAlgo::Bbr);
    let rate = rate.expect("BBR has a pacing rate") as f64;
    let expect_rate = 2.885 * 10.0 * 1448.0 / 1e-3 * 0.99;
    assert!((rate / expect_rate - 1.0).abs() < 0.001, "initial pacing rate {rate} B/s vs {expect_rate}");
    for w in bbr.windows(2) {
        let gap = w[1].0.since(w[0].0).0 as f64;
        let expect = w[0].1 as f64 * 1e9 / rate;
        println!("gap {gap:.0} ns, expected {expect:.0} ns");
        assert!((gap - expect).abs() <= 1.0, "gap {gap} ns vs len/rate {expect} ns");
    }
    let (none, sack) = first_window(CcAlgo::Sack);
    assert_eq!(none, None);
    assert!(sack.windows(2).all(|w| w[0].0 == w[1].0), "SACK sends its first window at once");
}
