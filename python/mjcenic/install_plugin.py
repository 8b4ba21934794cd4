"""`mjcenic install-plugin`: make models that declare the mjcenic plugin load in
stock MuJoCo tools (`python -m mujoco.viewer`, `simulate`, any `import mujoco`).

A model with `<extension><plugin plugin="mjcenic">` names a plugin that MuJoCo
must have registered before it compiles the model. `import mjcenic` registers
it in-process; stock tools do not import mjcenic, but they load every shared
library in a plugin directory:

  * the `mujoco` Python package loads `<site-packages>/mujoco/plugin/*.so` on
    `import mujoco` (mujoco.PLUGINS_DIR) -- the default target here;
  * the `simulate` binary loads `<its directory>/mujoco_plugin/` -- use --dir.

This command copies (or, with --symlink, links) mjcenic's plugin library
(libmjcenic.so: the C API and the MuJoCo engine plugin) into that directory.
The plugin is configuration-only: those tools then load the model and keep its
mjcenic <config>, but they still step with mj_step. Only mjcenic.Stepper (or
mjcenic_step in C) integrates with mjcenic.

The library must be built for the same MuJoCo as the target (a stale copy in
mujoco/plugin/ after upgrading mujoco breaks `import mujoco`): rerun this
command after rebuilding, or use --symlink to a build tree, and --uninstall to
remove it.
"""
import argparse
import os
import pathlib
import shutil
import sys

LIBRARY_NAME = "libmjcenic.so"


def find_library():
    """$MJCENIC_PLUGIN_LIBRARY, the plugin library next to this package (a wheel
    that ships it), in the build tree this package was assembled in
    (build/python/mjcenic -> build/libmjcenic.so), or installed by `cmake
    --install` where the dynamic linker looks; None if there is none."""
    env = os.environ.get("MJCENIC_PLUGIN_LIBRARY")
    if env:
        return pathlib.Path(env)
    pkg = pathlib.Path(__file__).resolve().parent
    for cand in (pkg / LIBRARY_NAME, pkg.parent.parent / LIBRARY_NAME):
        if cand.is_file():
            return cand
    # `cmake --install` into a prefix the dynamic linker searches (lib/libmjcenic.so)
    import ctypes.util
    found = ctypes.util.find_library("mjcenic")
    if found:
        for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) + [
                "/usr/local/lib", "/usr/lib", "/usr/local/lib64", "/usr/lib64"]:
            if d and (pathlib.Path(d) / found).is_file():
                return pathlib.Path(d) / found
    return None


def default_directory():
    """Where `import mujoco` loads plugin libraries from (mujoco.PLUGINS_DIR)."""
    import mujoco
    return pathlib.Path(getattr(mujoco, "PLUGINS_DIR",
                                os.path.join(os.path.dirname(mujoco.__file__), "plugin")))


def add_arguments(p):
    p.add_argument("--dir", default=None, metavar="DIR",
                   help="plugin directory (default: the mujoco package's plugin directory, "
                        "loaded by `import mujoco` and `python -m mujoco.viewer`; for the "
                        "`simulate` binary: <its directory>/mujoco_plugin)")
    p.add_argument("--library", default=None, metavar="PATH",
                   help=f"the plugin library to install (default: {LIBRARY_NAME} of this "
                        "installation or build tree)")
    p.add_argument("--symlink", action="store_true",
                   help="link instead of copying (follows rebuilds of a build tree)")
    p.add_argument("--uninstall", action="store_true", help=f"remove DIR/{LIBRARY_NAME}")
    p.add_argument("--dry-run", action="store_true", help="print what would be done")
    p.set_defaults(func=run)



def add_parser(sub):
    p = sub.add_parser("install-plugin", allow_abbrev=False,
                       help="let stock MuJoCo tools load models that declare the mjcenic plugin",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def _is_plugin_library(path):
    """Why `path` is not mjcenic's plugin library, or None if it is: an ELF shared
    object that exports the C API (mjcenic_create, mjcenic_step); checked on the file
    without loading it, so nothing of it runs."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head != b"\x7fELF":
                return "not a shared library (no ELF header)"
            f.seek(0)
            data = f.read()
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if b"mjcenic_create" not in data or b"mjcenic_step" not in data:
        return "a shared library, but not mjcenic's plugin library (no mjcenic C API symbols)"
    return None


def run(a, prog="mjcenic install-plugin"):
    if a.dir is not None and not str(a.dir).strip():
        print(f"{prog}: --dir is empty (give a directory, or leave --dir out for the mujoco "
              "package's plugin directory)", file=sys.stderr)
        return 2
    if a.library is not None and not str(a.library).strip():
        print(f"{prog}: --library is empty", file=sys.stderr)
        return 2
    directory = pathlib.Path(a.dir) if a.dir else default_directory()
    target = directory / LIBRARY_NAME
    if a.uninstall:
        if not (target.exists() or target.is_symlink()):
            print(f"{prog}: nothing to remove ({target} does not exist)")
            return 0
        if not a.dry_run:
            target.unlink()
        print(f"{'would remove' if a.dry_run else 'removed'} {target}")
        return 0
    lib = pathlib.Path(a.library) if a.library else find_library()
    if lib is None:
        print(f"{prog}: this installation has no {LIBRARY_NAME}; build it (`make build` -> "
              f"build/{LIBRARY_NAME}, or `cmake --install`) and pass --library PATH (or open "
              "the model from Python after `import mjcenic`)", file=sys.stderr)
        return 1
    where = "--library " if a.library else "MJCENIC_PLUGIN_LIBRARY="
    if not lib.is_file():
        print(f"{prog}: {where}{lib}: no such file", file=sys.stderr)
        return 2
    why = _is_plugin_library(lib)
    if why is not None:
        print(f"{prog}: {where}{lib}: {why}", file=sys.stderr)
        return 2
    if not directory.is_dir():
        print(f"{prog}: --dir {directory}: no such directory", file=sys.stderr)
        return 2
    if not os.access(directory, os.W_OK):
        print(f"{prog}: {directory} is not writable (run with the rights of the mujoco "
              "installation, or use --dir)", file=sys.stderr)
        return 1
    verb = "link" if a.symlink else "copy"
    # The library already is the target (same file, or a link to it): replacing
    # the target would delete the library, or link it to itself.
    if target.exists() and os.path.samefile(lib, target):
        print(f"{prog}: {lib} already is {target}; nothing to do")
        return 0
    if a.dry_run:
        print(f"would {verb} {lib} -> {target}")
        return 0
    if target.exists() or target.is_symlink():
        target.unlink()
    if a.symlink:
        target.symlink_to(lib.resolve())
    else:
        shutil.copy2(lib, target)
    print(f"{'linked' if a.symlink else 'copied'} {lib} -> {target}\n"
          "Models declaring the mjcenic plugin now load in tools that load this directory; "
          "those tools still step with mj_step (the plugin only carries the configuration). "
          f"Undo: mjcenic install-plugin --uninstall{' --dir ' + str(directory) if a.dir else ''}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="mjcenic install-plugin", allow_abbrev=False,
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
