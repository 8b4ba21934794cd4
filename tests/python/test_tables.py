"""The one table of options and statistics (options_table.h) as every front end
sees it, the README and docs/statistics.md generated from it, and the error norm exposed from C++."""
import math
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from conftest import BUILD, ROOT, python_env

import mjcenic  # noqa: E402


def test_readme_tables_are_in_sync_with_the_generator():
    p = subprocess.run([sys.executable, str(ROOT / "scripts/gen_readme_tables.py"), "--check"],
                       capture_output=True, text=True, env=dict(python_env(), MJCENIC_BUILD=str(BUILD)))
    assert p.returncode == 0, p.stderr


# Every generated section of docs/benchmarks.md: (script, committed JSON, the script's output option).
SECTIONS = [
    ("bench_step_cost.py", "docs/step_cost/step_cost.json", "--out"),
    ("bench_newton.py", "docs/newton/newton.json", "--out"),
    ("work_precision.py", "docs/work_precision/work_precision.json", "--out-dir"),
    ("work_precision.py", "docs/work_precision/ingredients/work_precision.json", "--out-dir"),
    ("work_precision.py", "docs/work_precision/propagated/work_precision.json", "--out-dir"),
    ("work_precision.py", "docs/work_precision/per_unit_step/work_precision.json", "--out-dir"),
    ("work_precision.py", "docs/work_precision/per_unit_step/work_precision_0.3s.json", "--out-dir"),
    ("sinking.py", "docs/sinking/sinking.json", "--out-dir"),
    ("bench_step_loop.py", "docs/step_loop/step_loop.json", "--out-dir"),
    ("bench_step_loop.py", "docs/step_loop/per_unit_step_0.3s/step_loop.json", "--out-dir"),
    ("bench_anchor_eps_cap.py", "docs/step_loop/anchor_eps_cap.json", None),
    ("bench_policy_loop.py", "docs/policy_loop/policy_loop.json", "--out-dir"),
    ("bench_policy_loop.py", "docs/policy_loop/rollout.json", "--out-dir"),
    ("bench_rollout.py", "docs/rollout/rollout.json", "--out"),
    ("bench_creep.py", "docs/creep/creep.json", "--out-dir"),
    ("bench_creep_cost.py", "docs/creep/cost.json", "--out"),
]


@pytest.mark.parametrize("script,saved,out_flag", SECTIONS, ids=[s[1] for s in SECTIONS])
def test_benchmark_sections_are_generated_from_the_committed_runs(script, saved, out_flag, tmp_path):
    """docs/benchmarks.md's generated sections are what each script's --from-json writes from
    the committed JSON (so the page is regenerated, never edited by hand)."""
    committed = (ROOT / "docs/benchmarks.md").read_text()
    page = tmp_path / "benchmarks.md"
    page.write_text(committed)
    out = tmp_path / ("out/cost.json" if script == "bench_creep_cost.py" else "out")
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--from-json", str(ROOT / saved),
                        *([out_flag, str(out)] if out_flag else []), "--page", str(page)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(python_env(), MJCENIC_BUILD=str(BUILD), MPLBACKEND="Agg"))
    assert p.returncode == 0, p.stderr
    assert page.read_text() == committed, f"run python3 scripts/{script} --from-json {saved}"


def test_every_benchmark_section_is_checked():
    """Each generated region of docs/benchmarks.md is either checked above or says how to
    produce it (no committed run)."""
    import re
    text = (ROOT / "docs/benchmarks.md").read_text()
    regions = re.findall(r"<!-- BEGIN GENERATED (\S+) \(scripts/(\S+)\) -->\n(.*?)<!-- END GENERATED", text, re.S)
    assert len(regions) >= len(SECTIONS)
    checked = {s for s, _, _ in SECTIONS}
    for name, script, body in regions:
        assert script in checked or ("No committed run" in body and f"scripts/{script}" in body), name


def test_every_front_end_lists_the_same_options_and_statistics(cli):
    keys = [o["key"] for o in mjcenic.option_table()]
    stats = [s["name"] for s in mjcenic.stat_table()]
    assert keys == mjcenic.option_keys() and len(set(keys)) == len(keys)
    assert "controller_calls" in stats
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/sphere_plane.xml"))
    sim = mjcenic.Stepper(m)
    assert list(sim.options) == keys
    assert set(sim.stats) == set(stats) | {"accepted_steps"}
    # Defaults in the table are what a fresh stepper has (formatted as MJCF text).
    for o in mjcenic.option_table():
        v = sim.options[o["key"]]
        if isinstance(v, bool):
            assert o["default"] == ("true" if v else "false"), o
        elif isinstance(v, (int, float)):
            assert float(o["default"]) == v, o
        else:
            assert o["default"] == v, o
    # The CLI's JSON carries every statistic.
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.1")
    assert set(stats) <= set(r), set(stats) - set(r)
    assert r["accepted_steps"] == r["steps"]
    # The C API lists the same names.
    import ctypes
    lib = ctypes.CDLL(str(BUILD / "libmjcenic.so"))
    lib.mjcenic_stat_name.restype = ctypes.c_char_p
    lib.mjcenic_option_name.restype = ctypes.c_char_p

    def names(f):
        out, i = [], 0
        while (n := f(i)) is not None:
            out.append(n.decode())
            i += 1
        return out
    assert names(lib.mjcenic_stat_name) == stats
    assert names(lib.mjcenic_option_name) == keys


def test_option_values_round_trip_through_every_entry():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/sphere_plane.xml"))
    sim = mjcenic.Stepper(m, accuracy=2.5e-4, linear_solver="pcg", max_iterations=7,
                          frictionloss_regularization="stiction", adaptive_tolerance=False)
    o = sim.options
    assert o["accuracy"] == 2.5e-4 and o["linear_solver"] == "pcg"
    assert o["max_iterations"] == 7 and isinstance(o["max_iterations"], int)
    assert o["frictionloss_regularization"] == "stiction" and o["adaptive_tolerance"] is False
    with pytest.raises(ValueError, match="'linear_solver': bad value 'qr' "
                                         r"\(expected auto, dense, sparse, islands, pcg, lowrank, block or tree\)"):
        mjcenic.Stepper(m, linear_solver="qr")
    with pytest.raises(ValueError, match="'accuracy': bad value ''"):
        mjcenic.Stepper(m, accuracy="")


# ----------------------------------------------------------------------------- error norm

MODEL = """<mujoco>
  <worldbody>
    <body><freejoint/><geom size=".1"/></body>
    <body pos="1 0 0"><joint name="hinge" type="hinge"/><geom type="capsule" size=".1" fromto="0 0 0 0 0 .5"/>
      <body pos="0 0 .5"><joint name="slide" type="slide"/><geom size=".05"/>
        <body pos="0 0 .2"><joint name="ball" type="ball"/><geom size=".05" pos="0 0 .1"/></body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="hinge" dyntype="filter" dynprm="0.1" ctrllimited="true" ctrlrange="-2 2"/>
  </actuator>
</mujoco>"""


def quat(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def test_error_norm_equals_a_hand_computation():
    m = mujoco.MjModel.from_xml_string(MODEL)
    assert (m.nq, m.nv, m.na) == (13, 11, 1)
    q_ref = m.qpos0.copy()
    q_ref[3:7] = quat([1, 2, 3], 0.4)          # free joint: some orientation
    q_ref[9:13] = quat([0, 1, 0], 0.3)          # ball
    q = q_ref.copy()
    dpos = np.array([0.1, -0.2, 0.05])
    q[0:3] += dpos                               # free translation
    q[3:7] = quat_mul(q_ref[3:7], quat([0, 0, 1], 0.3))  # + 0.3 rad about body z
    q[7] += 0.25                                 # hinge [rad]
    q[8] += 0.45                                 # slide [m]
    q[9:13] = quat_mul(q_ref[9:13], quat([1, 0, 0], 0.2))  # + 0.2 rad
    for L in (0.5, 2.0):
        # weighted: translations / L, rotation angles in radians, infinity norm.
        expect = max(np.abs(dpos).max() / L, 0.3, 0.25, 0.45 / L, 0.2)
        assert mjcenic.error_norm(m, q_ref, q, length_scale=L) == pytest.approx(expect, rel=1e-12)
    # drake: raw qpos components.
    assert mjcenic.error_norm(m, q_ref, q, kind="drake") == pytest.approx(np.abs(q - q_ref).max(),
                                                                          rel=1e-12)
    # full_state: also velocities / L.
    v_ref, v = np.zeros(m.nv), np.zeros(m.nv)
    v[4] = 3.0
    assert mjcenic.error_norm(m, q_ref, q, v_ref=v_ref, v=v, kind="full_state",
                              length_scale=2.0) == pytest.approx(1.5, rel=1e-12)
    # Activations, each divided by its range (ctrlrange of the filter: 4).
    a_ref, a = np.zeros(1), np.array([2.0])
    assert mjcenic.error_norm(m, q_ref, q_ref, act_ref=a_ref, act=a) == pytest.approx(0.5)
    # length_scale 0 is the stepper's.
    L = mjcenic.Stepper(m).length_scale
    assert mjcenic.error_norm(m, q_ref, q) == mjcenic.error_norm(m, q_ref, q, length_scale=L)
    with pytest.raises(ValueError, match="q must have 13 entries"):
        mjcenic.error_norm(m, q_ref, q[:5])
    # propagated (outside a step: the free-dof weight τ = 1 s): dof 4 is a rotation, in rad.
    for kind in ("propagated", "propagated_modes"):
        assert mjcenic.error_norm(m, q_ref, q_ref, v_ref=v_ref, v=v, kind=kind,
                                  length_scale=2.0) == pytest.approx(3.0, rel=1e-12)
    with pytest.raises(ValueError, match="kind must be weighted, drake, full_state, propagated "
                                         "or propagated_modes"):
        mjcenic.error_norm(m, q_ref, q, kind="l2")


def test_public_options_fit_the_readme():
    """The README's options table (the public level) stays a user's table: at most 24 rows, each
    description at most 30 words; the rest are expert options (docs/options.md)."""
    rows = mjcenic.option_table()
    public = [r for r in rows if not r["expert"]]
    assert 0 < len(public) <= 24, [r["key"] for r in public]
    wordy = [(r["key"], len(r["doc"].split())) for r in public if len(r["doc"].split()) > 30]
    assert not wordy, wordy
