#!/usr/bin/env bash
# Builds the outside app (.ci/outside-app) against the heimdall crates as packaged: packs the
# library crates with `cargo package --workspace --no-verify` (the examples, benches and test kit
# are not published), unpacks each `.crate` and points `[patch.crates-io]` at them, as an app
# depending on the published crates would see them. Uses CARGO_TARGET_DIR (default: target/ of the
# repository), so a warm workspace build of Bevy serves the app too.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_TARGET_DIR="$target"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)

# --allow-dirty: this packs the working tree for a local build, it publishes nothing.
cargo package --workspace --no-verify --allow-dirty \
    --exclude heimdall-examples --exclude heimdall-benches --exclude heimdall-testkit

unpacked="$target/outside-app-crates"
rm -rf "$unpacked"
mkdir -p "$unpacked"
patches=()
for crate in "$target"/package/heimdall-*-"$version".crate; do
    tar -xzf "$crate" -C "$unpacked"
    name=$(basename "$crate" ".crate")
    name="${name%-"$version"}"
    # The tool and the clips are packed (and so checked) but are not in the app's graph.
    case "$name" in heimdall-cli | heimdall-clip) continue ;; esac
    patches+=(--config "patch.crates-io.$name.path=\"$unpacked/$name-$version\"")
done
# `.crate` archives carry a fixed old mtime (cargo packs reproducibly): touched, the unpacked
# sources are newer than any earlier build of the same crate in this target dir, so cargo compiles
# them instead of taking a stale build of an older version for fresh (a fresh clone's CI saw an
# old heimdall-coordinator without the types heimdall-bevy imports).
find "$unpacked" -type f -exec touch {} +
echo "packaged: $(( ${#patches[@]} / 2 )) crates of version $version patched in from $unpacked"

# The workspace's lock file, so that the app resolves the same versions (and reuses their build).
cp Cargo.lock .ci/outside-app/Cargo.lock
cargo build --release --manifest-path .ci/outside-app/Cargo.toml "${patches[@]}" "$@"
