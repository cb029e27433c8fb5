//! Every `cargo run` command written in the repository's READMEs, guide and
//! program headers names a program that exists and every feature it needs,
//! so each works as written.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A workspace package: its folder and its programs' required features.
struct Package {
    bins: HashMap<String, BTreeSet<String>>,
    has_main: bool,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the examples crate sits in the workspace")
        .to_owned()
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.parse()
        .unwrap_or_else(|e| panic!("{path:?} is not TOML: {e}"))
}

/// The workspace's packages by name.
fn packages(root: &Path) -> HashMap<String, Package> {
    let workspace = read_toml(&root.join("Cargo.toml"));
    let members = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace members");
    let mut packages = HashMap::new();
    for member in members {
        let dir = root.join(member.as_str().expect("a member path"));
        let manifest = read_toml(&dir.join("Cargo.toml"));
        let name = manifest["package"]["name"].as_str().expect("a name");
        let mut bins = HashMap::new();
        for bin in manifest
            .get("bin")
            .and_then(|b| b.as_array())
            .into_iter()
            .flatten()
        {
            let features = bin
                .get("required-features")
                .and_then(|f| f.as_array())
                .into_iter()
                .flatten()
                .map(|f| f.as_str().expect("a feature").to_owned())
                .collect();
            bins.insert(
                bin["name"].as_str().expect("a bin name").to_owned(),
                features,
            );
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) {
            for entry in entries.flatten() {
                let path = entry.path();
                if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                    bins.entry(stem.to_owned()).or_default();
                }
            }
        }
        let has_main = dir.join("src/main.rs").exists();
        packages.insert(name.to_owned(), Package { bins, has_main });
    }
    packages
}

/// Markdown and Rust files of the repository, build output aside.
fn files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && !name.to_string_lossy().starts_with('.') {
                files(&path, found);
            }
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("md" | "rs")) {
            found.push(path);
        }
    }
}

/// What a `cargo run` line asks for: package, features, program.
fn parse(line: &str) -> Option<(String, BTreeSet<String>, Option<String>)> {
    let command = &line[line.find("cargo run")?..];
    let words: Vec<&str> = command
        .split_whitespace()
        .take_while(|w| *w != "--" && *w != "#" && !w.starts_with('`'))
        .collect();
    let value = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
            .map(|w| w.trim_end_matches(['`', '.', ',', ')']).to_owned())
    };
    let package = value("-p")?;
    let features = value("--features")
        .map(|f| f.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    Some((package, features, value("--bin")))
}

#[test]
fn every_run_command_names_its_program_and_features() {
    let root = workspace_root();
    let packages = packages(&root);
    let mut found = Vec::new();
    files(&root, &mut found);
    let mut checked = 0;
    let mut problems = Vec::new();
    for path in found {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let Some((package, features, bin)) = parse(line) else {
                continue;
            };
            let place = format!("{}:{}", path.strip_prefix(&root).unwrap().display(), n + 1);
            checked += 1;
            let Some(found) = packages.get(&package) else {
                problems.push(format!("{place}: no package {package}"));
                continue;
            };
            match bin {
                Some(bin) => match found.bins.get(&bin) {
                    None => problems.push(format!("{place}: {package} has no program {bin}")),
                    Some(needed) => {
                        let missing: Vec<_> = needed.difference(&features).collect();
                        if !missing.is_empty() {
                            problems
                                .push(format!("{place}: {bin} also needs --features {missing:?}"));
                        }
                    }
                },
                None if !found.has_main && found.bins.len() != 1 => {
                    problems.push(format!("{place}: {package} needs --bin"));
                }
                None => {}
            }
        }
    }
    assert!(checked >= 10, "only {checked} commands found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
