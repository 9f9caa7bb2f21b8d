# shellcheck shell=bash
# Sourced by the scripts: TARGET_DIR is where cargo puts its builds (honours CARGO_TARGET_DIR
# and .cargo/config.toml, which a hard-coded `target/` would not).
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
export TARGET_DIR
