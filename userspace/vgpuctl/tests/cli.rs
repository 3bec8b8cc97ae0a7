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

/// Runs `args`, which must fail (exit 1) with each of `wants` in its
/// stderr; returns the run for what else a test checks.
fn fails(f: &Fake, args: &[&str], wants: &[&str]) -> common::Run {
    let r = f.run(args);
    assert_eq!(r.code, FAILURE, "{args:?}: {}", r.err);
    for want in wants {
        assert!(r.err.contains(want), "{args:?}: no {want:?} in: {}", r.err);
    }
    r
}

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
        show.out.contains("memory_limit         512 MiB\n"),
        "{}",
        show.out
    );
    // No compute shares in this module.
    for row in [
        "compute_share        -\n",
        "compute_policy       -\n",
        "compute_period_us    -\n",
        "compute_priority     -\n",
        "compute_frozen       -\n",
        "compute_granted_us   -\n",
        "compute_throttled_us -\n",
        "compute_busy_us      -\n",
        "compute_tsgs         -\n",
    ] {
        assert!(show.out.contains(row), "{row:?}: {}", show.out);
    }

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
        "memory_managed": 0,
        "cgroup": "/a",
        "users": 0,
        "processes": []
    }]);
    assert_eq!(created, expected);
    // Unset GPU, no limit, unbound: nulls.
    fs_create(&f, 5);
    let list = f.ok(&["list", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(
        list[1],
        json!({"id": 5, "device": "/dev/vgpu5", "gpu": null, "memory_limit": null,
               "memory_used": 0, "memory_managed": 0, "cgroup": null, "users": 0,
               "processes": []})
    );
    assert_eq!(f.ok(&["show", "0", "--json"]).json(), expected[0]);
    let status = f.ok(&["status", "--json"]).json();
    assert_eq!(
        status,
        json!({
            "gpus": [
                {"index": 0, "memory_total": 16 * GIB, "memory_promised": 2 * GIB,
                 "unlimited_vgpus": 0, "memory_used": 0, "memory_managed": 0,
                 "vgpus": [0]},
                {"index": 1, "memory_total": 16 * GIB, "memory_promised": 0,
                 "unlimited_vgpus": 0, "memory_used": 0, "memory_managed": 0,
                 "vgpus": []}
            ],
            "unassigned": [5]
        })
    );
    assert_eq!(
        f.ok(&["remove", "5", "--json"]).json(),
        json!({"removed": [5]})
    );
}

#[test]
fn managed_memory() {
    let f = Fake::new(2, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "8GiB", "--gpu", "0"]);
    f.ok(&["create", "--cgroup", "/b", "--memory", "8GiB", "--gpu", "0"]);
    f.ok(&["create", "--cgroup", "/c", "--memory", "8GiB", "--gpu", "1"]);
    vgpuctl::sysfs::sim::set_memory(&f.sys(), 0, 3 * GIB, GIB).unwrap();
    vgpuctl::sysfs::sim::set_memory(&f.sys(), 1, GIB, GIB / 2).unwrap();
    let show = f.ok(&["show", "0"]);
    for row in [
        "memory_used          3 GiB\n",
        "memory_managed       1 GiB\n",
    ] {
        assert!(show.out.contains(row), "{row:?}: {}", show.out);
    }
    let j = f.ok(&["show", "0", "--json"]).json();
    assert_eq!(
        (j["memory_used"].clone(), j["memory_managed"].clone()),
        (json!(3 * GIB), json!(GIB))
    );
    let list = f.ok(&["list"]);
    let lines: Vec<&str> = list.out.lines().collect();
    assert!(
        lines[0].starts_with("ID  DEVICE      GPU  MEMORY  USED   MANAGED  "),
        "{}",
        list.out
    );
    assert!(
        lines[1].starts_with("0   /dev/vgpu0  0    8 GiB   3 GiB  1 GiB    "),
        "{}",
        list.out
    );
    assert!(
        lines[2].starts_with("1   /dev/vgpu1  0    8 GiB   1 GiB  512 MiB  "),
        "{}",
        list.out
    );
    let st = f.ok(&["status", "--json"]).json();
    assert_eq!(st["gpus"][0]["memory_used"], 4 * GIB);
    assert_eq!(st["gpus"][0]["memory_managed"], 3 * GIB / 2);
    assert_eq!(st["gpus"][1]["memory_managed"], 0);
    let st = f.ok(&["status"]);
    assert!(
        st.out.lines().nth(1).unwrap().contains("4 GiB  1.5 GiB"),
        "{}",
        st.out
    );
    // Managed memory is charged memory: the vGPU cannot be removed.
    fails(&f, &["remove", "1"], &[]);

    // A module from before the UVM proxy has no memory_managed: shown as
    // `-`, left out of JSON, not an error.
    for id in [0, 1, 2] {
        std::fs::remove_file(f.vgpu_dir(id).join("memory_managed")).unwrap();
    }
    let show = f.ok(&["show", "0"]);
    assert!(
        show.out.contains("memory_managed       -\n"),
        "{}",
        show.out
    );
    let j = f.ok(&["show", "0", "--json"]).json();
    assert!(j.get("memory_managed").is_none(), "{j}");
    assert_eq!(j["memory_used"], 3 * GIB);
    let list = f.ok(&["list", "--json"]).json();
    assert!(list[1].get("memory_managed").is_none(), "{list}");
    let st = f.ok(&["status", "--json"]).json();
    assert!(st["gpus"][0].get("memory_managed").is_none(), "{st}");
    assert!(st["gpus"][1].get("memory_managed").is_none(), "{st}");
    let st = f.ok(&["status"]);
    assert!(
        st.out.lines().nth(1).unwrap().contains("4 GiB  -"),
        "{}",
        st.out
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
    f.put(0, "compute_tsgs", "2");
    f.ok(&["set", "0", "--period-us", "2500"]);
    let s = f.ok(&["status"]);
    assert_eq!(
        s.out,
        "GPU  MEMORY  PROMISED     USED  MANAGED  COMPUTE  POLICY  PERIOD  TSGS  VGPUS\n\
         0    24 GiB  0 B (0%)     0 B   0 B      0%       fixed   50 ms   0     -\n\
         1    24 GiB  6 GiB (25%)  0 B   0 B      30%      fixed   2.5 ms  2     0\n\
         vGPUs without a GPU: 3\n"
    );
    let j = f.ok(&["status", "--json"]).json();
    assert_eq!(
        j["gpus"][1],
        json!({"index": 1, "memory_total": 24 * GIB, "memory_promised": 6 * GIB,
               "unlimited_vgpus": 0, "memory_used": 0, "memory_managed": 0,
               "compute_promised": 30,
               "compute_policy": "fixed", "compute_period_us": 2500,
               "compute_tsgs": 2, "vgpus": [0]})
    );
    // Without compute shares: dashes.
    let f = Fake::new(1, Some(24), false);
    let s = f.ok(&["status"]);
    assert_eq!(
        s.out,
        "GPU  MEMORY  PROMISED  USED  MANAGED  COMPUTE  POLICY  PERIOD  TSGS  VGPUS\n\
         0    24 GiB  0 B (0%)  0 B   0 B      -        -       -       -     -\n"
    );
}

#[test]
fn compute_shares_when_the_module_has_them() {
    let f = Fake::new(2, Some(24), true);
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
            "--gpu",
            "0",
        ])
        .json();
    assert_eq!(
        v[0],
        json!({"id": 0, "device": "/dev/vgpu0", "gpu": 0, "memory_limit": 6 * GIB,
               "memory_used": 0, "memory_managed": 0, "cgroup": "/a", "users": 0,
               "compute_share": 30, "compute_policy": "work-conserving",
               "compute_period_us": 20000, "compute_priority": 1,
               "compute_frozen": false, "compute_granted_us": 0,
               "compute_throttled_us": 0, "compute_busy_us": 0, "compute_tsgs": 0,
               "processes": []})
    );
    // The share is the vGPU's; the policy and period are GPU 0's.
    assert_eq!(f.attr(0, "compute_share"), "30");
    assert_eq!(f.gpu_attr(0, "compute_policy"), "work-conserving");
    assert_eq!(f.gpu_attr(0, "compute_period_us"), "20000");
    assert_eq!(f.gpu_attr(1, "compute_policy"), "fixed");
    assert_eq!(f.gpu_attr(1, "compute_period_us"), "50000");
    for name in ["compute_policy", "period_us", "granted_us", "throttled_us"] {
        assert!(!f.vgpu_dir(0).join(name).exists(), "{name}");
    }

    // A second vGPU on GPU 0 shares its policy.
    let r = f.ok(&[
        "create",
        "--compute",
        "20%",
        "--gpu",
        "0",
        "--cgroup",
        "/b",
        "--memory",
        "1GiB",
    ]);
    assert_eq!(
        r.out,
        "created vgpu1 (/dev/vgpu1): GPU 0, memory 1 GiB, compute 20%, priority 1 \
         (GPU 0: work-conserving, period 20 ms), cgroup /b\n"
    );
    assert!(!r.err.contains("per-GPU"), "{}", r.err);
    // Changing it through one vGPU says that it changes for the other too.
    let r = f.ok(&["set", "0", "--compute", "50%", "--compute-policy", "fixed"]);
    assert_eq!(f.attr(0, "compute_share"), "50");
    assert_eq!(f.gpu_attr(0, "compute_policy"), "fixed");
    assert_eq!(f.gpu_attr(0, "compute_period_us"), "20000");
    assert_eq!(
        r.err,
        "vgpuctl: warning: GPU 0 now has compute_policy fixed: a per-GPU setting, so for vgpu1 too\n"
    );
    assert!(r.out.contains("compute_policy       fixed\n"), "{}", r.out);
    assert!(r.out.contains("compute_period_us    20000\n"), "{}", r.out);

    // Counters as the module shows them.
    f.put(0, "compute_granted_us", "1500000");
    f.put(0, "compute_throttled_us", "250");
    f.put(0, "compute_tsgs", "3");
    f.put(0, "compute_busy_us", "2000000");
    let show = f.ok(&["show", "0"]);
    for row in [
        "compute_share        50%\n",
        "compute_priority     1\n",
        "compute_frozen       no\n",
        "compute_granted_us   1500000\n",
        "compute_throttled_us 250\n",
        "compute_busy_us      2000000\n",
        "compute_tsgs         3\n",
    ] {
        assert!(show.out.contains(row), "{row:?}: {}", show.out);
    }
    let list = f.ok(&["list"]);
    let lines: Vec<&str> = list.out.lines().collect();
    assert_eq!(
        lines[0],
        "ID  DEVICE      GPU  MEMORY  USED  MANAGED  COMPUTE  PRIO  FROZEN  POLICY  PERIOD  GRANTED  THROTTLED  BUSY  TSGS  CGROUP  USERS"
    );
    assert_eq!(
        lines[1],
        "0   /dev/vgpu0  0    6 GiB   0 B   0 B      50%      1     no      fixed   20 ms   1.5 s    250 us     2 s   3     /a      0"
    );
    let j = f.ok(&["list", "--json"]).json();
    assert_eq!(j[0]["compute_granted_us"], 1_500_000);
    assert_eq!(j[0]["compute_throttled_us"], 250);
    assert_eq!(j[0]["compute_busy_us"], 2_000_000);
    assert_eq!(j[0]["compute_priority"], 1);
    assert_eq!(j[0]["compute_frozen"], false);
    assert_eq!(j[0]["compute_tsgs"], 3);
    assert_eq!(j[1]["compute_policy"], "fixed");

    // Moving a vGPU with tracked TSGs: EBUSY from the module.
    fails(
        &f,
        &["set", "0", "--gpu", "1", "--force"],
        &["or memory or TSGs are charged to it"],
    );
    f.put(0, "compute_tsgs", "0");
    // With --gpu, the policy and period go to the GPU it moves to.
    f.ok(&["set", "0", "--gpu", "1", "--period-us", "1000"]);
    assert_eq!(f.gpu_attr(1, "compute_period_us"), "1000");
    assert_eq!(f.gpu_attr(0, "compute_period_us"), "20000");
    assert_eq!(
        f.ok(&["show", "0", "--json"]).json()["compute_period_us"],
        1000
    );

    // A vGPU without a GPU has no GPU settings to change or show.
    fs_create(&f, 5);
    let r = f.run(&["set", "5", "--compute-policy", "fixed"]);
    assert_eq!(r.code, USAGE, "{}", r.err);
    assert!(r.err.contains("vgpu5 has no GPU"), "{}", r.err);
    let j = f.ok(&["show", "5", "--json"]).json();
    assert_eq!(j["compute_share"], 100);
    assert!(j.get("compute_policy").is_none() && j.get("compute_period_us").is_none());

    // A vGPU made without --compute has the module's default share, 100%:
    // the whole GPU, so a request with --compute no longer fits beside it.
    f.ok(&["create", "--id", "7", "--gpu", "1", "--memory", "1GiB"]);
    assert_eq!(f.attr(7, "compute_share"), "100");
    let r = f.run(&[
        "create",
        "--compute",
        "10%",
        "--gpu",
        "1",
        "--memory",
        "1GiB",
    ]);
    assert_eq!(r.code, NO_FIT, "{}", r.err);
    assert!(
        r.err.contains("GPU 1: 150% compute already promised"),
        "{}",
        r.err
    );
}

#[test]
fn gpu_settings_are_left_alone_when_unchanged() {
    let f = Fake::new(1, Some(24), true);
    f.ok(&["create", "--id", "0"]);
    // Writing a GPU setting restarts its scheduler: only changes are written.
    f.fail("gpu0/compute_policy", "EIO");
    f.ok(&[
        "set",
        "0",
        "--compute-policy",
        "fixed",
        "--period-us",
        "50000",
    ]);
    f.ok(&[
        "create",
        "--compute-policy",
        "fixed",
        "--gpu",
        "0",
        "--force",
    ]);
    fails(
        &f,
        &["set", "0", "--compute-policy", "work-conserving"],
        &["writing \"work-conserving\" to", "gpu0/compute_policy"],
    );
}

#[test]
fn rollback_puts_gpu_settings_back() {
    let f = Fake::new(2, Some(24), true);
    // The second GPU refuses its period: both vGPUs go, and both GPUs get
    // back the settings they had.
    f.fail("gpu1/compute_period_us", "EBUSY");
    fails(
        &f,
        &[
            "create",
            "--gpus",
            "2",
            "--compute",
            "60%",
            "--compute-policy",
            "work-conserving",
            "--period-us",
            "10000",
        ],
        &["gpu1/compute_period_us: in use"],
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
    for k in [0, 1] {
        assert_eq!(f.gpu_attr(k, "compute_policy"), "fixed", "gpu{k}");
        assert_eq!(f.gpu_attr(k, "compute_period_us"), "50000", "gpu{k}");
    }

    // The cgroup, written after the GPU settings, fails.
    let f = Fake::new(1, Some(24), true);
    f.fail("cgroup", "ENOMEM");
    fails(
        &f,
        &[
            "create",
            "--cgroup",
            "/a",
            "--compute-policy",
            "work-conserving",
        ],
        &[],
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
    assert_eq!(f.gpu_attr(0, "compute_policy"), "fixed");

    // set: the vGPU's settings and the GPU's go back.
    f.ok(&["create", "--memory", "1GiB", "--compute", "10%"]);
    fails(
        &f,
        &[
            "set",
            "0",
            "--memory",
            "2GiB",
            "--compute",
            "20%",
            "--period-us",
            "3000",
            "--cgroup",
            "/b",
        ],
        &[],
    );
    assert_eq!(f.attr(0, "memory_limit"), GIB.to_string());
    assert_eq!(f.attr(0, "compute_share"), "10");
    assert_eq!(f.gpu_attr(0, "compute_period_us"), "50000");

    // What cannot be put back is reported (here a policy the module would
    // not take back).
    std::fs::write(f.gpu_dir(0).join("compute_policy"), "future\n").unwrap();
    let r = fails(
        &f,
        &["set", "0", "--compute-policy", "fixed", "--cgroup", "/b"],
        &["rolling back failed too:"],
    );
    assert!(
        r.err.contains("writing \"future\" to")
            && r.err.contains("gpu0/compute_policy: invalid value"),
        "{}",
        r.err
    );
    assert_eq!(f.gpu_attr(0, "compute_policy"), "fixed");
}

#[test]
fn gpu_directories_are_not_vgpus() {
    // The module as it is: gpuK/ for the GPUs it found, no `gpus` file.
    let f = Fake::like_module(&[0, 1], 4);
    assert!(f.gpu_dir(0).is_dir() && f.gpu_dir(1).is_dir());
    assert_eq!(f.ok(&["list"]).out, "no vGPUs\n");
    assert_eq!(f.ok(&["list", "--json"]).json(), json!([]));
    // Its GPUs are those with a gpuK/, not every /dev/nvidiaK.
    let r = f.run(&["create", "--gpus", "3"]);
    assert_eq!(r.code, NO_FIT, "{}", r.err);
    assert!(r.err.contains("3 GPUs asked for, 2 known"), "{}", r.err);
    f.ok(&[
        "create",
        "--gpus",
        "2",
        "--compute",
        "80%",
        "--policy",
        "spread",
    ]);
    assert_eq!(f.vgpus(), vec![0, 1]);
    let j = f.ok(&["list", "--json"]).json();
    assert_eq!(j.as_array().unwrap().len(), 2);
    assert_eq!(
        (j[0]["gpu"].clone(), j[1]["gpu"].clone()),
        (json!(0), json!(1))
    );
    let st = f.ok(&["status", "--json"]).json();
    let idx: Vec<u64> = st["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, vec![0, 1]);
    assert_eq!(st["gpus"][0]["compute_promised"], 40);
    assert_eq!(st["gpus"][0]["compute_policy"], "fixed");
    // The module refuses a GPU it did not find.
    fails(&f, &["set", "0", "--gpu", "2", "--force"], &["no such GPU"]);
}

#[test]
fn multi_gpu_split_and_placement() {
    let f = Fake::new(4, Some(24), true);
    // Load GPU 2 so binpack prefers it.
    f.ok(&[
        "create",
        "--cgroup",
        "/x",
        "--memory",
        "10GiB",
        "--gpu",
        "2",
        "--compute",
        "20%",
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
    // Spread takes the empty GPU 3 first (with no share: without --compute
    // a vGPU would have the module's default, 100%).
    let v = f
        .ok(&[
            "--json",
            "create",
            "--memory",
            "2GiB",
            "--gpus",
            "2",
            "--policy",
            "spread",
            "--compute",
            "0%",
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
    fails(
        &f,
        &["create", "--cgroup", "/a", "--memory", "6GiB"],
        &["cgroup: in use"],
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
    // Multi-GPU: all created so far go.
    fails(
        &f,
        &[
            "create", "--cgroup", "/a", "--memory", "6GiB", "--gpus", "2",
        ],
        &[],
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
}

#[test]
fn rollback_of_the_second_vgpu() {
    let f = Fake::new(3, Some(24), false);
    f.ok(&["create", "--memory", "1GiB", "--id", "0"]);
    f.fail("vgpu2/memory_limit", "ENOMEM");
    fails(
        &f,
        &["create", "--memory", "3GiB", "--gpus", "3", "--id", "1,2,3"],
        &["vgpu2/memory_limit: out of memory"],
    );
    assert_eq!(f.vgpus(), vec![0]);
}

#[test]
fn rollback_when_compute_is_unsupported() {
    let f = Fake::new(1, Some(24), false);
    fails(
        &f,
        &[
            "create",
            "--cgroup",
            "/a",
            "--compute",
            "30%",
            "--memory",
            "1GiB",
        ],
        &["not supported by this vgpu module: vGPU setting \"compute_share\""],
    );
    assert_eq!(f.vgpus(), Vec::<u32>::new());
    // The GPU settings: no gpuK/ in this module.
    fails(
        &f,
        &["create", "--cgroup", "/a", "--compute-policy", "fixed"],
        &["not supported by this vgpu module: GPU setting \"compute_policy\""],
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
    fails(&f, &["set", "0", "--memory", "2GiB", "--cgroup", "/b"], &[]);
    assert_eq!(f.attr(0, "memory_limit"), GIB.to_string());
    assert_eq!(f.attr(0, "cgroup"), "/a");
}

#[test]
fn kernel_errors_in_words() {
    let f = Fake::new(2, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB", "--gpu", "0"]);
    let r = fails(&f, &["set", "0", "--gpu", "7"], &["writing \"7\" to"]);
    assert!(
        r.err
            .ends_with("vgpu0/gpu: no such GPU (the module found no /dev/nvidiaK for it)\n"),
        "{}",
        r.err
    );
    f.set_users(0, 1);
    fails(
        &f,
        &["set", "0", "--gpu", "1"],
        &["in use (its device node is open, or memory or TSGs are charged to it)"],
    );
    fails(&f, &["remove", "0"], &["in use"]);
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
        (&["create", "--compute-policy", "Fixed"], "invalid value"),
        (&["create", "--period-us", "999"], "not a scheduling period"),
        (&["create", "--period-us", "1000001"], "1000 to 1000000"),
        (
            &["create", "--priority", "4"],
            "\"4\" is not a priority level (0 to 3",
        ),
        (&["set", "1", "--priority", "high"], "not a priority level"),
        (&["freeze", "x"], "not a vGPU number"),
        (
            &["set", "1", "--period-us", "50ms"],
            "not a scheduling period",
        ),
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
    fails(
        &f,
        &["set", "1", "--period-us", "1000"],
        &["not supported by this vgpu module"],
    );
    // The module's own refusal of a value (EINVAL, ERANGE) is a usage error.
    let c = Fake::new(1, None, true);
    c.ok(&["create"]);
    c.fail("compute_period_us", "ERANGE");
    let r = c.run(&["set", "0", "--period-us", "1000"]);
    assert_eq!(r.code, USAGE, "{}", r.err);
    assert!(
        r.err.contains("gpu0/compute_period_us: value out of range"),
        "{}",
        r.err
    );
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

#[test]
fn priority_on_create_and_set() {
    let f = Fake::new(2, Some(24), true);
    // create: written with the vGPU's other settings, before the cgroup.
    let r = f.ok(&[
        "create",
        "--cgroup",
        "/a",
        "--memory",
        "1GiB",
        "--compute",
        "30%",
        "--priority",
        "3",
        "--gpu",
        "0",
    ]);
    assert_eq!(f.attr(0, "compute_priority"), "3");
    assert!(r.out.contains("compute 30%, priority 3 ("), "{}", r.out);
    // Without --priority: the module's default, 1.
    f.ok(&[
        "create",
        "--id",
        "4",
        "--memory",
        "1GiB",
        "--compute",
        "10%",
        "--gpu",
        "1",
    ]);
    assert_eq!(f.attr(4, "compute_priority"), "1");
    // --gpus: every vGPU gets the level (it is not split).
    let v = f
        .ok(&[
            "--json",
            "create",
            "--gpus",
            "2",
            "--memory",
            "2GiB",
            "--compute",
            "20%",
            "--priority",
            "0",
        ])
        .json();
    let ids: Vec<u32> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert_eq!(x["compute_priority"], 0, "{x}");
            x["id"].as_u64().unwrap() as u32
        })
        .collect();
    assert_eq!(ids, vec![1, 2]);
    for id in ids {
        assert_eq!(f.attr(id, "compute_priority"), "0");
    }

    // set: --priority alone is something to set.
    let r = f.ok(&["set", "0", "--priority", "0"]);
    assert_eq!(f.attr(0, "compute_priority"), "0");
    assert!(r.out.contains("compute_priority     0\n"), "{}", r.out);
    assert_eq!(f.ok(&["show", "0", "--json"]).json()["compute_priority"], 0);
    let list = f.ok(&["list"]);
    let header = list.out.lines().next().unwrap();
    assert!(header.contains("  COMPUTE  PRIO  FROZEN  "), "{}", list.out);

    // A later step fails: the old level is put back.
    f.fail("vgpu0/cgroup", "ENOMEM");
    fails(&f, &["set", "0", "--priority", "2", "--cgroup", "/b"], &[]);
    assert_eq!(f.attr(0, "compute_priority"), "0");
    // create rolls back on a refused level.
    f.fail("compute_priority", "EIO");
    fails(
        &f,
        &["create", "--priority", "2", "--gpu", "1", "--force"],
        &["compute_priority"],
    );
    assert_eq!(f.vgpus(), vec![0, 1, 2, 4]);
}

#[test]
fn bad_priority_writes_nothing() {
    let f = Fake::new(1, Some(24), true);
    f.ok(&["create", "--id", "0", "--compute", "10%"]);
    let before: Vec<String> = ["compute_priority", "compute_share", "memory_limit"]
        .iter()
        .map(|n| f.attr(0, n))
        .collect();
    for (args, bad) in [
        (&["create", "--priority", "4", "--memory", "1GiB"][..], "4"),
        (&["create", "--priority", "high"], "high"),
        (&["set", "0", "--priority", "4", "--compute", "20%"], "4"),
        (
            &["set", "0", "--memory", "1GiB", "--priority", "high"],
            "high",
        ),
        (&["set", "0", "--priority=-1"], "-1"),
    ] {
        let r = f.run(args);
        assert_eq!(r.code, USAGE, "{args:?}: {}", r.err);
        assert!(
            r.err.contains(&format!(
                "\"{bad}\" is not a priority level (0 to 3: 0 is best-effort, \
                 higher levels preempt lower ones; default 1)"
            )),
            "{args:?}: {}",
            r.err
        );
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
    }
    // Nothing was created or changed.
    assert_eq!(f.vgpus(), vec![0]);
    let after: Vec<String> = ["compute_priority", "compute_share", "memory_limit"]
        .iter()
        .map(|n| f.attr(0, n))
        .collect();
    assert_eq!(before, after);
}

#[test]
fn freeze_and_thaw() {
    let f = Fake::new(1, Some(24), true);
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB"]);
    vgpuctl::sysfs::sim::set_memory(&f.sys(), 0, GIB / 2, 0).unwrap();
    assert_eq!(f.attr(0, "compute_frozen"), "0");

    let r = f.ok(&["freeze", "0"]);
    assert_eq!(f.attr(0, "compute_frozen"), "1");
    assert_eq!(
        r.out,
        "froze vgpu0: its work is stopped (memory stays charged) until `vgpuctl thaw 0`\n"
    );
    // Its memory stays charged.
    assert_eq!(f.attr(0, "memory_used"), (GIB / 2).to_string());
    let show = f.ok(&["show", "vgpu0"]);
    assert!(
        show.out.contains("compute_frozen       yes\n"),
        "{}",
        show.out
    );
    let list = f.ok(&["list"]);
    let lines: Vec<&str> = list.out.lines().collect();
    let col = lines[0].find("FROZEN").unwrap();
    assert_eq!(&lines[1][col..col + 4], "yes ", "{}", list.out);
    // Again: said, not an error.
    assert_eq!(f.ok(&["freeze", "0"]).out, "vgpu0 was already frozen\n");
    let j = f.ok(&["--json", "freeze", "0"]).json();
    assert_eq!(j["id"], 0);
    assert_eq!(j["compute_frozen"], true);

    let r = f.ok(&["thaw", "0"]);
    assert_eq!(f.attr(0, "compute_frozen"), "0");
    assert_eq!(r.out, "thawed vgpu0: its work runs again\n");
    assert_eq!(f.ok(&["thaw", "0"]).out, "vgpu0 was not frozen\n");
    assert_eq!(
        f.ok(&["show", "0", "--json"]).json()["compute_frozen"],
        false
    );

    // The module's refusal, in words.
    f.fail("compute_frozen", "EIO");
    fails(
        &f,
        &["freeze", "0"],
        &["writing \"1\" to", "vgpu0/compute_frozen"],
    );
}

#[test]
fn freeze_errors() {
    let f = Fake::new(1, Some(24), true);
    f.ok(&["create", "--id", "0"]);
    // Root only, like every change.
    for args in [
        &["freeze", "0"][..],
        &["thaw", "0"],
        &["set", "0", "--priority", "2"],
    ] {
        let r = f.run_as_user(args);
        assert_eq!(r.code, NOT_ROOT, "{args:?}");
        assert_eq!(
            r.err,
            "vgpuctl: permission denied: changing vGPUs needs root\n"
        );
    }
    assert_eq!(f.attr(0, "compute_frozen"), "0");
    assert_eq!(f.attr(0, "compute_priority"), "1");
    // No such vGPU.
    for args in [&["freeze", "9"][..], &["thaw", "9"]] {
        let r = f.run(args);
        assert_eq!(r.code, NOT_FOUND, "{args:?}");
        assert_eq!(r.err, "vgpuctl: no such vGPU: 9\n");
    }
    // A module without the files: compute shares from before priorities,
    // or none at all. Reading still works, with `-` and no JSON keys.
    for name in ["compute_priority", "compute_frozen", "compute_busy_us"] {
        std::fs::remove_file(f.vgpu_dir(0).join(name)).unwrap();
    }
    for (args, name) in [
        (&["freeze", "0"][..], "compute_frozen"),
        (&["thaw", "0"], "compute_frozen"),
        (&["set", "0", "--priority", "2"], "compute_priority"),
    ] {
        let r = f.run(args);
        assert_eq!(r.code, FAILURE, "{args:?}: {}", r.err);
        assert_eq!(
            r.err,
            format!("vgpuctl: not supported by this vgpu module: vGPU setting \"{name}\"\n")
        );
    }
    let show = f.ok(&["show", "0"]);
    for row in [
        "compute_priority     -\n",
        "compute_frozen       -\n",
        "compute_busy_us      -\n",
        "compute_share        100%\n",
    ] {
        assert!(show.out.contains(row), "{row:?}: {}", show.out);
    }
    let j = f.ok(&["show", "0", "--json"]).json();
    for key in ["compute_priority", "compute_frozen", "compute_busy_us"] {
        assert!(j.get(key).is_none(), "{key}: {j}");
    }
    assert_eq!(j["compute_granted_us"], 0);
    let f = Fake::new(1, Some(24), false);
    f.ok(&["create", "--id", "0"]);
    fails(&f, &["freeze", "0"], &["not supported by this vgpu module"]);
    // create rolls back a level the module cannot take.
    fails(
        &f,
        &["create", "--priority", "2", "--gpu", "0", "--force"],
        &["not supported by this vgpu module: vGPU setting \"compute_priority\""],
    );
    assert_eq!(f.vgpus(), vec![0]);
    // A file holding something else than 0 or 1 is reported, not guessed.
    let f = Fake::new(1, Some(24), true);
    f.ok(&["create", "--id", "0"]);
    f.put(0, "compute_frozen", "2");
    fails(
        &f,
        &["show", "0"],
        &["vgpu0/compute_frozen holds \"2\", not 0 or 1"],
    );
}

#[test]
fn processes_in_show() {
    let f = Fake::new(1, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "8GiB", "--gpu", "0"]);
    let empty = f.ok(&["show", "0"]);
    assert!(
        empty.out.contains("processes            0\n"),
        "{}",
        empty.out
    );
    std::fs::write(
        f.sys().join("class/vgpu/vgpu0/processes"),
        "4242 2147483648 python3\n77 0 nvidia-smi\n",
    )
    .unwrap();
    let show = f.ok(&["show", "0"]);
    for row in [
        "processes            2\n",
        "      4242       2 GiB  python3\n",
        "        77         0 B  nvidia-smi\n",
    ] {
        assert!(show.out.contains(row), "{row:?}: {}", show.out);
    }
    let j = f.ok(&["show", "0", "--json"]).json();
    assert_eq!(
        j["processes"],
        json!([
            {"pid": 4242, "memory_used": 2 * GIB, "command": "python3"},
            {"pid": 77, "memory_used": 0, "command": "nvidia-smi"}
        ])
    );
    // Garbage in the file: an error naming it, not a guess.
    std::fs::write(f.sys().join("class/vgpu/vgpu0/processes"), "lots\n").unwrap();
    let r = f.run(&["show", "0"]);
    assert_ne!(r.code, 0);
    assert!(r.err.contains("vgpu0/processes"), "{}", r.err);
}

/// `check-driver` (run by modprobe before vgpu): NVIDIA's proprietary
/// module is refused with the requirement named, the open one passes, and
/// no nvidia module at all is left to vgpu's own load to report. The
/// taint and version files are what the kernel shows for each (`PO` for
/// the proprietary 550.163.01 module, `O` for the open one, measured in
/// the test VM).
#[test]
fn check_driver_names_the_open_modules() {
    const DRIVER: i32 = 9;
    let f = Fake::unloaded();
    let module = f.sys().join("module/nvidia");
    let r = f.ok(&["check-driver"]);
    assert_eq!(r.out, "nvidia: not loaded; nothing to check\n");

    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("version"), "550.163.01\n").unwrap();
    std::fs::write(module.join("taint"), "PO\n").unwrap();
    let r = f.run(&["check-driver"]);
    assert_eq!(r.code, DRIVER, "{}{}", r.out, r.err);
    for want in [
        "nvidia 550.163.01",
        "proprietary",
        "vgpu needs NVIDIA's open kernel modules",
        "docs/operators.md",
    ] {
        assert!(r.err.contains(want), "{want:?} not in {}", r.err);
    }

    std::fs::write(module.join("taint"), "O\n").unwrap();
    let r = f.ok(&["check-driver"]);
    assert_eq!(
        r.out,
        "nvidia 550.163.01: an open kernel module; vgpu can load against it\n"
    );
    let j = f.ok(&["--json", "check-driver"]).json();
    assert_eq!(j["open"], json!(true));
}
