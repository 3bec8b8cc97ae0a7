#!/usr/bin/env bash
# The main job: boot the test VM and run the demo (selftests/demo-guest.sh),
# printing what it shows. Builds whatever is missing first.
set -euo pipefail
exec "$(dirname "$0")/vm.sh" --demo "$@"
