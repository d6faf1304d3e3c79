//! The Prometheus endpoint: `GET /metrics` over HTTP/1.x on a loopback address, served by one
//! thread that polls every connection (no thread per connection), so idle or slow clients cannot
//! hold up a scrape: each connection has [`REQUEST_TIMEOUT`] to send its request head and have
//! its answer written, at most [`MAX_CONNECTIONS`] are open (the oldest is closed for a new one),
//! a request head is at most [`MAX_HEAD`] bytes. Requests are parsed by `httparse`; `GET` (or
//! `HEAD`) `/metrics` is answered 200, other paths 404, other methods 405, unparsable heads 400.
//! Every answer closes the connection.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time a connection has from accept to its answer being written.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections at most.
pub const MAX_CONNECTIONS: usize = 512;
/// Longest request head (request line and headers).
pub const MAX_HEAD: usize = 8192;

struct Conn {
    s: TcpStream,
    since: Instant,
    head: Vec<u8>,
    /// The answer, once the request is read, and how much of it is written.
    out: Option<(Vec<u8>, usize)>,
}

/// The answer to a request head (`None`: the head is incomplete).
fn answer(head: &[u8], body: &dyn Fn() -> String) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let (code, text, ctype, body) = match req.parse(head) {
        Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => return None,
        Ok(httparse::Status::Partial) => (431, "Request Header Fields Too Large", "text/plain", String::new()),
        Err(_) => (400, "Bad Request", "text/plain", String::new()),
        Ok(httparse::Status::Complete(_)) => {
            let path = req.path.unwrap_or("");
            let path = path.split('?').next().unwrap_or("");
            match req.method.unwrap_or("") {
                "GET" | "HEAD" if path == "/metrics" => (200, "OK", "text/plain; version=0.0.4", body()),
                "GET" | "HEAD" => (404, "Not Found", "text/plain", "not found: the metrics are at /metrics\n".into()),
                _ => (405, "Method Not Allowed", "text/plain", "only GET /metrics\n".into()),
            }
        }
    };
    let head_only = req.method == Some("HEAD");
    let mut r = format!(
        "HTTP/1.1 {code} {text}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
        body.len(),
        if code == 405 { "Allow: GET, HEAD\r\n" } else { "" }
    )
    .into_bytes();
    if !head_only {
        r.extend_from_slice(body.as_bytes());
    }
    Some(r)
}

/// Serve `body()` as `GET /metrics` on `addr` (loopback only) until `stop` is set.
pub fn serve(
    addr: SocketAddr,
    body: impl Fn() -> String + Send + 'static,
    stop: Arc<AtomicBool>,
) -> io::Result<(SocketAddr, std::thread::JoinHandle<()>)> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("prometheus endpoint must bind to a loopback address, got {addr}"),
        ));
    }
    let l =
        TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("prometheus endpoint {addr}: {e}")))?;
    l.set_nonblocking(true)?;
    let bound = l.local_addr()?;
    let h = std::thread::Builder::new().name("acks-prometheus".into()).spawn(move || {
        let mut conns: Vec<Conn> = Vec::new();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut buf = [0u8; 4096];
        while !stop.load(Ordering::Relaxed) {
            fds.clear();
            fds.push(libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            for c in &conns {
                let ev = if c.out.is_some() { libc::POLLOUT } else { libc::POLLIN };
                fds.push(libc::pollfd { fd: c.s.as_raw_fd(), events: ev, revents: 0 });
            }
            // 100 ms: how soon `stop` and timeouts are seen.
            if crate::sys::poll_fds(&mut fds, 100).is_err() {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            let now = Instant::now();
            let mut keep = vec![true; conns.len()];
            for (i, c) in conns.iter_mut().enumerate() {
                let rev = fds[i + 1].revents;
                if now.duration_since(c.since) > REQUEST_TIMEOUT {
                    keep[i] = false;
                    continue;
                }
                if rev == 0 {
                    continue;
                }
                if c.out.is_none() {
                    match c.s.read(&mut buf) {
                        Ok(0) => keep[i] = false,
                        Ok(n) => {
                            let room = MAX_HEAD - c.head.len().min(MAX_HEAD);
                            c.head.extend_from_slice(&buf[..n.min(room)]);
                            c.out = answer(&c.head, &body).map(|a| (a, 0));
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => keep[i] = false,
                    }
                }
                if let Some((a, done)) = c.out.as_mut() {
                    match c.s.write(&a[*done..]) {
                        Ok(n) => {
                            *done += n;
                            if *done == a.len() {
                                let _ = c.s.shutdown(std::net::Shutdown::Write);
                                keep[i] = false;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => keep[i] = false,
                    }
                }
            }
            let mut k = keep.iter();
            conns.retain(|_| *k.next().unwrap());
            if fds[0].revents != 0 {
                // Take every pending connection.
                while let Ok((s, _)) = l.accept() {
                    if s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if conns.len() >= MAX_CONNECTIONS {
                        conns.remove(0); // the oldest
                    }
                    conns.push(Conn { s, since: Instant::now(), head: Vec::new(), out: None });
                }
            }
        }
    })?;
    Ok((bound, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(addr: SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = c.write_all(req);
        // The server may close before reading all of an over-long request (a reset after its answer).
        let mut v = Vec::new();
        let mut b = [0u8; 4096];
        while let Ok(n @ 1..) = c.read(&mut b) {
            v.extend_from_slice(&b[..n]);
        }
        String::from_utf8_lossy(&v).into_owned()
    }

    #[test]
    fn answers_get_metrics_404_405_400_and_a_scrape_with_200_idle_connections_in_under_a_second() {
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, h) = serve("127.0.0.1:0".parse().unwrap(), || "m_total 7\n".to_string(), stop.clone()).unwrap();
        let r = ask(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("\r\n\r\nm_total 7\n"), "{r}");
        let r = ask(addr, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        let r = ask(addr, b"GET / HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
        let r = ask(addr, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 405 ") && r.contains("Allow: GET, HEAD\r\n"), "{r}");
        let r = ask(addr, b"\x00\x01garbage\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400 "), "{r}");
        let r = ask(addr, &[b'A'; MAX_HEAD + 100]);
        assert!(r.starts_with("HTTP/1.1 4"), "{r}");
        let r = ask(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("\r\n\r\n"), "{r}");
        // 200 idle connections (half of them with a partial request) do not hold up a scrape.
        let idle: Vec<TcpStream> = (0..200)
            .map(|i| {
                let mut c = TcpStream::connect(addr).unwrap();
                if i % 2 == 0 {
                    c.write_all(b"GET /metr").unwrap();
                }
                c
            })
            .collect();
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let t0 = Instant::now();
            let r = ask(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
            worst = worst.max(t0.elapsed());
            assert!(r.contains("m_total 7"), "{r}");
        }
        eprintln!("scrape with 200 idle connections open: worst of 5 {worst:?}");
        assert!(worst < Duration::from_secs(1), "{worst:?}");
        // The idle ones are closed after the request timeout.
        let mut c = idle.into_iter().next().unwrap();
        c.set_read_timeout(Some(REQUEST_TIMEOUT * 3)).unwrap();
        let t0 = Instant::now();
        let mut b = [0u8; 16];
        assert_eq!(c.read(&mut b).unwrap(), 0, "closed by the server");
        assert!(t0.elapsed() < REQUEST_TIMEOUT * 2, "{:?}", t0.elapsed());
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
    }
}
