//! Round-trip, robustness and cross-checks against etherparse.

use ackshape_wire::testing::{malformed_corpus, malformed_corpus_labeled, MalformedKind};
use ackshape_wire::*;
use bytes::Bytes;
use etherparse::{NetHeaders, PacketHeaders, TcpOptionElement, TransportHeader};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const MA: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const MB: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

/// Checks every checksum of `frame` with etherparse, and that its view of the headers matches `p`.
fn etherparse_agrees(frame: &[u8], p: &Packet) {
    let h = PacketHeaders::from_ethernet_slice(frame).expect("etherparse parses our frame");
    let payload = h.payload.slice();
    assert_eq!(payload.len(), p.payload_len as usize, "payload length");
    if let Some(b) = &p.payload {
        assert_eq!(payload, &b[..]);
    }
    match (h.net.as_ref().unwrap(), h.transport.as_ref()) {
        (NetHeaders::Ipv4(ip, _), t) => {
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "IPv4 header checksum");
            assert!(ip.dont_fragment);
            assert_eq!(ip.identification, p.ip.id);
            assert_eq!(ip.time_to_live, p.ip.ttl);
            assert_eq!(ip.dscp.value(), p.ip.dscp);
            assert_eq!(ip.ecn.value(), p.ip.ecn as u8);
            match t {
                Some(TransportHeader::Tcp(tcp)) => {
                    assert_eq!(tcp.checksum, tcp.calc_checksum_ipv4(ip, payload).unwrap(), "TCP checksum");
                    tcp_agrees(tcp, p);
                }
                Some(TransportHeader::Udp(u)) => {
                    assert_eq!(u.checksum, u.calc_checksum_ipv4(ip, payload).unwrap(), "UDP checksum");
                }
                None => assert!(matches!(p.l4, L4::Other { .. })),
                _ => panic!("unexpected transport"),
            }
        }
        (NetHeaders::Ipv6(ip, _), t) => {
            assert_eq!(ip.hop_limit, p.ip.ttl);
            assert_eq!(ip.traffic_class, (p.ip.dscp << 2) | p.ip.ecn as u8);
            match t {
                Some(TransportHeader::Tcp(tcp)) => {
                    assert_eq!(tcp.checksum, tcp.calc_checksum_ipv6(ip, payload).unwrap(), "TCP checksum");
                    tcp_agrees(tcp, p);
                }
                Some(TransportHeader::Udp(u)) => {
                    assert_eq!(u.checksum, u.calc_checksum_ipv6(ip, payload).unwrap(), "UDP checksum");
                }
                None => assert!(matches!(p.l4, L4::Other { .. })),
                _ => panic!("unexpected transport"),
            }
        }
    }
}

fn tcp_agrees(tcp: &etherparse::TcpHeader, p: &Packet) {
    let t = p.tcp().unwrap();
    assert_eq!(tcp.window_size, t.window);
    assert_eq!(tcp.sequence_number, t.seq.0);
    assert_eq!(tcp.acknowledgment_number, t.ack.0);
    let mut o = TcpOptions::default();
    for e in tcp.options_iterator() {
        match e.expect("etherparse reads our options") {
            TcpOptionElement::Noop => {}
            TcpOptionElement::MaximumSegmentSize(m) => o.mss = Some(m),
            TcpOptionElement::WindowScale(w) => o.wscale = Some(w),
            TcpOptionElement::SelectiveAcknowledgementPermitted => o.sack_permitted = true,
            TcpOptionElement::Timestamp(a, b) => o.timestamps = Some((a, b)),
            TcpOptionElement::SelectiveAcknowledgement(first, rest) => {
                let mut v = vec![first];
                v.extend(rest.iter().flatten().copied());
                let v: Vec<SackBlock> =
                    v.into_iter().map(|(l, r)| SackBlock { left: SeqNum(l), right: SeqNum(r) }).collect();
                o.set_sack_blocks(&v);
            }
        }
    }
    assert_eq!(o, t.opts);
}

fn arb_ip(v6: bool) -> impl Strategy<Value = IpHdr> {
    (any::<[u8; 16]>(), any::<[u8; 16]>(), any::<u8>(), 0u8..64, 0u8..4, any::<u16>()).prop_map(
        move |(s, d, ttl, dscp, ecn, id)| {
            let (src, dst, id) = if v6 {
                (IpAddr::V6(Ipv6Addr::from(s)), IpAddr::V6(Ipv6Addr::from(d)), 0)
            } else {
                (
                    IpAddr::V4(Ipv4Addr::new(s[0], s[1], s[2], s[3])),
                    IpAddr::V4(Ipv4Addr::new(d[0], d[1], d[2], d[3])),
                    id,
                )
            };
            IpHdr { src, dst, ttl, dscp, ecn: Ecn::from_bits(ecn), id }
        },
    )
}

fn arb_opts() -> impl Strategy<Value = TcpOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(any::<u8>()),
        any::<bool>(),
        proptest::option::of(any::<(u32, u32)>()),
        proptest::collection::vec(any::<(u32, u32)>(), 0..=4),
    )
        .prop_map(|(mss, wscale, sack_permitted, timestamps, sack)| {
            let mut o = TcpOptions { mss, wscale, sack_permitted, timestamps, ..Default::default() };
            let v: Vec<SackBlock> =
                sack.into_iter().map(|(l, r)| SackBlock { left: SeqNum(l), right: SeqNum(r) }).collect();
            o.set_sack_blocks(&v);
            o
        })
        .prop_filter("options fit in 40 bytes", |o| o.wire_len() <= 40)
}

fn arb_l4(v6: bool) -> impl Strategy<Value = L4> {
    prop_oneof![
        4 => (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>(), any::<u8>(), any::<u16>(), any::<u16>(), arb_opts())
            .prop_map(|(sport, dport, seq, ack, flags, window, urgent, opts)| L4::Tcp(TcpHdr {
                sport, dport, seq: SeqNum(seq), ack: SeqNum(ack), flags: TcpFlags(flags), window, urgent, opts,
            })),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(sport, dport)| L4::Udp(UdpHdr { sport, dport })),
        1 => any::<u8>()
            .prop_filter("not TCP/UDP or an IPv6 extension header", move |p| {
                // etherparse, our oracle, parses AH (51) and ICMP (1, 58) further.
                !([1u8, 6, 17, 51, 58].contains(p) || (v6 && [0u8, 43, 44, 60].contains(p)))
            })
            .prop_map(|proto| L4::Other { proto }),
    ]
}

fn arb_packet() -> impl Strategy<Value = Packet> {
    any::<bool>().prop_flat_map(|v6| {
        (arb_ip(v6), arb_l4(v6), 0u32..1600, any::<bool>(), any::<u64>()).prop_map(
            |(ip, l4, payload_len, with_bytes, seed)| {
                let payload = with_bytes.then(|| {
                    let mut x = seed;
                    Bytes::from(
                        (0..payload_len)
                            .map(|_| {
                                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                                (x >> 56) as u8
                            })
                            .collect::<Vec<u8>>(),
                    )
                });
                Packet { ip, l4, payload_len, payload }
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn roundtrip(p in arb_packet()) {
        let f = p.to_frame(MA, MB);
        prop_assert_eq!(f.len(), p.frame_len());
        let parsed = if p.payload.is_some() {
            Packet::parse_frame_with_payload(&f)
        } else {
            Packet::parse_frame(&f)
        }.unwrap();
        prop_assert_eq!(&parsed.packet, &p);
        prop_assert_eq!(parsed.eth_src, MA);
        prop_assert_eq!(parsed.eth_dst, MB);
        prop_assert_eq!(parsed.ip_end, f.len());
        prop_assert_eq!(parsed.payload_offset, f.len() - p.payload_len as usize);
        prop_assert!(!parsed.fragment);
        verify_checksums(&f).unwrap();
        etherparse_agrees(&f, &p);
        // The IP-only form parses the same.
        let mut ip = Vec::new();
        p.write_ip(&mut ip);
        prop_assert_eq!(&ip[..], &f[14..]);
        let pi = Packet::parse_ip(&ip).unwrap();
        prop_assert_eq!(pi.packet.l4, p.l4);
    }

    #[test]
    fn parse_never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Packet::parse_frame(&b);
        let _ = Packet::parse_frame_with_payload(&b);
        let _ = Packet::parse_ip(&b);
        let _ = verify_checksums(&b);
    }

    #[test]
    fn parse_never_panics_after_ethertype(
        et in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x8100)],
        ver in 0u8..16,
        b in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&et.to_be_bytes());
        if et == 0x8100 {
            f.extend_from_slice(&[0, 1, 0x08, 0x00]);
        }
        f.push(ver << 4 | 5);
        f.extend_from_slice(&b);
        let _ = Packet::parse_frame(&f);
        let _ = verify_checksums(&f);
    }

    #[test]
    fn parse_never_panics_on_mutated_frames(
        p in arb_packet(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut f = p.to_frame(MA, MB);
        for (i, v) in edits {
            let i = i.index(f.len());
            f[i] = v;
        }
        if do_cut {
            f.truncate(cut.index(f.len() + 1));
        }
        if let Ok(parsed) = Packet::parse_frame_with_payload(&f) {
            // Offsets are always within the frame and ordered.
            prop_assert!(parsed.ip_offset <= parsed.l4_offset);
            prop_assert!(parsed.l4_offset <= parsed.payload_offset);
            prop_assert!(parsed.payload_offset <= parsed.ip_end);
            prop_assert!(parsed.ip_end <= f.len());
            if let Ok(mut v) = TcpFrameMut::new(&mut f, &parsed) {
                v.set_window(1);
                v.set_ecn(Ecn::Ce);
            }
        }
        let _ = verify_checksums(&f);
    }

    /// After each in-place setter, the checksums recomputed from scratch agree, and the
    /// re-parsed packet shows exactly the change.
    #[test]
    fn view_setters_keep_checksums(
        p in arb_packet().prop_filter("tcp", |p| p.tcp().is_some()),
        win in any::<u16>(), ack in any::<u32>(), seq in any::<u32>(), flags in any::<u8>(), ecn in 0u8..4,
        keep in 0usize..=4,
        vlan in any::<bool>(),
    ) {
        let mut f = p.to_frame(MA, MB);
        if vlan {
            let tail = f.split_off(12);
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
            f.extend_from_slice(&tail);
        }
        let parsed = Packet::parse_frame(&f).unwrap();
        let mut expect = parsed.packet.clone();
        let mut v = TcpFrameMut::new(&mut f, &parsed).unwrap();
        v.set_window(win);
        v.set_ack(SeqNum(ack));
        v.set_seq(SeqNum(seq));
        v.set_flags(TcpFlags(flags));
        v.set_ecn(Ecn::from_bits(ecn));
        let t = expect.tcp_mut().unwrap();
        t.window = win;
        t.ack = SeqNum(ack);
        t.seq = SeqNum(seq);
        t.flags = TcpFlags(flags);
        let n = t.opts.sack_len as usize;
        if n > 0 {
            let keep = keep.min(n);
            let blocks: Vec<SackBlock> = t.opts.sack_blocks()[..keep].iter().rev().copied().collect();
            v.set_sack_blocks(&blocks).unwrap();
            t.opts.set_sack_blocks(&blocks);
            t.opts.normalize();
            if keep == n {
                prop_assert!(v.set_sack_blocks(&[SackBlock::default(); 5][..n + 1]).is_err());
            }
        } else {
            prop_assert_eq!(v.set_sack_blocks(&[]), Err(ViewError::NoSackOption));
        }
        expect.ip.ecn = Ecn::from_bits(ecn);
        prop_assert_eq!(v.window(), win);
        prop_assert_eq!(v.ecn(), Ecn::from_bits(ecn));
        verify_checksums(&f).unwrap();
        let again = Packet::parse_frame(&f).unwrap();
        prop_assert_eq!(&again.packet, &expect);
        if !vlan {
            let mut q = expect.clone();
            q.payload = p.payload.clone();
            etherparse_agrees(&f, &q);
        }
    }
}

#[test]
fn options_layout_is_exact() {
    let mut o = TcpOptions {
        mss: Some(1460),
        sack_permitted: true,
        timestamps: Some((1, 2)),
        wscale: Some(7),
        ..Default::default()
    };
    assert_eq!(o.wire_len(), 20);
    let p = Packet {
        ip: IpHdr {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            id: 7,
        },
        l4: L4::Tcp(TcpHdr { flags: TcpFlags::SYN, opts: o.clone(), ..Default::default() }),
        payload_len: 0,
        payload: None,
    };
    let f = p.to_frame(MA, MB);
    assert_eq!(f.len(), 14 + 20 + 40);
    assert_eq!(&f[54..74], &[2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 3, 3, 7, 0]);
    // Too many SACK blocks with timestamps: trailing ones are dropped, never > 40 bytes.
    o.mss = None;
    o.wscale = None;
    o.sack_permitted = false;
    o.set_sack_blocks(&[SackBlock { left: SeqNum(1), right: SeqNum(2) }; 4]);
    assert_eq!(o.wire_len(), 44);
    assert_eq!(o.sack_len_on_wire(), 3);
    assert_eq!(o.serialized_len(), 36);
    let mut q = p.clone();
    q.tcp_mut().unwrap().opts = o;
    let f = q.to_frame(MA, MB);
    assert_eq!(f.len(), 14 + 20 + 20 + 36);
    verify_checksums(&f).unwrap();
    assert_eq!(Packet::parse_frame(&f).unwrap().packet.tcp().unwrap().opts.sack_len, 3);
}

#[test]
fn pure_ack_sizes() {
    let mut o = TcpOptions::default();
    o.set_sack_blocks(&[SackBlock { left: SeqNum(100), right: SeqNum(200) }]);
    let mut p = Packet {
        ip: IpHdr {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            id: 0,
        },
        l4: L4::Tcp(TcpHdr { flags: TcpFlags::ACK, opts: o, ..Default::default() }),
        payload_len: 0,
        payload: None,
    };
    // 20 IP + 20 TCP + 10 SACK (+2 EOL) = 52.
    assert_eq!(p.ip_len(), 52);
    assert!(p.is_pure_ack());
    let f = p.to_frame(MA, MB);
    assert_eq!(f.len(), 66);
    assert_eq!(&f[54..66], &[5, 10, 0, 0, 0, 100, 0, 0, 0, 200, 0, 0]);
    verify_checksums(&f).unwrap();
    // With timestamps: 20 + 20 + 10 TS + 10 SACK = 60.
    p.tcp_mut().unwrap().opts.timestamps = Some((5, 6));
    assert_eq!(p.ip_len(), 60);
    assert_eq!(p.to_frame(MA, MB).len(), 74);
}

#[test]
fn checksum_errors_are_reported() {
    let mut rng = testing::Rng::new(1);
    let p = testing::sample_tcp(false, 100, &mut rng);
    let mut f = p.to_frame(MA, MB);
    f[24] ^= 0xff;
    assert!(matches!(verify_checksums(&f), Err(ChecksumError::Ipv4Header { .. })));
    f[24] ^= 0xff;
    let n = f.len();
    f[n - 1] ^= 1;
    assert!(matches!(verify_checksums(&f), Err(ChecksumError::Tcp { .. })));
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut rng = testing::Rng::new(2);
    let mut p = testing::sample_tcp(false, 0, &mut rng);
    p.tcp_mut().unwrap().opts = TcpOptions::default();
    let mut f = p.to_frame(MA, MB);
    assert_eq!(f.len(), 54);
    f.resize(60, 0);
    let parsed = Packet::parse_frame(&f).unwrap();
    assert_eq!(parsed.packet, p);
    assert_eq!(parsed.ip_end, 54);
    verify_checksums(&f).unwrap();
}

#[test]
fn errors_name_the_problem() {
    assert_eq!(
        Packet::parse_frame(&[0u8; 10]),
        Err(ParseError::Truncated { layer: Layer::Ethernet, need: 14, have: 10 })
    );
    let mut f = vec![0u8; 60];
    f[12] = 0x08;
    f[13] = 0x06;
    assert_eq!(Packet::parse_frame(&f), Err(ParseError::NotIp { ethertype: 0x0806 }));
    let e = Packet::parse_frame(&f).unwrap_err().to_string();
    assert!(e.contains("0x0806"), "{e}");
}

#[test]
fn corpus_kinds_behave_as_labelled() {
    let corpus = malformed_corpus_labeled(42, 33 * 30);
    let mut seen = std::collections::HashSet::new();
    for (kind, f) in &corpus {
        seen.insert(*kind);
        let r = Packet::parse_frame(f);
        let _ = verify_checksums(f);
        if let Some(ok) = kind.parses() {
            assert_eq!(r.is_ok(), ok, "{kind:?}: {r:?} {f:02x?}");
        }
        match kind {
            MalformedKind::Ipv4FirstFragment | MalformedKind::Ipv4LaterFragment | MalformedKind::Ipv6Fragment => {
                let p = r.unwrap();
                assert!(p.fragment);
                assert_eq!(p.packet.l4, L4::Other { proto: 6 });
                let mut g = f.clone();
                assert_eq!(TcpFrameMut::new(&mut g, &p).unwrap_err(), ViewError::NotTcp);
            }
            MalformedKind::Ipv6ExtensionChain | MalformedKind::Ipv4WithOptions => {
                let p = r.unwrap();
                assert!(p.packet.tcp().is_some());
                verify_checksums(f).unwrap();
                // etherparse agrees on the location of the payload.
                let h = PacketHeaders::from_ethernet_slice(f).unwrap();
                assert_eq!(h.payload.slice().len(), p.packet.payload_len as usize);
                // The view works on them too.
                let mut g = f.clone();
                let mut v = TcpFrameMut::new(&mut g, &p).unwrap();
                v.set_window(3);
                v.set_ecn(Ecn::Ce);
                verify_checksums(&g).unwrap();
            }
            MalformedKind::TcpUnknownOption => {
                assert!(r.unwrap().packet.tcp().unwrap().opts.has_other);
                verify_checksums(f).unwrap();
            }
            MalformedKind::BadChecksum => assert!(verify_checksums(f).is_err()),
            MalformedKind::DoubleVlan => {
                assert_eq!(r, Err(ParseError::NotIp { ethertype: 0x8100 }))
            }
            _ => {}
        }
    }
    assert_eq!(seen.len(), MalformedKind::ALL.len());
    // Deterministic in the seed.
    assert_eq!(malformed_corpus(7, 100), malformed_corpus(7, 100));
    assert_ne!(malformed_corpus(7, 100), malformed_corpus(8, 100));
}

#[test]
fn pcap_roundtrip() {
    let mut rng = testing::Rng::new(3);
    let mut w = pcap::PcapWriter::new(Vec::new()).unwrap();
    let pkts: Vec<Packet> = (0..10).map(|i| testing::sample_tcp(i % 2 == 1, 100 * i, &mut rng)).collect();
    for (i, p) in pkts.iter().enumerate() {
        w.write_packet(1_000_000_007 * i as u64, p).unwrap();
    }
    let bytes = w.into_inner();
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    assert_eq!(r.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut i = 0;
    while let Some(pkt) = r.next_packet() {
        let pkt = pkt.unwrap();
        assert_eq!(pkt.timestamp.as_nanos() as u64, 1_000_000_007 * i as u64);
        let parsed = Packet::parse_frame(&pkt.data).unwrap();
        assert_eq!(parsed.packet, pkts[i]);
        assert_eq!(parsed.eth_src, pcap::fake_mac(pkts[i].ip.src));
        verify_checksums(&pkt.data).unwrap();
        i += 1;
    }
    assert_eq!(i, pkts.len());
}

/// If tshark is installed, it must read our pcap and find every checksum good.
#[test]
fn pcap_opens_in_tshark() {
    if std::process::Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ackshape-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.pcap");
    let mut rng = testing::Rng::new(4);
    {
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w = pcap::PcapWriter::with_options(file, pcap::TsUnit::Micros, pcap::DEFAULT_SNAPLEN).unwrap();
        for i in 0..20u32 {
            let mut p = testing::sample_tcp(i % 2 == 1, 37 * i, &mut rng);
            if i % 5 == 0 {
                p.l4 = L4::Udp(UdpHdr { sport: 9, dport: 9 });
            }
            w.write_packet(1000 * i as u64, &p).unwrap();
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&path)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "ip.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "_ws.expert.message",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().count(), 20, "{text}");
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        for c in &cols[1..4] {
            // Wireshark's checksum status: 0 bad, 1 good, 2 unverified, 3 not present.
            assert!(c.is_empty() || c.split(',').all(|s| s == "1"), "{line}");
        }
        assert!(!line.to_lowercase().contains("malformed"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TCP checksum whose canonical value is 0x0000 may be written as 0xffff (one's complement's
/// other zero; Linux's `skb_checksum_help` writes `CSUM_MANGLED_0`): RFC 1071's check accepts
/// it, so must ours, and an RFC 1624 patch of such a frame comes out valid.
#[test]
fn tcp_checksum_written_as_ffff_is_valid_and_patches_to_a_valid_frame() {
    let mk = |w: u16| Packet {
        ip: IpHdr {
            src: "10.77.0.2".parse().unwrap(),
            dst: "10.77.0.1".parse().unwrap(),
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            id: 0xdff0,
        },
        l4: L4::Tcp(TcpHdr { flags: TcpFlags::ACK, window: w, ack: SeqNum(152205409), ..Default::default() }),
        payload_len: 0,
        payload: None,
    };
    let at = 14 + 20 + 16;
    let (mut f, w) = (0..=u16::MAX)
        .map(|w| (mk(w).to_frame(MA, MB).to_vec(), w))
        .find(|(f, _)| f[at] == 0 && f[at + 1] == 0)
        .expect("some window gives a zero checksum");
    verify_checksums(&f).unwrap();
    f[at..at + 2].copy_from_slice(&[0xff, 0xff]);
    verify_checksums(&f).expect("0xffff is the other zero");
    let mut g = f.clone();
    g[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    assert!(verify_checksums(&g).is_err(), "a checksum one off stays bad");
    // Patch the window of the 0xffff frame: the result verifies and equals a fresh frame's.
    let parsed = Packet::parse_frame(&f).unwrap();
    let w2 = w.wrapping_sub(1);
    TcpFrameMut::new(&mut f, &parsed).unwrap().set_window(w2);
    verify_checksums(&f).unwrap();
    assert_eq!(f, mk(w2).to_frame(MA, MB).to_vec());
}
