#!/usr/bin/env bash
# The main job: boot the test VM and run the demo (selftests/demo-guest.sh),
# printing what it shows. Builds whatever is missing first. It runs on
# Debian's stock kernel (scripts/stock-kernel.sh: no kernel to build, its
# Rust build products rebuilt in a trixie root); `scripts/demo.sh
# --variant fast` runs it on the project's fast kernel.
set -euo pipefail
exec "$(dirname "$0")/vm.sh" --variant stock --demo "$@"
