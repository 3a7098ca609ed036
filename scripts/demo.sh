#!/usr/bin/env bash
# The main job end to end on a bundled example. It grows with the subcommands:
# expand -> optimize -> render -> run --check once they land; today it shows
# what exists.
set -euo pipefail
tapestry=${1:-build/release/bin/tapestry}
out=${DEMO_OUT:-build/demo}
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "tapestry --version"
"$tapestry" --version
step "tapestry --version --format json"
"$tapestry" --version --format json
step "tapestry --help"
"$tapestry" --help
echo
echo "demo: done (outputs in $out)"
