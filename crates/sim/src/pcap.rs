//! pcap capture of a simulated link (placeholder until the wire crate's writer lands).

use crate::link::Capture;
use ackshape_core::time::Time;
use ackshape_wire::Packet;
use std::path::Path;

pub struct PcapCapture;

impl PcapCapture {
    pub fn create(_path: &Path) -> std::io::Result<PcapCapture> {
        Err(std::io::Error::other("pcap export not available yet"))
    }
}

impl Capture for PcapCapture {
    fn capture(&mut self, _t: Time, _pkt: &Packet) {}
}
