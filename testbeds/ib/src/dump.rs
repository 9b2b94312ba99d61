//! fabric's LFT file for OpenSM's `file` engine, kept per switch: rendered by topo's
//! exporter without its comments ([`LftComments::Dropped`]) — the switch header and
//! `0xLID PORT` per entry, without the `# Channel Adapter …` comment (measured on
//! OpenSM 3.3.23: the engine loads such a file unchanged; it is ~5× smaller to write and
//! for OpenSM to read). Two dumps compare block by block, so after a re-route only the
//! switches whose block changed are parsed and compared entry by entry.

use std::fs;
use std::path::{Path, PathBuf};

use topo::Routes;
use topo::export::ib::LftComments;
use topo::lft::Lft;

use crate::design::Design;
use crate::tables::{self, Lfts};
use crate::{Result, io};

/// The dump, one block of text per switch in the order written.
#[derive(Debug, Clone, Default)]
pub struct Dump {
    /// (switch node GUID, its block: header and entry lines).
    blocks: Vec<(u64, Vec<u8>)>,
}

impl Dump {
    /// fabric's tables (`routes`, `lft`) for `design`, as the `file` engine reads them.
    pub fn render(design: &Design, routes: &Routes, lft: &Lft) -> Result<Dump> {
        let mut bare = Vec::new();
        design.write_lfts(&mut bare, routes, lft, LftComments::Dropped)?;
        Ok(Dump::compact(&bare))
    }

    /// The blocks of a dump in the exporter's format, entry comments (if any) dropped.
    fn compact(full: &[u8]) -> Dump {
        let mut blocks: Vec<(u64, Vec<u8>)> = Vec::new();
        for line in full.split(|&b| b == b'\n') {
            if line.starts_with(b"Unicast lids") {
                let guid = std::str::from_utf8(line)
                    .ok()
                    .and_then(|l| l.split(" guid 0x").nth(1))
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|g| u64::from_str_radix(g, 16).ok())
                    .unwrap_or(0);
                blocks.push((guid, Vec::with_capacity(line.len() + 1)));
            }
            let Some((_, b)) = blocks.last_mut() else {
                continue;
            };
            if line.starts_with(b"0x") {
                // `0xLID PORT # comment`: keep the first two fields.
                let mut spaces = line.iter().enumerate().filter(|&(_, &c)| c == b' ');
                let end = spaces.nth(1).map_or(line.len(), |(i, _)| i);
                b.extend_from_slice(&line[..end]);
            } else {
                b.extend_from_slice(line);
            }
            b.push(b'\n');
        }
        Dump { blocks }
    }

    /// Writes the dump to `path` (through a new file renamed into place, so OpenSM never
    /// reads half of it).
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut new = path.as_os_str().to_owned();
        new.push(".fabric-new");
        let new = PathBuf::from(new);
        let mut text = Vec::with_capacity(self.blocks.iter().map(|(_, b)| b.len()).sum());
        for (_, b) in &self.blocks {
            text.extend_from_slice(b);
        }
        fs::write(&new, &text).map_err(io(new.display().to_string()))?;
        fs::rename(&new, path).map_err(io(path.display().to_string()))
    }

    /// Every switch's table.
    pub fn tables(&self) -> Result<Lfts> {
        self.tables_of(0..self.blocks.len())
    }

    /// The tables of the switches whose block differs from `old`'s (all of them when
    /// the switches differ).
    pub fn changed_tables(&self, old: &Dump) -> Result<Lfts> {
        let same_switches = self.blocks.len() == old.blocks.len()
            && self.blocks.iter().zip(&old.blocks).all(|(a, b)| a.0 == b.0);
        if !same_switches {
            return self.tables();
        }
        self.tables_of((0..self.blocks.len()).filter(|&i| self.blocks[i].1 != old.blocks[i].1))
    }

    fn tables_of(&self, which: impl Iterator<Item = usize>) -> Result<Lfts> {
        let mut out = Lfts::new();
        for i in which {
            let text = String::from_utf8_lossy(&self.blocks[i].1);
            out.extend(tables::parse(&text, "lfts.dump")?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn compact_blocks_hold_the_exporters_tables_and_only_changed_switches_are_reparsed() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let d = Design::new(Arc::new(f)).unwrap();
        let mut r = Routes::compute(&d.fabric);
        let mut lft = Lft::compute(&d.fabric, &r);
        let dump = Dump::render(&d, &r, &lft).unwrap();
        // The same tables as the exporter's full format, without its comments.
        assert_eq!(dump.tables().unwrap(), d.lfts(&r, &lft).unwrap());
        let text: Vec<u8> = dump.blocks.iter().flat_map(|(_, b)| b.clone()).collect();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains('#'), "{}", &text[..200]);
        assert!(text.starts_with("Unicast lids [0-36] of switch Lid 17 guid 0x0002c90300001000"));
        assert!(dump.changed_tables(&dump).unwrap().is_empty());
        // One failed link: only the switches whose entries moved are returned, and
        // exactly with their new tables.
        let fab = d.fabric.clone();
        let agg = fab.name_index()["pod0-agg0"];
        let l = fab.port_link(agg, 2);
        let rep = r.fail_links(&fab, &[l]);
        lft.update(&fab, &r, &rep.changed);
        let after = Dump::render(&d, &r, &lft).unwrap();
        let changed = after.changed_tables(&dump).unwrap();
        let all = after.tables().unwrap();
        let before = dump.tables().unwrap();
        let moved: Vec<u64> = all
            .keys()
            .filter(|g| all[g] != before[g])
            .copied()
            .collect();
        assert!(!moved.is_empty());
        assert_eq!(changed.keys().copied().collect::<Vec<_>>(), moved);
        for (g, t) in &changed {
            assert_eq!(t, &all[g]);
        }
    }
}
