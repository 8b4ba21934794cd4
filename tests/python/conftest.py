import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build"))
# Third-party models (Menagerie robots, MuJoCo's model gallery), used in place and
# never copied into the repository (docs/development.md, "Third-party models").
SHARED_MODELS = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
PYTHON_PKG = BUILD / "python"
if str(PYTHON_PKG) not in sys.path:
    sys.path.insert(0, str(PYTHON_PKG))


# A sphere above a floor; {ext} takes an <extension> block (or "").
SPHERE = """<mujoco>
  {ext}
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size=".1" mass="1"/></body>
  </worldbody>
</mujoco>"""


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_models: needs the third-party models of "
                            "MJCENIC_SHARED_MODELS (skipped without them, fails under CI=true)")


def _shared_models_missing():
    return None if SHARED_MODELS.is_dir() else (
        f"third-party models not found at {SHARED_MODELS} (set MJCENIC_SHARED_MODELS; "
        "docs/development.md)")


_SKIPPED_FOR_MODELS = []


def pytest_runtest_setup(item):
    if item.get_closest_marker("shared_models") is None:
        return
    why = _shared_models_missing()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {why}", pytrace=False)
    _SKIPPED_FOR_MODELS.append(item.nodeid)
    pytest.skip(why)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a test skipped for a missing installed extra (pytest.importorskip: "could
    not import 'ray'") fails instead: CI installs every extra its tests need."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and os.environ.get("CI") == "true" and "could not import" in str(rep.longrepr):
        why = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else rep.longrepr
        rep.outcome = "failed"
        rep.longrepr = f"CI=true: a test extra is not installed ({why}; make ray-deps)"


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED_FOR_MODELS:
        terminalreporter.write_line(f"{len(_SKIPPED_FOR_MODELS)} tests skipped: "
                                    f"{_shared_models_missing()}")


def python_env():
    """Environment for subprocesses that import the in-tree mjcenic package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_PKG), env.get("PYTHONPATH", "")])
    return env


def run_cli(args, tmp_path, check=True):
    """Runs build/mjcenic-run with --json and returns (returncode, report, stdout, stderr)."""
    out = tmp_path / "report.json"
    proc = subprocess.run([str(BUILD / "mjcenic-run"), *map(str, args), "--json", str(out)],
                          capture_output=True, text=True, timeout=900)
    report = json.loads(out.read_text()) if out.exists() else None
    if check and proc.returncode != 0:
        raise AssertionError(f"mjcenic-run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, report, proc.stdout, proc.stderr


@pytest.fixture
def cli(tmp_path):
    return lambda *args, check=True: run_cli(args, tmp_path, check)
