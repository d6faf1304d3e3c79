//! Cost of the wire formats: `write_frame` and `parse_frame` per packet, plus the in-place
//! ACK rewrite and pcap export. Run: `cargo bench -p ackshape-wire --bench packet`.

use ackshape_wire::*;
use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

const MA: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MB: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn ip() -> IpHdr {
    IpHdr {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        ttl: 64,
        dscp: 0,
        ecn: Ecn::Ect0,
        id: 4242,
    }
}

/// 1500-byte IP packet: 20 IP + 20 TCP + 12 (timestamps, padded) + 1448 payload.
fn data_packet(with_bytes: bool) -> Packet {
    let opts = TcpOptions { timestamps: Some((123_456, 654_321)), ..Default::default() };
    let payload_len = 1448;
    Packet {
        ip: ip(),
        l4: L4::Tcp(TcpHdr {
            sport: 40_000,
            dport: 5201,
            seq: SeqNum(1_000_000),
            ack: SeqNum(2_000_000),
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 502,
            urgent: 0,
            opts,
        }),
        payload_len,
        payload: with_bytes.then(|| Bytes::from((0..payload_len).map(|i| i as u8).collect::<Vec<u8>>())),
    }
}

/// 52-byte IP packet: 20 IP + 20 TCP + 12 (one SACK block, padded), no payload.
fn pure_ack() -> Packet {
    let mut opts = TcpOptions::default();
    opts.set_sack_blocks(&[SackBlock { left: SeqNum(3_000_000), right: SeqNum(3_001_448) }]);
    Packet {
        ip: ip(),
        l4: L4::Tcp(TcpHdr {
            sport: 5201,
            dport: 40_000,
            seq: SeqNum(2_000_000),
            ack: SeqNum(1_001_448),
            flags: TcpFlags::ACK,
            window: 502,
            urgent: 0,
            opts,
        }),
        payload_len: 0,
        payload: None,
    }
}

fn bench(c: &mut Criterion) {
    let data = data_packet(false);
    let data_bytes = data_packet(true);
    let ack = pure_ack();
    assert_eq!(data.ip_len(), 1500);
    assert_eq!(ack.ip_len(), 52);

    let mut g = c.benchmark_group("write_frame");
    g.throughput(Throughput::Elements(1));
    let mut out = Vec::with_capacity(2048);
    for (name, p) in [("data1500_zero_payload", &data), ("data1500_real_payload", &data_bytes), ("ack52_sack", &ack)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                black_box(p).write_frame(MA, MB, &mut out);
                black_box(&out);
            })
        });
    }
    g.finish();

    let fdata = data_bytes.to_frame(MA, MB);
    let fack = ack.to_frame(MA, MB);
    let mut g = c.benchmark_group("parse_frame");
    g.throughput(Throughput::Elements(1));
    g.bench_function("data1500", |b| b.iter(|| Packet::parse_frame(black_box(&fdata)).unwrap()));
    g.bench_function("ack52_sack", |b| b.iter(|| Packet::parse_frame(black_box(&fack)).unwrap()));
    g.bench_function("data1500_with_payload_copy", |b| {
        b.iter(|| Packet::parse_frame_with_payload(black_box(&fdata)).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group("in_place");
    g.throughput(Throughput::Elements(1));
    let parsed = Packet::parse_frame(&fack).unwrap();
    let mut buf = fack.clone();
    let mut w = 0u16;
    g.bench_function("ack52_set_window_and_ack", |b| {
        b.iter(|| {
            let mut v = TcpFrameMut::new(&mut buf, &parsed).unwrap();
            w = w.wrapping_add(1);
            v.set_window(w);
            v.set_ack(SeqNum(w as u32));
        })
    });
    g.bench_function("ack52_parse_then_set_window", |b| {
        b.iter(|| {
            let p = Packet::parse_frame(&buf).unwrap();
            let mut v = TcpFrameMut::new(&mut buf, &p).unwrap();
            w = w.wrapping_add(1);
            v.set_window(w);
        })
    });
    g.bench_function("verify_checksums_data1500", |b| b.iter(|| verify_checksums(black_box(&fdata)).unwrap()));
    g.finish();

    let mut g = c.benchmark_group("pcap");
    g.throughput(Throughput::Elements(1));
    let mut pw = pcap::PcapWriter::new(std::io::sink()).unwrap();
    let mut t = 0u64;
    g.bench_function("write_packet_data1500_to_sink", |b| {
        b.iter(|| {
            t += 1000;
            pw.write_packet(t, &data).unwrap();
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
