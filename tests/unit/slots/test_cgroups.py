"""The caps a slot's cgroup gets, written into a fake cgroup tree (plain directories stand in for the kernel's)."""

from __future__ import annotations

from pathlib import Path

from openbrowse.slots.cgroups import CgroupFlavour, CgroupLimits, SlotCgroup

LIMITS = CgroupLimits(memory_mb=2048, pids=512, cpu=1.5)


def _v1_root(tmp_path: Path) -> Path:
    for controller in ("memory", "pids", "cpu"):
        (tmp_path / controller).mkdir()
    return tmp_path


def test_v1_keeps_the_cap_and_adds_a_burst_of_one_period(tmp_path: Path) -> None:
    group = SlotCgroup("inst-3", LIMITS, root=_v1_root(tmp_path))
    assert group.flavour is CgroupFlavour.V1
    group.create()
    cpu = tmp_path / "cpu" / "openbrowse" / "inst-3"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    assert (cpu / "cpu.cfs_burst_us").read_text() == "150000"
    assert not (cpu.parent / "cpu.shares").exists()  # the slots' parent keeps the default weight
    assert (tmp_path / "memory" / "openbrowse" / "inst-3" / "memory.limit_in_bytes").read_text() == str(2048 << 20)


def test_v2_writes_the_same_knobs_under_their_v2_names(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    group = SlotCgroup("inst-4", LIMITS, root=tmp_path)
    assert group.flavour is CgroupFlavour.V2
    group.create()
    directory = tmp_path / "openbrowse" / "inst-4"
    assert (directory / "cpu.max").read_text() == "150000 100000"
    assert (directory / "cpu.max.burst").read_text() == "150000"
    assert not (directory.parent / "cpu.weight").exists()


def test_a_kernel_without_burst_still_gets_its_caps(tmp_path: Path) -> None:
    root = _v1_root(tmp_path)
    cpu = root / "cpu" / "openbrowse" / "inst-5"
    (cpu / "cpu.cfs_burst_us").mkdir(parents=True)  # writing it fails, as on a kernel before 5.14
    group = SlotCgroup("inst-5", LIMITS, root=root)
    group.create()
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    assert (root / "pids" / "openbrowse" / "inst-5" / "pids.max").read_text() == "512"
