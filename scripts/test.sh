#!/usr/bin/env bash
# Runs every test of the workspace against real services, starting any
# that are missing first.
#
#   bash scripts/test.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-services.sh
cargo test --workspace --all-targets "$@"
cargo build -p tidings-examples --all-features --bins
cargo test --workspace --doc "$@"
