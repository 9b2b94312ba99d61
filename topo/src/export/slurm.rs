//! Slurm `topology.conf` for the `topology/tree` plugin (slurm.conf
//! `TopologyPlugin=topology/tree`; topology.conf(5)): one line per switch,
//! `SwitchName=NAME Nodes=HOSTLIST` for leaf switches and
//! `SwitchName=NAME Switches=HOSTLIST` above them, names compressed to
//! Slurm hostlist expressions (`gpu[000-127]`).

use std::io::{self, Write};

/// Writes a `# …` comment line.
pub fn comment<W: Write>(w: &mut W, text: &str) -> io::Result<()> {
    writeln!(w, "# {text}")
}

/// Writes `SwitchName=name Nodes=…` (`nodes == true`) or `… Switches=…`.
pub fn switch_line<'a, W: Write>(
    w: &mut W,
    name: &str,
    nodes: bool,
    children: impl IntoIterator<Item = &'a str>,
) -> io::Result<()> {
    let key = if nodes { "Nodes" } else { "Switches" };
    writeln!(w, "SwitchName={name} {key}={}", hostlist(children))
}

/// Splits `name` into (prefix, digits) where digits is the trailing run of
/// ASCII digits (possibly empty).
fn split_num(name: &str) -> (&str, &str) {
    let cut = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    name.split_at(cut)
}

/// Compresses names into a Slurm hostlist expression: names that share a
/// prefix and end in numbers become `prefix[a-b,c]`, keeping zero padding
/// (`n[08-10]`); names are kept in the order of their first appearance per
/// prefix. Names without a trailing number are listed as they are.
pub fn hostlist<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    // (prefix, width of a zero-padded number or 0) -> numbers, in first-seen order
    let mut groups: Vec<((&str, usize), Vec<u64>)> = Vec::new();
    let mut plain: Vec<&str> = Vec::new();
    let mut order: Vec<(bool, usize)> = Vec::new(); // (is_group, index)
    for n in names {
        let (prefix, digits) = split_num(n);
        let Ok(num) = digits.parse::<u64>() else {
            order.push((false, plain.len()));
            plain.push(n);
            continue;
        };
        let padded = digits.len() > 1 && digits.starts_with('0');
        let width = if padded { digits.len() } else { 0 };
        // An unpadded number as wide as a padded group belongs to it (`n08,n09,n10`).
        let found = groups
            .iter()
            .position(|(k, _)| *k == (prefix, width))
            .or_else(|| {
                (!padded)
                    .then(|| {
                        groups
                            .iter()
                            .position(|(k, _)| *k == (prefix, digits.len()))
                    })
                    .flatten()
            });
        let key = (prefix, width);
        match found {
            Some(i) => groups[i].1.push(num),
            None => {
                order.push((true, groups.len()));
                groups.push((key, vec![num]));
            }
        }
    }
    let mut out = String::new();
    for (is_group, i) in order {
        if !out.is_empty() {
            out.push(',');
        }
        if !is_group {
            out.push_str(plain[i]);
            continue;
        }
        let ((prefix, width), nums) = &mut groups[i];
        nums.sort_unstable();
        nums.dedup();
        out.push_str(prefix);
        if nums.len() == 1 {
            out.push_str(&format!("{:0width$}", nums[0], width = *width));
            continue;
        }
        out.push('[');
        let mut k = 0;
        let mut first = true;
        while k < nums.len() {
            let mut j = k;
            while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
                j += 1;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&format!("{:0width$}", nums[k], width = *width));
            if j > k {
                out.push_str(&format!("-{:0width$}", nums[j], width = *width));
            }
            k = j + 1;
        }
        out.push(']');
    }
    out
}

/// Expands a hostlist expression written by [`hostlist`] back into names
/// (the subset of Slurm's grammar used here: `prefix[a-b,c]` items
/// separated by commas outside brackets).
pub fn expand_hostlist(expr: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.checked_sub(1).ok_or("unbalanced `]`")?,
            ',' if depth == 0 => {
                items.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced `[`".into());
    }
    items.push(&expr[start..]);
    for item in items {
        let Some(open) = item.find('[') else {
            out.push(item.to_owned());
            continue;
        };
        let prefix = &item[..open];
        let body = item[open + 1..]
            .strip_suffix(']')
            .ok_or(format!("`{item}`: text after `]`"))?;
        for range in body.split(',') {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let width = a.len();
            let lo: u64 = a.parse().map_err(|_| format!("`{a}` is not a number"))?;
            let hi: u64 = b.parse().map_err(|_| format!("`{b}` is not a number"))?;
            if hi < lo {
                return Err(format!("range `{range}` runs backwards"));
            }
            for n in lo..=hi {
                out.push(format!("{prefix}{n:0width$}"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compresses_runs_and_keeps_padding() {
        assert_eq!(hostlist(["gpu0", "gpu1", "gpu2", "gpu5"]), "gpu[0-2,5]");
        assert_eq!(hostlist(["n08", "n09", "n10"]), "n[08-10]");
        assert_eq!(
            hostlist(["leaf-0-1", "leaf-0-0", "spine"]),
            "leaf-0-[0-1],spine"
        );
        assert_eq!(hostlist(["a7"]), "a7");
        assert_eq!(hostlist(["x9", "x10"]), "x[9-10]");
    }

    proptest! {
        #[test]
        fn expand_inverts_compress(nums in proptest::collection::btree_set(0u64..300, 1..40),
                                   prefix in "[a-z]{1,4}-") {
            let names: Vec<String> = nums.iter().map(|n| format!("{prefix}{n}")).collect();
            let expr = hostlist(names.iter().map(String::as_str));
            prop_assert_eq!(expand_hostlist(&expr).unwrap(), names);
        }
    }
}
