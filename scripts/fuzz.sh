#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a bounded time.
# Usage: scripts/fuzz.sh [seconds per target, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPS_FUZZ=ON >/dev/null
targets=$(cd fuzz && ls *.cpp | sed 's/\.cpp$//')
cmake --build build-fuzz -j "$(nproc)" --target $targets

fixtures=../shared/fixtures
status=0
vocab="$fixtures/vocab/ggml-vocab-gpt-2.gguf"
[[ -f $vocab ]] || vocab=""
for t in $targets; do
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  # Seeds: the first bytes of real files, where the fixtures are present. The tokenizer
  # target uses a fixture vocabulary when it exists, else its built-in ones.
  if [[ -d $fixtures ]]; then
    case $t in
      fuzz_gguf) for f in "$fixtures"/models/stories260K.gguf "$fixtures"/models/synthetic/llama-gqa-q4_k_m.gguf; do
                   head -c 4096 "$f" > "$corpus/seed_$(basename "$f")"; done ;;
      fuzz_tokenizer) cp "$fixtures"/vocab/*.inp "$corpus/" 2>/dev/null || true ;;
    esac
  fi
  echo "fuzzing $t for ${seconds}s"
  if ! env ${vocab:+TPS_FUZZ_VOCAB="$vocab"} "build-fuzz/$t" -timeout=10 -max_total_time="$seconds" -max_len=4096 -print_final_stats=0 \
        "$corpus" > "build-fuzz/$t.log" 2>&1; then
    echo "FAILED: $t (log: build-fuzz/$t.log)"; tail -40 "build-fuzz/$t.log"; status=1
  fi
done
[[ $status -eq 0 ]] && echo "fuzz: $(echo $targets | wc -w) targets ran ${seconds}s each without a finding"
exit $status
