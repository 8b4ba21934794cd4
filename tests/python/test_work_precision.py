"""mjcenic.work_precision and `mjcenic compare` on it: each simulator against its own
converged reference, a loud verdict when a reference does not converge, first-order mj_step
errors, accuracy rows that are not capped by the samples, no cross-simulator error."""
import json
import math

import mujoco
import numpy as np
import pytest

import mjcenic
from conftest import ROOT
from mjcenic import compare
from mjcenic import work_precision as wp

PENDULUM = ROOT / "models" / "pendulum.xml"
PINCH = ROOT / "models" / "pinch_grasp.xml"


def _times(T, dt=0.01):
    return np.round(np.arange(0, round(T / dt) + 1) * dt, 12)


def _own_error(m, q, q_ref):
    """The trajectory error computed here, independently of work_precision.traj_error."""
    dq = np.zeros(m.nv)
    worst = 0.0
    for a, b in zip(q, q_ref):
        mujoco.mj_differentiatePos(m, dq, 1.0, b, a)
        worst = max(worst, float(np.abs(dq).max()))
    return worst


def test_reference_that_does_not_converge_fails_loudly(tmp_path, capsys):
    """A chaotic double pendulum (both links swung up, 5 s): the levels dt/1 … dt/32 keep
    differing by O(1) rad, so neither simulator's reference converges, by the tolerance and,
    with a tolerance too loose to decide, by the observed order."""
    m = mjcenic.load_model(str(PENDULUM))

    def make():
        d = mujoco.MjData(m)
        d.qpos[:] = [2.6, 2.0]
        mujoco.mj_forward(m, d)
        return d
    times = _times(5.0)
    for sim in ("mj_step", "mjcenic"):
        run_at = wp.runner(sim, m, times, make)
        ref = wp.reference(m, run_at, m.opt.timestep, levels=(0, 5), tol=100.0,
                           order=wp.method_order(sim, m))
        assert ref["level"] == 5 and len(ref["checks"]) == 5
        assert not ref["extrapolated"]  # neither do the Richardson extrapolations
        assert 1.0 < ref["check"] <= 100.0      # within the tolerance: the order decides
        assert ref["converged"] is False and "do not converge" in ref["note"], ref["note"]
        assert any(o < wp.ORDER_MIN for o in ref["orders"][-2:])
        with pytest.raises(wp.ReferenceNotConverged, match="did not converge"):
            wp.require_converged(ref, sim)
    # The same verdict reaches compare's report: a WARNING per simulator, converged false.
    scene = tmp_path / "swung_pendulum.xml"
    scene.write_text(PENDULUM.read_text().replace('qpos="0.8 -0.4"', 'qpos="2.6 2.0"'))
    out = tmp_path / "r.json"
    rc = compare.main([str(scene), "--duration", "5", "--accuracies", "1e-2", "--reps", "1",
                       "--reference-levels", "0,4", "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 0
    report = json.loads(out.read_text())
    refs = report["metadata"]["models"][0]["references"]
    for sim in ("mj_step", "mjcenic"):
        assert refs[sim]["converged"] is False and refs[sim]["check"] > 1e-4, refs[sim]
        assert f"swung_pendulum.xml: the {sim} reference did not converge" in err
        assert "WARNING" in err
    assert all(r["reference_converged"] is False for r in report["rows"])


def test_mjstep_error_against_its_own_reference_is_first_order():
    """mj_step (semi-implicit Euler) on the contact-free double pendulum, 1 s: the error
    against mj_step at dt/2^k halves with dt (order 1 ± 0.3), far above the reference's
    check."""
    m = mjcenic.load_model(str(PENDULUM))

    def make():
        return mjcenic.make_data(m, "start")
    times = _times(1.0)
    dt = m.opt.timestep
    ref = wp.reference(m, wp.runner("mj_step", m, times, make), dt, levels=(4, 9), tol=1e-4)
    wp.require_converged(ref, "mj_step")
    errs = []
    for k in range(3):
        r = wp.run_mjstep(m, dt / 2 ** k, times, make)
        assert r.ok
        e = wp.traj_error(m, r.q, ref["run"].q)[0]
        assert e == pytest.approx(_own_error(m, r.q, ref["run"].q), rel=1e-12)
        errs.append(e)
    assert errs[-1] > 10 * ref["check"], (errs, ref["check"])
    orders = [math.log2(a / b) for a, b in zip(errs[:-1], errs[1:])]
    assert all(0.7 <= o <= 1.3 for o in orders), (errs, orders)



def test_reference_starts_finer_when_its_coarsest_levels_fail():
    """A synthetic first-order runner x(h) = x0 + a h + b h² that fails above dt/4 (a
    coarse step too large for the method): the reference starts at dt/4, the plain checks
    are |a| h/2 + O(h²) (order 1), the Richardson checks 2|b|(h_(k-1)² − h_k²) (order 2)."""
    m = mjcenic.load_model(str(PENDULUM))
    dt, n = 0.01, 5
    x0 = np.linspace(0.1, 0.5, n)[:, None] * np.ones((n, m.nq))
    a, b = 0.3, 40.0
    log = []

    def run_at(h):
        r = wp.Run(n, m.nq)
        if h > dt / 4:
            r.error = "unstable"
            return r
        r.q = x0 + a * h + b * h * h
        r.n, r.completed = n, True
        return r
    ref = wp.reference(m, run_at, dt, levels=(0, 6), tol=1e-3, stop_early=False, order=1,
                       log=log.append)
    assert ref["levels"] == [2, 3, 4, 5, 6]
    assert sum("starting finer" in line for line in log) == 2
    hs = [dt / 2 ** k for k in ref["levels"]]
    plain = [a * (h1 - h2) + b * (h1 * h1 - h2 * h2) for h1, h2 in zip(hs, hs[1:])]
    extra = [2 * b * (h1 * h1 - h2 * h2) for h1, h2 in zip(hs[1:], hs[2:])]
    assert ref["plain_checks"] == pytest.approx(plain, rel=1e-9)
    assert ref["extrapolated_checks"] == pytest.approx(extra, rel=1e-6)
    assert ref["extrapolated"] and ref["converged"]
    assert ref["run"].q == pytest.approx(x0 - 2 * b * hs[-1] ** 2, abs=1e-12)


@pytest.mark.parametrize("sim", ["mj_step", "mjcenic"])
def test_richardson_reference_is_second_order_and_closer(sim):
    """Both first-order references on the contact-free double pendulum, 1 s, levels
    dt/1 … dt/16: the plain checks fall at first order, the checks of the Richardson
    extrapolations of consecutive levels at second order, so the reference is the finest
    extrapolation; against a reference 64 times finer it is at most its check away, where
    the plain finest level is its own check away (first order: about that far)."""
    m = mjcenic.load_model(str(PENDULUM))

    def make():
        return mjcenic.make_data(m, "start")
    times = _times(1.0)
    dt = m.opt.timestep
    run_at = wp.runner(sim, m, times, make)
    assert wp.method_order(sim, m) == 1
    ref = wp.reference(m, run_at, dt, levels=(0, 4), tol=1e-3, stop_early=False, order=1)
    plain, extra = ref["plain_checks"], ref["extrapolated_checks"]
    assert len(plain) == 4 and len(extra) == 3
    assert all(0.8 <= o <= 1.2 for o in wp.orders(plain)), plain
    assert all(o >= 1.7 for o in wp.orders(extra)), extra
    assert ref["extrapolated"] and ref["converged"], ref["note"]
    assert ref["check"] == extra[-1] and ref["check"] < plain[-1] / 10, (plain, extra)
    # An independent, much finer reference: the extrapolation of dt/512 and dt/1024.
    fine = wp.richardson(m, run_at(dt / 512), run_at(dt / 1024), 1)
    finest_plain = run_at(dt / 16)
    e_extra = wp.traj_error(m, ref["run"].q, fine.q)[0]
    e_plain = wp.traj_error(m, finest_plain.q, fine.q)[0]
    assert e_extra <= ref["check"], (e_extra, ref["check"])
    assert e_plain == pytest.approx(plain[-1], rel=0.2), (e_plain, plain[-1])
    # Without an order the reference is the finest level itself.
    ref0 = wp.reference(m, run_at, dt, levels=(0, 4), tol=1e-3, stop_early=False)
    assert not ref0["extrapolated"] and ref0["extrapolated_checks"] == []
    assert ref0["checks"] == pytest.approx(plain, rel=1e-12)

def _settings(T, accuracies, reps=1):
    return {"times": list(_times(T)), "accuracies": accuracies, "reference_accuracy": 1e-4,
            "reference_levels": [3, 10], "reference_time_limit": 60.0, "time_limit": 60.0,
            "reps": reps}


def test_mjcenic_accuracy_rows_differ_when_the_step_is_error_limited():
    """The pendulum swings freely for 1 s: the step is limited by the error, not by the
    10 ms samples (dense output). At 1e-1 it takes fewer steps than there are samples, and
    the 1e-1 and 1e-2 rows differ: more steps and a smaller error at 1e-2."""
    m = mjcenic.load_model(str(PENDULUM))
    rows, meta = compare._compare_model(("pendulum", str(PENDULUM),
                                         _settings(1.0, [1e-1, 1e-2])), model=m)
    assert meta["references"]["mjcenic"]["converged"], meta["references"]
    by = {r["method"]: r for r in rows}
    a, b = by["mjcenic acc=0.1"], by["mjcenic acc=0.01"]
    assert a["error"] is None and b["error"] is None
    assert a["steps"] < 100 <= len(_times(1.0))   # steps longer than the sample interval
    assert b["steps"] > 1.5 * a["steps"], (a["steps"], b["steps"])
    assert b["trajectory_error"] < 0.5 * a["trajectory_error"], (a, b)
    assert a["error_resolved"] and b["error_resolved"]


def test_compare_records_hold_no_cross_simulator_error(tmp_path):
    """Pinch grasp, 0.2 s: every row is measured against its own simulator's reference. The
    mj_step and mjcenic errors are recomputed here from independent runs (a plain mj_step
    loop; mjcenic.Stepper with advance_to) against each simulator's reference step."""
    out = tmp_path / "r.json"
    assert compare.main([str(PINCH), "--duration", "0.2", "--accuracies", "1e-2", "--reps",
                         "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = report["rows"]
    refs = report["metadata"]["models"][0]["references"]
    assert {r["method"] for r in rows if r["is_reference"]} == \
        {refs["mj_step"]["method"], refs["mjcenic"]["method"]}
    for r in rows:
        assert r["reference_method"] == refs[r["family"]]["method"], r
        assert r["reference_method"].startswith(r["family"]), r
        assert r["reference_check"] == refs[r["family"]]["check"]
        assert set(r) == set(compare.ROW_FIELDS)

    m = mjcenic.load_model(str(PINCH))
    times = _times(0.2)

    def mjstep_q(dt):
        mm = mjcenic.load_model(str(PINCH))
        mm.opt.timestep = dt
        d = mujoco.MjData(mm)
        mujoco.mj_resetDataKeyframe(mm, d, 0)
        mujoco.mj_forward(mm, d)
        per = round(0.01 / dt)
        q = [d.qpos.copy()]
        for _ in times[1:]:
            mujoco.mj_step(mm, d, nstep=per)
            q.append(d.qpos.copy())
        return np.array(q)

    def mjcenic_q(**options):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        sim = mjcenic.Stepper(m, **options)
        q, t0 = [d.qpos.copy()], d.time
        for t in times[1:]:
            sim.advance_to(t0 + t, d)
            q.append(d.qpos.copy())
        return np.array(q)

    by = {r["method"]: r for r in rows}
    h_mj, h_cen = refs["mj_step"]["h"], refs["mjcenic"]["h"]
    q_ref_mj = mjstep_q(h_mj)
    q_ref_cen = mjcenic_q(mode="fixed", max_step=h_cen)
    e_mj = _own_error(m, mjstep_q(0.002), q_ref_mj)
    assert by["mj_step dt=0.002"]["trajectory_error"] == pytest.approx(e_mj, rel=1e-9, abs=1e-12)
    q_acc = mjcenic_q(mode="cenic", accuracy=1e-2, dense_output=True)
    e_cen = _own_error(m, q_acc, q_ref_cen)
    row = by["mjcenic acc=0.01"]
    assert row["trajectory_error"] == pytest.approx(e_cen, rel=1e-9, abs=1e-12)
    # ... and not the distance to the other simulator's reference, which mixes two contact
    # models (mj_step's soft contacts let the fingers sink ~1.9 mm here, ICF's 1.5 mm): it
    # differs from the row by far more than the 1e-9 to which the row matches its own (4 %
    # measured; mjcenic's 1e-2 error, 0.02, is so much larger than the references' 0.2 mm
    # difference that the two agree to 1e-6 there)
    cross = _own_error(m, mjstep_q(0.002), q_ref_cen)
    assert abs(cross - e_mj) > 1e-2 * e_mj, (cross, e_mj)


def test_reference_flags_checked_before_work(capsys):
    for args in (["--reference-levels", "3,5"], ["--reference-levels", "x"],
                 ["--reference-accuracy", "0"], ["--reps", "0"]):
        with pytest.raises(SystemExit) as e:
            compare.main([str(PINCH), *args])
        assert e.value.code == 2, args
        err = capsys.readouterr()
        assert args[0] in err.err and err.out == "", args


def test_work_precision_script_refuses_a_horizon_below_one_sample():
    import subprocess
    import sys
    from conftest import python_env
    for h in ("-1", "0.01", "nan"):
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "work_precision.py"),
                               "--scenes", "pinch_grasp", "--horizon", h],
                              capture_output=True, text=True, timeout=60, env=python_env())
        assert proc.returncode == 2 and "--horizon" in proc.stderr, (h, proc.stderr)


def test_work_precision_script_outputs(tmp_path):
    """scripts/work_precision.py on the shared core: the pinch grasp, 3 levels per series; its
    JSON, summary and PNG, both references converged (first order; their Richardson
    extrapolations faster, so those are the references), the mj_step errors above
    their reference's check and falling with dt; one of MuJoCo's integrators as its own series
    (implicitfast at dt x 4, 2, 1) against its own converged reference."""
    import subprocess
    import sys
    from conftest import python_env
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "work_precision.py"),
                           "--scenes", "pinch_grasp", "--quick", "--reps", "1", "--series",
                           "doubling", "--integrators", "implicitfast", "--out-dir", str(tmp_path)],
                          capture_output=True,
                          text=True, timeout=120, env=dict(python_env(), MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NOT CONVERGED" not in proc.stdout
    res = json.loads((tmp_path / "work_precision.json").read_text())["results"][0]
    assert (tmp_path / "pinch_grasp.png").stat().st_size > 10000
    assert "pinch_grasp" in (tmp_path / "summary.md").read_text()
    for sim in ("mj_step", "mjcenic"):
        ref = res["references"][sim]
        assert ref["converged"] and ref["level"] == 8 and len(ref["plain_checks"]) == 4, ref
        assert all(0.7 <= o <= 1.3 for o in wp.orders(ref["plain_checks"])), ref
        # Richardson: the extrapolated levels converge faster, so they are the reference.
        assert ref["extrapolated"] and ref["checks"] == ref["extrapolated_checks"], ref
        assert ref["check"] < ref["plain_checks"][-1] / 4, ref
    mj = [r for r in res["runs"] if r["series"] == "mj_step"]
    errs = [r["traj_error"] for r in sorted(mj, key=lambda r: -r["dt"])]
    assert len(errs) == 3 and errs[0] > errs[1] > errs[2] > 2 * res["references"]["mj_step"]["check"]
    assert {r["accuracy"] for r in res["runs"] if r["series"] == "doubling"} == {0.1, 0.01, 0.001}
    ref = res["references"]["mj_step:implicitfast"]
    assert ref["converged"] and ref["level"] == 8, ref
    assert all(0.7 <= o <= 1.3 for o in wp.orders(ref["plain_checks"])), ref
    fast = sorted((r for r in res["runs"] if r["series"] == "mj_step:implicitfast"), key=lambda r: -r["dt"])
    dt = res["dt"]
    assert [r["dt"] for r in fast] == [4 * dt, 2 * dt, dt]
    errs = [r["traj_error"] for r in fast]
    assert errs[0] > errs[1] > errs[2] > 2 * ref["check"], errs
    assert "wall / best integrator's" in (tmp_path / "summary.md").read_text()


@pytest.mark.shared_models
def test_every_shared_robot_has_a_converged_mjcenic_reference_over_0_3_s():
    """The work-precision scenes of the shared robots over 0.3 s: mjcenic's fixed-step
    reference converges (check <= 1e-3 m/rad with the convergence test) by dt/256 at the
    latest, under 2·10⁵ steps per simulated second. The Unitree G1 tips over on one foot:
    its plain levels are first order but still 3.7e-3 apart at dt/256, and only the
    Richardson extrapolations converge."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import work_precision as bench
    from gen_readme_tables import ROBOTS  # the shared robots of the README's table
    for name in ROBOTS:
        file, key, _, control, *_ = bench.SCENES[name]
        sc = bench.Scene(name, file, key, 0.3, control)
        dt = sc.m.opt.timestep
        run_at = wp.runner("mjcenic", sc.m, sc.times, sc.data, ctrl=sc.ctrl)
        ref = wp.reference(sc.m, run_at, dt, levels=(4, 8), tol=1e-3, order=1)
        assert ref["converged"], (name, ref["note"], ref["plain_checks"],
                                  ref["extrapolated_checks"])
        assert ref["check"] <= 1e-3 and 2 ** ref["level"] / dt < 2e5, (name, ref)
        if name == "unitree_g1_flat":
            assert ref["extrapolated"] and min(ref["plain_checks"]) > 1e-3, ref
