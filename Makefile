# SPDX-License-Identifier: GPL-2.0
#
# vgpu: build the module against a kernel build tree.
#
#   make                                   build against the debug test kernel
#   make KDIR=/lib/modules/$(uname -r)/build NVIDIA_SYMVERS=.../Module.symvers
#                                          build against a node's kernel
#   make install                           modules_install + depmod
#   make test                              every test (host, KUnit, VM): on
#                                          Debian's stock kernel and the
#                                          debug kernel (scripts/test.sh)
#   make fuzz [FUZZ=calls=N,kills=N,...]   the reliability campaign (debug kernel)
#   make demo                              the VM demo, on Debian's stock kernel
#   make image                             the Kubernetes DaemonSet's image, offline:
#                                          build/vgpu-node-VERSION.oci.tar
#   make vm                                boot the test VM (stock kernel) to a shell
#   make check                             rustfmt + clippy + warnings as errors
#
# The test kernel is built with LLVM=-19; a node's kernel takes whatever it was
# built with (pass LLVM=... yourself if it was built with clang).

TEST_KDIR := $(CURDIR)/build/kernel-debug
KDIR ?= $(TEST_KDIR)
ifeq ($(KDIR),$(TEST_KDIR))
LLVM ?= -19
# vgpu calls the driver's nvidia_get_rm_ops: against the test kernel, the
# driver double provides it.
NVIDIA_SYMVERS ?= $(CURDIR)/build/mod-debug/selftests/nvidia/Module.symvers
endif
# On a node: the Module.symvers of the NVIDIA driver build
# (open-gpu-kernel-modules: kernel-open/Module.symvers).
ifneq ($(NVIDIA_SYMVERS),)
KBUILD_OPTS += KBUILD_EXTRA_SYMBOLS=$(NVIDIA_SYMVERS)
endif
ifneq ($(LLVM),)
KBUILD_OPTS += LLVM=$(LLVM)
endif
ifeq ($(WERROR),1)
KBUILD_OPTS += KRUSTFLAGS=-Dwarnings KCFLAGS=-Werror
endif
ifeq ($(CLIPPY),1)
KBUILD_OPTS += CLIPPY=1
endif

.PHONY: all modules install modules_install clean check test test-all-branches bench fuzz demo vm kernel image

all: modules

modules: $(if $(filter $(TEST_KDIR),$(KDIR)),kernel)
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KBUILD_OPTS) modules

kernel:
	@scripts/build-kernel.sh debug
	@scripts/build-modules.sh debug >/dev/null

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KBUILD_OPTS) modules_install

install: modules_install

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KBUILD_OPTS) clean 2>/dev/null || true
	cd userspace && cargo clean

check:
	$(MAKE) WERROR=1 CLIPPY=1 modules
	rustfmt --edition 2021 --check src/vgpu_main.rs selftests/nvidia/nvidia_main.rs selftests/kclient_test/nvidia_kclient_test.rs
	cd userspace && cargo fmt --all -- --check && cargo clippy --all-targets -- -D warnings

test:
	scripts/test.sh $(TEST_ARGS)

# As test, with every suite on the stock kernel once per driver release vgpu
# has tables for (test runs the newest and the oldest).
test-all-branches:
	scripts/test.sh --all-branches $(TEST_ARGS)

bench:
	scripts/bench.sh

# The fuzzer, kill storms, fault injection and load cycles on the debug
# kernel, with a budget (default: 10^6 calls, 10^4 kill cycles); prints the
# figures and the reports found.
fuzz:
	scripts/fuzz.sh $(FUZZ)

demo:
	scripts/demo.sh

vm:
	scripts/vm.sh --variant stock --shell

# The image of deploy/kubernetes/daemonset.yaml, localhost/vgpu/vgpu-node,
# FROM scratch with the static plugin and vgpuctl, built with podman and
# nothing pulled; an OCI archive to load on each node (docs/kubernetes.md).
image:
	scripts/image.sh
