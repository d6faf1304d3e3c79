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
    pub fn create(path: &Path) -> std::io::Result<PcapCapture> {
        let f = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let w = PcapWriter::new(f).map_err(std::io::Error::other)?;
        Ok(PcapCapture { w: Some(w), err: None })
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
