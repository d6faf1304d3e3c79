//! The ns-2.35 profile's loss recovery (`TcpConfig::ns2`, keys `ns2_recovery` and `ns2_slowdown`):
//! the rules of ns-2's `RenoTcpAgent`, `NewRenoTcpAgent` and `Sack1TcpAgent` (tcp-reno.cc,
//! tcp-newreno.cc, tcp-sack1.cc) and `TcpAgent::slowdown` (tcp.cc), each against the RFC
//! behaviour the default configuration keeps, on scripted drops.

mod tcp_harness;

use ackshape_core::tcp::*;
use ackshape_core::time::{Dur, Time};
use std::cell::Cell;
use std::rc::Rc;
use tcp_harness::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}
fn secs(x: u64) -> Time {
    Time(Dur::from_secs(x).0)
}

/// The ns2 profile with `cc`; SACK only for `CcAlgo::Sack` (ns-2's Reno and Newreno agents
/// read no SACK blocks).
fn ns2(cc: CcAlgo) -> TcpConfig {
    TcpConfig { cc, sack: cc == CcAlgo::Sack, rcv_buf: 4000 * MSS as u32, ..TcpConfig::ns2() }
}

/// The same with ns-2's agent rules off (RFC 5681 / 6582 / 6675 recovery on ns-2's timers).
fn rfc(cc: CcAlgo) -> TcpConfig {
    TcpConfig { ns2_recovery: false, ..ns2(cc) }
}

fn run(c: TcpConfig, drops: Vec<u64>, n: u64) -> (TcpStats, Sim) {
    let mut s = Sim::new(c.clone(), c, ms(20));
    s.ab.drop_data = drops;
    s.bulk(n * MSS, secs(120));
    assert_eq!(s.b().stats().bytes_delivered, n * MSS, "transfer incomplete");
    (s.a.stats().clone(), s)
}

/// `RenoTcpAgent::dupack_action` with `bug_fix_`: after the first fast retransmit of a window,
/// Reno leaves recovery on the partial ACK, and the duplicate ACKs of the window's second loss
/// do not trigger another one (`highest_ack_ ≤ recover_`): the timer repairs it. RFC 5681 Reno
/// fast-retransmits again.
#[test]
fn reno_second_loss_in_a_window_waits_for_the_timer() {
    let (ns, _) = run(ns2(CcAlgo::Reno), vec![60, 64], 300);
    let (rf, _) = run(rfc(CcAlgo::Reno), vec![60, 64], 300);
    eprintln!("ns2 rules: {ns:?}\nRFC rules: {rf:?}");
    assert_eq!((ns.fast_retransmits, ns.timeouts), (1, 1), "ns-2 Reno: one fast retransmit, then the timer");
    assert_eq!((rf.fast_retransmits, rf.timeouts), (2, 0), "RFC 5681 Reno: a second fast retransmit");
}

/// Drops the first transmission of the first new segment sent after the first retransmission,
/// i.e. the segment starting at the fast retransmit's `recover` point.
fn drop_first_new_after_first_rtx() -> DropFn {
    let (mut max_seq, mut seen_rtx, mut done) = (None::<u32>, false, false);
    Box::new(move |p, _| {
        let seq = p.tcp().unwrap().seq.0;
        let is_new = max_seq.is_none_or(|m| seq.wrapping_sub(m) as i32 > 0);
        let drop = seen_rtx && is_new && !done;
        if !is_new {
            seen_rtx = true;
        } else {
            max_seq = Some(seq);
        }
        done |= drop;
        drop
    })
}

/// `dupack_action`'s guard is `highest_ack_ > recover_`: one segment beyond the HighData of the
/// last fast retransmit. When exactly that segment (the first sent after the fast retransmit)
/// is lost, NewReno's duplicate ACKs arrive with SND.UNA = recover and ns-2 waits for the timer;
/// RFC 6582 (SND.UNA ≥ recover) fast-retransmits. Sack1 forgets `recover_` when it leaves
/// recovery (`recover_ = 0`), so it fast-retransmits too.
#[test]
fn fast_retransmit_needs_una_beyond_recover() {
    let go = |c: TcpConfig| {
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.drop_data = vec![60];
        s.ab.drop_fn = Some(drop_first_new_after_first_rtx());
        s.bulk(300 * MSS, secs(120));
        assert_eq!(s.b().stats().bytes_delivered, 300 * MSS);
        assert_eq!(s.ab.dropped, 2, "both scripted drops happened");
        s.a.stats().clone()
    };
    let nr = go(ns2(CcAlgo::NewReno));
    let nr_rfc = go(rfc(CcAlgo::NewReno));
    let sack = go(ns2(CcAlgo::Sack));
    eprintln!("newreno ns2 {nr:?}\nnewreno rfc {nr_rfc:?}\nsack ns2 {sack:?}");
    assert_eq!((nr.fast_retransmits, nr.timeouts), (1, 1));
    assert_eq!((nr_rfc.fast_retransmits, nr_rfc.timeouts), (2, 0));
    assert_eq!((sack.fast_retransmits, sack.timeouts), (2, 0));
}

/// `slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` with `precisionReduce_`: at the fast
/// retransmit cwnd_ = windowd() / 2 unrounded, ssthresh_ = ⌊windowd() / 2⌋ (at least 2); Reno
/// and NewReno add `dupwnd_ = numdupacks_` segments.
#[test]
fn fast_retransmit_halves_the_window_unrounded() {
    for (cc, drop) in [(CcAlgo::Sack, 60), (CcAlgo::NewReno, 60), (CcAlgo::Reno, 61), (CcAlgo::Sack, 61)] {
        let c = TcpConfig { max_cwnd_bytes: 0, ..ns2(cc) };
        let mut s = Sim::new(c.clone(), c, ms(20));
        s.ab.drop_data = vec![drop];
        s.a.write(300 * MSS);
        let before = Rc::new(Cell::new(0u64));
        let b2 = before.clone();
        s.run_until(secs(60), move |s| {
            let fr = s.count(true, |e| matches!(e, TcpEvent::FastRetransmit { .. })) > 0;
            if !fr {
                b2.set(s.a.cwnd_bytes());
            }
            fr
        });
        let (w, after, ssth) = (before.get(), s.a.cwnd_bytes(), s.a.trace().ssthresh_bytes);
        let inflation = if cc == CcAlgo::Sack { 0 } else { 3 * MSS };
        eprintln!("{cc:?} drop {drop}: cwnd {w} -> {after}, ssthresh {ssth}");
        assert_eq!(after, w / 2 + inflation, "{cc:?}: cwnd_ = windowd()/2 (+ dupwnd_)");
        assert_eq!(ssth, (w / MSS / 2).max(2) * MSS, "{cc:?}: ssthresh_ = int(windowd()/2)");
    }
}

/// `Sack1TcpAgent`: recovery paced by `pipe_` resends every hole below the highest SACKed
/// segment before new data; four losses in one window are repaired without a timeout.
#[test]
fn sack1_repairs_four_losses_in_one_window() {
    let (st, _) = run(ns2(CcAlgo::Sack), vec![60, 62, 64, 66], 300);
    eprintln!("{st:?}");
    assert_eq!((st.fast_retransmits, st.timeouts, st.retrans_segs), (1, 0, 4));
}
