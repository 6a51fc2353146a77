//! The feature sets a program chooses between, each with the number of crates it compiles, as
//! the README's table shows them. `cargo xtask feature-sets` writes the table from `cargo tree`;
//! `--check`, part of `cargo xtask ci`, fails when the README's table is not what the tree says
//! (a dependency added, removed or moved behind a feature), naming the command that rewrites it.
//!
//! `cargo tree` builds nothing, so the whole command takes seconds. Each set is also built in
//! CI: the default sets by the MSRV check of `release-check`, the kube-rs ones by `kube_only`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One row of the table: what a program writes in its `[dependencies]`, and the `cargo tree`
/// arguments that select the same crates and features.
struct FeatureSet {
    /// What the program gets.
    what: &'static str,
    /// Its `[dependencies]` lines, as the README shows them.
    dependencies: &'static str,
    /// `cargo tree` arguments: packages and features.
    args: &'static [&'static str],
}

const SETS: [FeatureSet; 6] = [
    FeatureSet {
        what: "informers over this project's HTTP client",
        dependencies: "`informer-runtime`, `informer-client`",
        args: &["-p", "informer-runtime", "-p", "informer-client"],
    },
    FeatureSet {
        what: "the same, with controllers",
        dependencies: "and `informer-controller`",
        args: &["-p", "informer-runtime", "-p", "informer-client", "-p", "informer-controller"],
    },
    FeatureSet {
        what: "the same, with admission and conversion webhooks",
        dependencies: "and `informer-webhook`",
        args: &[
            "-p",
            "informer-runtime",
            "-p",
            "informer-client",
            "-p",
            "informer-controller",
            "-p",
            "informer-webhook",
        ],
    },
    FeatureSet {
        what: "informers over a kube-rs `kube::Client`",
        dependencies: "`informer-runtime`, `informer-client` with `default-features = false, features = [\"kube\"]`",
        args: &[
            "-p",
            "informer-runtime",
            "-p",
            "informer-client",
            "--no-default-features",
            "--features",
            "informer-runtime/simd-json,informer-client/kube",
        ],
    },
    FeatureSet {
        what: "the same, with controllers writing through kube-rs",
        dependencies: "and `informer-controller` with `default-features = false, features = [\"kube\", \"client\"]`",
        args: &[
            "-p",
            "informer-runtime",
            "-p",
            "informer-client",
            "-p",
            "informer-controller",
            "--no-default-features",
            "--features",
            "informer-runtime/simd-json,informer-client/kube,informer-controller/kube,informer-controller/client",
        ],
    },
    FeatureSet {
        what: "both clients (this project's, and one made from a `kube::Config`)",
        dependencies: "`informer-runtime`, `informer-client` with `features = [\"kube\"]`",
        args: &[
            "-p",
            "informer-runtime",
            "-p",
            "informer-client",
            "--features",
            "informer-client/kube",
        ],
    },
];

const START: &str = "<!-- feature-sets: written by `cargo xtask feature-sets` from `cargo tree`; `cargo xtask ci` checks it -->";
const END: &str = "<!-- /feature-sets -->";
const README: &str = "README.md";

/// `cargo xtask feature-sets [--check]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask feature-sets [--check]".to_owned()),
    };
    let readme = std::fs::read_to_string(README).map_err(|e| format!("{README}: {e}"))?;
    let (before, _, after) = split(&readme)?;
    let table = table()?;
    let written = format!("{before}{START}\n{table}{END}{after}");
    if written == readme {
        return Ok(());
    }
    if check {
        return Err(format!(
            "the feature-set table in {README} is not what `cargo tree` says today: run \
             `cargo xtask feature-sets` and commit the result\nnow:\n{table}"
        ));
    }
    std::fs::write(README, written).map_err(|e| format!("{README}: {e}"))?;
    eprintln!("wrote the feature-set table in {README}");
    Ok(())
}

/// The README around its table: the text before the start marker, the table, the text from
/// the end marker on (the end marker excluded).
fn split(readme: &str) -> Result<(&str, &str, &str), String> {
    let missing = |marker: &str| {
        format!("{README} has no line {marker:?}: add the two markers where the table goes")
    };
    let start = readme.find(START).ok_or_else(|| missing(START))?;
    let end = readme[start..].find(END).map(|i| start + i).ok_or_else(|| missing(END))?;
    let table_start = start + START.len();
    Ok((&readme[..start], &readme[table_start..end], &readme[end + END.len()..]))
}

/// The Markdown table, one row a set.
fn table() -> Result<String, String> {
    let mut table = String::from(
        "| a program that uses | `[dependencies]` | crates it compiles | not in kube-rs's own tree |\n\
         |---|---|---|---|\n",
    );
    for set in &SETS {
        let tree = Tree::of(set.args)?;
        let beyond_kube = match tree.beyond(KUBE) {
            Some(count) => count.to_string(),
            None => "(no kube-rs)".to_owned(),
        };
        let count = tree.crates.len();
        writeln!(table, "| {} | {} | {count} | {beyond_kube} |", set.what, set.dependencies)
            .map_err(|e| format!("the feature-set table: {e}"))?;
    }
    Ok(table)
}

/// kube-rs's facade crate, whose subtree is what a kube-rs program compiles anyway.
const KUBE: &str = "kube";

/// A dependency tree: every crate in it, and each crate's own subtree.
struct Tree {
    /// Distinct crates, as `(name, version)`, ours included.
    crates: BTreeSet<(String, String)>,
    /// `cargo tree --prefix depth --no-dedupe` lines, as (depth, name, version).
    lines: Vec<(usize, String, String)>,
}

impl Tree {
    /// The normal and build dependencies of the selected packages on this platform.
    fn of(args: &[&str]) -> Result<Tree, String> {
        let edges = ["-e", "normal,build", "--prefix", "depth", "--no-dedupe"];
        Ok(Tree::parse(&crate::cargo_stdout(&[&["tree"][..], args, &edges].concat())?))
    }

    /// Reads `cargo tree --prefix depth` output: `<depth><name> v<version> ...` a line, one
    /// tree a root.
    fn parse(text: &str) -> Tree {
        let lines: Vec<(usize, String, String)> = text
            .lines()
            .filter_map(|line| {
                let name_at = line.find(|c: char| !c.is_ascii_digit())?;
                let depth = line[..name_at].parse().ok()?;
                let mut words = line[name_at..].split_whitespace();
                Some((depth, words.next()?.to_owned(), words.next()?.to_owned()))
            })
            .collect();
        let crates =
            lines.iter().map(|(_, name, version)| (name.clone(), version.clone())).collect();
        Tree { crates, lines }
    }

    /// How many crates of the tree are not in `root`'s subtrees (`root` included), or `None`
    /// when `root` is not in the tree.
    fn beyond(&self, root: &str) -> Option<usize> {
        let mut inside = BTreeSet::new();
        let mut under: Option<usize> = None;
        for (depth, name, version) in &self.lines {
            if under.is_some_and(|root_depth| *depth <= root_depth) {
                under = None;
            }
            if under.is_none() && name == root {
                under = Some(*depth);
            }
            if under.is_some() {
                inside.insert((name.clone(), version.clone()));
            }
        }
        (!inside.is_empty()).then(|| self.crates.difference(&inside).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_count_once_and_those_under_kube_are_told_apart() {
        let text = "0informer-client v0.1.0 (/w/informer-client)\n1serde v1.0.228\n\
                    1kube v5.0.0\n2kube-client v5.0.0\n3serde v1.0.228\n3tower v0.5.0\n\
                    1bytes v1.0.0\n\n0informer-runtime v0.1.0 (/w/informer-runtime)\n\
                    1serde v1.0.228\n";
        let tree = Tree::parse(text);
        assert_eq!(tree.crates.len(), 7);
        // kube, kube-client, serde and tower are kube-rs's; the client, the runtime and bytes
        // are not.
        assert_eq!(tree.beyond("kube"), Some(3));
        assert_eq!(tree.beyond("reqwest"), None);
    }

    #[test]
    fn the_table_is_found_between_its_markers() {
        let readme = format!("intro\n{START}\n| old |\n{END}\nrest\n");
        let (before, table, after) = split(&readme).unwrap();
        assert_eq!((before, table, after), ("intro\n", "\n| old |\n", "\nrest\n"));
        assert!(split("no markers").unwrap_err().contains("markers"));
    }
}
