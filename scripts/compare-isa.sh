#!/usr/bin/env bash
# Two kernel paths of tps side by side on this machine: `tps bench` runs once under
# TPS_ISA=A and once under TPS_ISA=B per round, the order swapped every round (a
# shared machine's drift then falls on both), and the table gives each test's median
# tok/s per path, the median of the rounds' B/A ratios and their range.
#
#   scripts/compare-isa.sh [--rounds N] [--tps PATH] A B [-- tps bench options]
#
# e.g. whether AMX beats AVX-512 for prefill, batched decode and decode here:
#   scripts/compare-isa.sh avx512 amx -- --type q4_0 -t 2 -p 512 -n 128 -B 16 -r 3
# Extra environment (TPS_FLOAT_MATH=bf16) passes through to both.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3
tps=build/tps
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --tps) tps="$2"; shift 2 ;;
    *) break ;;
  esac
done
if [[ $# -lt 2 ]]; then
  echo "usage: $0 [--rounds N] [--tps PATH] ISA_A ISA_B [-- tps bench options]" >&2
  exit 2
fi
a="$1" b="$2"
shift 2
[[ "${1:-}" == "--" ]] && shift
[[ -x "$tps" ]] || { echo "$0: no $tps (build first: bash scripts/build.sh)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  order=("$a" "$b")
  ((r % 2 == 1)) && order=("$b" "$a")
  for isa in "${order[@]}"; do
    echo "round $((r + 1))/$rounds: TPS_ISA=$isa" >&2
    TPS_ISA="$isa" "$tps" bench "$@" -o jsonl --no-progress >"$out/$isa.$r.jsonl"
  done
done

python3 - "$out" "$a" "$b" "$rounds" <<'EOF'
import json, statistics, sys
out, a, b, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def rows(isa, r):
    with open(f"{out}/{isa}.{r}.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]
tests = {}  # test name -> isa -> [(tok/s, compute path)] per round
for r in range(rounds):
    for isa in (a, b):
        for row in rows(isa, r):
            key = f"{row['test']} t{row['threads']}" + (f" B{row['batch']}" if row.get("batch", 1) > 1 else "")
            key += f" d{row['depth']}" if row.get("depth") else ""
            tests.setdefault(key, {}).setdefault(isa, []).append((row["tokens_per_s"], row.get("compute_path", "")))
print(f"| test | {a} tok/s | {b} tok/s | {b} / {a} (range) | paths |")
print("| --- | ---: | ---: | --- | --- |")
for key, by in tests.items():
    ra, rb = by.get(a, []), by.get(b, [])
    ratios = [y[0] / x[0] for x, y in zip(ra, rb) if x[0] > 0]
    med = lambda v: statistics.median(t for t, _ in v)
    paths = f"{ra[0][1]} / {rb[0][1]}" if ra and rb else ""
    spread = f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"
    print(f"| {key} | {med(ra):.1f} | {med(rb):.1f} | {spread} | {paths} |")
EOF
