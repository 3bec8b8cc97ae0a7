#!/usr/bin/env bash
# Record the calls NVIDIA's userspace makes (selftests/traces/, docs/
# testing.md, "Traces"): runs the nvidia_userspace suite in the VM for
# each release Debian ships it at (550.163.01, and 535.261.03 with the
# double claiming it), whose tests run each program under nvtrace with
# NVTRACE_PARAMS=1 directly on the double and in a container through
# vgpu and print its trace ("# trace RELEASE/PROGRAM-MODE: LINE", made
# run-independent by selftests/vmtest/src/traces.rs), and writes each to
# selftests/traces/RELEASE/PROGRAM-MODE.trace (the last run of a name
# wins). Review the diff and commit it. Record on Debian's stock kernel
# (the default), as the committed traces were: the traces depend on the
# kernel a little (535's nvidia-smi asks SYS_PARAMS only where the
# kernel has memory blocks in sysfs, which the fast kernel has not; the
# test's PID, below 64 there, is not named pid@).
#
#   scripts/record-traces.sh [--variant stock|fast] [--from-logs]
#   (--from-logs: extract from the last runs' build/vm-*/tap.log only)
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

variant=stock from_logs=""
while [ $# -gt 0 ]; do
    case $1 in
        --variant) variant=$2; shift 2 ;;
        --from-logs) from_logs=1; shift ;;
        *) echo "record-traces: unknown argument $1" >&2; exit 2 ;;
    esac
done
logs=("build/vm-$variant/tap.log" "build/vm-$variant-535.261.03/tap.log")
if [ -z "$from_logs" ]; then
    scripts/vm.sh --variant "$variant" nvidia_userspace || true
    scripts/vm.sh --variant "$variant" --release 535.261.03 nvidia_userspace || true
fi
for log in "${logs[@]}"; do
    [ -f "$log" ] || { echo "record-traces: $log missing" >&2; exit 1; }
done
python3 - "${logs[@]}" <<'PY'
import os, re, sys
traces = {}
for log in sys.argv[1:]:
    for line in open(log, errors="replace"):
        m = re.match(r"^# trace ([0-9.]+/[A-Za-z0-9-]+-(direct|vgpu)): (.*)$", line.rstrip("\n"))
        if not m:
            continue
        name, text = m.group(1), m.group(3)
        if text.startswith("# ") and "recorded by" in text:
            traces[name] = []
        traces.setdefault(name, []).append(text)
if not traces:
    sys.exit("record-traces: no trace in " + " ".join(sys.argv[1:]))
for name, lines in sorted(traces.items()):
    path = os.path.join("selftests/traces", name + ".trace")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"record-traces: {path}: {sum(1 for l in lines if not l.startswith(('#', '@')))} calls")
PY
