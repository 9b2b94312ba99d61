//! Neighbours as lldpd reports them (`lldpcli -f json show neighbors`), for the
//! observe-only source's cabling check: per switch, from lldpd's control socket
//! (`DIR/lldpd-<switch>.sock`, as on a switch or in the FRR testbed) or from a file an
//! operator's collector left (`DIR/<switch>.json`, the same command's output).
//!
//! lldpcli's JSON lists one interface as an object and several as an array of
//! one-key objects; both are read. A neighbour's chassis is its system name, its port
//! the port id (`configure lldp portidsubtype ifname` makes that the interface name).

use std::path::Path;
use std::process::{Command, Stdio};

/// One neighbour: local interface, neighbour chassis name, neighbour port id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// Local interface name.
    pub local: String,
    /// The neighbour's system (chassis) name.
    pub chassis: String,
    /// The neighbour's port id.
    pub port: String,
}

/// Parses `lldpcli -f json show neighbors`.
pub fn parse(json: &[u8]) -> Result<Vec<Neighbour>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("lldpcli output is not JSON: {e}"))?;
    let lldp = v.get("lldp").ok_or("lldpcli output has no \"lldp\"")?;
    let list: Vec<&serde_json::Value> = match lldp.get("interface") {
        None => return Ok(Vec::new()),
        Some(serde_json::Value::Array(a)) => a.iter().collect(),
        Some(o @ serde_json::Value::Object(_)) => vec![o],
        Some(_) => return Err("lldpcli \"interface\" is neither a list nor an object".into()),
    };
    let mut out = Vec::new();
    for item in list {
        let obj = item
            .as_object()
            .ok_or("an interface entry is not an object")?;
        for (local, n) in obj {
            let chassis = n
                .get("chassis")
                .and_then(|c| c.as_object())
                .and_then(|c| c.keys().next().cloned())
                .unwrap_or_default();
            let port = n
                .get("port")
                .and_then(|p| p.get("id"))
                .and_then(|i| i.get("value"))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string();
            out.push(Neighbour {
                local: local.clone(),
                chassis,
                port,
            });
        }
    }
    Ok(out)
}

/// Switch `name`'s neighbours from `dir`: its lldpd socket if there is one, else its
/// JSON file. `Ok(None)`: neither exists (the switch is not watched).
pub fn read(dir: &Path, name: &str) -> Result<Option<Vec<Neighbour>>, String> {
    let sock = dir.join(format!("lldpd-{name}.sock"));
    if sock.exists() {
        let out = Command::new("lldpcli")
            .arg("-u")
            .arg(&sock)
            .args(["-f", "json", "show", "neighbors"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("lldpcli for {name}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "lldpcli -u {}: {}",
                sock.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        return parse(&out.stdout).map(Some);
    }
    let file = dir.join(format!("{name}.json"));
    match std::fs::read(&file) {
        Ok(b) => parse(&b)
            .map(Some)
            .map_err(|e| format!("{}: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_many_and_no_neighbours() {
        // Trimmed from lldpd 1.0.16 on this machine.
        let many = br#"{"lldp":{"interface":[
            {"p0":{"via":"LLDP","chassis":{"swb":{"id":{"type":"mac","value":"1a:59"}}},
                   "port":{"id":{"type":"ifname","value":"p1"},"descr":"p1"}}},
            {"p5":{"via":"LLDP","chassis":{"swb":{}},"port":{"id":{"type":"ifname","value":"p6"}}}}]}}"#;
        let n = parse(many).unwrap();
        assert_eq!(n.len(), 2);
        assert_eq!(
            n[1],
            Neighbour {
                local: "p5".into(),
                chassis: "swb".into(),
                port: "p6".into()
            }
        );
        let one =
            br#"{"lldp":{"interface":{"p0":{"chassis":{"swb":{}},"port":{"id":{"value":"p1"}}}}}}"#;
        assert_eq!(parse(one).unwrap().len(), 1);
        assert!(parse(br#"{"lldp":{}}"#).unwrap().is_empty());
        assert!(parse(b"garbage").is_err());
        assert!(parse(br#"{"lldp":{"interface":3}}"#).is_err());
    }
}
