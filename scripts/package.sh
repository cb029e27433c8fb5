#!/usr/bin/env bash
# Packages every crate meant for crates.io as `cargo publish` would, and
# builds the packages from their archives alone, with all features.
#
#   bash scripts/package.sh [extra cargo package arguments, e.g. --allow-dirty]
#
# `cargo package` verifies each archive by building it on its own, outside
# the workspace's profile and feature set, so on two cores it rebuilds the
# whole dependency tree once per crate (measured: over 20 minutes for the
# first five). Here the archives are unpacked into one scratch workspace
# with the workspace's profile, patched to each other, and built once in
# the workspace's target directory, where the dependencies are already
# built: the same proof (every file a crate needs is in its archive, every
# dependency resolves by version) in a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/toolchain.sh

metadata=$(cargo metadata --no-deps --format-version 1)
target=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$metadata")
# The crates marked `publish = false` stay out.
mapfile -t unpublished < <(python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] == []:
        print(p["name"])' <<<"$metadata")
excluded=()
for name in "${unpublished[@]}"; do excluded+=(--exclude "$name"); done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo package --workspace "${excluded[@]}" --no-verify "$@" 2>&1 | tee "$log"
# crates.io takes a crate without these, but a user finds it by them.
if grep -q "warning: manifest has no" "$log"; then
  echo "package: a manifest lacks metadata crates.io shows (see the warnings above)" >&2
  exit 1
fi

scratch="$target/package/check"
rm -rf "$scratch"
mkdir -p "$scratch"
members=()
patches=()
for archive in "$target"/package/*.crate; do
  tar -xzf "$archive" -C "$scratch"
  dir=$(basename "$archive" .crate)
  name=${dir%-*}
  members+=("\"$dir\"")
  patches+=("$name = { path = \"$dir\" }")
done
{
  echo "[workspace]"
  echo "resolver = \"3\""
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo
  echo "[patch.crates-io]"
  printf '%s\n' "${patches[@]}"
  echo
  # The workspace's own profile, so the dependencies built for the tests
  # are used as they are.
  sed -n '/^\[profile\./,$p' Cargo.toml
} >"$scratch/Cargo.toml"
cp Cargo.lock "$scratch/Cargo.lock"

echo "package: building ${#members[@]} packages from their archives" >&2
CARGO_TARGET_DIR="$target" cargo build --manifest-path "$scratch/Cargo.toml" \
  --workspace --all-features
