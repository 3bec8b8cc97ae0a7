// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu's struct pid helpers (src/c/pid.c), built into the double too: it
 * shares their Rust wrapper (src/kapi/pid.rs) to keep each client's
 * process the way RM does.
 */
#include "../../src/c/pid.c"
