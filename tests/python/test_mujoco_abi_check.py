"""The import-time MuJoCo check (python/mjcenic/_mujoco_check.py): MuJoCo releases are not
ABI-compatible, so any version other than the one mjcenic was built for, down to the patch
level, is refused with the rebuild command; only the exact version passes."""
import types

import pytest

from mjcenic import _mujoco_check  # noqa: E402  (conftest puts build/python on sys.path)


@pytest.mark.parametrize("installed", ["3.12.1", "3.13.0", "4.12.0", "3.11.9", "3.12", "3.12.0.1"])
def test_any_other_version_is_refused(installed):
    with pytest.raises(ImportError) as e:
        _mujoco_check.check(types.SimpleNamespace(__version__=installed), "3.12.0", "pip",
                            "/nonexistent", "/nonexistent")
    msg = str(e.value)
    assert f"compiled against MuJoCo 3.12.0 but MuJoCo {installed} is installed" in msg
    assert "pip install mujoco==3.12.0" in msg


def test_the_exact_version_passes():
    assert _mujoco_check.check(types.SimpleNamespace(__version__="3.12.0"), "3.12.0", "pip",
                               "", "") is None
