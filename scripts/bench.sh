#!/usr/bin/env bash
# Benchmarks: the numbers the issues ask for, measured in the test VM.
# Timings are taken inside one VM run and reported as ratios or shares, as
# software emulation makes absolute times meaningless.
#
# Today: the driver double's engine fairness (two saturating TSGs with equal
# timeslices, 5 s window; target within 2 points of 50/50).
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

echo "== bench: driver double engine fairness (2 TSGs, equal timeslice, 5 s)"
scripts/vm.sh double.fairness_two_tsgs >/dev/null || { cat build/vm-fast/tap.log; exit 1; }
grep '# double.fairness' build/vm-fast/tap.log | sed 's/^# double.fairness: /  /'
split=$(grep -m1 '# double.fairness: [0-9]' build/vm-fast/tap.log | sed 's/.*: \([0-9.]*\)% \/ \([0-9.]*\)%.*/\1 \2/')
awk -v s="$split" 'BEGIN { split(s, a, " "); e = a[1] - 50; if (e < 0) e = -e;
    printf "  error: %.1f points (target <= 2)\n", e; exit (e <= 2 ? 0 : 1) }'
