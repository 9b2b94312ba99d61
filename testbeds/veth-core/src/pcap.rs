//! A capture writer, like smoltcp's `phy::PcapWriter`, in pcapng (IETF
//! draft-ietf-opsawg-pcapng) rather than classic pcap: one interface per captured port,
//! each named (`if_name`), with nanosecond timestamps (`if_tsresol` = 9; classic pcap has
//! microseconds, longer than a 4 KiB frame at 100 Gb/s of virtual time). The engine
//! writes every frame the captured ports send or receive, stamped in the run's virtual
//! time; tshark/Wireshark decode them (RoCE over UDP 4791, PFC).

use std::io::{self, Write};

/// Link type of Ethernet frames.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// pcapng block types (draft-ietf-opsawg-pcapng §4).
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
/// pcapng option codes: end of options, `if_name`, `if_tsresol`.
const OPT_END: u16 = 0;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

/// Writes a pcapng section: interfaces first ([`PcapngWriter::add_interface`]), then
/// frames on any of them, timestamps in nanoseconds.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: u32,
}

/// `len` rounded up to the 32-bit boundary pcapng pads every field to.
fn padded(len: usize) -> usize {
    len.div_ceil(4) * 4
}

impl<W: Write> PcapngWriter<W> {
    /// Write the section header block (little-endian, version 1.0, length unknown).
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut b = Vec::with_capacity(28);
        b.extend_from_slice(&SHB.to_le_bytes());
        b.extend_from_slice(&28u32.to_le_bytes());
        b.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        b.extend_from_slice(&28u32.to_le_bytes());
        out.write_all(&b)?;
        Ok(PcapngWriter { out, interfaces: 0 })
    }

    /// Describe the next Ethernet interface (ids count from 0 in the order added), named
    /// `name`, timestamps in nanoseconds. Returns its id.
    pub fn add_interface(&mut self, name: &str) -> io::Result<u32> {
        let name = name.as_bytes();
        let name_len = u16::try_from(name.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "interface name over 64 KiB")
        })?;
        let options = 4 + padded(name.len()) + 4 + 4 + 4;
        let total = (20 + options) as u32;
        let mut b = Vec::with_capacity(total as usize);
        b.extend_from_slice(&IDB.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&(LINKTYPE_ETHERNET as u16).to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // snaplen 0: no limit
        b.extend_from_slice(&IF_NAME.to_le_bytes());
        b.extend_from_slice(&name_len.to_le_bytes());
        b.extend_from_slice(name);
        b.resize(b.len() + padded(name.len()) - name.len(), 0);
        b.extend_from_slice(&IF_TSRESOL.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&[9, 0, 0, 0]); // 10^-9 s
        b.extend_from_slice(&OPT_END.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        self.out.write_all(&b)?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// Write one frame seen on `interface` at `nanos` (since the epoch of the capture).
    pub fn write_frame(&mut self, interface: u32, nanos: u64, frame: &[u8]) -> io::Result<()> {
        if interface >= self.interfaces {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "pcapng interface {interface}: only {} described",
                    self.interfaces
                ),
            ));
        }
        let len = u32::try_from(frame.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame over 4 GiB"))?;
        let total = (32 + padded(frame.len())) as u32;
        let mut h = [0u8; 28];
        h[0..4].copy_from_slice(&EPB.to_le_bytes());
        h[4..8].copy_from_slice(&total.to_le_bytes());
        h[8..12].copy_from_slice(&interface.to_le_bytes());
        h[12..16].copy_from_slice(&((nanos >> 32) as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(nanos as u32).to_le_bytes());
        h[20..24].copy_from_slice(&len.to_le_bytes());
        h[24..28].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(frame)?;
        self.out
            .write_all(&[0u8; 3][..padded(frame.len()) - frame.len()])?;
        self.out.write_all(&total.to_le_bytes())
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
    fn pcapng_blocks_vector() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        assert_eq!(w.add_interface("sw:p0").unwrap(), 0);
        w.write_frame(0, 0x1_0000_0002, &[0xaa, 0xbb, 0xcc, 0xdd, 0xee])
            .unwrap();
        assert!(
            w.write_frame(1, 0, &[1]).is_err(),
            "interface 1 undescribed"
        );
        let b = w.into_inner();
        // Section header: type, length 28, byte-order magic, version 1.0, length -1.
        assert_eq!(&b[0..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
        assert_eq!(&b[4..8], &28u32.to_le_bytes());
        assert_eq!(&b[8..12], &[0x4d, 0x3c, 0x2b, 0x1a]);
        assert_eq!(&b[16..24], &[0xff; 8]);
        assert_eq!(&b[24..28], &28u32.to_le_bytes());
        // Interface: 20 + if_name (4 + 8) + if_tsresol (4 + 4) + end (4) = 44 bytes.
        let idb = &b[28..72];
        assert_eq!(&idb[0..4], &1u32.to_le_bytes());
        assert_eq!(&idb[4..8], &44u32.to_le_bytes());
        assert_eq!(&idb[8..10], &1u16.to_le_bytes(), "LINKTYPE_ETHERNET");
        assert_eq!(&idb[16..20], &[2, 0, 5, 0]);
        assert_eq!(&idb[20..28], b"sw:p0\0\0\0");
        assert_eq!(&idb[28..36], &[9, 0, 1, 0, 9, 0, 0, 0]);
        assert_eq!(&idb[36..40], &[0; 4]);
        assert_eq!(&idb[40..44], &44u32.to_le_bytes());
        // Enhanced packet: 32 + 8 (5 bytes padded) = 40 bytes, timestamp high then low.
        let epb = &b[72..];
        assert_eq!(epb.len(), 40);
        assert_eq!(&epb[0..4], &6u32.to_le_bytes());
        assert_eq!(&epb[4..8], &40u32.to_le_bytes());
        assert_eq!(&epb[8..12], &0u32.to_le_bytes());
        assert_eq!(&epb[12..16], &1u32.to_le_bytes());
        assert_eq!(&epb[16..20], &2u32.to_le_bytes());
        assert_eq!(&epb[20..24], &5u32.to_le_bytes());
        assert_eq!(&epb[28..36], &[0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 0]);
        assert_eq!(&epb[36..40], &40u32.to_le_bytes());
    }
}
