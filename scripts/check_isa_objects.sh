#!/usr/bin/env bash
# Fails when an object compiled with one instruction set's flags (*_avx2.cpp,
# *_avx_vnni.cpp, *_avx512.cpp, *_avx512_gfni.cpp, *_amx.cpp) defines a weak symbol (an
# inline function or template instance) outside a namespace of its own: the linker
# keeps one copy of each weak symbol for the whole program, so an AVX-512 copy of a
# shared inline function could serve an AVX2-only caller and fault there.
# Usage: scripts/check_isa_objects.sh BUILD_DIR
set -euo pipefail
build=$1
objects=$(find "$build/CMakeFiles/tps_lib.dir/src" -name '*_avx2.cpp.o' -o -name '*_avx_vnni.cpp.o' \
               -o -name '*_avx512.cpp.o' -o -name '*_avx512_gfni.cpp.o' -o -name '*_amx.cpp.o')
[[ -n "$objects" ]] || { echo "no ISA objects under $build"; exit 1; }
status=0
for o in $objects; do
  isa=$(basename "$o" .cpp.o | sed -E 's/^.*_(avx2|avx_vnni|avx512_gfni|avx512|amx)$/\1/')
  # Weak definitions (W, V); allowed: the anonymous namespace, a namespace named for the
  # ISA, and the exception personality's data pointer (the same everywhere).
  bad=$(nm -C --defined-only "$o" | awk '$2 == "W" || $2 == "V" { $1 = ""; $2 = ""; print substr($0, 3) }' |
        grep -v -e '(anonymous namespace)' -e "_${isa}::" -e '^DW\.ref\.__gxx_personality_v0$' || true)
  if [[ -n "$bad" ]]; then
    echo "$o ($isa) defines shared weak symbols:"
    echo "$bad" | sed 's/^/  /'
    status=1
  fi
done
n=$(echo "$objects" | wc -l)
[[ $status -eq 0 ]] && echo "1 passed, 0 failed: $n ISA objects define no shared weak symbol"
exit $status
