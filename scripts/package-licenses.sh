#!/usr/bin/env bash
# Checks that each named package, as `cargo package` wrote it, carries both license texts of the
# root, byte for byte:
#
#   bash scripts/package-licenses.sh checkpoint-core checkpoint-subscription ...
#
# Run after `cargo package` of the same packages (scripts/test.sh does). A crate's LICENSE-MIT
# and LICENSE-APACHE are links to the root's files, which cargo packages as the texts they point
# to; a plain file that holds the path instead ("../LICENSE-MIT") is packaged as that path, and
# a check of the package's file list alone passes it. So this reads each license out of the
# `.crate` archive and compares it with the root's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
packages_dir="${CARGO_TARGET_DIR:-$ROOT/target}/package"

failed=0
for package in "$@"; do
  # `path+file:///…/checkpoint-core#0.1.0` (or `…#name@0.1.0`): the version follows the last
  # `#` or `@`.
  id=$(cargo pkgid --offline -p "$package")
  version="${id##*[#@]}"
  crate="$packages_dir/$package-$version.crate"
  if [[ ! -f "$crate" ]]; then
    echo "$package: no $crate (run cargo package first)" >&2
    failed=1
    continue
  fi
  for license in LICENSE-MIT LICENSE-APACHE; do
    if ! tar -xzOf "$crate" "$package-$version/$license" 2>/dev/null | cmp -s - "$license"; then
      echo "$package: its package's $license is not the root's $license" >&2
      failed=1
    fi
  done
done
exit "$failed"
