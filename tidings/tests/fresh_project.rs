//! A new project that depends on `tidings` alone, with the features the
//! quick start names, and on the crates its other `cargo add` lines name,
//! compiles the quick start's service as written: the guide promises one
//! tidings dependency, and this holds it to that.
//!
//! The project lives under the test's scratch folder, with its own target
//! folder, and takes the workspace's `Cargo.lock` so it resolves the same
//! versions offline.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tidings crate sits in the workspace")
        .to_owned()
}

/// The first Rust block of a markdown chapter, with rustdoc's hidden-line
/// markers taken off, as a user would paste it.
fn first_rust_block(markdown: &str) -> String {
    let mut lines = markdown.lines();
    lines
        .by_ref()
        .find(|line| line.starts_with("```rust"))
        .expect("a rust block");
    lines
        .take_while(|line| !line.starts_with("```"))
        .map(|line| line.strip_prefix("# ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The features `cargo add tidings --features ..` in the chapter names.
fn tidings_features(markdown: &str) -> Vec<String> {
    let line = markdown
        .lines()
        .find(|line| line.starts_with("cargo add tidings "))
        .expect("a `cargo add tidings` line");
    let (_, features) = line
        .split_once("--features ")
        .expect("the line names features");
    features.split(',').map(|f| f.trim().to_owned()).collect()
}

/// The other crates the chapter's `cargo add` lines name, as manifest
/// lines taking the version the workspace's lock file holds.
fn other_dependencies(markdown: &str) -> String {
    markdown
        .lines()
        .filter_map(|line| line.strip_prefix("cargo add "))
        .filter(|args| !args.starts_with("tidings "))
        .map(|args| {
            let mut words = args.split_whitespace();
            let name = words.next().expect("a crate name");
            let features: Vec<&str> = words
                .skip_while(|word| *word != "--features")
                .nth(1)
                .map(|list| list.split(',').collect())
                .unwrap_or_default();
            format!("{name} = {{ version = \"*\", features = {features:?} }}\n")
        })
        .collect()
}

#[test]
fn the_quick_start_compiles_in_a_project_depending_only_on_tidings() {
    let root = workspace_root();
    let chapter = std::fs::read_to_string(root.join("docs/src/quick-start.md"))
        .expect("docs/src/quick-start.md");
    let features = tidings_features(&chapter);
    assert_eq!(features, ["postgres", "rabbitmq"]);

    let project = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fresh-project");
    std::fs::create_dir_all(project.join("src")).expect("the project folder");
    let manifest = format!(
        r#"[package]
name = "fresh-service"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
tidings = {{ path = {path:?}, features = {features:?} }}
{others}
[workspace]
"#,
        path = root.join("tidings").to_string_lossy(),
        others = other_dependencies(&chapter),
    );
    std::fs::write(project.join("Cargo.toml"), manifest).expect("Cargo.toml");
    std::fs::write(project.join("src/main.rs"), first_rust_block(&chapter)).expect("main.rs");
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).expect("Cargo.lock");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--quiet"])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", project.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the quick start does not compile in a fresh project:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
