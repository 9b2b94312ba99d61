//! Prometheus's HTTP query API, the parts both readers of it share (`fabric serve
//! --observe` and `fabric-tui --prometheus`): the server's URL, the query's encoding and
//! the instant-vector answer. Pure: the caller does the HTTP.

use std::collections::BTreeMap;

/// One series of an instant vector: its labels and value.
pub type Series = (BTreeMap<String, String>, f64);

/// A Prometheus server's address, from `http://HOST[:PORT][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromUrl {
    /// `HOST:PORT` (port 80 when the URL has none).
    pub addr: String,
    /// Path prefix: empty or `/prefix`, without a trailing `/`.
    pub prefix: String,
}

impl PromUrl {
    /// Parses `http://HOST[:PORT][/prefix]`; only plain `http://` is spoken.
    pub fn parse(url: &str) -> Result<PromUrl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "{url}: expected http://HOST:PORT[/prefix] (https is not supported: put a local TLS proxy in front)"
            )
        })?;
        let (hostport, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if hostport.is_empty() {
            return Err(format!("{url}: no host"));
        }
        let addr = if hostport
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            hostport.to_string()
        } else {
            format!("{hostport}:80")
        };
        let prefix = prefix.trim_end_matches('/');
        Ok(PromUrl {
            addr,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("/{prefix}")
            },
        })
    }

    /// The path of an instant query of `expr`.
    pub fn query_path(&self, expr: &str) -> String {
        format!("{}/api/v1/query?query={}", self.prefix, encode(expr))
    }
}

/// `%`-encodes a query parameter (RFC 3986 unreserved characters stay).
pub fn encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// Parses an instant-query answer (`resultType` `vector`). A value Prometheus writes as
/// `NaN`, `+Inf` or `-Inf` is kept as that float; an answer that is not Prometheus's JSON,
/// an error answer, another result type or a series without labels or a numeric value is
/// an error that says which.
pub fn parse_vector(body: &[u8]) -> Result<Vec<Series>, String> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("not a Prometheus query answer (not JSON: {e})"))?;
    if v.get("status").and_then(|s| s.as_str()) != Some("success") {
        return Err(format!(
            "Prometheus query failed: {}",
            v.get("error")
                .and_then(|e| e.as_str())
                .unwrap_or("no status")
        ));
    }
    let data = v.get("data").ok_or("Prometheus answer has no data")?;
    let kind = data.get("resultType").and_then(|t| t.as_str());
    if kind != Some("vector") {
        return Err(format!(
            "Prometheus answer is not an instant vector (resultType {})",
            kind.unwrap_or("missing")
        ));
    }
    let result = data
        .get("result")
        .and_then(|r| r.as_array())
        .ok_or("Prometheus answer has no result list")?;
    let mut out = Vec::with_capacity(result.len());
    for r in result {
        let labels = r
            .get("metric")
            .and_then(|m| m.as_object())
            .ok_or("Prometheus answer: a series without labels")?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        let value = r
            .get("value")
            .and_then(|v| v.get(1))
            .and_then(|v| v.as_str())
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or("Prometheus answer: a series without a numeric value")?;
        out.push((labels, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = PromUrl::parse("http://prom:9090").unwrap();
        assert_eq!((u.addr.as_str(), u.prefix.as_str()), ("prom:9090", ""));
        let u = PromUrl::parse("http://prom/p/").unwrap();
        assert_eq!((u.addr.as_str(), u.prefix.as_str()), ("prom:80", "/p"));
        assert_eq!(
            u.query_path("rate(x[30s])"),
            "/p/api/v1/query?query=rate%28x%5B30s%5D%29"
        );
        assert!(
            PromUrl::parse("https://prom")
                .unwrap_err()
                .contains("https is not supported")
        );
        assert!(PromUrl::parse("http:///x").unwrap_err().contains("no host"));
    }

    #[test]
    fn vectors_and_garbage() {
        let ok = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"device":"p2","switch":"s"},"value":[1.5,"1"]},
            {"metric":{"device":"p3","switch":"s"},"value":[1.5,"NaN"]}]}}"#;
        let v = parse_vector(ok).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0["device"], "p2");
        assert_eq!(v[0].1, 1.0);
        assert!(v[1].1.is_nan());
        assert!(parse_vector(b"<html>").unwrap_err().contains("not JSON"));
        assert_eq!(
            parse_vector(br#"{"status":"error","error":"bad query"}"#).unwrap_err(),
            "Prometheus query failed: bad query"
        );
        assert!(
            parse_vector(br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#)
                .unwrap_err()
                .contains("resultType matrix")
        );
        assert!(
            parse_vector(br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#)
                .unwrap_err()
                .contains("numeric value")
        );
    }

    proptest::proptest! {
        /// Any bytes: an answer or an error, never a panic.
        #[test]
        fn any_bytes_are_an_answer_or_an_error(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse_vector(&b);
        }

        /// Any URL text: parsed or refused, never a panic; a parsed one has a port.
        #[test]
        fn any_url_is_parsed_or_refused(s in ".{0,40}") {
            if let Ok(u) = PromUrl::parse(&s) {
                proptest::prop_assert!(u.addr.rsplit_once(':').is_some());
            }
        }
    }
}
