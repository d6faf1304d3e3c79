//! Built-in traffic for live runs and tests (std::net, run inside namespaces with
//! [`crate::testbed::spawn_in_netns`]): a TCP source/sink pair that hashes what it moves, TCP
//! connect-time and UDP echo latency probes, and a paced UDP blaster/counter.

use ackshape_core::rng::stream;
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a TCP source sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceReport {
    pub bytes: u64,
    pub sha256: String,
    pub elapsed: Duration,
    /// Segments the sender retransmitted (TCP_INFO `tcpi_total_retrans`, read after the peer
    /// closed); None if the kernel did not say.
    pub retransmits: Option<u64>,
    /// The MSS it sent with (TCP_INFO `tcpi_snd_mss`).
    pub mss: Option<u32>,
}

/// What a TCP sink received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkReport {
    pub bytes: u64,
    pub sha256: String,
    /// (bytes received so far, time since the first byte) every `mark_every` bytes: a goodput
    /// time series.
    pub marks: Vec<(u64, Duration)>,
    /// From the first to the last byte.
    pub elapsed: Duration,
    /// When the first byte arrived.
    pub first_byte_at: Option<Instant>,
    /// Segments the receiver sent (its ACKs) and received, from TCP_INFO at the end.
    pub segs_out_in: Option<(u32, u32)>,
}

impl SinkReport {
    /// Goodput in bit/s between the marks at `from_bytes` and the end.
    pub fn goodput_bps_after(&self, from_bytes: u64) -> f64 {
        let start = self.marks.iter().find(|(b, _)| *b >= from_bytes).copied().unwrap_or((0, Duration::ZERO));
        let d = self.elapsed.saturating_sub(start.1).as_secs_f64();
        if d <= 0.0 {
            return 0.0;
        }
        (self.bytes - start.0) as f64 * 8.0 / d
    }
}

/// Send `bytes` of seeded pseudo-random data to `dst`, then close. `cc` sets TCP_CONGESTION
/// (reno, cubic, bbr) on the socket.
pub fn tcp_source(dst: SocketAddr, bytes: u64, seed: u64, cc: Option<&str>) -> io::Result<SourceReport> {
    tcp_source_until(dst, Some(bytes), None, seed, cc)
}

/// Send seeded pseudo-random data to `dst` until `bytes` are sent or `duration` has passed
/// (whichever comes first; at least one must be given), then close and wait for the sink.
pub fn tcp_source_until(
    dst: SocketAddr,
    bytes: Option<u64>,
    duration: Option<Duration>,
    seed: u64,
    cc: Option<&str>,
) -> io::Result<SourceReport> {
    need_an_end(bytes, duration)?;
    let s = connect_with(dst, cc, &SockOpts::default(), Duration::from_secs(10))?;
    send_on(s, bytes, duration, seed)
}

/// Accept one connection on `l` (the receiver opens it: a download it asked for), then send
/// on it as [`tcp_source_until`] does. `cc` is set on the accepted socket.
pub fn tcp_source_accept(
    l: &TcpListener,
    bytes: Option<u64>,
    duration: Option<Duration>,
    seed: u64,
    cc: Option<&str>,
) -> io::Result<SourceReport> {
    need_an_end(bytes, duration)?;
    let (s, _) = l.accept()?;
    if let Some(cc) = cc {
        set_cc(&s, cc)?;
    }
    send_on(s, bytes, duration, seed)
}

fn send_on(mut s: TcpStream, bytes: Option<u64>, duration: Option<Duration>, seed: u64) -> io::Result<SourceReport> {
    let mut rng = stream(seed, "tcp-source", 0);
    let mut buf = vec![0u8; 64 * 1024];
    let mut h = Sha256::new();
    let mut left = bytes.unwrap_or(u64::MAX);
    let mut sent = 0u64;
    let t0 = Instant::now();
    if let Some(d) = duration {
        s.set_write_timeout(Some(d.max(Duration::from_millis(10))))?;
    }
    while left > 0 && duration.is_none_or(|d| t0.elapsed() < d) {
        let n = (buf.len() as u64).min(left) as usize;
        rng.fill_bytes(&mut buf[..n]);
        // write_all would lose track of a partial write on timeout: write chunk by chunk.
        let mut off = 0;
        while off < n {
            match s.write(&buf[off..n]) {
                Ok(k) => {
                    h.update(&buf[off..off + k]);
                    off += k;
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if duration.is_some_and(|d| t0.elapsed() >= d) {
                break;
            }
        }
        sent += off as u64;
        left -= off as u64;
        if off < n {
            break;
        }
    }
    s.shutdown(std::net::Shutdown::Write)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut sink = [0u8; 16];
    let _ = s.read(&mut sink);
    let info = crate::sys::tcp_info(std::os::fd::AsRawFd::as_raw_fd(&s)).ok();
    Ok(SourceReport {
        bytes: sent,
        sha256: hex(&h.finalize()),
        elapsed: t0.elapsed(),
        retransmits: info.map(|i| i.total_retrans as u64),
        mss: info.map(|i| i.snd_mss),
    })
}

/// One flow of a live run, sender namespace → receiver namespace.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    /// TCP congestion control (reno, cubic, bbr); None = the namespace default.
    #[serde(default)]
    pub cc: Option<String>,
    /// Start this long after the run starts (seconds).
    #[serde(default)]
    pub start_s: f64,
    /// Bytes to send (or until `duration_s`).
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The receiver opens the connection (to a listener in the sender namespace, port 6000 + i)
    /// and the sender answers with the data: a download the receiver asked for.
    #[serde(default)]
    pub open_by_receiver: bool,
    /// This flow's own socket settings (a scenario flow's `tcp` table), over the hosts' own.
    #[serde(default)]
    pub sock: SockOpts,
}

/// Socket options of one flow, where Linux has a per-socket knob: what a scenario flow's own `tcp`
/// table can set live (the hosts' routes and sysctls carry the scenario's `[tcp]` for every flow).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SockOpts {
    /// `TCP_MAXSEG` on the sender's socket (Linux's MSS: the payload plus 12 bytes with timestamps).
    #[serde(default)]
    pub max_seg: Option<u32>,
    /// `SO_RCVBUF` on the receiver's socket, in bytes (Linux doubles it and stops autotuning).
    #[serde(default)]
    pub rcv_buf: Option<u64>,
    /// `TCP_QUICKACK` on the receiver's socket after every read: an ACK for every segment.
    #[serde(default)]
    pub quickack: bool,
}

/// What one flow of a live run achieved.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FlowReport {
    pub name: String,
    pub cc: Option<String>,
    pub bytes: u64,
    /// The receiver got exactly what the sender sent (sha256).
    pub intact: bool,
    /// Mean goodput from first to last byte (bit/s).
    pub goodput_bps: f64,
    /// Goodput per bin since the run started: (bin start s, bit/s).
    pub series: Vec<(f64, f64)>,
    /// Segments the sender retransmitted (TCP_INFO `tcpi_total_retrans`).
    pub retransmitted_packets: Option<u64>,
    /// The MSS the sender sent with (TCP_INFO `tcpi_snd_mss`).
    pub mss: Option<u32>,
    /// Segments the receiver sent per segment it received (its ACKs per data segment, about 0.5
    /// with Linux's delayed ACKs, about 1 with quick ACKs).
    pub receiver_acks_per_segment: Option<f64>,
    pub error: Option<String>,
}

/// The port of live flow `i` is `FLOW_PORT + i`: its sink's (the flow's destination) when the
/// sender opens it, its source's listener when the receiver does ([`run_flows`]).
pub const FLOW_PORT: u16 = 6000;

/// Run TCP flows through a testbed: one sink per flow in the receiver namespace (ports
/// 6000 + i), one source per flow in the sender namespace, started at its `start_s`; a flow the
/// receiver opens (`open_by_receiver`) has its source listen in the sender namespace (port
/// 6000 + i) and its sink connect at `start_s`.
pub fn run_flows(
    tb: &crate::testbed::Testbed,
    flows: &[FlowSpec],
    bin: Duration,
    seed: u64,
) -> io::Result<Vec<FlowReport>> {
    use crate::testbed::spawn_in_netns;
    let origin = Instant::now();
    let mut handles = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        if f.open_by_receiver {
            // The source listens in the sender namespace; the sink connects at the start time.
            let at = SocketAddr::from((tb.sender_addr, FLOW_PORT + i as u16));
            let (tx, rx) = std::sync::mpsc::channel();
            let f2 = f.clone();
            let src = spawn_in_netns(&tb.ns_sender, "acks-source", move || -> io::Result<SourceReport> {
                let l = TcpListener::bind(at)?;
                set_before_handshake(&l, &SockOpts { rcv_buf: None, ..f2.sock.clone() })?;
                let _ = tx.send(());
                tcp_source_accept(
                    &l,
                    f2.bytes,
                    f2.duration_s.map(Duration::from_secs_f64),
                    seed.wrapping_add(i as u64),
                    f2.cc.as_deref(),
                )
            })?;
            rx.recv_timeout(Duration::from_secs(5))
                .map_err(|_| io::Error::other(format!("source for flow {} did not start", f.name)))?;
            let start_s = f.start_s;
            let o = SockOpts { max_seg: None, ..f.sock.clone() };
            let sink = spawn_in_netns(&tb.ns_receiver, "acks-sink", move || -> io::Result<SinkReport> {
                let start = origin + Duration::from_secs_f64(start_s.max(0.0));
                if let Some(d) = start.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
                let s = connect_with(at, None, &o, Duration::from_secs(10))?;
                read_from(s, 64 * 1024, o.quickack)
            })?;
            handles.push((f.clone(), src, sink));
            continue;
        }
        let dst = SocketAddr::from((tb.receiver_addr, FLOW_PORT + i as u16));
        let (tx, rx) = std::sync::mpsc::channel();
        let o = SockOpts { max_seg: None, ..f.sock.clone() };
        let sink = spawn_in_netns(&tb.ns_receiver, "acks-sink", move || -> io::Result<SinkReport> {
            let l = TcpListener::bind(dst)?;
            set_before_handshake(&l, &o)?;
            let _ = tx.send(());
            let (s, _) = l.accept()?;
            read_from(s, 64 * 1024, o.quickack)
        })?;
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| io::Error::other(format!("sink for flow {} did not start", f.name)))?;
        let f2 = f.clone();
        let src = spawn_in_netns(&tb.ns_sender, "acks-source", move || -> io::Result<SourceReport> {
            let start = origin + Duration::from_secs_f64(f2.start_s.max(0.0));
            if let Some(d) = start.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            let duration = f2.duration_s.map(Duration::from_secs_f64);
            need_an_end(f2.bytes, duration)?;
            let o = SockOpts { rcv_buf: None, quickack: false, ..f2.sock.clone() };
            let s = connect_with(dst, f2.cc.as_deref(), &o, Duration::from_secs(10))?;
            send_on(s, f2.bytes, duration, seed.wrapping_add(i as u64))
        })?;
        handles.push((f.clone(), src, sink));
    }
    let mut out = Vec::new();
    for (f, src, sink) in handles {
        let s = src.join().map_err(|_| io::Error::other("source panicked"))?.and_then(|r| r);
        let r = sink.join().map_err(|_| io::Error::other("sink panicked"))?.and_then(|r| r);
        let mut rep = FlowReport {
            name: f.name.clone(),
            cc: f.cc.clone(),
            bytes: 0,
            intact: false,
            goodput_bps: 0.0,
            series: vec![],
            retransmitted_packets: None,
            mss: None,
            receiver_acks_per_segment: None,
            error: None,
        };
        match (s, r) {
            (Ok(s), Ok(r)) => {
                rep.bytes = r.bytes;
                rep.intact = s.sha256 == r.sha256 && s.bytes == r.bytes;
                rep.goodput_bps =
                    if r.elapsed.is_zero() { 0.0 } else { r.bytes as f64 * 8.0 / r.elapsed.as_secs_f64() };
                rep.series = series(&r, origin, bin);
                rep.retransmitted_packets = s.retransmits;
                rep.mss = s.mss;
                rep.receiver_acks_per_segment =
                    r.segs_out_in.filter(|&(_, i)| i > 0).map(|(o, i)| f64::from(o) / f64::from(i));
            }
            (Err(e), _) | (_, Err(e)) => rep.error = Some(e.to_string()),
        }
        out.push(rep);
    }
    Ok(out)
}

/// Goodput per bin since `origin`: the bytes between two marks are spread evenly over the time
/// between them, so a bin is not quantized to whole marks (with a mark every 64 KiB, attributing
/// them to the bin of the mark swung a 2.4 Mbit/s flow's 1-s bins by ±0.5 Mbit/s).
fn series(r: &SinkReport, origin: Instant, bin: Duration) -> Vec<(f64, f64)> {
    let Some(first) = r.first_byte_at else {
        return vec![];
    };
    let off = first.saturating_duration_since(origin).as_nanos() as u64;
    let w = (bin.as_nanos() as u64).max(1_000_000);
    let mut bins: Vec<f64> = Vec::new();
    // Spread `bytes` evenly over [t0, t1] (ns since `origin`).
    let mut spread = |t0: u64, t1: u64, bytes: u64| {
        let last = (t1 / w) as usize;
        if bins.len() <= last {
            bins.resize(last + 1, 0.0);
        }
        if t1 <= t0 {
            bins[last] += bytes as f64;
            return;
        }
        let mut t = t0;
        while t < t1 {
            let k = t / w;
            let end = ((k + 1) * w).min(t1);
            bins[k as usize] += bytes as f64 * (end - t) as f64 / (t1 - t0) as f64;
            t = end;
        }
    };
    let (mut prev_bytes, mut prev_t) = (0u64, off);
    for &(bytes, t) in &r.marks {
        let t = off + t.as_nanos() as u64;
        spread(prev_t, t, bytes - prev_bytes);
        (prev_bytes, prev_t) = (bytes, t);
    }
    spread(prev_t, off + r.elapsed.as_nanos() as u64, r.bytes - prev_bytes);
    let b = w as f64 * 1e-9;
    bins.iter().enumerate().map(|(i, &by)| (i as f64 * b, by * 8.0 / b)).collect()
}

/// Connect to `dst` with `cc` and the options of `o` that act before the handshake (`max_seg`,
/// `rcv_buf`: the MSS and window scale are announced in it).
fn connect_with(dst: SocketAddr, cc: Option<&str>, o: &SockOpts, timeout: Duration) -> io::Result<TcpStream> {
    if cc.is_none() && o.max_seg.is_none() && o.rcv_buf.is_none() {
        return TcpStream::connect_timeout(&dst, timeout);
    }
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, SockaddrStorage};
    let fam = if dst.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    let fd = socket::socket(fam, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).map_err(io::Error::from)?;
    if let Some(cc) = cc {
        set_cc(&fd, cc)?;
    }
    set_before_handshake(&fd, o)?;
    socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrStorage::from(dst)).map_err(io::Error::from)?;
    Ok(TcpStream::from(fd))
}

/// `max_seg` and `rcv_buf` of `o` on a socket that has not shaken hands yet (a listener's are
/// inherited by the connections it accepts).
fn set_before_handshake<F: std::os::fd::AsFd>(fd: &F, o: &SockOpts) -> io::Result<()> {
    use nix::sys::socket::{self, sockopt};
    if let Some(m) = o.max_seg {
        socket::setsockopt(fd, sockopt::TcpMaxSeg, &m).map_err(|e| io::Error::other(format!("TCP_MAXSEG {m}: {e}")))?;
    }
    if let Some(b) = o.rcv_buf {
        let b = usize::try_from(b).unwrap_or(usize::MAX).min(i32::MAX as usize / 2);
        socket::setsockopt(fd, sockopt::RcvBuf, &b).map_err(|e| io::Error::other(format!("SO_RCVBUF {b}: {e}")))?;
    }
    Ok(())
}

/// A flow ends after `bytes` or after `duration`: at least one must be given.
fn need_an_end(bytes: Option<u64>, duration: Option<Duration>) -> io::Result<()> {
    if bytes.is_none() && duration.is_none() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a flow needs bytes or a duration"));
    }
    Ok(())
}

/// Set TCP_CONGESTION (reno, cubic, bbr) on a socket.
fn set_cc<F: std::os::fd::AsFd>(fd: &F, cc: &str) -> io::Result<()> {
    use nix::sys::socket::{self, sockopt};
    socket::setsockopt(fd, sockopt::TcpCongestion, &std::ffi::OsString::from(cc))
        .map_err(|e| io::Error::other(format!("TCP_CONGESTION {cc}: {e}")))
}

/// Accept one connection on `l`, read to EOF, hash it.
pub fn tcp_sink(l: &TcpListener, mark_every: u64) -> io::Result<SinkReport> {
    let (s, _) = l.accept()?;
    read_from(s, mark_every, false)
}

/// Connect to `src` (the receiver opens the connection and the source answers with the data),
/// read to EOF, hash it.
pub fn tcp_sink_connect(src: SocketAddr, mark_every: u64) -> io::Result<SinkReport> {
    let s = TcpStream::connect_timeout(&src, Duration::from_secs(10))?;
    read_from(s, mark_every, false)
}

/// Read to EOF and hash it; `quickack`: ask for an ACK per segment after every read.
fn read_from(mut s: TcpStream, mark_every: u64, quickack: bool) -> io::Result<SinkReport> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut h = Sha256::new();
    let mut bytes = 0u64;
    let mut t0 = None;
    let mut marks = Vec::new();
    let mut next_mark = mark_every.max(1);
    let mut last = Instant::now();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
    loop {
        if quickack {
            crate::sys::set_quickack(fd)?;
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let now = Instant::now();
        let t0 = *t0.get_or_insert(now);
        last = now;
        h.update(&buf[..n]);
        bytes += n as u64;
        while bytes >= next_mark {
            marks.push((bytes, now - t0));
            next_mark += mark_every.max(1);
        }
    }
    let elapsed = t0.map_or(Duration::ZERO, |t| last - t);
    let segs_out_in = crate::sys::tcp_info(std::os::fd::AsRawFd::as_raw_fd(&s)).ok().map(|i| (i.segs_out, i.segs_in));
    Ok(SinkReport { bytes, sha256: hex(&h.finalize()), marks, elapsed, first_byte_at: t0, segs_out_in })
}

/// Time `n` TCP connects to `dst` (each one SYN → SYN-ACK round trip); a listener must accept.
pub fn tcp_connect_times(dst: SocketAddr, n: usize) -> io::Result<Vec<Duration>> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let s = TcpStream::connect_timeout(&dst, Duration::from_secs(5))?;
        v.push(t.elapsed());
        drop(s);
    }
    Ok(v)
}

/// Accept and immediately drop connections until `stop`.
pub fn tcp_accept_loop(l: TcpListener, stop: Arc<AtomicBool>) {
    let _ = l.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok(_) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Echo UDP datagrams back to their sender until `stop`.
pub fn udp_echo_server(s: UdpSocket, stop: Arc<AtomicBool>) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
    let mut b = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, from)) = s.recv_from(&mut b) {
            let _ = s.send_to(&b[..n], from);
        }
    }
}

/// Ping-style round trips through a UDP echo server: `n` probes `gap` apart.
pub fn udp_ping(dst: SocketAddr, n: usize, gap: Duration) -> io::Result<Vec<Duration>> {
    let s = UdpSocket::bind("0.0.0.0:0")?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut v = Vec::with_capacity(n);
    let mut b = [0u8; 64];
    for i in 0..n as u64 {
        let t = Instant::now();
        s.send_to(&i.to_be_bytes(), dst)?;
        loop {
            match s.recv_from(&mut b) {
                Ok((8, _)) if b[..8] == i.to_be_bytes() => {
                    v.push(t.elapsed());
                    break;
                }
                Ok(_) => continue,
                Err(_) => break, // lost probe
            }
        }
        std::thread::sleep(gap);
    }
    Ok(v)
}

/// Send `n` numbered datagrams of `size` bytes to `dst` at `pps` packets per second.
pub fn udp_blast(dst: SocketAddr, n: u64, size: usize, pps: u64) -> io::Result<u64> {
    let s = UdpSocket::bind("0.0.0.0:0")?;
    let mut b = vec![0u8; size.max(8)];
    let t0 = Instant::now();
    let mut sent = 0;
    for i in 0..n {
        b[..8].copy_from_slice(&i.to_be_bytes());
        loop {
            match s.send_to(&b, dst) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_micros(50))
                }
                Err(e) => return Err(e),
            }
        }
        sent += 1;
        let due = t0 + Duration::from_secs_f64((i + 1) as f64 / pps as f64);
        let now = Instant::now();
        if due > now + Duration::from_micros(200) {
            std::thread::sleep(due - now);
        }
    }
    Ok(sent)
}

/// Count distinct numbered datagrams until nothing arrives for `idle`.
pub fn udp_count(s: &UdpSocket, n_max: u64, idle: Duration) -> io::Result<u64> {
    s.set_read_timeout(Some(idle))?;
    let mut seen = vec![false; n_max as usize];
    let mut count = 0;
    let mut b = [0u8; 2048];
    while let Ok(n) = s.recv(&mut b) {
        if n >= 8 {
            let i = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize;
            if i < seen.len() && !seen[i] {
                seen[i] = true;
                count += 1;
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_transfer_hashes_match() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let h = std::thread::spawn(move || tcp_sink(&l, 100_000).unwrap());
        let src = tcp_source(a, 1_000_003, 5, None).unwrap();
        let snk = h.join().unwrap();
        assert_eq!(src.sha256, snk.sha256);
        assert_eq!(snk.bytes, 1_000_003);
        assert_eq!(snk.marks.len(), 10);
        assert!(src.retransmits.is_some(), "TCP_INFO read");
    }

    #[test]
    fn duration_bounded_source() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let h = std::thread::spawn(move || tcp_sink(&l, 1 << 20).unwrap());
        let src = tcp_source_until(a, None, Some(Duration::from_millis(200)), 1, Some("reno")).unwrap();
        let snk = h.join().unwrap();
        assert_eq!(src.sha256, snk.sha256);
        assert!(src.elapsed < Duration::from_secs(5) && src.bytes > 0);
        let s = series(&snk, snk.first_byte_at.unwrap(), Duration::from_millis(50));
        let total: f64 = s.iter().map(|(_, bps)| bps * 0.05 / 8.0).sum();
        assert!((total - snk.bytes as f64).abs() < 1.0, "{total} vs {}", snk.bytes);
    }

    /// A sink report of `rate` bytes per second from `start` for `secs`, marked every `every` bytes.
    fn steady(start: Duration, rate: u64, secs: u64, every: u64) -> (SinkReport, Instant) {
        let origin = Instant::now();
        let bytes = rate * secs;
        let marks = (1..=bytes / every)
            .map(|k| (k * every, Duration::from_secs_f64((k * every) as f64 / rate as f64)))
            .collect();
        let rep = SinkReport {
            bytes,
            sha256: String::new(),
            marks,
            elapsed: Duration::from_secs(secs),
            first_byte_at: Some(origin + start),
            segs_out_in: None,
        };
        (rep, origin)
    }

    #[test]
    fn a_steady_flow_gives_level_bins_whatever_the_mark_size() {
        // 300 kB/s (2.4 Mbit/s) marked every 64 KiB: 4.58 marks per second. Attributing whole marks
        // to the bin they fall in gave 4 or 5 marks per bin (2.10 or 2.62 Mbit/s).
        let (rep, origin) = steady(Duration::from_millis(250), 300_000, 10, 64 * 1024);
        let s = series(&rep, origin, Duration::from_secs(1));
        assert_eq!(s.len(), 11, "bins 0…10: the flow runs from 0.25 s to 10.25 s");
        assert!((s[0].1 - 0.75 * 2.4e6).abs() < 1.0, "first bin: 0.75 s of data, {}", s[0].1);
        for &(t, bps) in &s[1..10] {
            assert!((bps - 2.4e6).abs() < 1.0, "bin at {t} s: {bps} bit/s");
        }
        let total: f64 = s.iter().map(|(_, bps)| bps / 8.0).sum();
        assert!((total - rep.bytes as f64).abs() < 1e-3, "{total} bytes vs {}", rep.bytes);
    }
}
