//! The only module of `ackshape-live` that uses `unsafe`: thin, checked wrappers around
//! Linux system calls (AF_PACKET sockets, `ppoll`, the ethtool and MTU ioctls, timer slack).
//!
//! Every function here returns `io::Result` and validates lengths before touching memory.
//! (`unsafe` is allowed for this module only, in lib.rs.)

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// `ETH_P_ALL`: every protocol.
pub const ETH_P_ALL: u16 = 0x0003;
const SOL_PACKET: libc::c_int = 263;
const PACKET_AUXDATA: libc::c_int = 8;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
/// `tp_status` bit: the frame's transport checksum is partial (checksum offload pending).
pub const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
/// `tp_status` bit: the checksum was validated by the device/kernel.
pub const TP_STATUS_CSUM_VALID: u32 = 1 << 7;
/// `tp_status` bit: VLAN TCI valid (the tag was stripped by the kernel).
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
/// `tp_status` bit: `tp_vlan_tpid` valid.
pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const SIOCGIFMTU: libc::c_ulong = 0x8921;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;

#[repr(C)]
#[derive(Clone, Copy)]
struct TpacketAuxdata {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

#[repr(C)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

/// `struct ifreq` with the union seen as a data pointer (ethtool) or an int (MTU).
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: IfReqUnion,
}

#[repr(C)]
union IfReqUnion {
    ptr: *mut libc::c_void,
    int: libc::c_int,
    _pad: [u8; 24],
}

fn ifreq(ifname: &str) -> io::Result<IfReq> {
    let b = ifname.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {ifname:?}")));
    }
    let mut r = IfReq { name: [0; libc::IFNAMSIZ], data: IfReqUnion { _pad: [0; 24] } };
    for (d, s) in r.name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Ok(r)
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: valid fd, pointer to a live c_int of the stated size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    cvt(r).map(|_| ())
}

/// Interface index of `ifname` in the calling thread's network namespace.
pub fn if_index(ifname: &str) -> io::Result<u32> {
    let c = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    // SAFETY: c is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface named {ifname:?} in this network namespace")))
    } else {
        Ok(idx)
    }
}

fn dgram_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned immediately.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// MTU of `ifname` (SIOCGIFMTU; works in the calling thread's namespace, unlike sysfs).
pub fn if_mtu(ifname: &str) -> io::Result<u32> {
    let s = dgram_socket()?;
    let mut r = ifreq(ifname)?;
    // SAFETY: r is a properly sized ifreq; the kernel writes ifr_mtu (an int) into the union.
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), SIOCGIFMTU as _, &mut r as *mut IfReq) })?;
    let mtu = unsafe { r.data.int };
    Ok(mtu.max(0) as u32)
}

/// Name and flags (`IFF_*`) of the interface with index `ifindex` in the calling thread's
/// network namespace; `Ok(None)` when no interface has that index any more (deleted, or moved
/// to another namespace).
pub fn if_flags_by_index(ifindex: u32) -> io::Result<Option<(String, u32)>> {
    let mut buf = [0 as libc::c_char; libc::IFNAMSIZ];
    // SAFETY: buf holds IFNAMSIZ bytes, as if_indextoname(3) requires.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) | Some(libc::ENODEV) => Ok(None),
            _ => Err(e),
        };
    }
    let name: String = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect();
    let s = dgram_socket()?;
    let mut r = ifreq(&name)?;
    // SAFETY: r is a properly sized ifreq; the kernel writes ifr_flags (a short) into the union.
    match cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut r as *mut IfReq) }) {
        Ok(_) => {}
        // Deleted between the two calls.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENODEV) | Some(libc::ENXIO)) => return Ok(None),
        Err(e) => return Err(e),
    }
    // SAFETY: all bytes of the union are initialised (zeroed by ifreq(), then written).
    let raw = unsafe { r.data._pad };
    let flags = u16::from_ne_bytes([raw[0], raw[1]]) as u32;
    Ok(Some((name, flags)))
}

/// Hardware (MAC) address of `ifname` (SIOCGIFHWADDR; the calling thread's namespace).
pub fn if_hwaddr(ifname: &str) -> io::Result<[u8; 6]> {
    let s = dgram_socket()?;
    let mut r = ifreq(ifname)?;
    // SAFETY: r is a properly sized ifreq; the kernel writes ifr_hwaddr (a struct sockaddr, 16
    // bytes, within the 24-byte union) into it.
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFHWADDR as _, &mut r as *mut IfReq) })?;
    // SAFETY: all 24 bytes of the union are initialised (zeroed by ifreq(), then written).
    let raw = unsafe { r.data._pad };
    // struct sockaddr: sa_family (2 bytes), then sa_data with the MAC first.
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&raw[2..8]);
    Ok(mac)
}

/// One ethtool feature ("tx-checksum-ipv4", "rx-gro", ...) and whether it is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feature {
    pub name: String,
    pub active: bool,
    pub available: bool,
}

fn ethtool_ioctl(fd: RawFd, ifname: &str, buf: &mut [u32]) -> io::Result<()> {
    let mut r = ifreq(ifname)?;
    r.data.ptr = buf.as_mut_ptr() as *mut libc::c_void;
    // SAFETY: buf is sized by the caller for the command in buf[0] (checked by callers against
    // the count the kernel reported); r points into it for the duration of the call.
    cvt(unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut r as *mut IfReq) }).map(|_| ())
}

/// All ethtool features of `ifname` with their active state (ETHTOOL_GSSET_INFO,
/// ETHTOOL_GSTRINGS, ETHTOOL_GFEATURES), in the calling thread's namespace.
pub fn ethtool_features(ifname: &str) -> io::Result<Vec<Feature>> {
    let s = dgram_socket()?;
    let fd = s.as_raw_fd();
    // ethtool_sset_info: cmd, reserved, u64 sset_mask, u32 data[1]
    let mut info = [0u32; 6];
    info[0] = ETHTOOL_GSSET_INFO;
    let mask = (1u64 << ETH_SS_FEATURES).to_ne_bytes();
    info[2] = u32::from_ne_bytes([mask[0], mask[1], mask[2], mask[3]]);
    info[3] = u32::from_ne_bytes([mask[4], mask[5], mask[6], mask[7]]);
    ethtool_ioctl(fd, ifname, &mut info)?;
    let n = info[4] as usize;
    if n == 0 || n > 4096 {
        return Err(io::Error::other(format!("ethtool reported {n} features for {ifname}")));
    }
    // ethtool_gstrings: cmd, string_set, len, u8 data[len * 32]
    let mut strings = vec![0u32; 3 + n * ETH_GSTRING_LEN / 4];
    strings[0] = ETHTOOL_GSTRINGS;
    strings[1] = ETH_SS_FEATURES;
    strings[2] = n as u32;
    ethtool_ioctl(fd, ifname, &mut strings)?;
    let got = (strings[2] as usize).min(n);
    let bytes: Vec<u8> = strings[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    // ethtool_gfeatures: cmd, size, blocks[size] of {available, requested, active, never_changed}
    let blocks = n.div_ceil(32);
    let mut feats = vec![0u32; 2 + 4 * blocks];
    feats[0] = ETHTOOL_GFEATURES;
    feats[1] = blocks as u32;
    ethtool_ioctl(fd, ifname, &mut feats)?;
    let mut out = Vec::with_capacity(got);
    for i in 0..got {
        let raw = &bytes[i * ETH_GSTRING_LEN..(i + 1) * ETH_GSTRING_LEN];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        let name = String::from_utf8_lossy(&raw[..end]).into_owned();
        let (blk, bit) = (i / 32, 1u32 << (i % 32));
        let available = feats[2 + 4 * blk] & bit != 0;
        let active = feats[2 + 4 * blk + 2] & bit != 0;
        out.push(Feature { name, active, available });
    }
    Ok(out)
}

/// What `PacketSocket::recv` learned about one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvInfo {
    /// Bytes copied into the buffer.
    pub copied: usize,
    /// Length of the frame as received (may exceed `copied` if the buffer was too small).
    pub orig_len: usize,
    /// `tp_status` from PACKET_AUXDATA (0 if absent).
    pub status: u32,
    /// `sll_pkttype` (PACKET_HOST, PACKET_OTHERHOST, ...).
    pub pkttype: u8,
    /// VLAN tag (TPID, TCI) stripped by the kernel, if any (the frame in the buffer has no tag
    /// then; see [`reinsert_vlan`]).
    pub vlan: Option<(u16, u16)>,
}

fn vlan_of(aux: &TpacketAuxdata) -> Option<(u16, u16)> {
    if aux.tp_status & TP_STATUS_VLAN_VALID == 0 {
        return None;
    }
    let tpid = if aux.tp_status & TP_STATUS_VLAN_TPID_VALID != 0 { aux.tp_vlan_tpid } else { 0x8100 };
    Some((tpid, aux.tp_vlan_tci))
}

/// Put a VLAN tag the kernel stripped on receive back into the frame: `buf[..len]` becomes
/// `dst src TPID TCI ethertype ...`. Returns the new length (unchanged if it does not fit).
pub fn reinsert_vlan(buf: &mut [u8], len: usize, tpid: u16, tci: u16) -> usize {
    if len < 12 || len + 4 > buf.len() {
        return len;
    }
    buf.copy_within(12..len, 16);
    buf[12..14].copy_from_slice(&tpid.to_be_bytes());
    buf[14..16].copy_from_slice(&tci.to_be_bytes());
    len + 4
}

/// An AF_PACKET SOCK_RAW socket bound to one interface, nonblocking, with
/// `PACKET_IGNORE_OUTGOING` and `PACKET_AUXDATA` set.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
    /// `recvmmsg`'s headers, kept between calls: allocating and zeroing them for every call
    /// (tens of KiB for a 256-frame batch) was a fifth of the data-plane thread's time when it
    /// polled busy ports.
    rx: std::sync::Mutex<RecvScratch>,
}

/// Buffers of [`PacketSocket::recv_batch`]; every pointer in them is set again before each use.
#[derive(Default)]
struct RecvScratch {
    iovs: Vec<libc::iovec>,
    ctrl: Vec<[u64; 8]>,
    addrs: Vec<libc::sockaddr_ll>,
    msgs: Vec<libc::mmsghdr>,
}

impl std::fmt::Debug for RecvScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecvScratch({} headers)", self.msgs.len())
    }
}

// SAFETY: the raw pointers in the scratch headers are written by `recv_batch` for the duration of
// one call (under the mutex) and never read outside it; nothing they point at is shared.
unsafe impl Send for RecvScratch {}

impl PacketSocket {
    /// Open and bind to `ifname` (in the calling thread's network namespace).
    pub fn open(ifname: &str) -> io::Result<PacketSocket> {
        Self::open_with(ifname, true)
    }

    /// A send-only socket on `ifname`: bound with protocol 0, so the kernel queues nothing to it
    /// (no packet tap, no receive work) — for traffic generators that only inject frames.
    /// Frames sent skip the egress qdisc, like [`PacketSocket::open`]'s.
    pub fn open_send_only(ifname: &str) -> io::Result<PacketSocket> {
        Self::open_with(ifname, false)
    }

    /// `receive`: bound to every protocol with PACKET_IGNORE_OUTGOING and PACKET_AUXDATA and both
    /// buffers enlarged; otherwise bound with protocol 0 (nothing is queued to it) and only the
    /// send buffer enlarged.
    fn open_with(ifname: &str, receive: bool) -> io::Result<PacketSocket> {
        let ifindex = if_index(ifname)?;
        // Protocol 0 at creation so nothing is queued before bind() narrows it to this interface.
        // SAFETY: plain socket(2); the fd is owned immediately.
        let raw = cvt(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if receive {
            setsockopt_int(raw, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
            setsockopt_int(raw, SOL_PACKET, PACKET_AUXDATA, 1)?;
        }
        // Frames we send skip the egress qdisc (we are the queue); harmless if unsupported.
        let _ = setsockopt_int(raw, SOL_PACKET, PACKET_QDISC_BYPASS, 1);
        let big = 8 << 20;
        if receive && setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, big).is_err() {
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, big);
        }
        if setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, big).is_err() {
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, big);
        }
        // SAFETY: zeroed sockaddr_ll is valid; we fill the fields bind needs (protocol 0
        // registers no receive hook).
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = if receive { ETH_P_ALL.to_be() } else { 0 };
        sll.sll_ifindex = ifindex as i32;
        cvt(unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        Ok(PacketSocket { fd, ifindex, rx: Default::default() })
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receive one frame into `buf`. `Ok(None)` when nothing is queued (EAGAIN).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<RecvInfo>> {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let mut cbuf = [0u64; 16];
        // SAFETY: zeroed sockaddr_ll/msghdr are valid initial values.
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = &mut addr as *mut libc::sockaddr_ll as *mut libc::c_void;
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        // SAFETY: msg points at live buffers of the declared sizes for the whole call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC | libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        let orig_len = n as usize;
        let mut info =
            RecvInfo { copied: orig_len.min(buf.len()), orig_len, pkttype: addr.sll_pkttype, ..Default::default() };
        // Walk the control messages (kernel-written, bounded by msg_controllen).
        // SAFETY: CMSG_* macros walk within msg_control/msg_controllen set by the kernel.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == SOL_PACKET
                    && (*c).cmsg_type == PACKET_AUXDATA
                    && (*c).cmsg_len as usize >= libc::CMSG_LEN(size_of::<TpacketAuxdata>() as u32) as usize
                {
                    let aux: TpacketAuxdata = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const TpacketAuxdata);
                    info.status = aux.tp_status;
                    info.vlan = vlan_of(&aux);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Some(info))
    }

    /// Receive up to `infos.len()` frames with one `recvmmsg`, frame `i` into
    /// `slots[i * slot_len..(i + 1) * slot_len]`. Returns how many were received (0 on EAGAIN).
    pub fn recv_batch(&self, slots: &mut [u8], slot_len: usize, infos: &mut [RecvInfo]) -> io::Result<usize> {
        let n = infos.len().min(slots.len() / slot_len.max(1)).min(256);
        if n == 0 {
            return Ok(0);
        }
        let mut guard = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        let RecvScratch { iovs, ctrl, addrs, msgs } = &mut *guard;
        if msgs.len() < n {
            // SAFETY: zeroed iovec/sockaddr_ll/mmsghdr are valid initial values.
            iovs.resize(n, unsafe { zeroed() });
            ctrl.resize(n, [0u64; 8]);
            addrs.resize(n, unsafe { zeroed() });
            msgs.resize_with(n, || unsafe { zeroed::<libc::mmsghdr>() });
        }
        for (iov, c) in iovs.iter_mut().zip(slots.chunks_mut(slot_len)).take(n) {
            *iov = libc::iovec { iov_base: c.as_mut_ptr() as *mut libc::c_void, iov_len: c.len() };
        }
        for i in 0..n {
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = &mut addrs[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = size_of::<[u64; 8]>() as _;
        }
        // SAFETY: every header points at live buffers of the declared sizes for the whole call.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(0);
            }
            return Err(e);
        }
        let got = r as usize;
        for i in 0..got {
            let orig_len = msgs[i].msg_len as usize;
            let mut info = RecvInfo {
                copied: orig_len.min(slot_len),
                orig_len,
                pkttype: addrs[i].sll_pkttype,
                ..Default::default()
            };
            let h = &msgs[i].msg_hdr;
            // SAFETY: CMSG_* walk within the control buffer the kernel filled (msg_controllen).
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    if (*c).cmsg_level == SOL_PACKET
                        && (*c).cmsg_type == PACKET_AUXDATA
                        && (*c).cmsg_len as usize >= libc::CMSG_LEN(size_of::<TpacketAuxdata>() as u32) as usize
                    {
                        let aux: TpacketAuxdata = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const TpacketAuxdata);
                        info.status = aux.tp_status;
                        info.vlan = vlan_of(&aux);
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
            infos[i] = info;
        }
        Ok(got)
    }

    /// Send frames with one `sendmmsg`; returns how many the kernel took (it stops at the first
    /// failure; an error is returned only if none was sent).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let n = frames.len().min(1024);
        if n == 0 {
            return Ok(0);
        }
        let mut iovs: Vec<libc::iovec> = frames[..n]
            .iter()
            .map(|f| libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() })
            .collect();
        // SAFETY: zeroed mmsghdr is a valid initial value.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { zeroed::<libc::mmsghdr>() }).collect();
        for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: headers point at live iovecs over live frames; the kernel only reads them.
        let r =
            unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// Send one frame out of the bound interface. `WouldBlock` if the socket buffer is full.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        // SAFETY: frame is a live slice; the socket is bound so no address is needed.
        let n = unsafe {
            libc::send(self.fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), libc::MSG_DONTWAIT)
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Frames received and frames dropped by the kernel (socket buffer full) since the last call.
    pub fn take_kernel_stats(&self) -> io::Result<(u64, u64)> {
        let mut st = TpacketStats { tp_packets: 0, tp_drops: 0 };
        let mut len = size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: st is a live struct of the stated size.
        cvt(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut TpacketStats as *mut libc::c_void,
                &mut len,
            )
        })?;
        Ok((st.tp_packets as u64, st.tp_drops as u64))
    }
}

/// Wait until one of `fds` is readable or `timeout` passes (`None` = forever). Returns the
/// readiness of each fd. EINTR is reported as "nothing ready" so callers re-check their flags.
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>, ready: &mut [bool]) -> io::Result<usize> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: p and ts live across the call; null sigmask keeps the current one.
    let r = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, tsp, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            ready.iter_mut().for_each(|r| *r = false);
            return Ok(0);
        }
        return Err(e);
    }
    for (r, pf) in ready.iter_mut().zip(&p) {
        *r = pf.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    }
    Ok(r as usize)
}

/// `poll(2)` on `fds` for up to `timeout_ms` (EINTR: 0 ready).
pub fn poll_fds(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: fds is a valid slice of pollfd for the duration of the call.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) };
    }
    Ok(r as usize)
}

/// Set the calling thread's timer slack (ns) so short sleeps wake on time (`PR_SET_TIMERSLACK`).
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

/// Effective uid (to decide whether live tests can run).
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Put the calling thread in SCHED_FIFO at `prio` (1..=99) so timer wake-ups are not delayed by
/// other load. The thread still blocks in `ppoll` when idle.
pub fn set_realtime_fifo(prio: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: prio.clamp(1, 99) };
    // SAFETY: p is a valid sched_param; pid 0 = the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) }).map(|_| ())
}

/// Put the calling thread in SCHED_IDLE: it runs only when no other task wants the CPU
/// (sched(7)). For load generators that stand for another machine (an attacker's flood): their
/// CPU must not be taken from the process under test.
pub fn set_sched_idle() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param; pid 0 = the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) }).map(|_| ())
}

/// `struct sched_attr` (SCHED_ATTR_SIZE_VER0, 48 bytes).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Keep the calling thread in the normal (SCHED_OTHER) class but ask EEVDF for a short time
/// slice (`sched_setattr` with `sched_runtime` = `slice_ns`, honoured by Linux ≥ 6.12 and clamped
/// by it to 0.1–100 ms) and set its nice value. A task with a shorter slice gets an earlier
/// virtual deadline when it wakes, so it preempts the running task sooner: lower wake-up latency
/// without a real-time class.
pub fn set_fair_slice(slice_ns: u64, nice: i32) -> io::Result<()> {
    let a = SchedAttr {
        size: size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_nice: nice.clamp(-20, 19),
        sched_runtime: slice_ns,
        ..Default::default()
    };
    // SAFETY: a is a live, correctly sized sched_attr; pid 0 = the calling thread; flags 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, 1)`: ACK at once what has arrived and what arrives
/// next (Linux leaves quick-ACK mode again on its own, so a reader sets it after every read).
pub fn set_quickack(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a live c_int and its size is passed with it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            &one as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Pin the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is out of range")));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it (cpu checked above).
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: set is a live cpu_set_t of the stated size; pid 0 = the calling thread.
    cvt(unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) }).map(|_| ())
}

/// What [`tcp_info`] reports about a TCP socket (a subset of `struct tcp_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Smoothed RTT (µs).
    pub rtt_us: u32,
    /// Congestion window (segments).
    pub snd_cwnd: u32,
    /// The MSS the socket sends with (payload bytes per segment, `tcpi_snd_mss`).
    pub snd_mss: u32,
    /// Segments sent and received (`tcpi_segs_out`, `tcpi_segs_in`; ACKs included).
    pub segs_out: u32,
    pub segs_in: u32,
}

/// `getsockopt(fd, IPPROTO_TCP, TCP_INFO)`.
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    // SAFETY: a zeroed tcp_info is valid; the kernel writes at most `len` bytes into it.
    let mut ti: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    })?;
    // total_retrans sits at byte 100; older kernels that return less leave it zero.
    if (len as usize) < 104 {
        return Err(io::Error::other(format!("TCP_INFO returned only {len} bytes")));
    }
    // segs_out and segs_in sit at bytes 136..144 (Linux 4.2 on); zero if the kernel returned less.
    let (segs_out, segs_in) = if (len as usize) >= 144 { (ti.tcpi_segs_out, ti.tcpi_segs_in) } else { (0, 0) };
    Ok(TcpInfo {
        total_retrans: ti.tcpi_total_retrans,
        rtt_us: ti.tcpi_rtt,
        snd_cwnd: ti.tcpi_snd_cwnd,
        snd_mss: ti.tcpi_snd_mss,
        segs_out,
        segs_in,
    })
}

/// Mount point of the cgroup-v1 cpu controller.
const CPU_CGROUP_V1: &str = "/sys/fs/cgroup/cpu";

/// Send signal `sig` to process `pid` (0: only check that it exists); true if the call succeeded.
pub fn signal(pid: i32, sig: i32) -> bool {
    if pid <= 0 {
        return false; // never a process group or every process
    }
    // SAFETY: kill takes plain integers; a positive pid names one process.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// The calling thread's id.
pub fn gettid() -> i64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i64 }
}

/// Move the calling thread into the cgroup-v1 cpu cgroup `name` (created if needed) with
/// `cpu.shares` = `shares`. Outside the root cgroup a thread is not in its session's autogroup:
/// the group competes with the machine's sessions by its own weight.
pub fn join_cpu_cgroup(name: &str, shares: u64) -> io::Result<()> {
    let root = std::path::Path::new(CPU_CGROUP_V1);
    if !root.join("tasks").exists() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("no cgroup-v1 cpu controller at {CPU_CGROUP_V1}"),
        ));
    }
    let dir = root.join(name);
    match std::fs::create_dir(&dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    std::fs::write(dir.join("cpu.shares"), shares.to_string())?;
    std::fs::write(dir.join("tasks"), gettid().to_string())
}

/// Move the calling thread back to the root cpu cgroup and remove cgroup `name` if it is empty.
pub fn leave_cpu_cgroup(name: &str) -> io::Result<()> {
    let root = std::path::Path::new(CPU_CGROUP_V1);
    std::fs::write(root.join("tasks"), gettid().to_string())?;
    // Fails while other threads are in it; the last one out removes it.
    let _ = std::fs::remove_dir(root.join(name));
    Ok(())
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): for cost measurements that
/// other load on the machine does not inflate.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live timespec; the clock id is valid.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Involuntary context switches of the calling thread so far (`getrusage(RUSAGE_THREAD)`'s
/// `ru_nivcsw`); 0 if the call fails.
pub fn thread_involuntary_switches() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a live rusage the call fills in; RUSAGE_THREAD is a valid `who`.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if r != 0 {
        return 0;
    }
    ru.ru_nivcsw.max(0) as u64
}
