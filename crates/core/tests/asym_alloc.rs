//! No allocation per packet in steady state: after a warm-up, a long enqueue/dequeue run of
//! each discipline performs zero heap allocations (counted per thread by a wrapping global
//! allocator).

use ackshape_core::rng::stream;
use ackshape_core::shape::asym::{AsymDiscSpec, CakeMode, SizeModifierSpec};
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, UdpHdr, L4};
use std::net::{IpAddr, Ipv4Addr};

mod alloc_counter;
use alloc_counter::allocs;

fn pkt(i: u32) -> Packet {
    let flow = (i % 16) as u16;
    let ip = IpHdr {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + flow as u8)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
        ttl: 64,
        dscp: 0,
        ecn: Ecn::NotEct,
        id: 0,
    };
    if i % 10 == 9 {
        return Packet { ip, l4: L4::Udp(UdpHdr { sport: 1, dport: 2 }), payload_len: 1000, payload: None };
    }
    let is_ack = i % 5 < 2;
    Packet {
        ip,
        l4: L4::Tcp(TcpHdr {
            sport: 40_000 + flow,
            dport: 80,
            seq: SeqNum(1),
            ack: SeqNum(i.wrapping_mul(1448)),
            flags: TcpFlags::ACK,
            window: 100,
            urgent: 0,
            opts: TcpOptions { timestamps: Some((i, i)), ..TcpOptions::default() },
        }),
        payload_len: if is_ack { 0 } else { 1448 },
        payload: None,
    }
}

#[test]
fn steady_state_does_not_allocate() {
    let specs = [
        AsymDiscSpec::Fifo { limit_pkts: 64 },
        AsymDiscSpec::AcksFirst { ack_limit_pkts: 64, data_limit_pkts: 64 },
        AsymDiscSpec::AckFilterClassic { limit_pkts: 64, keep_position: false },
        AsymDiscSpec::AckFilterCake { limit_pkts: 64, mode: CakeMode::Conservative },
        AsymDiscSpec::AckFilterCake { limit_pkts: 64, mode: CakeMode::Aggressive },
        AsymDiscSpec::Acq {
            rate_bps: 1_000_000,
            reverse_rate_bps: 10_000_000,
            ack_limit_pkts: 64,
            data_limit_pkts: 64,
            period_ms: 1,
            step: 0.05,
            initial_ack_weight: 0.5,
            round_bytes: 3000,
        },
        AsymDiscSpec::Afvq {
            s_max: 5,
            n_thr: 36,
            data_limit_pkts: 64,
            non_tcp_limit_pkts: 64,
            modifier: SizeModifierSpec::Sampled,
            period_ms: 1,
            quantum_bytes: 1500,
        },
    ];
    for spec in specs {
        let at_start = allocs();
        let mut q = spec.build_asym(stream(3, "alloc", 0));
        let mut run = |from: u32, to: u32| {
            for i in from..to {
                let now = Time(i as u64 * 50_000);
                let p = pkt(i);
                q.enqueue(now, p);
                // Slightly slower service than arrival, so the queues fill and overflow too.
                if i % 7 != 0 {
                    q.dequeue(now);
                }
            }
        };
        run(0, 20_000);
        let before = allocs();
        assert!(before > at_start, "the counter must see the discipline's own allocations");
        run(20_000, 120_000);
        let n = allocs() - before;
        assert_eq!(n, 0, "{}: {n} allocations in 100k steady-state packets", spec.kind());
    }
}
