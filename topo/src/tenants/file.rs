//! The tenant file as written (TOML, YAML or JSON through serde), before it is checked
//! against a fabric ([`super::Tenants::resolve`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::spec::{Format, parse_err};

/// A tenant file: the tenants, the shared services they may use, and how many traffic
/// classes a switch has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantFile {
    /// Traffic classes (lossless priorities / data VLs) a switch has for tenants; every
    /// class a tenant names must be below it. Default 8 (802.1Qbb priorities).
    #[serde(default = "eight")]
    pub traffic_classes: u32,
    /// Shared services (storage, management): hosts that tenants may reach when their
    /// `access` names the service.
    #[serde(default)]
    pub services: Vec<EntrySpec>,
    /// The tenants.
    pub tenants: Vec<EntrySpec>,
}

fn eight() -> u32 {
    8
}

/// One tenant or one shared service.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    /// Name (letters, digits, `-`, `_`; at most 11 characters: it names a VRF device).
    pub name: String,
    /// Servers by index: numbers and ranges (`[0, "4-7"]`); all NICs of each server.
    #[serde(default)]
    pub servers: Vec<Item>,
    /// GPUs by global index (`server × gpus_per_server + local`): numbers and ranges. A
    /// GPU means its NIC when the fabric has one NIC per GPU, else whole servers only.
    #[serde(default)]
    pub gpus: Vec<Item>,
    /// Host (NIC) nodes by name (`host3-nic0`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Traffic classes of the entry (default `[0]`).
    #[serde(default)]
    pub classes: Vec<u32>,
    /// Bandwidth share in percent (ETS weight of its classes); default 0 (best effort).
    #[serde(default)]
    pub share: u32,
    /// InfiniBand partition key (15 bits, 0x0001–0x7ffe); default: the lowest free.
    #[serde(default)]
    pub pkey: Option<u64>,
    /// Linux VRF routing table id; default: the lowest free from 1001.
    #[serde(default)]
    pub vrf: Option<u64>,
    /// SL of the partition and DSCP class of the VRF; default its first class.
    #[serde(default)]
    pub sl: Option<u32>,
    /// Tenants only: the shared services it may reach, and how (`full` or `limited`).
    #[serde(default)]
    pub access: BTreeMap<String, Access>,
}

/// How a tenant reaches a shared service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// The service's hosts join the tenant's own partition / VRF as full members: both
    /// sides may open connections, the tenant's multicast included.
    Full,
    /// The tenant's hosts are limited members of the service's partition: they reach the
    /// service's hosts (full members) and nothing else there — not the other tenants.
    Limited,
}

/// A number or a range `"a-b"` (inclusive) in a list of servers or GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// First.
    pub first: u64,
    /// Last (inclusive).
    pub last: u64,
}

impl Serialize for Item {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.first == self.last {
            s.serialize_u64(self.first)
        } else {
            s.serialize_str(&format!("{}-{}", self.first, self.last))
        }
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Item, D::Error> {
        d.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

impl Visitor<'_> for ItemVisitor {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative number or a range like \"0-15\"")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Item, E> {
        Ok(Item { first: v, last: v })
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Item, E> {
        u64::try_from(v)
            .map(|v| Item { first: v, last: v })
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Item, E> {
        let bad = || E::invalid_value(de::Unexpected::Str(s), &self);
        let num = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
        let item = match s.split_once('-') {
            Some((a, b)) => Item {
                first: num(a)?,
                last: num(b)?,
            },
            None => {
                let v = num(s)?;
                Item { first: v, last: v }
            }
        };
        if item.first > item.last {
            return Err(E::custom(format!(
                "range \"{s}\" runs backwards (expected first <= last)"
            )));
        }
        Ok(item)
    }
}

impl TenantFile {
    /// Parses tenant-file text; `origin` (usually the file name) goes into error messages
    /// with the field path, as for fabric specs.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<TenantFile> {
        match format {
            Format::Toml => {
                let de = toml::Deserializer::parse(text).map_err(|e| {
                    parse_err(origin, String::new(), e.to_string().trim().to_string())
                })?;
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let path = e.path().to_string();
                    parse_err(origin, path, e.into_inner().message().to_string())
                })
            }
            Format::Yaml => {
                let de = serde_yaml_ng::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let path = e.path().to_string();
                    parse_err(origin, path, e.into_inner().to_string())
                })
            }
            Format::Json => {
                let mut de = serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(&mut de).map_err(|e| {
                    let path = e.path().to_string();
                    parse_err(origin, path, e.into_inner().to_string())
                })
            }
        }
    }

    /// The file as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}
