//! Property tests with unbounded values for the nesting and indentation limits (issue 21):
//! spec text nested to any depth, or indented to any column, is refused before parsing with
//! the file, the line and the limit when it passes [`MAX_NESTING`] / [`MAX_INDENT`], and never
//! refused for nesting when it stays within them. Brackets inside quotes and comments, in any
//! number, never count.

use proptest::prelude::*;
use topo::spec::{MAX_INDENT, MAX_NESTING};
use topo::{Format, Spec};

/// A depth as a hostile or careless writer might produce: near the limit, anywhere up to a
/// few million.
fn depth() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..=2 * MAX_NESTING,
        2 => 0usize..=100_000,
        1 => 0usize..=4_000_000,
    ]
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![Just(Format::Toml), Just(Format::Yaml), Just(Format::Json)]
}

/// `depth` opening brackets (a mix of `[` and `{` chosen by `mix`), then their closers.
fn nested(depth: usize, mix: u64) -> String {
    let open: Vec<char> = (0..depth)
        .map(|i| if (mix >> (i % 64)) & 1 == 1 { '{' } else { '[' })
        .collect();
    let close = open.iter().rev().map(|&c| if c == '{' { '}' } else { ']' });
    open.iter().copied().chain(close).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn nesting_past_the_limit_is_refused_naming_the_line(
        depth in depth(),
        mix in any::<u64>(),
        blank_lines in 0usize..1000,
        format in format(),
    ) {
        let text = format!("name = \"x\"\n{}planes = {}\n", "\n".repeat(blank_lines), nested(depth, mix));
        let r = Spec::parse(&text, format, "n.toml");
        let line = blank_lines + 2;
        let refusal = format!("n.toml: (top level): line {line}: nested deeper than {MAX_NESTING} levels");
        match r {
            Err(e) if depth > MAX_NESTING => prop_assert!(e.to_string().starts_with(&refusal), "{e}"),
            Ok(_) if depth > MAX_NESTING => prop_assert!(false, "depth {depth} was accepted"),
            Err(e) => prop_assert!(!e.to_string().contains("nested deeper"), "depth {depth}: {e}"),
            Ok(_) => {}
        }
    }

    #[test]
    fn indentation_past_the_limit_is_refused_naming_the_line(
        indent in prop_oneof![4 => 0usize..=2 * MAX_INDENT, 1 => 0usize..=4_000_000],
        line in 2usize..500,
    ) {
        let mut text = String::from("name: x\n");
        text.push_str(&"#\n".repeat(line - 2));
        text.push_str(&" ".repeat(indent));
        text.push_str("planes: []\n");
        let e = Spec::parse(&text, Format::Yaml, "i.yaml").map(|_| ()).unwrap_err().to_string();
        let refusal = format!("i.yaml: (top level): line {line}: indented more than {MAX_INDENT} columns");
        if indent > MAX_INDENT {
            prop_assert!(e.starts_with(&refusal), "{e}");
        } else {
            prop_assert!(!e.contains("indented more"), "indent {indent}: {e}");
        }
    }

    #[test]
    fn brackets_in_quotes_and_comments_never_count(
        depth in depth(),
        mix in any::<u64>(),
        quote in prop_oneof![Just('"'), Just('\'')],
    ) {
        let b = nested(depth, mix);
        let text = format!("name = {quote}{b}{quote} # {b}\nplanes = []\n");
        for format in [Format::Toml, Format::Yaml] {
            if let Err(e) = Spec::parse(&text, format, "q.toml") {
                prop_assert!(!e.to_string().contains("nested deeper"), "{e}");
            }
        }
    }
}
