//! Property test with unbounded values (issue 9): spec text with arbitrary numbers in every
//! numeric field is parsed and built; it must never panic, never build past the size limits,
//! and every error must name the origin and a field.

use proptest::prelude::*;
use topo::spec::{MAX_HOSTS, MAX_LINKS, MAX_SWITCHES};
use topo::{Error, Format, Spec};

/// A number as a spec writer might type it: small, any u32, or any i64 (negative and
/// beyond u32 included).
fn num() -> impl Strategy<Value = i64> {
    prop_oneof![
        40 => 1i64..=16,
        4 => 17i64..=72,
        1 => Just(0i64),
        2 => any::<u32>().prop_map(i64::from),
        1 => any::<i64>(),
        1 => Just(2147483648i64),
    ]
}

fn opt_num() -> impl Strategy<Value = Option<i64>> {
    proptest::option::of(num())
}

fn rate() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => Just("\"400G\"".to_string()),
        8 => Just("\"100G\"".to_string()),
        1 => Just("1".to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => (0.0f64..1e30).prop_map(|v| format!("\"{v}T\"")),
    ]
}

/// Appends ` key = value` when the value is present.
fn push_opt(s: &mut String, key: &str, v: Option<String>) {
    if let Some(v) = v {
        *s += &format!("{key} = {v}");
    }
}

fn tier() -> impl Strategy<Value = String> {
    (
        num(),
        opt_num(),
        num(),
        proptest::option::of(rate()),
        proptest::option::of(rate()),
    )
        .prop_map(|(radix, down, up, port_rate, uplink_rate)| {
            let mut s = format!("{{ radix = {radix}, up = {up}");
            push_opt(&mut s, ", down", down.map(|d| d.to_string()));
            push_opt(&mut s, ", port_rate", port_rate);
            push_opt(&mut s, ", uplink_rate", uplink_rate);
            s + " }"
        })
}

fn plane() -> impl Strategy<Value = String> {
    (
        opt_num(),
        any::<bool>(),
        num(),
        num(),
        tier(),
        tier(),
        proptest::option::of(tier()),
    )
        .prop_map(|(copies, df, pods, lpp, leaf, spine, core)| {
            let copies = copies.map(|c| format!("copies = {c}\n")).unwrap_or_default();
            let mut s = format!(
                "[[planes]]\n{copies}kind = \"{}\"\npods = {pods}\nleaves_per_pod = {lpp}\nleaf = {leaf}\nspine = {spine}\n",
                if df { "dragonfly-plus" } else { "clos" }
            );
            if let Some(c) = core {
                s += &format!("core = {c}\n");
            }
            s
        })
}

fn spec_text() -> impl Strategy<Value = String> {
    (
        opt_num(),
        opt_num(),
        opt_num(),
        opt_num(),
        any::<bool>(),
        opt_num(),
        rate(),
        proptest::collection::vec(plane(), 1..3),
    )
        .prop_map(|(servers, gpus, nics, ports, rail, sud, rate, planes)| {
            let mut s = format!("name = \"fuzz\"\n[hosts]\nrail_optimized = {rail}\nrate = {rate}");
            for (k, v) in [
                ("\ngpus_per_server", gpus),
                ("\nnics_per_server", nics),
                ("\nports_per_nic", ports),
                ("\nservers", servers),
                ("\nscale_up_domain", sud),
            ] {
                push_opt(&mut s, k, v.map(|v| v.to_string()));
            }
            s.push('\n');
            for p in planes {
                s += &p;
            }
            s
        })
}

fn check_error(e: &Error) {
    match e {
        Error::Parse { origin, path, msg } | Error::Spec { origin, path, msg } => {
            assert_eq!(origin, "fuzz.toml");
            assert!(!path.is_empty() && !msg.is_empty(), "{e}");
            if matches!(e, Error::Spec { .. }) {
                assert!(
                    path.starts_with("hosts") || path.starts_with("planes"),
                    "a validation error names its field: {e}"
                );
            }
        }
        other => panic!("unexpected error kind: {other}"),
    }
}

/// A fabric that built is within the limits, and `fabric topo show` on it (routing and
/// analysis) does not overflow either.
fn check_fabric(f: &topo::Fabric) {
    assert!(f.num_hosts() as u64 <= MAX_HOSTS);
    assert!(f.num_switches() as u64 <= MAX_SWITCHES);
    assert!(f.num_links() as u64 <= MAX_LINKS);
    if f.num_hosts() <= 4096 {
        let r = topo::Routes::compute(f);
        let s = topo::analysis::summarize(f, &r, &Default::default());
        assert_eq!(s.nics, f.num_hosts() as u64);
        assert!(s.injection_bps > 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_spec_builds_or_names_the_field(text in spec_text()) {
        match Spec::parse(&text, Format::Toml, "fuzz.toml").and_then(|s| s.build("fuzz.toml")) {
            Err(e) => check_error(&e),
            Ok(f) => check_fabric(&f),
        }
    }
}

/// A valid design with one field set to an extreme value: reaches the checks deep inside
/// validation (spine and core counts, size limits) that random text rarely gets past.
fn mutated_spec() -> impl Strategy<Value = Spec> {
    use topo::Rate;
    use topo::generators::*;
    let base = prop_oneof![
        (1u32..=8).prop_map(|h| fat_tree_spec(2 * h, Rate::gbps(400))),
        (1u32..=8, 1u32..=4, 1u32..=8, 1u32..=2).prop_map(|(l, s, h, p)| leaf_spine_spec(
            l,
            s,
            h,
            p,
            Rate::gbps(100)
        )),
        (3u32..=6).prop_map(|g| dragonfly_plus_spec(g, 2, 2, 2, g - 1, Rate::gbps(100))),
        (1u32..=4).prop_map(|h| multi_plane_spec(fat_tree_spec(2 * h, Rate::gbps(400)), 2)),
    ];
    let big = prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        Just(1u32 << 31),
        Just(1u32 << 16),
        any::<u32>(),
    ];
    (base, 0usize..14, big).prop_map(|(mut s, field, v)| {
        let p = &mut s.planes[0];
        match field {
            0 => s.hosts.servers = Some(v),
            1 => s.hosts.nics_per_server = v,
            2 => s.hosts.gpus_per_server = v,
            3 => s.hosts.scale_up_domain = Some(v),
            4 => p.copies = v,
            5 => p.pods = v,
            6 => p.leaves_per_pod = v,
            7 => p.leaf.radix = v,
            8 => p.leaf.up = v,
            9 => p.leaf.down = Some(v),
            10 => p.spine.radix = v,
            11 => p.spine.up = v,
            12 => p.spine.down = Some(v),
            _ => {
                if let Some(c) = &mut p.core {
                    c.down = Some(v)
                }
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn extreme_field_builds_or_names_the_field(spec in mutated_spec()) {
        // Through the text form too, so the parser sees the same values.
        let text = spec.to_toml();
        let parsed = Spec::parse(&text, Format::Toml, "fuzz.toml");
        match parsed.and_then(|s| s.build("fuzz.toml")) {
            Err(e) => check_error(&e),
            Ok(f) => check_fabric(&f),
        }
    }
}
