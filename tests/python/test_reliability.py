"""Reliability regressions through Python: livelocks end in clear errors (the
progress guarantee of docs/how-it-works.md, "Errors and progress"), a step at a huge
time underflows instead of succeeding silently, inconsistent step bounds are
refused naming the keys, replaced MJCF solver settings are named in a warning,
and overflowing inputs name the dof.

Every would-be livelock runs in a subprocess with a generous hang guard (a
hang fails the test instead of stalling the suite); what is asserted is the
error and the bounded number of internal steps, not a wall time."""
import json
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from conftest import ROOT, python_env

import mjcenic  # noqa: E402

CLUTTER = str(ROOT / "models/clutter.xml")
HANG_GUARD = 120  # s; the cases below end in well under a second on one core


def bounded(options, setup="", calls=50):
    """Runs up to `calls` step() calls on models/clutter.xml in a subprocess;
    returns dict(error=..., kind=..., calls=..., steps=..., time=...)."""
    code = f"""
import json, mujoco, mjcenic
m = mujoco.MjModel.from_xml_path({CLUTTER!r}); d = mujoco.MjData(m)
{setup}
out = dict(error=None, kind=None, calls=0, steps=0, time=0.0)
try:
    s = mjcenic.Stepper(m, **{options!r})
    for i in range({calls}):
        s.step(d)
        out["calls"] += 1
except Exception as e:
    out["error"], out["kind"] = str(e), type(e).__name__
try:
    out["steps"] = s.stats["steps"]
except NameError:
    pass
out["time"] = d.time
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=python_env(), timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("accuracy", ["1e-15", "1e-17", "1e-300"])
def test_accuracy_below_round_off_is_refused(accuracy):
    r = bounded({"accuracy": float(accuracy)})
    assert r["kind"] == "ValueError" and "'accuracy'" in r["error"] and "1e-12" in r["error"], r


def test_tiny_length_scale_is_refused():
    r = bounded({"length_scale": 1e-300})
    assert r["kind"] == "ValueError" and "'length_scale'" in r["error"], r


def test_one_newton_iteration_ends_in_error_after_bounded_steps():
    r = bounded({"max_iterations": 1})
    assert r["kind"] == "RuntimeError", r
    assert "max_iterations 1" in r["error"] and "no progress guarantee" in r["error"], r
    assert r["calls"] == 0 and r["steps"] <= 200, r  # 200 solver-sized steps, then the error


def test_tiny_max_step_is_refused_before_stepping():
    r = bounded({"max_step": 1e-9})
    assert r["kind"] == "RuntimeError" and "max_steps_per_call" in r["error"], r
    assert r["steps"] == 0 and r["time"] == 0.0, r


def test_huge_timestep_is_refused_not_integrated():
    r = bounded({}, setup="m.opt.timestep = 1e10")
    assert r["kind"] == "RuntimeError" and "to 1e+10" in r["error"], r
    assert r["steps"] == 0 and r["time"] == 0.0, r


def test_max_steps_per_call_is_an_option():
    m = mujoco.MjModel.from_xml_path(CLUTTER)
    d = mujoco.MjData(m)
    s = mjcenic.Stepper(m, max_steps_per_call=10)
    with pytest.raises(RuntimeError, match=r"10 accepted steps \(max_steps_per_call\)"):
        s.advance_to(0.5, d)
    assert s.stats["steps"] == 10 and 0 < d.time < 0.5 and np.all(np.isfinite(d.qpos))
    with pytest.raises(ValueError, match="max_steps_per_call"):
        mjcenic.Stepper(m, max_steps_per_call=-1)


def test_step_at_huge_time_underflows():
    m = mujoco.MjModel.from_xml_path(CLUTTER)
    d = mujoco.MjData(m)
    d.time = 1e17
    q = d.qpos.copy()
    s = mjcenic.Stepper(m)
    with pytest.raises(RuntimeError, match=r"step size underflow at time 1e\+17"):
        s.step(d)
    assert d.time == 1e17 and np.array_equal(d.qpos, q)


@pytest.mark.parametrize("options,keys", [
    ({"min_step": 0.5, "max_step": 0.1}, "min_step (0.5 s) exceeds max_step (0.1 s)"),
    ({"min_step": 2}, "min_step (2 s) exceeds the default max_step (0.1 s)"),
    ({"initial_step": 10}, "initial_step (10 s) exceeds the default max_step (0.1 s)"),
])
def test_inconsistent_step_bounds_are_refused(options, keys):
    m = mujoco.MjModel.from_xml_path(CLUTTER)
    with pytest.raises(ValueError) as e:
        mjcenic.Stepper(m, **options)
    assert keys in str(e.value)


def test_replaced_solver_settings_are_warned():
    xml = """<mujoco><option integrator="RK4" solver="PGS" noslip_iterations="2"/>
      <worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .2"><freejoint/><geom type="sphere" size=".1"/></body></worldbody></mujoco>"""
    s = mjcenic.Stepper(mujoco.MjModel.from_xml_string(xml))
    assert len(s.warnings) == 1
    w = s.warnings[0]
    assert w.startswith("MJCF options replaced by mjcenic and ignored"), w
    for part in ('integrator="RK4"', 'solver="PGS"', "noslip_iterations=2"):
        assert part in w, w
    assert mjcenic.Stepper(mujoco.MjModel.from_xml_path(CLUTTER)).warnings == []


@pytest.mark.parametrize("field", ["qvel", "qfrc_applied"])
def test_overflowing_input_names_the_dof(field):
    m = mujoco.MjModel.from_xml_path(CLUTTER)
    d = mujoco.MjData(m)
    getattr(d, field)[0] = 1e300
    s = mjcenic.Stepper(m)
    with pytest.raises(ValueError) as e:
        s.step(d)
    msg = str(e.value)
    assert "dof 0 (joint 'obj0')" in msg and f"{field} = 1e+300" in msg, msg
    assert "worst coordinate: none" not in msg
    assert s.stats["rejected_steps"] == 0 and d.time == 0
