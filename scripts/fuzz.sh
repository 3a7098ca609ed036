#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz, built by the `fuzz` preset with clang,
# ASan and UBSan) for SECONDS each, one after another, and prints executions,
# coverage and findings per target. Exit status 1 when any target found
# something; the reproducer is then under build/fuzz/findings/TARGET/.
#   scripts/fuzz.sh [SECONDS=60] [TARGET...]        (targets: expr metakernel graph target plan rewrite onnx)
# A finding is fixed, then kept as a regression input in testdata/bad/ (or
# testdata/fuzz/expr/ for the expression fuzzer), which every build's
# `fuzz replay` tests run from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(expr metakernel graph target plan rewrite onnx)
fi

bash scripts/install-deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

declare -A seeds=(
  [expr]="testdata/fuzz/expr"
  [metakernel]="metakernels testdata/metakernels testdata/bad/metakernels"
  [graph]="testdata/graphs testdata/expanded testdata/bad/graphs"
  [target]="core/cost/targets testdata/targets testdata/bad/targets"
  [plan]="testdata/plans testdata/bad/plans"
  [rewrite]="metakernels/rewrites testdata/rewrites testdata/bad/rewrites testdata/graphs testdata/fuzz/rewrite build/fuzz/seeds/rewrite"
  [onnx]="testdata/onnx testdata/bad/onnx testdata/fuzz/onnx"
)

# The standard rules file is one 46 KB input; each of its rules alone is a
# seed too (a top-level key and the lines under it), which fuzzes faster.
mkdir -p build/fuzz/seeds/rewrite
awk '/^[a-z_0-9]+:$/ { out = "build/fuzz/seeds/rewrite/" substr($0, 1, length($0) - 1) ".yaml" }
     out != "" { print > out }' metakernels/rewrites/*.yaml

status=0
summary=build/fuzz/summary.txt
: >"$summary"
for t in "${targets[@]}"; do
  if [ -z "${seeds[$t]+x}" ]; then
    echo "fuzz.sh: unknown target '$t' (expected: ${!seeds[*]})" >&2
    exit 2
  fi
  corpus=build/fuzz/corpus/$t
  findings=build/fuzz/findings/$t
  log=build/fuzz/logs/$t.log
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  # shellcheck disable=SC2086
  if ! build/fuzz/tests/fuzz/fuzz_"$t" "$corpus" ${seeds[$t]} \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1; then
    status=1
    result="FINDING (see $log, reproducer in $findings/)"
  else
    result="no finding"
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | awk '{print $2}')
  line="$t: ${seconds}s, ${execs:-?} executions, coverage ${cov:-?} edges (${ft:-?} features), corpus ${corp:-?} inputs: $result"
  echo "$line" | tee -a "$summary"
done
exit $status
