//! pcap output (LINKTYPE_ETHERNET) over `pcap-file` 2, for simulated or captured packets.
//!
//! Wrap the sink in a `BufWriter`: every packet is two `write` calls.

use crate::packet::Packet;
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

/// Timestamp resolution of the pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TsUnit {
    /// Nanosecond pcap (magic 0xa1b23c4d); what the simulator wants.
    #[default]
    Nanos,
    /// Classic microsecond pcap.
    Micros,
}

/// Error writing pcap.
#[derive(Debug, thiserror::Error)]
#[error("pcap write failed: {0}")]
pub struct PcapWriteError(#[from] pcap_file::PcapError);

/// Default snap length: large enough for any frame `write_packet` produces.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// A pcap writer for Ethernet frames. Reuses one buffer: no allocation per packet.
pub struct PcapWriter<W: Write> {
    inner: pcap_file::pcap::PcapWriter<W>,
    buf: Vec<u8>,
    snaplen: u32,
}

/// The fake, locally administered MAC `write_packet` uses for an address:
/// `02:` followed by 5 bytes derived from the address (the IPv4 address itself for IPv4).
pub fn fake_mac(addr: IpAddr) -> [u8; 6] {
    match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            [0x02, 0x00, o[0], o[1], o[2], o[3]]
        }
        IpAddr::V6(a) => {
            // FNV-1a over the address, 40 bits kept.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in a.octets() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            let h = h.to_be_bytes();
            [0x06, h[3], h[4], h[5], h[6], h[7]]
        }
    }
}

impl<W: Write> PcapWriter<W> {
    /// A nanosecond-resolution writer; writes the file header now.
    pub fn new(w: W) -> Result<Self, PcapWriteError> {
        Self::with_options(w, TsUnit::Nanos, DEFAULT_SNAPLEN)
    }

    /// A writer with the given timestamp unit and snap length (frames longer than
    /// `snaplen` are truncated in the file; their original length is recorded).
    pub fn with_options(w: W, unit: TsUnit, snaplen: u32) -> Result<Self, PcapWriteError> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen,
            datalink: DataLink::ETHERNET,
            ts_resolution: match unit {
                TsUnit::Nanos => TsResolution::NanoSecond,
                TsUnit::Micros => TsResolution::MicroSecond,
            },
            endianness: Endianness::Little,
        };
        let inner = pcap_file::pcap::PcapWriter::with_header(w, header)?;
        Ok(PcapWriter { inner, buf: Vec::with_capacity(2048), snaplen })
    }

    /// Serialises `p` (MACs from [`fake_mac`] of its addresses) and writes it at `ts_ns`
    /// nanoseconds since the epoch of the file (the simulation's time zero is fine).
    pub fn write_packet(&mut self, ts_ns: u64, p: &Packet) -> Result<(), PcapWriteError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        p.write_frame(fake_mac(p.ip.src), fake_mac(p.ip.dst), &mut buf);
        let r = self.write_frame(ts_ns, &buf);
        self.buf = buf;
        r
    }

    /// Writes a ready Ethernet frame.
    pub fn write_frame(&mut self, ts_ns: u64, frame: &[u8]) -> Result<(), PcapWriteError> {
        let orig_len = frame.len().min(u32::MAX as usize) as u32;
        let incl = &frame[..frame.len().min(self.snaplen as usize)];
        let ts = Duration::from_nanos(ts_ns);
        self.inner.write_packet(&PcapPacket::new(ts, orig_len, incl))?;
        Ok(())
    }

    /// The underlying writer (flush it if buffered).
    pub fn into_inner(self) -> W {
        self.inner.into_writer()
    }
}
