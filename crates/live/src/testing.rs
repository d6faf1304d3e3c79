//! Frame builders and a malformed-frame corpus for tests, fuzzing and the robustness test.
//!
//! [`malformed_corpus`] is `ackshape_wire::testing::malformed_corpus` (the project's corpus);
//! [`extra_malformed_corpus`] adds this crate's own generator (garbage TCP options, bad data
//! offsets, IPv6 extension chains, fragments, random bytes). Frames built here are addressed to [`SINK_MAC`], a unicast MAC no test endpoint owns, so hosts
//! behind the gateway discard them.

use crate::port::{LinkState, MemPort, Port, RxMeta};
use ackshape_core::rng::stream;
use ackshape_core::time::Time;
use rand::Rng as _;
use std::sync::{Arc, Mutex};

/// An in-memory port whose interface state a test sets (what [`crate::port::LinkWatch`] reads
/// from an AF_PACKET port's interface), named `ifname` in messages. Not pollable: the loops poll
/// it every millisecond.
pub struct LinkPort {
    inner: MemPort,
    ifname: String,
    state: Arc<Mutex<LinkState>>,
}

impl LinkPort {
    /// The port (starting `Up`) and the handle that sets its state.
    pub fn new(inner: MemPort, ifname: &str) -> (LinkPort, Arc<Mutex<LinkState>>) {
        let state = Arc::new(Mutex::new(LinkState::Up));
        (LinkPort { inner, ifname: ifname.into(), state: state.clone() }, state)
    }
}

impl Port for LinkPort {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> std::io::Result<Option<RxMeta>> {
        self.inner.recv(now, buf)
    }
    fn send(&mut self, now: Time, frame: &[u8]) -> std::io::Result<()> {
        self.inner.send(now, frame)
    }
    fn poll_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
    fn link_state(&self) -> LinkState {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn interface(&self) -> Option<&str> {
        Some(&self.ifname)
    }
}

/// Destination MAC of crafted frames (owned by nobody: receivers drop them as PACKET_OTHERHOST).
pub const SINK_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
/// Source MAC of crafted frames.
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x98];

fn csum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut c = data.chunks_exact(2);
    for w in &mut c {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [b] = c.remainder() {
        sum += (*b as u32) << 8;
    }
    sum
}

fn csum_fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet + IPv4 + TCP frame with valid checksums.
#[allow(clippy::too_many_arguments)]
pub fn tcp_frame(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    flags: u8,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let opt_len = options.len().div_ceil(4) * 4;
    let tcp_len = 20 + opt_len + payload.len();
    let total = 20 + tcp_len;
    let mut f = Vec::with_capacity(14 + total);
    f.extend_from_slice(&SINK_MAC);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let c = csum_fold(csum_add(0, &f[ip_start..ip_start + 20]));
    f[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());
    let t = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&0u32.to_be_bytes());
    f.push((((20 + opt_len) / 4) as u8) << 4);
    f.push(flags);
    f.extend_from_slice(&65535u16.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(options);
    f.resize(t + 20 + opt_len, 0);
    f.extend_from_slice(payload);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 6, (tcp_len >> 8) as u8, tcp_len as u8]);
    let c = csum_fold(csum_add(csum_add(0, &pseudo), &f[t..]));
    f[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    f
}

/// A TCP SYN with an MSS option.
pub fn tcp_syn_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, seq: u32) -> Vec<u8> {
    tcp_frame(src, dst, sport, dport, seq, 0x02, &[2, 4, 0x05, 0xb4], &[])
}

/// The project's malformed-frame corpus (`ackshape_wire::testing::malformed_corpus`).
pub fn malformed_corpus(seed: u64, n: usize) -> Vec<Vec<u8>> {
    ackshape_wire::testing::malformed_corpus(seed, n)
}

/// `n` malformed or unusual frames, deterministic in `seed`: truncated Ethernet/IP/TCP, bad IHL,
/// bad total lengths, bad TCP data offsets, garbage and oversized TCP options, unknown
/// ethertypes, IPv6 with extension headers, IPv4/IPv6 fragments, random bytes.
pub fn extra_malformed_corpus(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = stream(seed, "malformed-corpus", 0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let payload: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
        let good = tcp_frame(
            [10, 99, 0, 1],
            [10, 99, 0, 2],
            rng.gen(),
            rng.gen(),
            rng.gen(),
            0x18,
            &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            &payload,
        );
        let f = match i % 12 {
            0 => good[..rng.gen_range(0..14)].to_vec(),
            1 => good[..rng.gen_range(14..54)].to_vec(),
            2 => {
                let mut f = good;
                f[14] = 0x40 | [0u8, 1, 2, 3, 4, 15][rng.gen_range(0..6)];
                f
            }
            3 => {
                let mut f = good;
                let bad: u16 = rng.gen_range(f.len() as u16..u16::MAX);
                f[16..18].copy_from_slice(&bad.to_be_bytes());
                f
            }
            4 => {
                let mut f = good;
                f[14 + 20 + 12] = [0u8, 1, 2, 3, 4, 15][rng.gen_range(0..6)] << 4;
                f
            }
            5 => {
                let mut f = good;
                for b in &mut f[54..66] {
                    *b = rng.gen();
                }
                f[54] = rng.gen_range(2..=8);
                f[55] = [0u8, 1, 40, 255][rng.gen_range(0..4)];
                f
            }
            6 => {
                let opts: Vec<u8> = [254u8, 40].iter().copied().chain((0..38).map(|_| rng.gen())).collect();
                let mut f = tcp_frame([10, 99, 0, 1], [10, 99, 0, 2], 1, 2, 3, 0x10, &opts, &payload);
                f[54 + 1] = 60; // option longer than the 40-byte option space
                f
            }
            7 => {
                let mut f = Vec::new();
                f.extend_from_slice(&SINK_MAC);
                f.extend_from_slice(&SRC_MAC);
                f.extend_from_slice(&[0x88, rng.gen_range(0x10..0xff)]);
                f.extend_from_slice(&payload);
                f
            }
            8 => ipv6_ext_frame(&mut rng, &payload, false),
            9 => {
                let mut f = good;
                // more-fragments or a non-zero offset
                if rng.gen() {
                    f[20] = 0x20;
                } else {
                    f[20] = 0x00;
                    f[21] = rng.gen_range(1..=255);
                }
                f
            }
            10 => {
                let frag = rng.gen();
                let f = ipv6_ext_frame(&mut rng, &payload, frag);
                let cut = rng.gen_range(14..f.len());
                f[..cut].to_vec()
            }
            _ => {
                let mut f = Vec::new();
                f.extend_from_slice(&SINK_MAC);
                f.extend_from_slice(&SRC_MAC);
                f.extend_from_slice(if rng.gen() { &[0x08, 0x00] } else { &[0x86, 0xdd] });
                f.extend((0..rng.gen_range(0..80)).map(|_| rng.gen::<u8>()));
                f
            }
        };
        out.push(f);
    }
    out
}

fn ipv6_ext_frame(rng: &mut ackshape_core::rng::Rng, payload: &[u8], fragment: bool) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&SINK_MAC);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&[0x86, 0xdd]);
    let mut ext = Vec::new();
    // hop-by-hop (next: dest opts or fragment), 8 bytes
    ext.extend_from_slice(&[if fragment { 44 } else { 60 }, 0, 1, 4, 0, 0, 0, 0]);
    if fragment {
        ext.extend_from_slice(&[6, 0, 0, 1, 0, 0, 0, 7]); // fragment, MF set
    } else {
        ext.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // dest opts → TCP
    }
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&rng.gen::<u16>().to_be_bytes());
    tcp[2..4].copy_from_slice(&80u16.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;
    let plen = ext.len() + tcp.len() + payload.len();
    f.extend_from_slice(&[0x60, 0, 0, 0, (plen >> 8) as u8, plen as u8, 0, 64]);
    f.extend_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    f.extend_from_slice(&ext);
    f.extend_from_slice(&tcp);
    f.extend_from_slice(payload);
    f
}
