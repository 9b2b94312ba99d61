//! `--pcap FILE --pcap-port P [--pcap-port Q …]`: every frame the captured switch ports
//! receive or send, in one pcapng file with one interface per port (named as the port:
//! `sw:p0→h0`, `leaf1:p4→spine0`), stamped in the run's **virtual** time: nanoseconds
//! since the start of the run with the time scale undone, so the capture lines up with
//! the report's time series and the simulator (tshark shows them as dates from
//! 1970-01-01 00:00:00; `frame.time_epoch` is the virtual time in seconds).
//!
//! A frame's timestamp is when the switch loop read it from its ring (received) or
//! handed it to `sendmmsg` (sent): the loop's view, at most one iteration late.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use cc_algos::Instant;
use veth_core::endpoint::TimeScale;
use veth_core::pcap::PcapngWriter;

use crate::{Error, Result};

/// What to capture, decided before the run: the file, the global ports with their
/// interface names, the run's time scale.
#[derive(Debug, Clone)]
pub struct CaptureSpec {
    pub path: PathBuf,
    /// (global switch port, interface name), in interface order.
    pub ports: Vec<(usize, String)>,
    pub scale: TimeScale,
}

/// An open capture (in the switch loop's thread).
#[derive(Debug)]
pub struct Capture {
    path: PathBuf,
    out: PcapngWriter<BufWriter<File>>,
    /// Interface id of each global port, `None` for ports not captured.
    interface: Vec<Option<u32>>,
    scale: TimeScale,
    /// The first write error; reported by [`Capture::finish`].
    failed: Option<std::io::Error>,
}

impl CaptureSpec {
    /// Create the file and describe every captured port.
    pub fn open(&self) -> Result<Capture> {
        let os = |what: String| move |e| Error::Os { what, source: e };
        let file =
            File::create(&self.path).map_err(os(format!("create pcap {}", self.path.display())))?;
        let mut out = PcapngWriter::new(BufWriter::new(file))
            .map_err(os(format!("write pcap {}", self.path.display())))?;
        let n = self.ports.iter().map(|&(p, _)| p + 1).max().unwrap_or(0);
        let mut interface = vec![None; n];
        for (p, name) in &self.ports {
            interface[*p] = Some(
                out.add_interface(name)
                    .map_err(os(format!("write pcap {}", self.path.display())))?,
            );
        }
        Ok(Capture {
            path: self.path.clone(),
            out,
            interface,
            scale: self.scale,
            failed: None,
        })
    }
}

impl Capture {
    /// Record `frame`, seen on global port `port` at `now` (the run's real clock), if
    /// that port is captured.
    pub fn frame(&mut self, port: usize, now: Instant, frame: &[u8]) {
        let Some(Some(i)) = self.interface.get(port) else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        let t = self.scale.to_virtual(now).nanos();
        if let Err(e) = self.out.write_frame(*i, t, frame) {
            self.failed = Some(e);
        }
    }

    /// Flush; an error if any frame could not be written (an incomplete capture is not
    /// passed off as the run's).
    pub fn finish(&mut self) -> Result<()> {
        let r = match self.failed.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        r.map_err(|e| Error::Os {
            what: format!("write pcap {}", self.path.display()),
            source: e,
        })
    }
}
