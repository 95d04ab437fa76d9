#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
if [[ ! -d ../shared/fixtures ]]; then
  echo "note: ../shared/fixtures is absent: tests that need the fixtures will skip"
fi
scripts/fuzz.sh 30
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
