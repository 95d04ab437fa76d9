#!/usr/bin/env bash
# Installs what tps needs from Debian's packages (and npm for the web report).
# Idempotent: packages already present are not fetched again.
#   scripts/install-deps.sh          build dependencies
#   scripts/install-deps.sh --test   plus what the tests use (clang for fuzzing, chromium)
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config git
          libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libgtest-dev libgmock-dev libbenchmark-dev libpcre2-dev libxxhash-dev
          nodejs npm openmpi-bin libopenmpi-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(clang libclang-rt-14-dev chromium python3 iproute2)
fi

missing=()
for p in "${packages[@]}"; do
  # nodejs may come from another repository that bundles npm; accept a working npm.
  if [[ "$p" == npm ]] && command -v npm >/dev/null; then continue; fi
  if [[ "$p" == nodejs ]] && command -v node >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
