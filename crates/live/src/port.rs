//! Packet I/O ports: the trait, the AF_PACKET implementation, an in-memory pair for tests, and
//! middleware (pcap capture, seeded fault injection) that wraps any port.

use crate::sys::{self, PacketSocket, TP_STATUS_CSUMNOTREADY};
use ackshape_core::rng::{stream, Rng};
use ackshape_core::time::Time;
use rand::Rng as _;
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What a port reports about a received frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RxMeta {
    /// When the frame was taken from the port.
    pub ts: Time,
    /// Bytes written into the caller's buffer.
    pub len: usize,
    /// Length of the frame on the wire (> `len` means the buffer was too small: truncated).
    pub orig_len: usize,
    /// The kernel marked the frame's transport checksum as partial (TP_STATUS_CSUMNOTREADY):
    /// a sender-side checksum offload is on; forwarding the bytes unchanged forwards a bad checksum.
    pub csum_not_ready: bool,
}

impl RxMeta {
    pub fn new(ts: Time, len: usize) -> RxMeta {
        RxMeta { ts, len, orig_len: len, csum_not_ready: false }
    }
    pub fn truncated(&self) -> bool {
        self.orig_len > self.len
    }
}

/// The state of a port's network interface, as the kernel reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    /// Administratively up and running (carrier): frames can cross.
    Up,
    /// Down (`ip link set … down`) or without carrier (a veth whose peer is down, a pulled
    /// cable): sends fail and nothing arrives, until it comes back.
    Down,
    /// The interface no longer exists in this network namespace (deleted, or moved to another
    /// one): the port can never work again.
    Gone,
    /// The port has no interface (in-memory ports), or its state could not be read.
    #[default]
    Unknown,
}

/// Watches the interfaces of a data-plane loop's ports (the engine's two, the tap's mirror and
/// inject ports): logs a link that goes down or comes back and counts it; an interface that no
/// longer exists is an error naming it (the port can never work again, and a loop forwarding
/// nothing must not look healthy). The loops call [`LinkWatch::check`] once per stats interval
/// and after a receive error.
#[derive(Clone, Debug)]
pub struct LinkWatch<const N: usize> {
    /// Each port's state at the last check.
    pub state: [LinkState; N],
    /// Up → down transitions seen per port (a port that starts down is not counted).
    pub down_events: [u64; N],
    down_since: [Option<Time>; N],
}

impl<const N: usize> Default for LinkWatch<N> {
    fn default() -> Self {
        LinkWatch { state: [LinkState::Unknown; N], down_events: [0; N], down_since: [None; N] }
    }
}

impl<const N: usize> LinkWatch<N> {
    pub fn check(&mut self, now: Time, ports: [&dyn Port; N]) -> io::Result<()> {
        for (i, p) in ports.into_iter().enumerate() {
            let new = p.link_state();
            let old = std::mem::replace(&mut self.state[i], new);
            if new == old {
                continue;
            }
            let what = match p.interface() {
                Some(ifname) => format!("port {} ({ifname})", p.name()),
                None => format!("port {}", p.name()),
            };
            match new {
                LinkState::Down => {
                    self.down_since[i] = Some(now);
                    if old == LinkState::Up {
                        self.down_events[i] += 1;
                    }
                    tracing::warn!(
                        "{what}: link down (interface down or no carrier); frames sent to it fail and count as \
                         send errors until it is back"
                    );
                }
                LinkState::Up if old == LinkState::Down => {
                    let down = self.down_since[i].take().map_or(0.0, |t| now.since(t).as_secs_f64());
                    tracing::info!("{what}: link up again after {down:.1} s down");
                }
                LinkState::Gone => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!(
                            "{what}: the interface was removed (or moved to another network namespace); \
                             stopping (start again once it is back)"
                        ),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Frame-level packet I/O, the same for an AF_PACKET port, an in-memory port, and wrappers.
pub trait Port: Send {
    /// A short name for stats and errors ("lan", "wan", or the interface name).
    fn name(&self) -> &str;
    /// Take one frame if one is queued; never blocks.
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>>;
    /// Send one frame out of this port.
    fn send(&mut self, now: Time, frame: &[u8]) -> io::Result<()>;
    /// A file descriptor that becomes readable when `recv` has something, if the port has one.
    /// Ports without one are polled at least every millisecond by the engine.
    fn poll_fd(&self) -> Option<RawFd>;
    /// Frames the kernel dropped for this port since the last call (socket buffer overflow).
    fn take_kernel_drops(&mut self) -> u64 {
        0
    }
    /// The interface's state now (a system call on AF_PACKET ports; the engine asks once per
    /// stats interval and after a receive error).
    fn link_state(&self) -> LinkState {
        LinkState::Unknown
    }
    /// The network interface behind the port, if it has one (for messages).
    fn interface(&self) -> Option<&str> {
        None
    }
    /// Send several frames in order (one syscall on AF_PACKET ports). Returns how many were
    /// sent; stops at the first failure.
    fn send_batch(&mut self, now: Time, frames: &[&[u8]]) -> usize {
        let mut k = 0;
        for f in frames {
            if self.send(now, f).is_err() {
                break;
            }
            k += 1;
        }
        k
    }
    /// Take up to `batch.capacity()` frames (one syscall on AF_PACKET ports). Returns how many.
    fn recv_batch(&mut self, now: Time, batch: &mut FrameBatch) -> io::Result<usize> {
        batch.n = 0;
        while batch.n < batch.metas.len() {
            let i = batch.n;
            let slot = &mut batch.slots[i * batch.slot_len..(i + 1) * batch.slot_len];
            match self.recv(now, slot)? {
                Some(m) => {
                    batch.metas[i] = m;
                    batch.n += 1;
                }
                None => break,
            }
        }
        Ok(batch.n)
    }
}

/// Receive buffers for [`Port::recv_batch`]: `capacity` slots of `slot_len` bytes.
pub struct FrameBatch {
    slots: Vec<u8>,
    slot_len: usize,
    metas: Vec<RxMeta>,
    infos: Vec<sys::RecvInfo>,
    n: usize,
}

impl FrameBatch {
    pub fn new(capacity: usize, slot_len: usize) -> FrameBatch {
        FrameBatch {
            slots: vec![0; capacity * slot_len],
            slot_len,
            metas: vec![RxMeta::default(); capacity],
            infos: vec![sys::RecvInfo::default(); capacity],
            n: 0,
        }
    }
    pub fn capacity(&self) -> usize {
        self.metas.len()
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Frame `i` (read-only).
    pub fn frame(&self, i: usize) -> &[u8] {
        let m = &self.metas[i];
        &self.slots[i * self.slot_len..i * self.slot_len + m.len.min(self.slot_len)]
    }
    /// Frame `i` (its received bytes) and its metadata.
    pub fn frame_mut(&mut self, i: usize) -> (&mut [u8], RxMeta) {
        let m = self.metas[i];
        let s = &mut self.slots[i * self.slot_len..(i + 1) * self.slot_len];
        (&mut s[..m.len.min(self.slot_len)], m)
    }
}

impl<P: Port + ?Sized> Port for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
        (**self).recv(now, buf)
    }
    fn send(&mut self, now: Time, frame: &[u8]) -> io::Result<()> {
        (**self).send(now, frame)
    }
    fn poll_fd(&self) -> Option<RawFd> {
        (**self).poll_fd()
    }
    fn take_kernel_drops(&mut self) -> u64 {
        (**self).take_kernel_drops()
    }
    fn link_state(&self) -> LinkState {
        (**self).link_state()
    }
    fn interface(&self) -> Option<&str> {
        (**self).interface()
    }
    fn recv_batch(&mut self, now: Time, batch: &mut FrameBatch) -> io::Result<usize> {
        (**self).recv_batch(now, batch)
    }
    fn send_batch(&mut self, now: Time, frames: &[&[u8]]) -> usize {
        (**self).send_batch(now, frames)
    }
}

/// An AF_PACKET port on a Linux interface.
#[derive(Debug)]
pub struct AfPacketPort {
    name: String,
    ifname: String,
    sock: PacketSocket,
}

impl AfPacketPort {
    /// Open `ifname` in the calling thread's network namespace; `name` labels it in stats.
    pub fn open(ifname: &str, name: &str) -> io::Result<AfPacketPort> {
        let sock = PacketSocket::open(ifname)
            .map_err(|e| io::Error::new(e.kind(), format!("opening AF_PACKET socket on {ifname}: {e}")))?;
        Ok(AfPacketPort { name: name.to_string(), ifname: ifname.to_string(), sock })
    }
}

impl Port for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
        Ok(self.sock.recv(buf)?.map(|i| meta_of(now, &i, buf)))
    }
    fn send(&mut self, _now: Time, frame: &[u8]) -> io::Result<()> {
        // A full socket buffer: wait briefly for room instead of dropping (the kernel drains
        // veth/NIC queues quickly); give up after ~10 ms.
        let mut tries = 0;
        loop {
            match self.sock.send(frame) {
                Ok(_) => return Ok(()),
                Err(e)
                    if (e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS))
                        && tries < 100 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                Err(e) => return Err(e),
            }
        }
    }
    fn poll_fd(&self) -> Option<RawFd> {
        Some(self.sock.raw_fd())
    }
    fn take_kernel_drops(&mut self) -> u64 {
        self.sock.take_kernel_stats().map(|(_, d)| d).unwrap_or(0)
    }
    fn link_state(&self) -> LinkState {
        // By the index the socket is bound to: a renamed interface is the same port, a new
        // interface with the old name is not.
        match sys::if_flags_by_index(self.sock.ifindex()) {
            Ok(None) => LinkState::Gone,
            Ok(Some((_, flags))) => {
                let up = libc::IFF_UP as u32 | libc::IFF_RUNNING as u32;
                if flags & up == up {
                    LinkState::Up
                } else {
                    LinkState::Down
                }
            }
            Err(_) => LinkState::Unknown,
        }
    }
    fn interface(&self) -> Option<&str> {
        Some(&self.ifname)
    }
    fn send_batch(&mut self, _now: Time, frames: &[&[u8]]) -> usize {
        let mut off = 0;
        let mut tries = 0;
        while off < frames.len() {
            match self.sock.send_batch(&frames[off..]) {
                Ok(k) if k > 0 => off += k,
                Ok(_) => break,
                Err(e)
                    if (e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS))
                        && tries < 100 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                Err(_) => {
                    // Skip the frame the kernel refused and carry on with the rest.
                    off += 1;
                    return off - 1 + self.send_batch(_now, &frames[off..]);
                }
            }
        }
        off
    }
    fn recv_batch(&mut self, now: Time, batch: &mut FrameBatch) -> io::Result<usize> {
        let n = self.sock.recv_batch(&mut batch.slots, batch.slot_len, &mut batch.infos)?;
        for i in 0..n {
            let inf = batch.infos[i];
            let slot = &mut batch.slots[i * batch.slot_len..(i + 1) * batch.slot_len];
            batch.metas[i] = meta_of(now, &inf, slot);
        }
        batch.n = n;
        Ok(n)
    }
}

/// Metadata of a received frame; puts back a VLAN tag the kernel stripped, so the frame is
/// forwarded as it was on the wire.
fn meta_of(now: Time, i: &sys::RecvInfo, buf: &mut [u8]) -> RxMeta {
    let mut len = i.copied;
    let mut orig_len = i.orig_len;
    if let Some((tpid, tci)) = i.vlan {
        let n = sys::reinsert_vlan(buf, len, tpid, tci);
        orig_len += n - len;
        len = n;
    }
    RxMeta { ts: now, len, orig_len, csum_not_ready: i.status & TP_STATUS_CSUMNOTREADY != 0 }
}

type Queue = Arc<Mutex<VecDeque<Vec<u8>>>>;

/// One end of an in-memory wire: frames sent on one end are received on the other. For tests
/// and for driving the engine without root.
pub struct MemPort {
    name: String,
    rx: Queue,
    tx: Queue,
}

impl MemPort {
    /// Two connected ends.
    pub fn pair(a: &str, b: &str) -> (MemPort, MemPort) {
        let q1: Queue = Default::default();
        let q2: Queue = Default::default();
        (MemPort { name: a.into(), rx: q1.clone(), tx: q2.clone() }, MemPort { name: b.into(), rx: q2, tx: q1 })
    }
    /// Frames waiting to be received on this end.
    pub fn pending(&self) -> usize {
        self.rx.lock().map(|q| q.len()).unwrap_or(0)
    }
}

impl Port for MemPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
        let f = self.rx.lock().map_err(|_| io::Error::other("poisoned"))?.pop_front();
        Ok(f.map(|f| {
            let n = f.len().min(buf.len());
            buf[..n].copy_from_slice(&f[..n]);
            RxMeta { ts: now, len: n, orig_len: f.len(), csum_not_ready: false }
        }))
    }
    fn send(&mut self, _now: Time, frame: &[u8]) -> io::Result<()> {
        self.tx.lock().map_err(|_| io::Error::other("poisoned"))?.push_back(frame.to_vec());
        Ok(())
    }
    fn poll_fd(&self) -> Option<RawFd> {
        None
    }
}

/// Seeded fault rules for [`FaultPort`]. Probabilities are per frame, applied on receive.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultSpec {
    pub seed: u64,
    /// Drop the frame.
    pub drop_p: f64,
    /// Deliver the frame twice.
    pub duplicate_p: f64,
    /// Flip one random bit of the frame.
    pub corrupt_p: f64,
    /// Cut the frame to a random shorter length.
    pub truncate_p: f64,
}

/// Counts of what [`FaultPort`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FaultCounts {
    pub dropped: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub truncated: u64,
}

/// Wraps a port and injects faults into what it receives, by seeded rule (deterministic for a
/// given seed and frame sequence).
pub struct FaultPort<P: Port> {
    inner: P,
    spec: FaultSpec,
    rng: Rng,
    dup: Option<(Vec<u8>, RxMeta)>,
    pub counts: FaultCounts,
}

impl<P: Port> FaultPort<P> {
    pub fn new(inner: P, spec: FaultSpec) -> FaultPort<P> {
        let rng = stream(spec.seed, "fault-port", 0);
        FaultPort { inner, spec, rng, dup: None, counts: FaultCounts::default() }
    }
    pub fn into_inner(self) -> P {
        self.inner
    }
}

impl<P: Port> Port for FaultPort<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
        if let Some((f, mut m)) = self.dup.take() {
            let n = f.len().min(buf.len());
            buf[..n].copy_from_slice(&f[..n]);
            m.len = n;
            m.ts = now;
            return Ok(Some(m));
        }
        loop {
            let Some(mut m) = self.inner.recv(now, buf)? else {
                return Ok(None);
            };
            if self.rng.gen::<f64>() < self.spec.drop_p {
                self.counts.dropped += 1;
                continue;
            }
            if m.len > 0 && self.rng.gen::<f64>() < self.spec.corrupt_p {
                let i = self.rng.gen_range(0..m.len);
                buf[i] ^= 1 << self.rng.gen_range(0..8);
                self.counts.corrupted += 1;
            }
            if m.len > 1 && self.rng.gen::<f64>() < self.spec.truncate_p {
                m.len = self.rng.gen_range(0..m.len);
                m.orig_len = m.len;
                self.counts.truncated += 1;
            }
            if self.rng.gen::<f64>() < self.spec.duplicate_p {
                self.dup = Some((buf[..m.len].to_vec(), m));
                self.counts.duplicated += 1;
            }
            return Ok(Some(m));
        }
    }
    fn send(&mut self, now: Time, frame: &[u8]) -> io::Result<()> {
        self.inner.send(now, frame)
    }
    fn poll_fd(&self) -> Option<RawFd> {
        if self.dup.is_some() {
            None
        } else {
            self.inner.poll_fd()
        }
    }
    fn take_kernel_drops(&mut self) -> u64 {
        self.inner.take_kernel_drops()
    }
    fn link_state(&self) -> LinkState {
        self.inner.link_state()
    }
    fn interface(&self) -> Option<&str> {
        self.inner.interface()
    }
}

/// Wraps a port and writes every frame it receives and sends to a pcap file (Ethernet link
/// type, ns timestamps = wall clock at creation + the port's monotonic `now`), with the
/// project's writer (`ackshape_wire::pcap::PcapWriter`, the simulator's too).
pub struct PcapPort<P: Port> {
    inner: P,
    writer: ackshape_wire::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    wall0_ns: u64,
    t0: Option<Time>,
    /// Write errors (the capture stops recording after the first one).
    pub errors: u64,
}

impl<P: Port> PcapPort<P> {
    pub fn create(inner: P, path: &Path) -> io::Result<PcapPort<P>> {
        PcapPort::create_with_mode(inner, path, crate::privs::DEFAULT_FILE_MODE)
    }

    /// [`PcapPort::create`] with the file created with `mode` (default
    /// [`crate::privs::DEFAULT_FILE_MODE`]: the capture holds full packets).
    pub fn create_with_mode(inner: P, path: &Path, mode: u32) -> io::Result<PcapPort<P>> {
        let f = crate::privs::create_file(path, mode)
            .map_err(|e| io::Error::new(e.kind(), format!("creating pcap {}: {e}", path.display())))?;
        let writer = ackshape_wire::pcap::PcapWriter::new(std::io::BufWriter::new(f))
            .map_err(|e| io::Error::other(format!("pcap {}: {e}", path.display())))?;
        let wall0_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        Ok(PcapPort { inner, writer, wall0_ns, t0: None, errors: 0 })
    }

    fn write(&mut self, now: Time, data: &[u8]) {
        if self.errors > 0 {
            return;
        }
        let t0 = *self.t0.get_or_insert(now);
        let ts = self.wall0_ns + now.0.saturating_sub(t0.0);
        if self.writer.write_frame(ts, data).is_err() {
            self.errors += 1;
        }
    }
}

impl<P: Port> Port for PcapPort<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn recv(&mut self, now: Time, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
        let m = self.inner.recv(now, buf)?;
        if let Some(m) = m {
            self.write(now, &buf[..m.len]);
        }
        Ok(m)
    }
    fn send(&mut self, now: Time, frame: &[u8]) -> io::Result<()> {
        self.write(now, frame);
        self.inner.send(now, frame)
    }
    fn poll_fd(&self) -> Option<RawFd> {
        self.inner.poll_fd()
    }
    fn take_kernel_drops(&mut self) -> u64 {
        self.inner.take_kernel_drops()
    }
    fn link_state(&self) -> LinkState {
        self.inner.link_state()
    }
    fn interface(&self) -> Option<&str> {
        self.inner.interface()
    }
}

/// Check an interface's offloads before forwarding on it. Returns the offending features
/// (active ones among checksum/segmentation/GRO/LRO offloads), empty if the port is clean.
pub fn offending_offloads(ifname: &str) -> io::Result<Vec<String>> {
    let feats = sys::ethtool_features(ifname)?;
    Ok(feats.into_iter().filter(|f| f.active && is_bad_offload(&f.name)).map(|f| f.name).collect())
}

fn is_bad_offload(name: &str) -> bool {
    (name.starts_with("tx-checksum-") && name != "tx-checksum-fcoe-crc")
        || name == "tx-tcp-segmentation"
        || name == "tx-tcp-ecn-segmentation"
        || name == "tx-tcp-mangleid-segmentation"
        || name == "tx-tcp6-segmentation"
        || name == "tx-generic-segmentation"
        || name == "rx-gro"
        || name == "rx-gro-list"
        || name == "rx-lro"
}

/// The exact command that makes `ifname` safe for the AF_PACKET data plane.
pub fn offload_fix(ifname: &str) -> String {
    format!("ethtool -K {ifname} tx off tso off gso off gro off rx-gro-list off")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlan_tag_reinserted() {
        let mut b = [0u8; 64];
        b[..12].copy_from_slice(&[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
        b[12..14].copy_from_slice(&[0x08, 0x00]);
        b[14] = 0x45;
        let info = sys::RecvInfo { copied: 20, orig_len: 20, vlan: Some((0x8100, 0x0123)), ..Default::default() };
        let m = meta_of(Time(0), &info, &mut b);
        assert_eq!((m.len, m.orig_len), (24, 24));
        assert_eq!(&b[12..19], &[0x81, 0x00, 0x01, 0x23, 0x08, 0x00, 0x45]);
        assert_eq!(&b[..12], &[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn mem_pair_and_faults_are_deterministic() {
        let run = || {
            let (mut a, b) = MemPort::pair("a", "b");
            let mut fb = FaultPort::new(
                b,
                FaultSpec { seed: 7, drop_p: 0.1, duplicate_p: 0.1, corrupt_p: 0.1, truncate_p: 0.1 },
            );
            for i in 0..1000u32 {
                a.send(Time(0), &i.to_be_bytes().repeat(20)).unwrap();
            }
            let mut buf = [0u8; 2048];
            let mut got = Vec::new();
            while let Some(m) = fb.recv(Time(1), &mut buf).unwrap() {
                got.push(buf[..m.len].to_vec());
            }
            (got, fb.counts)
        };
        let (g1, c1) = run();
        let (g2, c2) = run();
        assert_eq!(g1, g2);
        assert_eq!(c1, c2);
        assert!(c1.dropped > 50 && c1.duplicated > 50 && c1.corrupted > 50 && c1.truncated > 50, "{c1:?}");
        assert_eq!(g1.len() as u64, 1000 - c1.dropped + c1.duplicated);
    }

    #[test]
    fn pcap_wrapper_writes_readable_file() {
        let dir = std::env::temp_dir().join(format!("acks-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.pcap");
        {
            let (a, mut b) = MemPort::pair("a", "b");
            let mut pa = PcapPort::create(a, &path).unwrap();
            pa.send(Time(10), &[1u8; 60]).unwrap();
            b.send(Time(20), &[2u8; 70]).unwrap();
            let mut buf = [0u8; 100];
            assert_eq!(pa.recv(Time(30), &mut buf).unwrap().unwrap().len, 70);
        }
        let f = std::fs::File::open(&path).unwrap();
        let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
        let mut lens = vec![];
        while let Some(p) = r.next_packet() {
            lens.push(p.unwrap().data.len());
        }
        assert_eq!(lens, vec![60, 70]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
