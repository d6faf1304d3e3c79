//! pcap capture of a simulated link direction, through `ackshape_wire::pcap`.

use crate::link::Capture;
use ackshape_core::time::Time;
use ackshape_wire::pcap::PcapWriter;
use ackshape_wire::Packet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes every packet a link starts transmitting as an Ethernet frame with valid checksums.
pub struct PcapCapture {
    w: Option<PcapWriter<BufWriter<File>>>,
    err: Option<std::io::Error>,
}

impl PcapCapture {
    /// A capture file keeping whole frames.
    pub fn create(path: &Path) -> std::io::Result<PcapCapture> {
        Self::with_snaplen(path, ackshape_wire::pcap::DEFAULT_SNAPLEN)
    }

    /// A capture file keeping the first `snaplen` bytes of each frame (the file records each
    /// frame's full length; Wireshark marks the cut ones).
    pub fn with_snaplen(path: &Path, snaplen: u32) -> std::io::Result<PcapCapture> {
        let f = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let w =
            PcapWriter::with_options(f, ackshape_wire::pcap::TsUnit::Nanos, snaplen).map_err(std::io::Error::other)?;
        Ok(PcapCapture { w: Some(w), err: None })
    }
}

/// One capture shared by both directions of a link: the file shows the link as a capture on
/// the wire would, data and ACKs in time order (the simulator's events run in time order).
pub struct SharedCapture(pub std::rc::Rc<std::cell::RefCell<PcapCapture>>);

impl Capture for SharedCapture {
    fn capture(&mut self, t: Time, pkt: &Packet) {
        self.0.borrow_mut().capture(t, pkt);
    }
    fn finish(&mut self) -> std::io::Result<()> {
        // The first direction's finish flushes and closes the file; the second finds it closed.
        self.0.borrow_mut().finish()
    }
}

impl Capture for PcapCapture {
    fn capture(&mut self, t: Time, pkt: &Packet) {
        if self.err.is_some() {
            return;
        }
        if let Some(w) = self.w.as_mut() {
            if let Err(e) = w.write_packet(t.0, pkt) {
                self.err = Some(std::io::Error::other(e));
            }
        }
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        if let Some(w) = self.w.take() {
            w.into_inner().flush()?;
        }
        Ok(())
    }
}
