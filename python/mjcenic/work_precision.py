"""Work–precision measurement shared by `mjcenic compare` and scripts/work_precision.py.

Each simulator is measured against **its own** converged reference:

* mj_step against mj_step on the same model at dt/2^k;
* mjcenic against mjcenic in fixed mode (error control off, the same ICF
  contact model) at dt/2^k.

`reference()` runs the levels k = lo, lo+1, ... and checks convergence
(docs/cenic-math.md §14.6): the
check at level k is the trajectory error of level k-1 against level k (for a
first-order method about the error of level k-1, and an upper estimate of
level k's own error); the observed order is log2(check_{k-1} / check_k). A
reference is converged when its check is at most `tol` and either the check
fell by at least 2^0.5 at each of the last two levels (observed order >= 0.5
twice: the levels are in the asymptotic regime; one such ratio happens by
chance in a chaotic scene) or it is already below tol/100. Otherwise it is not
converged, and the caller says so loudly (ReferenceNotConverged, or a warning
in compare's report): a chaotic scene whose levels keep differing by O(1) is
not a reference.

Given the runner's order p (`method_order`: 1, RK4 4), `reference()` also
extrapolates each pair of consecutive levels (Richardson: the finer level plus
its difference from the coarser one over 2^p - 1, which cancels the leading
error term) and checks consecutive extrapolations the same way. Where those
checks converge and end below the plain ones, the reference is the finest
extrapolation: a first-order scene whose plain check stays above the tolerance
at an affordable step (a robot tipping over) can have a second-order one below
it. The test needs no assumption: the extrapolations must converge on their
own checks.

Achieved error (`traj_error`): max over the sample times of the infinity norm
of mj_differentiatePos(reference qpos -> run qpos): translations in m,
rotations in rad; and the same at the last sample (end error).

Sampling never caps mjcenic's step: with error control the stepper runs with
dense_output=True and advance_to(sample time), so a call with held inputs may
end inside an accepted step and the state there is the step's continuous
extension (docs/python.md, "Outputs inside a step"); a changed ctrl restarts from
the data and lands on its target, as in any mjcenic loop. mj_step's qpos at a
sample time that is not a multiple of dt is interpolated on the configuration
manifold between the two bracketing steps.

Wall time is the time inside mj_step / advance_to only; callbacks (probes) run
outside it. `time_interleaved` repeats a list of runs in rounds and keeps the
minimum per run, so that the runs of one model share the machine's load.
"""
import copy
import math
import time

import numpy as np

ORDER_MIN = 0.5          # observed order below which the levels are not converging
FLOOR_FRACTION = 1e-2    # a check below tol * this passes without the order test
REPEAT_LIMIT = 5.0       # [s] runs longer than this are timed once


class ReferenceNotConverged(RuntimeError):
    """A reference whose levels do not converge (see the module doc)."""


class Run:
    """One run: qpos at the sample times, wall time, statistics, the final data."""

    def __init__(self, n, nq):
        self.q = np.full((n, nq), np.nan)
        self.n = 0                 # samples reached
        self.wall = 0.0            # [s] inside mj_step / advance_to
        self.setup = 0.0           # [s] Stepper construction (mjcenic)
        self.steps = 0
        self.rejected = 0
        self.stats = {}            # mjcenic: Stepper.stats at the end
        self.warnings = []
        self.error = None          # text of a failure (None: no failure)
        self.finite = True
        self.completed = False
        self.data = None           # the final MjData

    @property
    def ok(self):
        return self.completed and self.finite and self.error is None


def traj_error(m, q, q_ref):
    """(max over samples, last sample) of |mj_differentiatePos(q_ref -> q)|_inf [m, rad];
    (inf, inf) if any sample is not finite or missing."""
    import mujoco
    q, q_ref = np.asarray(q, float), np.asarray(q_ref, float)
    if q.shape != q_ref.shape or not len(q):
        raise ValueError(f"traj_error: shapes {q.shape} and {q_ref.shape} differ")
    if not (np.isfinite(q).all() and np.isfinite(q_ref).all()):
        return math.inf, math.inf
    if m.nv == 0:
        return 0.0, 0.0
    dq = np.empty(m.nv)
    errs = np.empty(len(q))
    for i, (a, b) in enumerate(zip(q, q_ref)):
        mujoco.mj_differentiatePos(m, dq, 1.0, b, a)
        errs[i] = np.max(np.abs(dq))
    if not np.all(np.isfinite(errs)):
        return math.inf, math.inf
    return float(errs.max()), float(errs[-1])


def _unstable(d):
    import mujoco
    return [w for w in ("mjWARN_BADQACC", "mjWARN_BADQPOS", "mjWARN_BADQVEL")
            if d.warning[int(getattr(mujoco.mjtWarning, w))].number > 0]


def _finite(d):
    return bool(np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()
                and np.isfinite(d.act).all())


def run_mjstep(m, dt, times, make_data, ctrl=None, after_step=None, time_limit=math.inf,
               tick=None):
    """mj_step at `dt` (on a copy of m) from make_data(), sampled at `times` [s after the
    start, ascending, >= 0]. ctrl(t), if given, is written before advancing from the sample
    at t (or the start) to the next one. after_step(model, data) runs after every mj_step
    call, outside the wall time; tick(fraction) after every sample. Returns a Run."""
    import mujoco
    times = np.asarray(times, float)
    mm = copy.deepcopy(m)
    mm.opt.timestep = dt
    d = make_data()
    r = Run(len(times), m.nq)
    r.data = d
    q_prev = d.qpos.copy()
    v = np.zeros(m.nv)
    step = 0
    perf = time.perf_counter
    t_prev = 0.0
    T = times[-1] if len(times) else 0.0
    for k, t in enumerate(times):
        if ctrl is not None and m.nu:
            d.ctrl[:] = ctrl(t_prev)
        n_k = max(step, int(math.ceil(t / dt - 1e-6)))
        if n_k > step:
            if after_step is None:
                w = perf()
                if n_k - 1 > step:  # one call: no Python per step in the timed loop
                    mujoco.mj_step(mm, d, nstep=n_k - 1 - step)
                    step = n_k - 1
                q_prev[:] = d.qpos
                mujoco.mj_step(mm, d)
                step += 1
                r.wall += perf() - w
            else:
                while step < n_k:
                    q_prev[:] = d.qpos
                    w = perf()
                    mujoco.mj_step(mm, d)
                    r.wall += perf() - w
                    step += 1
                    after_step(mm, d)
        r.steps = step
        bad = _unstable(d)
        if bad or not _finite(d):
            r.finite = False
            r.error = (f"simulation became unstable near t = {step * dt:.6g} s"
                       + (f" (MuJoCo {', '.join(bad)})" if bad else " (non-finite state)"))
            return r
        t_cur = step * dt
        if abs(t_cur - t) <= 1e-9 * max(1.0, t) or step == 0:
            r.q[k] = d.qpos
        else:  # t lies in ((step-1) dt, step dt): interpolate on the manifold
            mujoco.mj_differentiatePos(mm, v, 1.0, q_prev, d.qpos)
            q = q_prev.copy()
            mujoco.mj_integratePos(mm, q, v, (t - (step - 1) * dt) / dt)
            r.q[k] = q
        r.n = k + 1
        t_prev = t
        if tick is not None:
            tick(t / T if T > 0 else 1.0)
        if r.wall > time_limit:
            r.error = f"time limit of {time_limit:g} s wall time exceeded at t = {t_cur:.6g} s"
            return r
    r.completed = True
    return r


def run_mjcenic(m, options, times, make_data, ctrl=None, after_sample=None,
                time_limit=math.inf, tick=None):
    """mjcenic.Stepper(m, **options) from make_data(), sampled at `times` [s after the
    start] with advance_to; with error control dense_output=True is added (unless given),
    so the samples do not cap the step. ctrl as in run_mjstep; after_sample(data) after
    every sample, outside the wall time. Returns a Run (Run.stats: Stepper.stats)."""
    import mjcenic
    times = np.asarray(times, float)
    d = make_data()
    r = Run(len(times), m.nq)
    r.data = d
    opts = dict(options)
    if opts.get("mode", "cenic") != "fixed":
        opts.setdefault("dense_output", True)
    w = time.perf_counter()
    try:
        sim = mjcenic.Stepper(m, **opts)
    except Exception as e:  # noqa: BLE001 - reported in the run
        r.error = f"{type(e).__name__}: {e}"
        r.finite = _finite(d)
        return r
    r.setup = time.perf_counter() - w
    r.warnings = list(sim.warnings)
    t0 = d.time
    t_prev = 0.0
    T = times[-1] if len(times) else 0.0
    perf = time.perf_counter
    try:
        for k, t in enumerate(times):
            if ctrl is not None and m.nu:
                d.ctrl[:] = ctrl(t_prev)
            if t > 0:
                w = perf()
                try:
                    sim.advance_to(t0 + t, d)
                finally:
                    r.wall += perf() - w
                    st = sim.stats
                    r.steps, r.rejected = int(st["steps"]), int(st["rejected_steps"])
            if not _finite(d):
                r.finite = False
                r.error = f"simulation became non-finite near t = {t:.6g} s"
                return r
            r.q[k] = d.qpos
            r.n = k + 1
            t_prev = t
            if after_sample is not None:
                after_sample(d)
            if tick is not None:
                tick(t / T if T > 0 else 1.0)
            if r.wall > time_limit:
                r.error = f"time limit of {time_limit:g} s wall time exceeded at t = {t:.6g} s"
                return r
    except Exception as e:  # noqa: BLE001 - mjcenic's own error text
        r.error = f"{type(e).__name__}: {e}"
        r.finite = _finite(d) and "non-finite" not in str(e)
        return r
    finally:
        r.stats = dict(sim.stats)
    r.completed = True
    return r


def runner(sim, m, times, make_data, ctrl=None, options=None, **kw):
    """h -> Run: the reference runner of `sim` ('mj_step', or 'mjcenic' = fixed mode,
    plus `options`) at step h. mjcenic's solves are as tight as the solver goes (Newton
    tolerance 1e-8 at every h): a reference's solver error must stay below its levels'
    differences, which Richardson extrapolation takes to second order."""
    if sim == "mj_step":
        return lambda h: run_mjstep(m, h, times, make_data, ctrl=ctrl, **kw)
    if sim == "mjcenic":
        o = {"solver_tolerance": 1e-8, **(options or {}), "mode": "fixed"}
        return lambda h: run_mjcenic(m, dict(o, max_step=h), times, make_data, ctrl=ctrl, **kw)
    raise ValueError(f"unknown simulator {sim!r}")


def orders(checks):
    """Observed orders log2(check_{k-1} / check_k) between consecutive checks (None where a
    check is 0 or not finite)."""
    out = []
    for a, b in zip(checks[:-1], checks[1:]):
        ok = a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)
        out.append(math.log2(a / b) if ok else None)
    return out


def converged(checks, tol):
    """(converged, observed order at the finest level or None) from the checks of
    consecutive levels (the last is the finest); see the module doc. The order test needs
    the last two orders (four levels): one ratio above 2^0.5 happens by chance in a chaotic
    scene."""
    if not checks:
        return False, None
    c = checks[-1]
    ords = orders(checks)
    order = ords[-1] if ords else None
    if not math.isfinite(c) or c > tol:
        return False, order
    if c <= FLOOR_FRACTION * tol:
        return True, order
    last = ords[-2:]
    return (len(last) == 2 and all(o is not None and o >= ORDER_MIN for o in last)), order


def method_order(sim, m):
    """The convergence order in h of a reference runner (`runner`): 4 for mj_step with
    RK4, else 1 (mj_step's Euler and implicit integrators, mjcenic's fixed mode)."""
    import mujoco
    rk4 = sim == "mj_step" and m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    return 4 if rk4 else 1


def richardson(m, run_coarse, run_fine, order):
    """Richardson extrapolation of two levels h and h/2 of a method of `order` p:
    x* = x_fine ⊕ (x_fine ⊖ x_coarse) / (2^p − 1) at every sample (on the configuration
    manifold), which cancels the leading error term C h^p. A copy of run_fine with q = x*."""
    import mujoco
    out = copy.copy(run_fine)
    out.q = np.array(run_fine.q, float)
    dq = np.empty(m.nv)
    for i in range(len(out.q)):
        mujoco.mj_differentiatePos(m, dq, 1.0, run_coarse.q[i], run_fine.q[i])
        mujoco.mj_integratePos(m, out.q[i], dq, 1.0 / (2 ** order - 1))
    return out


def reference(m, run_at, dt, levels=(4, 10), tol=1e-4, time_limit=math.inf,
              stop_early=True, log=None, label="", order=None):
    """The converged reference of one simulator: run_at(dt / 2^k) for k = lo..hi, stopping
    at the first converged level when stop_early, or before a level
    whose predicted wall time (twice the previous one's) would exceed `time_limit` (the sum
    over the levels), or when a level fails. A level that fails before any has completed
    is skipped (a step too coarse for the method, e.g. RK4 on stiff fingers at dt/16).

    With `order` (the runner's order p, `method_order`) every level after the first also
    gives its Richardson extrapolation with the level before (`richardson`), with checks of
    its own between consecutive extrapolated levels. The reference is the finest
    extrapolated level when those checks pass the convergence test and end below the plain
    ones (the leading error term cancels only in the asymptotic regime, which the checks
    show), else the finest level itself.

    Returns a dict: run (the finest Run, or its extrapolation), level, h, check / check_end
    (error of the previous level against the finest), checks (per level after the first, of
    the levels used), order, converged, note (why not converged, or None), wall (the finest
    level's wall time), extrapolated (whether run is the Richardson extrapolation),
    plain_checks and extrapolated_checks (both sequences; [] without `order`)."""
    lo, hi = levels
    if lo > hi or lo < 0:
        raise ValueError(f"reference levels {levels}: need 0 <= lo <= hi")
    runs, checks, ends, used = [], [], [], 0.0
    xruns, xchecks, xends = [], [], []  # Richardson-extrapolated levels (with `order`)
    note = None
    k = lo
    while k <= hi:
        if runs and used + 2.0 * runs[-1][1].wall > time_limit:
            note = (f"the next level (dt/{2 ** k}) would exceed the reference time limit of "
                    f"{time_limit:g} s")
            break
        r = run_at(dt / 2 ** k)
        used += r.wall
        if not r.ok and not runs and k < hi:  # too coarse for this method: start finer
            if log is not None:
                log(f"  {label} reference level dt/{2 ** k} failed ({r.error}); starting finer")
            k += 1
            continue
        if not r.ok:
            note = f"level dt/{2 ** k} failed: {r.error}"
            break
        if runs:
            c, e = traj_error(m, runs[-1][1].q, r.q)
            checks.append(c)
            ends.append(e)
            if order:
                x = richardson(m, runs[-1][1], r, order)
                if xruns:
                    c, e = traj_error(m, xruns[-1].q, x.q)
                    xchecks.append(c)
                    xends.append(e)
                xruns.append(x)
        runs.append((k, r))
        if log is not None:
            log(f"  {label} reference level dt/{2 ** k}: "
                + (f"|x(2h) - x(h)| = {checks[-1]:.3g} (end {ends[-1]:.3g})" if checks else
                   "first level")
                + (f", extrapolated {xchecks[-1]:.3g}" if xchecks else "") + f", {r.wall:.2f} s")
        ok = converged(checks, tol)[0] or converged(xchecks, tol)[0]
        if stop_early and ok:
            break
        k += 1
    if not runs:
        return {"run": None, "level": None, "h": None, "check": None, "check_end": None,
                "checks": [], "order": None, "converged": False, "note": note,
                "wall": None, "tol": tol, "extrapolated": False, "plain_checks": [],
                "extrapolated_checks": []}
    plain_checks = list(checks)
    k, r = runs[-1]
    extrapolated = (converged(xchecks, tol)[0]
                    and (not converged(checks, tol)[0] or xchecks[-1] < checks[-1]))
    if extrapolated:
        r, checks, ends = xruns[-1], xchecks, xends
    ok, observed = converged(checks, tol)
    if not ok and note is None:
        if not checks:
            note = "a single level: no convergence check"
        elif checks[-1] > tol:
            note = (f"check {checks[-1]:.3g} > tolerance {tol:g} at the finest level "
                    f"dt/{2 ** k}")
        else:
            ords = ", ".join("—" if o is None else f"{o:.2f}" for o in orders(checks))
            note = (f"the levels do not converge: observed orders {ords or '—'} (the last two "
                    f"must be >= {ORDER_MIN}) at dt/{2 ** k}")
    elif not ok and checks:
        note += f"; check {checks[-1]:.3g} at dt/{2 ** k}"
    return {"run": r, "level": k, "h": dt / 2 ** k, "check": checks[-1] if checks else None,
            "check_end": ends[-1] if ends else None, "checks": checks, "order": observed,
            "orders": orders(checks),
            "converged": ok, "note": None if ok else note, "wall": r.wall, "tol": tol,
            "levels": [kk for kk, _ in runs], "extrapolated": extrapolated,
            "plain_checks": plain_checks, "extrapolated_checks": xchecks}


def require_converged(ref, what=""):
    """Raises ReferenceNotConverged with the reference's numbers unless it converged."""
    if not ref["converged"]:
        raise ReferenceNotConverged(f"{what} reference did not converge: {ref['note']} "
                                    f"(checks per level: "
                                    f"{', '.join(f'{c:.3g}' for c in ref['checks'])})")


def summary(ref):
    """The reference's convergence numbers without its run (JSON-ready)."""
    return {k: v for k, v in ref.items() if k not in ("run",)}


def time_interleaved(runs, reps, budget=math.inf, first=None):
    """Runs every entry of `runs` (dicts with "fn": () -> (Run, info dict) and "series") in
    `reps` rounds, interleaved, keeping the minimum wall time; runs longer than
    REPEAT_LIMIT are timed once. first(entry, run, info) sees the first round's result (the
    errors are taken from it). A series stops at the first level (in list order) whose
    first run takes longer than `budget` [s]. Sets entry["wall"], ["reps"], and
    ["error_text"] / ["skipped"]; removes "fn"."""
    for e in runs:
        e["wall"], e["reps"] = math.inf, 0
    over_budget = set()
    for rep in range(reps):
        for e in runs:
            if e.get("_skip"):
                continue
            if rep == 0 and e["series"] in over_budget:
                e["skipped"] = f"the looser level took more than {budget:g} s"
                e["_skip"] = True
                continue
            if rep > 0 and e["wall"] > REPEAT_LIMIT:
                continue
            try:
                run, info = e["fn"]()
            except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
                e["error_text"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                e["_skip"] = True
                continue
            if run is not None and run.error is not None:
                e["error_text"] = run.error
                e["_skip"] = True
                if first is not None and rep == 0:
                    first(e, run, info)
                continue
            wall = run.wall if run is not None else info["wall"]
            e["wall"] = min(e["wall"], wall)
            e["reps"] += 1
            if rep == 0:
                if first is not None:
                    first(e, run, info)
                if wall > budget:
                    over_budget.add(e["series"])
    for e in runs:
        e.pop("fn", None)
        e.pop("_skip", None)
    return runs


def cost_at(runs, series, target):
    """Wall time to reach traj error <= target along a series (log-linear interpolation
    between the bracketing runs; None if never reached)."""
    pts = sorted([(r["traj_error"], r["wall"]) for r in runs
                  if r["series"] == series and "traj_error" in r and math.isfinite(r["wall"])
                  and math.isfinite(r["traj_error"])], key=lambda p: -p[0])
    best = None
    for i, (e, w) in enumerate(pts):
        if e <= target:
            if i > 0 and pts[i - 1][0] > target:
                e0, w0 = pts[i - 1]
                f = (math.log(e0) - math.log(target)) / max(math.log(e0) - math.log(e), 1e-12)
                w = math.exp(math.log(w0) + f * (math.log(w) - math.log(w0)))
            best = w if best is None else min(best, w)
    return best


STYLES = {"mj_step": ("k", "s"), "doubling": ("C0", "o"), "embedded": ("C1", "^"),
          "embedded+full_state": ("C2", "v"), "doubling+extrapolate": ("C3", "D"),
          "global_accuracy": ("C4", "x")}


def plot(res, path, accuracies):
    """One scene's figure: trajectory error vs wall time (log-log, one line per series, the
    references' checks as horizontal lines) and error vs accuracy. res: {"scene", "horizon",
    "nv", "dt", "runs": [{"series", "wall", "traj_error", "accuracy"?}], "references":
    {"mj_step": {"check"}, "mjcenic": {"check"}}}."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    series = list(dict.fromkeys(r["series"] for r in res["runs"]))
    for i, s in enumerate(series):
        c, mk = STYLES.get(s, (f"C{5 + i % 5}", "o"))
        pts = [r for r in res["runs"] if r["series"] == s and "traj_error" in r
               and math.isfinite(r["traj_error"]) and r["traj_error"] > 0
               and math.isfinite(r["wall"])]
        if not pts:
            continue
        ax1.loglog([r["wall"] for r in pts], [r["traj_error"] for r in pts], color=c,
                   marker=mk, label=s)
        if all("accuracy" in r for r in pts):  # (mj_step series have none)
            ax2.loglog([r["accuracy"] for r in pts], [r["traj_error"] for r in pts], color=c,
                       marker=mk, label=s)
    for sim, ls in (("mj_step", ":"), ("mjcenic", "--")):
        chk = (res["references"].get(sim) or {}).get("check")
        if chk:
            ax1.axhline(chk, color="grey", ls=ls, lw=0.8, label=f"{sim} reference check")
    a = np.array(accuracies)
    ax2.loglog(a, a, color="grey", lw=0.8, label="error = accuracy")
    ax2.loglog(a, 10 * a, color="grey", lw=0.8, ls="--", label="10 × accuracy")
    ax1.set_xlabel("wall time of the stepping loop [s]")
    ax1.set_ylabel("trajectory error (max over samples) [m, rad]")
    ax2.set_xlabel("accuracy")
    ax2.set_ylabel("trajectory error [m, rad]")
    ax2.invert_xaxis()
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{res['scene']} ({res['horizon']} s, nv={res['nv']}, dt={res['dt']:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
