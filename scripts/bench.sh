#!/usr/bin/env bash
# Sets everything up and runs the main job: `tps bench` on a built-in synthetic model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/tps bench "$@"
