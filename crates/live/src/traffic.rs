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
}

impl SinkReport {
    /// Goodput in bit/s between the marks at `from_bytes` and the end.
    pub fn goodput_bps_after(&self, from_bytes: u64) -> f64 {
        let start = self
            .marks
            .iter()
            .find(|(b, _)| *b >= from_bytes)
            .copied()
            .unwrap_or((0, Duration::ZERO));
        let d = self.elapsed.saturating_sub(start.1).as_secs_f64();
        if d <= 0.0 {
            return 0.0;
        }
        (self.bytes - start.0) as f64 * 8.0 / d
    }
}

/// Send `bytes` of seeded pseudo-random data to `dst`, then close. `cc` sets TCP_CONGESTION
/// (reno, cubic, bbr) on the socket.
pub fn tcp_source(
    dst: SocketAddr,
    bytes: u64,
    seed: u64,
    cc: Option<&str>,
) -> io::Result<SourceReport> {
    let mut s = connect_with_cc(dst, cc, Duration::from_secs(10))?;
    let mut rng = stream(seed, "tcp-source", 0);
    let mut buf = vec![0u8; 64 * 1024];
    let mut h = Sha256::new();
    let mut left = bytes;
    let t0 = Instant::now();
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        rng.fill_bytes(&mut buf[..n]);
        h.update(&buf[..n]);
        s.write_all(&buf[..n])?;
        left -= n as u64;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    // Wait for the sink to close so `elapsed` covers delivery.
    let mut sink = [0u8; 16];
    let _ = s.read(&mut sink);
    Ok(SourceReport {
        bytes,
        sha256: hex(&h.finalize()),
        elapsed: t0.elapsed(),
    })
}

fn connect_with_cc(dst: SocketAddr, cc: Option<&str>, timeout: Duration) -> io::Result<TcpStream> {
    match cc {
        None => TcpStream::connect_timeout(&dst, timeout),
        Some(cc) => {
            use nix::sys::socket::{
                self, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage,
            };
            let fam = if dst.is_ipv4() {
                AddressFamily::Inet
            } else {
                AddressFamily::Inet6
            };
            let fd = socket::socket(fam, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)
                .map_err(io::Error::from)?;
            socket::setsockopt(&fd, sockopt::TcpCongestion, &std::ffi::OsString::from(cc))
                .map_err(|e| io::Error::other(format!("TCP_CONGESTION {cc}: {e}")))?;
            socket::connect(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                &SockaddrStorage::from(dst),
            )
            .map_err(io::Error::from)?;
            Ok(TcpStream::from(fd))
        }
    }
}

/// Accept one connection on `l`, read to EOF, hash it.
pub fn tcp_sink(l: &TcpListener, mark_every: u64) -> io::Result<SinkReport> {
    let (mut s, _) = l.accept()?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut h = Sha256::new();
    let mut bytes = 0u64;
    let mut t0 = None;
    let mut marks = Vec::new();
    let mut next_mark = mark_every.max(1);
    let mut last = Instant::now();
    loop {
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
    Ok(SinkReport {
        bytes,
        sha256: hex(&h.finalize()),
        marks,
        elapsed,
    })
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
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOBUFS)
                        || e.kind() == io::ErrorKind::WouldBlock =>
                {
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
    }
}
