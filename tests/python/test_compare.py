"""`mjcenic compare` (python -m mjcenic compare): report fields, load errors, outputs."""
import json
import math
import os
import subprocess
import sys
import time

import pytest

from conftest import BUILD, SHARED_MODELS

ROBOTS = [SHARED_MODELS / "menagerie/kuka_iiwa_14/scene.xml",
          SHARED_MODELS / "menagerie/franka_emika_panda/scene.xml"]

ROW_FIELDS = ["model", "method", "load_ok", "error", "wall_time", "real_time_rate", "steps",
              "rejected_steps", "max_penetration", "energy_drift", "trajectory_error",
              "warnings", "finite"]
NUMERIC = ["wall_time", "real_time_rate", "steps", "rejected_steps", "max_penetration",
           "energy_drift", "trajectory_error"]

BOX_SCENE = """<mujoco model="box drop">
  <include file="box.xml"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
  </worldbody>
</mujoco>
"""
BOX = """<mujoco>
  <worldbody>
    <body name="box" pos="0 0 0.1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""
BROKEN = "<mujoco><worldbody><geom type='sphere' size='-1'/><body></mujoco>"


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def run_compare(tmp_path, *args, timeout=600):
    """Runs `python -m mjcenic compare ARGS --json/--markdown/--plots` in tmp_path."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mjcenic", "compare", *map(str, args),
           "--json", str(out / "report.json"), "--markdown", str(out / "report.md"),
           "--plots", str(out / "plots")]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(BUILD / "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["MPLBACKEND"] = "Agg"
    start = time.perf_counter()
    # cwd: MuJoCo may write MUJOCO_LOG.TXT into the working directory.
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env=env)
    elapsed = time.perf_counter() - start
    report = None
    if (out / "report.json").exists():
        report = json.loads((out / "report.json").read_text(), parse_constant=_reject_constant)
    return proc, report, out, elapsed


def check_outputs(out):
    md = (out / "report.md").read_text()
    assert md.strip() and "| Model | Method |" in md
    for name in ("wall_time_vs_error.png", "max_penetration.png"):
        png = out / "plots" / name
        assert png.exists() and png.stat().st_size > 1000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    return md


def check_no_nan(x, where="report"):
    if isinstance(x, float):
        assert math.isfinite(x), where
    elif isinstance(x, dict):
        for k, v in x.items():
            check_no_nan(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            check_no_nan(v, f"{where}[{i}]")


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    for p in ROBOTS:
        if not p.exists():
            pytest.skip(f"shared model missing: {p}")
    tmp = tmp_path_factory.mktemp("compare_robots")
    return run_compare(tmp, *ROBOTS, "--duration", "0.5")


@pytest.mark.shared_models
def test_robots_finish_in_time_with_all_fields(robots):
    proc, report, out, elapsed = robots
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 300, f"mjcenic compare took {elapsed:.1f} s"
    assert report is not None
    check_no_nan(report)
    meta = report["metadata"]
    assert meta["mujoco_version"] and meta["duration"] == 0.5
    rows = report["rows"]
    models = {r["model"] for r in rows}
    assert models == {"kuka_iiwa_14/scene.xml", "franka_emika_panda/scene.xml"}
    for model in models:
        assert meta["reference_methods"][model] is not None
        methods = {r["method"] for r in rows if r["model"] == model}
        assert {"mj_step dt=0.002", "mj_step dt=0.001", "mjcenic acc=0.1", "mjcenic acc=0.01",
                "mjcenic acc=0.001"} <= methods, methods
        # one reference per simulator: each is measured against its own
        refs = [r for r in rows if r["model"] == model and r["is_reference"]]
        assert sorted(r["family"] for r in refs) == ["mj_step", "mjcenic"]
        assert all(meta["reference_methods"][model][r["family"]] == r["method"] for r in refs)
    for r in rows:
        for k in ROW_FIELDS:
            assert k in r, (k, r["method"])
        assert r["load_ok"] is True and r["error"] is None, r
        assert r["finite"] is True, r
        for k in NUMERIC:  # every value of a successful run exists
            assert isinstance(r[k], (int, float)) and not isinstance(r[k], bool), (k, r)
            assert r[k] >= 0, (k, r)
        assert isinstance(r["warnings"], list)
        if r["family"] == "mj_step":
            assert r["rejected_steps"] == 0 and r["warnings"] == []
            assert r["steps"] == round(0.5 / r["timestep"])
        assert r["wall_time"] > 0 and r["steps"] > 0
        if r["is_reference"]:
            assert r["trajectory_error"] == 0
        # the arms hold a keyframe: nothing should wander far from the reference
        assert r["trajectory_error"] < 0.1, r


@pytest.mark.shared_models
def test_robots_markdown_and_plots(robots):
    proc, report, out, _ = robots
    md = check_outputs(out)
    for r in report["rows"]:
        assert f"| {r['model']} | {r['method']} |" in md
    assert md.count("\n|") >= 2 + len(report["rows"])


def test_directory_with_broken_file(tmp_path):
    models = tmp_path / "models"
    (models / "good").mkdir(parents=True)
    (models / "bad").mkdir()
    (models / "good" / "scene.xml").write_text(BOX_SCENE)
    (models / "good" / "box.xml").write_text(BOX)      # included by scene.xml: not a model
    (models / "bad" / "broken.xml").write_text(BROKEN)
    proc, report, out, _ = run_compare(tmp_path, models, "--duration", "0.2",
                                       "--accuracies", "1e-2,1e-3")
    assert proc.returncode == 0, proc.stderr
    check_no_nan(report)
    rows = report["rows"]
    for r in rows:
        for k in ROW_FIELDS:
            assert k in r, k
    assert {r["model"] for r in rows} == {"models/good/scene.xml", "models/bad/broken.xml"}
    bad = [r for r in rows if r["model"] == "models/bad/broken.xml"]
    assert len(bad) == 1 and bad[0]["load_ok"] is False
    assert "XML" in bad[0]["error"] and "body" in bad[0]["error"]   # MuJoCo's parser text
    assert all(bad[0][k] is None for k in NUMERIC)
    good = [r for r in rows if r["model"] == "models/good/scene.xml"]
    assert {r["method"] for r in good} >= {"mj_step dt=0.002", "mj_step dt=0.001",
                                           "mjcenic acc=0.01", "mjcenic acc=0.001"}
    for r in good:
        assert r["load_ok"] and r["error"] is None and r["finite"], r
        assert all(r[k] is not None for k in NUMERIC), r
    # the box lands within 0.2 s: mj_step's soft contacts penetrate visibly
    assert max(r["max_penetration"] for r in good if r["family"] == "mj_step") > 1e-4
    md = check_outputs(out)
    assert "load failed" in md and "models/bad/broken.xml" in md


IMPLICITFAST_BOX = """<mujoco>
  <option integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="box" pos="0 0 0.1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_warnings_stated_once_and_unconverged_references_marked(tmp_path, monkeypatch):
    """The Markdown states each mjcenic warning once, under the table, and the rows refer
    to it; references that did not converge are said to be so in the Markdown and marked
    (a legend entry) in the plots."""
    (tmp_path / "box.xml").write_text(IMPLICITFAST_BOX)
    # a tolerance no reference meets: every reference is reported as not converged
    proc, report, out, _ = run_compare(tmp_path, tmp_path / "box.xml", "--duration", "0.05",
                                       "--accuracies", "1e-2", "--reps", "1",
                                       "--reference-levels", "0,3",
                                       "--reference-accuracy", "1e-12")
    assert proc.returncode == 0, proc.stderr
    md = check_outputs(out)
    warned = [r for r in report["rows"] if r["warnings"]]
    assert len(warned) >= 2 and all(r["family"] == "mjcenic" for r in warned)
    (warning,) = {w for r in warned for w in r["warnings"]}
    assert 'integrator="implicitfast"' in warning and len(warning) > 100
    assert md.count(warning) == 1 and f"- [W1] {warning}" in md
    row_start = f"| {report['rows'][0]['model']} |"
    table = [line for line in md.splitlines() if line.startswith(row_start)]
    assert len(table) == len(report["rows"])
    assert sum("warnings [W1]" in line for line in table) == len(warned)
    assert md.index(row_start) < md.index("- [W1]")  # under the table
    assert all(r["reference_converged"] is False for r in report["rows"])
    assert sum("reference not converged" in line for line in table) == \
        sum(not r["is_reference"] for r in report["rows"])
    assert "the plots mark those points" in md and "black ×" in md
    # plots: the marker's legend entry in each figure
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mjcenic import compare
    legends = {}
    close = plt.close

    def keep_legend(fig=None):
        legends[len(legends)] = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        close(fig)
    monkeypatch.setattr(plt, "close", keep_legend)
    compare.plots(report, tmp_path / "plots")
    assert len(legends) == 3
    assert "error against a reference that did not converge" in legends[0]
    assert all("reference did not converge" in legends[k] for k in (1, 2))
    # converged references: no such entry, no sentence
    for r in report["rows"]:
        r["reference_converged"] = True
    legends.clear()
    compare.plots(report, tmp_path / "plots")
    assert not any("converge" in t for texts in legends.values() for t in texts)
    assert "black ×" not in compare.markdown(report)


def test_nothing_loads_exits_1(tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text(BROKEN)
    proc, report, out, _ = run_compare(tmp_path, bad, tmp_path / "missing.xml",
                                       "--duration", "0.05")
    assert proc.returncode == 1
    rows = report["rows"]
    assert [r["load_ok"] for r in rows] == [False, False]
    assert "missing.xml" in rows[1]["error"]
    check_outputs(out)
