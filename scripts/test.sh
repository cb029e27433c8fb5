#!/usr/bin/env bash
# Runs every test of the workspace against real services, starting any
# that are missing first.
#
#   bash scripts/test.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-services.sh
. scripts/toolchain.sh
# All features: the operator CLI and the examples that need a store or
# transport are built and tested too.
cargo test --workspace --all-targets --all-features "$@"
cargo test --workspace --doc --all-features "$@"
