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
