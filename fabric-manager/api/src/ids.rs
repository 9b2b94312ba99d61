//! Serde helpers for `topo::LinkId` (which serializes as a bare number but does not
//! deserialize): use with `#[serde(with = "…")]`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use topo::LinkId;

/// A single `LinkId` as a number.
pub mod link {
    use super::*;
    /// Writes the id as a number.
    pub fn serialize<S: Serializer>(l: &LinkId, s: S) -> Result<S::Ok, S::Error> {
        l.0.serialize(s)
    }
    /// Reads a number as an id.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LinkId, D::Error> {
        u32::deserialize(d).map(LinkId)
    }
}

/// An optional `LinkId` as a number or null.
pub mod opt_link {
    use super::*;
    /// Writes the id as a number or null.
    pub fn serialize<S: Serializer>(l: &Option<LinkId>, s: S) -> Result<S::Ok, S::Error> {
        l.map(|l| l.0).serialize(s)
    }
    /// Reads a number or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<LinkId>, D::Error> {
        Ok(Option::<u32>::deserialize(d)?.map(LinkId))
    }
}

/// A list of optional `LinkId`s as numbers or nulls.
pub mod opt_links {
    use super::*;
    /// Writes the ids as numbers or nulls.
    pub fn serialize<S: Serializer>(v: &[Option<LinkId>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|l| l.map(|l| l.0)))
    }
    /// Reads numbers or nulls.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<LinkId>>, D::Error> {
        Ok(Vec::<Option<u32>>::deserialize(d)?
            .into_iter()
            .map(|l| l.map(LinkId))
            .collect())
    }
}

/// A list of `LinkId`s as numbers.
pub mod links {
    use super::*;
    /// Writes the ids as numbers.
    pub fn serialize<S: Serializer>(v: &[LinkId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|l| l.0))
    }
    /// Reads numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<LinkId>, D::Error> {
        Ok(Vec::<u32>::deserialize(d)?
            .into_iter()
            .map(LinkId)
            .collect())
    }
}
