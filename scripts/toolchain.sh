# Sourced by the scripts that run cargo. A dependency under lapin's TLS
# stack (flagset) ships a rust-toolchain.toml naming an old toolchain, and
# rustup honours it while compiling that crate unless RUSTUP_TOOLCHAIN is
# set, which rustup's own cargo proxy does but a cargo started otherwise
# does not. Pin the toolchain this workspace resolves to, unless one is
# chosen already.
if [ -z "${RUSTUP_TOOLCHAIN:-}" ] && command -v rustup >/dev/null; then
  RUSTUP_TOOLCHAIN=$(rustup show active-toolchain 2>/dev/null | cut -d' ' -f1)
  [ -n "$RUSTUP_TOOLCHAIN" ] && export RUSTUP_TOOLCHAIN
fi
