//! The guide's snippets are compiled only if its chapters are modules of
//! `src/guide.rs`: this keeps the chapter list there and the book's
//! `SUMMARY.md` in step, so no chapter escapes the doctests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src")
}

/// The chapter files `SUMMARY.md` links to, relative to `docs/src`.
fn summary_chapters() -> BTreeSet<String> {
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    summary
        .lines()
        .filter_map(|line| {
            let start = line.find("](")? + 2;
            let end = start + line[start..].find(')')?;
            Some(line[start..end].to_owned())
        })
        .collect()
}

/// The chapter files `src/guide.rs` includes.
fn included_chapters() -> BTreeSet<String> {
    let guide = include_str!("../src/guide.rs");
    guide
        .lines()
        .filter_map(|line| {
            let (_, path) = line.split_once("=> \"")?;
            Some(path.split_once('"')?.0.to_owned())
        })
        .collect()
}

/// Every markdown file under `docs/src` but `SUMMARY.md`.
fn chapter_files(dir: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("docs/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            chapter_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "md") {
            let relative = path.strip_prefix(docs()).expect("under docs/src");
            let relative = relative.to_string_lossy().replace('\\', "/");
            if relative != "SUMMARY.md" {
                found.insert(relative);
            }
        }
    }
}

#[test]
fn every_chapter_of_the_summary_is_a_doctest_module() {
    let summary = summary_chapters();
    let included = included_chapters();
    assert!(summary.len() > 20, "SUMMARY.md lists only {summary:?}");
    let missing: Vec<_> = summary.difference(&included).collect();
    assert!(
        missing.is_empty(),
        "add these chapters to tidings/src/guide.rs: {missing:?}"
    );
    let stale: Vec<_> = included.difference(&summary).collect();
    assert!(stale.is_empty(), "SUMMARY.md does not list: {stale:?}");
}

#[test]
fn every_chapter_file_is_in_the_summary() {
    let mut files = BTreeSet::new();
    chapter_files(&docs(), &mut files);
    let summary = summary_chapters();
    let unlisted: Vec<_> = files.difference(&summary).collect();
    assert!(
        unlisted.is_empty(),
        "list these in docs/src/SUMMARY.md: {unlisted:?}"
    );
}
