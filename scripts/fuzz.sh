#!/usr/bin/env bash
# The reliability campaign (issue 19), on the debug kernel (KASAN, lockdep,
# kmemleak, failslab, fail_page_alloc, fail_function): the fuzz suite with
# a budget, then its figures and the kernel reports found.
#
#   scripts/fuzz.sh [SPEC]      (make fuzz [FUZZ=SPEC])
#
# SPEC is calls=N,kills=N,cycles=N[,seed=N][,round=N] (default: the long
# run, calls=1000000,kills=10000,cycles=100; a seed replays a run's calls,
# and round=N starts them at a failing round, as the failure names). The
# CI slice in `make test` is calls=60000,kills=500,cycles=100.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

spec=${1:-calls=1000000,kills=10000,cycles=100}
# No seed given: the guest draws one from its clock (printed first).
case "$spec" in *[!a-z0-9=,]*) echo "fuzz: bad spec $spec" >&2; exit 2 ;; esac
# Emulation runs the debug kernel at a few hundred calls a second: allow
# for the budget (and a floor for boot, storms and cycles).
calls=$(echo "$spec" | sed -n 's/.*calls=\([0-9]*\).*/\1/p')
kills=$(echo "$spec" | sed -n 's/.*kills=\([0-9]*\).*/\1/p')
timeout=$(( 900 + ${calls:-100000} / 100 + ${kills:-1000} ))

rc=0
out=$(scripts/vm.sh --variant debug --timeout "$timeout" --fuzz "$spec" fuzz 2>&1) || rc=$?
log=build/vm-debug/tap.log
echo "== fuzz ($spec), debug kernel"
grep '^# fuzz' "$log" | sed 's/^# fuzz[a-z ]*: /  /' || true
reports=$(echo "$out" | grep -c 'FAIL: kernel report' || true)
failed=$(echo "$out" | grep -c 'FAIL: selftest failed' || true)
echo "  reports found: $reports kernel report(s), $failed failed check(s)"
echo "$out" | grep -E 'FAIL|clean|allocation-failure' | sed 's/^/  /' || true
exit $rc
