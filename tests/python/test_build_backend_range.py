"""The wheel build backend's supported MuJoCo range (MUJOCO_VERSION,
python/build_backend/mjcenic_backend.py): [minimum, below), both ends exact."""
import importlib.util

import pytest

from conftest import ROOT


def _backend():
    pytest.importorskip("scikit_build_core")
    spec = importlib.util.spec_from_file_location(
        "mjcenic_backend", ROOT / "python/build_backend/mjcenic_backend.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("version,inside", [
    ("3.11.9", False), ("3.12.0", True), ("3.12.1", True), ("4.0.0", True), ("4.0.99", True),
    ("4.1", False), ("4.1.0", False), ("4.1.1", False), ("5.0.0", False)])
def test_range_is_minimum_inclusive_below_exclusive(version, inside):
    b = _backend()
    rng = {"minimum": "3.12.0", "below": "4.1", "default": "3.12.0"}
    assert b.in_range(version, rng) is inside


def test_the_files_range_holds_its_default():
    b = _backend()
    rng = b.mujoco_range()
    assert b.in_range(rng["default"], rng) and b.in_range(rng["minimum"], rng)
    assert not b.in_range(rng["below"], rng)
