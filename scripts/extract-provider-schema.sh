#!/usr/bin/env bash
# Regenerates terraform/provider-schema.json: the provider schema of exactly
# the resource and data source types the modules under terraform/ use, which
# `go test ./terraform/ -run TestProviderSchema` checks the modules against.
#
#   scripts/extract-provider-schema.sh                  # install the packages, extract
#   scripts/extract-provider-schema.sh --node-modules DIR/node_modules   # reuse an install
#
# The packages (@cdktf/provider-google ~300 MB, @cdktf/provider-archive) are
# installed with npm into a temporary folder outside the repository and
# removed afterwards; node_modules is never committed. Run it after adding a
# resource or data type to terraform/, or to move to another provider
# version (change the versions below, then read the diff of the JSON file).
set -euo pipefail

GOOGLE_PKG="@cdktf/provider-google@16.12.1"   # generated from hashicorp/google 6.50.0
ARCHIVE_PKG="@cdktf/provider-archive@11.0.1"  # generated from hashicorp/archive 2.7.1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_MODULES=""
case "${1:-}" in
  --node-modules)
    [[ $# -eq 2 && -n "$2" ]] || { echo "usage: $0 [--node-modules DIR]" >&2; exit 2; }
    NODE_MODULES="$2"
    ;;
  -h | --help)
    sed -n '2,13p' "$0"
    exit 0
    ;;
  "") ;;
  *)
    echo "usage: $0 [--node-modules DIR]" >&2
    exit 2
    ;;
esac

if [[ -z "$NODE_MODULES" ]]; then
  TMP="$(mktemp -d "${TMPDIR:-/tmp}/bqcdc-provider-schema.XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  echo "installing $GOOGLE_PKG and $ARCHIVE_PKG into $TMP (about 300 MB)" >&2
  npm install --prefix "$TMP" --no-audit --no-fund --ignore-scripts --no-save "$GOOGLE_PKG" "$ARCHIVE_PKG" >&2
  NODE_MODULES="$TMP/node_modules"
fi

node "$ROOT/scripts/extract-provider-schema.mjs" --node-modules "$NODE_MODULES" \
  --terraform "$ROOT/terraform" --out "$ROOT/terraform/provider-schema.json"
