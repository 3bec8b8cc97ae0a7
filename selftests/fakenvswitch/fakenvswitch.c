// SPDX-License-Identifier: GPL-2.0
/*
 * fakenvswitch: one PCI function, 10de:0fee class 0x068000, on a software
 * root bus in a PCI domain of its own (0x10de0), so that NVIDIA's real
 * kernel module loads in the test VM, which has no NVIDIA GPU.
 *
 * Why this is enough (NVIDIA open-gpu-kernel-modules, tag 550.163.01):
 *
 * - nvidia_init_module (kernel-open/nvidia/nv.c:827) computes
 *   is_nvswitch_present = os_is_nvswitch_present() first (nv.c:832). It
 *   then brings up RM core (nv_module_init, nv.c:857; rm_init_rm at
 *   nv.c:707), before any device is counted.
 * - Each of its three no-GPU failures is skipped when that is true:
 *   "No NVIDIA GPU found." (count == 0, nv.c:864-870), "No NVIDIA devices
 *   probed." (nv.c:893-898) and "None of the NVIDIA devices were
 *   initialized." (nv.c:907-913). The module then prints "NVRM: loading"
 *   (nv.c:924) and registers the "nvidia" and "nvidiactl" char devices
 *   (nv.c:940-948).
 * - os_is_nvswitch_present (kernel-open/nvidia/os-interface.c:1983-1995) is
 *   pci_dev_present() of PCI_DEVICE(0x10de, PCI_ANY_ID) with class
 *   PCI_CLASS_BRIDGE_OTHER << 8 and class_mask PCI_ANY_ID: vendor and the
 *   exact class 0x068000 (so the prog-if must be 0). It reads no device ID,
 *   BAR or register. The GPU count (nv_pci_count_devices,
 *   kernel-open/nvidia/nv-pci.c:1242-) looks only at display-class
 *   devices, so the fake function is never counted as a GPU.
 * - The NVSwitch PCI driver inside nvidia.ko binds that same class
 *   (kernel-open/nvidia/linux_nvswitch.c:104-115), but nvswitch_probe
 *   returns -EINVAL at once (linux_nvswitch.c:1267-1270) unless
 *   nvswitch_lib_validate_device_id
 *   (src/common/nvswitch/kernel/nvswitch.c:2064-2078) finds the ID among
 *   the LR10/LS10 IDs (nvswitch.c:69-83: 0x1ae8, 0x1af0-0x1aff,
 *   0x22a0-0x22af). 0x0fee is none of them, so the probe touches no BAR,
 *   and dmesg shows "probe with driver nvidia-nvswitch failed with error
 *   -22", which is expected.
 *
 * What it does not give: a GPU. With no GPU, RM core, the control node
 * /dev/nvidiactl, NV01_ROOT clients, NV0000 controls and the kernel-client
 * table (nvidia_get_rm_ops) run real RM code, but NV01_DEVICE_0 and every
 * object below it fail (NV_ERR_INVALID_STATE, measured at 595.45.04):
 * they need an adapter brought up by rm_init_adapter, which boots GSP-RM
 * firmware on real hardware and cannot be faked.
 *
 * The bus follows drivers/pci/controller/vmd.c: an x86 struct pci_sysdata
 * names the domain, above the 16 bits of ACPI segments; the domain number
 * is reserved in the emulated-domain IDA like VMD's. The config space is a
 * constant 256-byte header: no BARs (writes are ignored, so BAR sizing
 * reads 0), no capabilities, no interrupt pin. No memory or I/O window is
 * needed and nothing is mapped.
 */

#include <linux/module.h>
#include <linux/pci.h>

#define FAKENVSWITCH_DOMAIN	0x10de0
#define FAKENVSWITCH_DEVICE	0x0fee	/* not an NVSwitch ID */

static u8 fakenvswitch_config[PCI_CFG_SPACE_SIZE];

static struct pci_sysdata fakenvswitch_sysdata = {
	.domain = FAKENVSWITCH_DOMAIN,
	.node = NUMA_NO_NODE,
};

static struct resource fakenvswitch_busn = {
	.name = "fakenvswitch",
	.start = 0,
	.end = 0,
	.flags = IORESOURCE_BUS | IORESOURCE_PCI_FIXED,
};

static struct pci_bus *fakenvswitch_bus;

static bool fakenvswitch_present(struct pci_bus *bus, unsigned int devfn,
				 int where, int size)
{
	return bus->number == 0 && devfn == 0 && where >= 0 &&
	       where + size <= PCI_CFG_SPACE_SIZE;
}

static int fakenvswitch_read(struct pci_bus *bus, unsigned int devfn,
			     int where, int size, u32 *val)
{
	u32 v = 0;
	int i;

	if (!fakenvswitch_present(bus, devfn, where, size)) {
		PCI_SET_ERROR_RESPONSE(val);
		return PCIBIOS_DEVICE_NOT_FOUND;
	}
	for (i = size - 1; i >= 0; i--)
		v = (v << 8) | fakenvswitch_config[where + i];
	*val = v;
	return PCIBIOS_SUCCESSFUL;
}

static int fakenvswitch_write(struct pci_bus *bus, unsigned int devfn,
			      int where, int size, u32 val)
{
	if (!fakenvswitch_present(bus, devfn, where, size))
		return PCIBIOS_DEVICE_NOT_FOUND;
	return PCIBIOS_SUCCESSFUL;	/* read-only: BARs size to 0 */
}

static struct pci_ops fakenvswitch_ops = {
	.read = fakenvswitch_read,
	.write = fakenvswitch_write,
};

static void fakenvswitch_put16(int where, u16 v)
{
	fakenvswitch_config[where] = v & 0xff;
	fakenvswitch_config[where + 1] = v >> 8;
}

static int __init fakenvswitch_init(void)
{
	LIST_HEAD(resources);
	int domain;

	fakenvswitch_put16(PCI_VENDOR_ID, PCI_VENDOR_ID_NVIDIA);
	fakenvswitch_put16(PCI_DEVICE_ID, FAKENVSWITCH_DEVICE);
	/* Class 0x068000: base 0x06, sub-class 0x80, prog-if 0, revision 0. */
	fakenvswitch_put16(PCI_CLASS_DEVICE, PCI_CLASS_BRIDGE_OTHER);
	fakenvswitch_config[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_NORMAL;

	domain = pci_bus_find_emul_domain_nr(FAKENVSWITCH_DOMAIN,
					     FAKENVSWITCH_DOMAIN,
					     FAKENVSWITCH_DOMAIN);
	if (domain < 0)
		return domain == -ENOSPC ? -EBUSY : domain;

	pci_add_resource(&resources, &fakenvswitch_busn);
	pci_lock_rescan_remove();
	fakenvswitch_bus = pci_scan_root_bus(NULL, 0, &fakenvswitch_ops,
					     &fakenvswitch_sysdata, &resources);
	if (fakenvswitch_bus)
		pci_bus_add_devices(fakenvswitch_bus);
	pci_unlock_rescan_remove();
	if (!fakenvswitch_bus) {
		pci_free_resource_list(&resources);
		pci_bus_release_emul_domain_nr(domain);
		return -ENODEV;
	}
	return 0;
}

static void __exit fakenvswitch_exit(void)
{
	pci_lock_rescan_remove();
	pci_stop_root_bus(fakenvswitch_bus);
	pci_remove_root_bus(fakenvswitch_bus);
	pci_unlock_rescan_remove();
	pci_bus_release_emul_domain_nr(FAKENVSWITCH_DOMAIN);
}

module_init(fakenvswitch_init);
module_exit(fakenvswitch_exit);

MODULE_DESCRIPTION("Fake NVSwitch PCI function that lets nvidia.ko load without a GPU");
MODULE_LICENSE("GPL");
