// SPDX-License-Identifier: GPL-2.0

//! The `vgpuctl` binary against a simulated module: commands, JSON shapes,
//! rollback, error messages and exit codes.

mod common;

use common::{Fake, GIB};
use serde_json::json;

// Exit statuses (vgpuctl::error::exit).
const FAILURE: i32 = 1;
const USAGE: i32 = 2;
const NO_MODULE: i32 = 3;
const NOT_ROOT: i32 = 4;
const NOT_FOUND: i32 = 5;
const NO_FIT: i32 = 6;

#[test]
fn create_show_list_remove() {
    let f = Fake::new(1, Some(24), false);
    let r = f.ok(&["create", "--cgroup", "/pods/a", "--memory", "6GiB"]);
    assert_eq!(
        r.out,
        "created vgpu0 (/dev/vgpu0): GPU 0, memory 6 GiB, cgroup /pods/a\n"
    );
    assert_eq!(f.attr(0, "memory_limit"), (6 * GIB).to_string());
    assert_eq!(f.attr(0, "cgroup"), "/pods/a");
    assert_eq!(f.attr(0, "gpu"), "0");

    // The next free number; an explicit one.
    f.ok(&["create", "--cgroup", "/pods/b", "--memory", "1.5GiB"]);
    f.ok(&[
        "create", "--cgroup", "/pods/c", "--memory", "512MiB", "--id", "7",
    ]);
    assert_eq!(f.vgpus(), vec![0, 1, 7]);
    assert_eq!(f.attr(1, "memory_limit"), (3 * GIB / 2).to_string());

    let show = f.ok(&["show", "7"]);
    assert!(
        show.out.contains("memory_limit    512 MiB\n"),
        "{}",
        show.out
    );
    assert!(show.out.contains("compute_share   -\n"), "{}", show.out);

    let list = f.ok(&["list"]);
    let lines: Vec<&str> = list.out.lines().collect();
    assert_eq!(lines.len(), 4, "{}", list.out);
    assert!(lines[0].starts_with("ID  DEVICE"), "{}", list.out);
    assert!(lines[3].contains("/dev/vgpu7") && lines[3].contains("/pods/c"));

    let r = f.ok(&["remove", "0", "7"]);
    assert_eq!(r.out, "removed vgpu0\nremoved vgpu7\n");
    assert_eq!(f.vgpus(), vec![1]);
}

#[test]
fn json_shapes() {
    let f = Fake::new(2, Some(16), false);
    let created = f
        .ok(&["--json", "create", "--cgroup", "/a", "--memory", "2GiB"])
        .json();
    let expected = json!([{
        "id": 0,
        "device": "/dev/vgpu0",
        "gpu": 0,
        "memory_limit": 2 * GIB,
        "memory_used": 0,
        "cgroup": "/a",
        "users": 0
    }]);
    assert_eq!(created, expected);
    // Unset GPU, no limit, unbound: nulls.
    fs_create(&f, 5);
    let list = f.ok(&["list", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(
        list[1],
        json!({"id": 5, "device": "/dev/vgpu5", "gpu": null, "memory_limit": null,
               "memory_used": 0, "cgroup": null, "users": 0})
    );
    assert_eq!(f.ok(&["show", "0", "--json"]).json(), expected[0]);
    let status = f.ok(&["status", "--json"]).json();
    assert_eq!(
        status,
        json!({
            "gpus": [
                {"index": 0, "memory_total": 16 * GIB, "memory_promised": 2 * GIB,
                 "unlimited_vgpus": 0, "memory_used": 0, "vgpus": [0]},
                {"index": 1, "memory_total": 16 * GIB, "memory_promised": 0,
                 "unlimited_vgpus": 0, "memory_used": 0, "vgpus": []}
            ],
            "unassigned": [5]
        })
    );
    assert_eq!(
        f.ok(&["remove", "5", "--json"]).json(),
        json!({"removed": [5]})
    );
}

/// A bare vGPU, as `echo N > create` would leave it.
fn fs_create(f: &Fake, id: u32) {
    vgpuctl::sysfs::Sysfs::simulated(f.sys())
        .create(id)
        .unwrap();
}

#[test]
fn status_table() {
    let f = Fake::new(2, Some(24), true);
    f.ok(&[
        "create",
        "--cgroup",
        "/a",
        "--memory",
        "6GiB",
        "--compute",
        "30%",
        "--gpu",
        "1",
    ]);
    fs_create(&f, 3);
    let s = f.ok(&["status"]);
    assert_eq!(
        s.out,
        "GPU  MEMORY  PROMISED     USED  COMPUTE  VGPUS\n\
         0    24 GiB  0 B (0%)     0 B   0%       -\n\
         1    24 GiB  6 GiB (25%)  0 B   30%      0\n\
         vGPUs without a GPU: 3\n"
    );
}

#[test]
fn compute_shares_when_the_module_has_them() {
    let f = Fake::new(1, Some(24), true);
    let v = f
        .ok(&[
            "--json",
            "create",
            "--cgroup",
            "/a",
            "--memory",
            "6GiB",
            "--compute",
            "30%",
            "--compute-policy",
            "work-conserving",
            "--period-us",
            "20000",
        ])
        .json();
    assert_eq!(v[0]["compute_share"], 30);
    assert_eq!(v[0]["compute_policy"], "work-conserving");
    assert_eq!(v[0]["period_us"], 20000);
    assert_eq!(v[0]["granted_us"], 0);
    f.ok(&["set", "0", "--compute", "50%", "--compute-policy", "fixed"]);
    assert_eq!(f.attr(0, "compute_share"), "50");
    assert_eq!(f.attr(0, "compute_policy"), "fixed");
    let list = f.ok(&["list"]);
    assert!(list.out.contains("50%      fixed"), "{}", list.out);
}

#[test]
fn multi_gpu_split_and_placement() {
    let f = Fake::new(4, Some(24), true);
    // Load GPU 2 so binpack prefers it.
    f.ok(&[
        "create", "--cgroup", "/x", "--memory", "10GiB", "--gpu", "2",
    ]);
    let v = f
        .ok(&[
            "--json",
            "create",
            "--cgroup",
            "/pods/a",
            "--memory",
            "18GiB",
            "--compute",
            "240%",
            "--gpus",
            "3",
            "--policy",
            "binpack",
        ])
        .json();
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 3);
    let gpus: Vec<u64> = v.iter().map(|x| x["gpu"].as_u64().unwrap()).collect();
    assert_eq!(gpus, vec![2, 0, 1]);
    for x in v {
        assert_eq!(x["memory_limit"], 6 * GIB);
        assert_eq!(x["compute_share"], 80);
        assert_eq!(x["cgroup"], "/pods/a");
    }
    // Spread takes the empty GPU 3 first.
    let v = f
        .ok(&[
            "--json", "create", "--memory", "2GiB", "--gpus", "2", "--policy", "spread",
        ])
        .json();
    assert_eq!(v[0]["gpu"], 3);
    // 80% is on GPUs 0-2: 30% more fits only on GPU 3.
    let r = f.run(&[
        "create",
        "--compute",
        "60%",
        "--gpus",
        "2",
        "--memory",
        "1GiB",
    ]);
    assert_eq!(r.code, NO_FIT, "{}", r.err);
    assert!(
        r.err.contains("2 GPUs asked for, 1 have room")
            && r.err
                .contains("GPU 0: 80% compute already promised, 30% more would exceed 100%"),
        "{}",
        r.err
    );
    // Over 100% on one vGPU, over 100% per GPU in total.
    let r = f.run(&["create", "--compute", "130%"]);
    assert_eq!(r.code, USAGE);
    assert!(
        r.err.contains("compute share 130% is over 100%"),
        "{}",
        r.err
    );
    let r = f.run(&["create", "--compute", "500%", "--gpus", "4"]);
    assert_eq!(r.code, USAGE);
    // Memory.
    let r = f.run(&["create", "--memory", "40GiB", "--gpus", "2"]);
    assert_eq!(r.code, NO_FIT);
    assert!(
        r.err.contains(
            "GPU 2: 16 GiB of 24 GiB memory already promised, 20 GiB more would exceed it"
        ),
        "{}",
        r.err
    );
    // Count.
    let r = f.run(&["create", "--memory", "1GiB", "--gpus", "5"]);
    assert_eq!(r.code, NO_FIT);
    assert!(
        r.err.contains("does not fit: 5 GPUs asked for, 4 known"),
        "{}",
        r.err
    );
    // Nothing was left behind by the refusals.
    assert_eq!(f.vgpus(), vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn gpu_sizes_from_the_command_line() {
    let f = Fake::without_gpu_list(2);
    // Sizes unknown: only counts.
    f.ok(&["create", "--memory", "200GiB", "--gpus", "2"]);
    let r = f.run(&["create", "--memory", "1GiB", "--gpus", "3"]);
    assert_eq!(r.code, NO_FIT);
    // With --gpu-memory, 100 GiB already promised on each 80 GiB GPU.
    let r = f.run(&["--gpu-memory", "80GiB", "create", "--memory", "1GiB"]);
    assert_eq!(r.code, NO_FIT);
    assert!(
        r.err.contains("100 GiB of 80 GiB memory already promised"),
        "{}",
        r.err
    );
    let s = f.ok(&["--gpu-memory", "80GiB", "status"]);
    assert!(s.out.contains("80 GiB  100 GiB (125%)"), "{}", s.out);
}

#[test]
fn pinned_gpu_checks_and_force() {
    let f = Fake::new(1, Some(8), false);
    let r = f.run(&["create", "--memory", "9GiB", "--gpu", "0"]);
    assert_eq!(r.code, NO_FIT);
    assert!(r.err.contains("--force to override"), "{}", r.err);
    f.ok(&["create", "--memory", "9GiB", "--gpu", "0", "--force"]);
    // set checks against the others only.
    f.ok(&["set", "0", "--memory", "8GiB"]);
    f.ok(&["create", "--memory", "0.5GiB", "--gpu", "0", "--force"]);
    let r = f.run(&["set", "0", "--memory", "8GiB"]);
    assert_eq!(r.code, NO_FIT);
}

#[test]
fn rollback_when_a_later_write_fails() {
    let f = Fake::new(2, Some(24), false);
    f.fail("cgroup", "EBUSY");
    let r = f.run(&["create", "--cgroup", "/a", "--memory", "6GiB"]);
    assert_eq!(r.code, FAILURE);
    assert!(r.err.contains("cgroup: in use"), "{}", r.err);
    assert_eq!(f.vgpus(), Vec::<u32>::new());
    // Multi-GPU: all created so far go.
    let r = f.run(&[
        "create", "--cgroup", "/a", "--memory", "6GiB", "--gpus", "2",
    ]);
    assert_eq!(r.code, FAILURE);
    assert_eq!(f.vgpus(), Vec::<u32>::new());
}

#[test]
fn rollback_of_the_second_vgpu() {
    let f = Fake::new(3, Some(24), false);
    f.ok(&["create", "--memory", "1GiB", "--id", "0"]);
    f.fail("vgpu2/memory_limit", "ENOMEM");
    let r = f.run(&["create", "--memory", "3GiB", "--gpus", "3", "--id", "1,2,3"]);
    assert_eq!(r.code, FAILURE);
    assert!(
        r.err.contains("vgpu2/memory_limit: out of memory"),
        "{}",
        r.err
    );
    assert_eq!(f.vgpus(), vec![0]);
}

#[test]
fn rollback_when_compute_is_unsupported() {
    let f = Fake::new(1, Some(24), false);
    let r = f.run(&[
        "create",
        "--cgroup",
        "/a",
        "--compute",
        "30%",
        "--memory",
        "1GiB",
    ]);
    assert_eq!(r.code, FAILURE);
    assert!(
        r.err
            .contains("not supported by this vgpu module: vGPU setting \"compute_share\""),
        "{}",
        r.err
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
}

#[test]
fn rollback_that_fails_is_reported() {
    let f = Fake::new(1, Some(24), false);
    f.fail("cgroup", "EINVAL");
    f.fail("remove", "EBUSY");
    let r = f.run(&["create", "--cgroup", "/a"]);
    assert_eq!(r.code, USAGE);
    assert!(
        r.err.contains("invalid value; rolling back failed too:"),
        "{}",
        r.err
    );
    assert!(r.err.contains("remove: in use"), "{}", r.err);
}

#[test]
fn set_puts_back_what_it_changed() {
    let f = Fake::new(1, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB"]);
    f.fail("cgroup", "ENOMEM");
    let r = f.run(&["set", "0", "--memory", "2GiB", "--cgroup", "/b"]);
    assert_eq!(r.code, FAILURE);
    assert_eq!(f.attr(0, "memory_limit"), GIB.to_string());
    assert_eq!(f.attr(0, "cgroup"), "/a");
}

#[test]
fn kernel_errors_in_words() {
    let f = Fake::new(2, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB", "--gpu", "0"]);
    let r = f.run(&["set", "0", "--gpu", "7"]);
    assert_eq!(r.code, FAILURE);
    assert!(r.err.contains("writing \"7\" to"), "{}", r.err);
    assert!(
        r.err
            .ends_with("vgpu0/gpu: no such GPU (the module found no /dev/nvidiaK for it)\n"),
        "{}",
        r.err
    );
    f.set_users(0, 1);
    let r = f.run(&["set", "0", "--gpu", "1"]);
    assert_eq!(r.code, FAILURE);
    assert!(
        r.err.contains("in use (its device node is open)"),
        "{}",
        r.err
    );
    let r = f.run(&["remove", "0"]);
    assert_eq!(r.code, FAILURE);
    assert!(r.err.contains("in use"), "{}", r.err);
    f.set_users(0, 0);
    f.ok(&["remove", "0"]);
}

#[test]
fn module_not_loaded() {
    let f = Fake::unloaded();
    for args in [
        &["list"][..],
        &["status"],
        &["show", "0"],
        &["create"],
        &["remove", "1"],
    ] {
        let r = f.run(args);
        assert_eq!(r.code, NO_MODULE, "{args:?}");
        assert!(r.err.contains("vgpu module not loaded"), "{}", r.err);
        assert!(r.err.contains("class/vgpu missing"), "{}", r.err);
    }
}

#[test]
fn not_root() {
    let f = Fake::new(1, Some(24), false);
    f.ok(&["create", "--memory", "1GiB"]);
    for args in [
        &["create", "--memory", "1GiB"][..],
        &["remove", "0"],
        &["set", "0", "--memory", "2GiB"],
    ] {
        let r = f.run_as_user(args);
        assert_eq!(r.code, NOT_ROOT, "{args:?}");
        assert_eq!(
            r.err,
            "vgpuctl: permission denied: changing vGPUs needs root\n"
        );
    }
    // Reading is for everyone.
    assert_eq!(f.run_as_user(&["list"]).code, 0);
    assert_eq!(f.vgpus(), vec![0]);
}

#[test]
fn unknown_vgpu() {
    let f = Fake::new(1, Some(24), false);
    for args in [
        &["show", "9"][..],
        &["set", "9", "--memory", "1GiB"],
        &["remove", "9"],
    ] {
        let r = f.run(args);
        assert_eq!(r.code, NOT_FOUND, "{args:?}");
        assert_eq!(r.err, "vgpuctl: no such vGPU: 9\n");
    }
}

#[test]
fn bad_values() {
    let f = Fake::new(1, Some(24), false);
    let cases: &[(&[&str], &str)] = &[
        (&["create", "--memory", "6XB"], "not a size"),
        (&["create", "--memory", "lots"], "not a size"),
        (&["create", "--compute", "30.5%"], "not a compute share"),
        (&["create", "--cgroup", "pods/a"], "not a cgroup v2 path"),
        (&["create", "--cgroup", "/a/../b"], "not a cgroup v2 path"),
        (&["create", "--id", "255"], "vGPU numbers go from 0 to 254"),
        (
            &["create", "--id", "1,2"],
            "2 vGPU numbers given for 1 vGPUs",
        ),
        (
            &["create", "--gpu", "0", "--gpus", "2"],
            "cannot be used with",
        ),
        (&["create", "--policy", "random"], "invalid value"),
        (&["show", "x"], "not a vGPU number"),
        (&["cdi", "--kind", "nokind"], "not a CDI kind"),
    ];
    f.ok(&["create", "--id", "1"]);
    for (args, msg) in cases {
        let r = f.run(args);
        assert_eq!(r.code, USAGE, "{args:?}: {}", r.err);
        assert!(r.err.contains(msg), "{args:?}: {}", r.err);
    }
    let r = f.run(&["create", "--id", "1"]);
    assert_eq!(r.code, USAGE);
    assert!(r.err.contains("vGPU 1 already exists"), "{}", r.err);
    let r = f.run(&["set", "1"]);
    assert_eq!(r.code, USAGE);
    assert!(r.err.contains("nothing to set"), "{}", r.err);
    // A setting this module does not have yet.
    let r = f.run(&["set", "1", "--period-us", "1000"]);
    assert_eq!(r.code, FAILURE, "{}", r.err);
    assert!(
        r.err.contains("not supported by this vgpu module"),
        "{}",
        r.err
    );
    // The module's own refusal of a value (EINVAL, ERANGE) is a usage error.
    let c = Fake::new(1, None, true);
    c.ok(&["create"]);
    let r = c.run(&["set", "0", "--period-us", "0"]);
    assert_eq!(r.code, USAGE, "{}", r.err);
    assert!(r.err.contains("period_us: value out of range"), "{}", r.err);
    assert_eq!(f.vgpus(), vec![1]);
}

#[test]
fn simulation_is_refused_for_the_real_sysfs() {
    let f = Fake::new(1, None, false);
    let mut c = f.cmd(&["list"]);
    c.env("VGPU_SYSFS_ROOT", "/sys");
    let r = common::run(c);
    assert_eq!(r.code, USAGE);
    assert!(r.err.contains("not /sys"), "{}", r.err);
}
