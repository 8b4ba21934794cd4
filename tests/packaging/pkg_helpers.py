"""Shared by the tests in tests/packaging (a plain module, not a conftest: tests/python has one)."""
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build"))

# A sphere (radius 0.1 m) released from rest 1 m above a plane.
FALLING_SPHERE_XML = """<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size=".1" mass="1"/></body>
  </worldbody>
</mujoco>"""
GRAVITY = 9.81


def run(cmd, **kw):
    """subprocess.run that fails with the command's output."""
    kw.setdefault("timeout", 1800)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, (f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                                  f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return proc


def readelf_dynamic(path):
    """(NEEDED sonames, RUNPATH/RPATH entries) of an ELF file."""
    out = run(["readelf", "-d", path]).stdout
    needed, runpath = [], []
    for line in out.splitlines():
        if "(NEEDED)" in line:
            needed.append(line.split("[", 1)[1].rstrip("]"))
        elif "(RUNPATH)" in line or "(RPATH)" in line:
            runpath += line.split("[", 1)[1].rstrip("]").split(":")
    return needed, runpath


def ldd(path, env=None):
    """{soname: resolved path or "not found"} of the libraries `path` loads."""
    out = run(["ldd", path], env=env).stdout
    libs = {}
    for line in out.splitlines():
        if "=>" in line:
            name, rest = line.split("=>", 1)
            libs[name.strip()] = rest.split("(")[0].strip() or "not found"
    return libs
