//! A pcap writer (classic libpcap format, microsecond timestamps, LINKTYPE_ETHERNET),
//! like smoltcp's `phy::PcapWriter`: the engine writes every frame a port sends or
//! receives, and tshark/Wireshark decode them (RoCE over UDP 4791, PFC).

use std::io::{self, Write};

/// Link type of Ethernet frames.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// Writes frames to any `Write`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Write the global header.
    pub fn new(mut out: W) -> io::Result<Self> {
        let snaplen = 65535u32;
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone, sigfigs = 0
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Write one frame seen at `unix_nanos`.
    pub fn write_frame(&mut self, unix_nanos: u64, frame: &[u8]) -> io::Result<()> {
        let cap = frame.len().min(self.snaplen as usize);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((unix_nanos / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((unix_nanos % 1_000_000_000 / 1000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(cap as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..cap])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_vector() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_frame(1_500_000_002_000, &[0xaa, 0xbb]).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&b[20..24], &[1, 0, 0, 0]);
        assert_eq!(&b[24..28], &1500u32.to_le_bytes());
        assert_eq!(&b[28..32], &2u32.to_le_bytes());
        assert_eq!(&b[32..36], &2u32.to_le_bytes());
        assert_eq!(&b[40..], &[0xaa, 0xbb]);
    }
}
