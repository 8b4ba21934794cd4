"""Seeded randomized robustness suite through Python, case by case in a
supervised subprocess: every case ends in one of five outcomes, tallied by
class (scripts/fuzz_report.py prints the table):

  clear error    an exception whose message names the problem ("mjcenic...",
                 the callback's own exception, the argument's name), the
                 state kept where the contract says so;
  ran correctly  success, and the physics or numbers the case checks hold;
  silent wrong   success with a wrong result, or an unclear error;
  crash          the worker process died in the case (it is restarted at
                 the next case);
  hang           the case gave no result within HANG_GUARD seconds (the
                 worker is killed and restarted).

Classes (each generated, not listed: the random choices below draw each case):
  random_api     random MJCF from a small grammar (free/ball/hinge/slide
                 joints; sphere, box, capsule, cylinder geoms over a plane;
                 limits, equalities, actuators, a fixed tendon; settings mjcenic
                 warns about or refuses: RK4/implicit integrators, CG/PGS,
                 noslip, actuator delay, gravcomp), random options (valid and
                 invalid), hostile states (NaN, Inf, 1e300, huge times) and
                 call sequences (create, step(nstep), advance_to, step_once,
                 reset, copy, delete, two steppers in threads, the MJCF plugin
                 driven by mujoco.mj_step): success with a finite state at the
                 target time, or an exception starting with "mjcenic"
                 (ValueError for a refused state, the state unchanged);
  callbacks      Python mjcb_control, mjcb_passive and user controllers that
                 raise, in Stepper calls and rollouts;
  concurrency    one stepper used from several threads;
  integers       extreme sizes and counts for every integer argument;
  tolerances     tolerances at both ends of their range and in combination;
  model_edits    model arrays edited between calls, in every mode, dense
                 output on and off;
  install_plugin install-plugin paths (same file, empty, non-library,
                 read-only, missing, a directory).

CI runs MJCENIC_FUZZ_ITERATIONS (default 40) random_api cases and
MJCENIC_FUZZ_CLASS_ITERATIONS (default 8) cases of every other class from
MJCENIC_FUZZ_SEED (default 1); the tests pass with no crash, hang or silent
wrong result. `make fuzz` and scripts/fuzz_report.py run longer sweeps."""
import copy
import json
import math
import os
import random
import subprocess
import sys
import threading

import pytest

HOSTILE = [math.nan, math.inf, -math.inf, 1e300, -1e300, 1e20, 1e8, 0.0]


def random_mjcf(r, plugin=False):
    opt = f'<option timestep="{r.choice([0.002, 0.005, 0.01])}"'
    if r.random() < 0.2:
        opt += f' integrator="{r.choice(["RK4", "implicit", "implicitfast"])}"'
    if r.random() < 0.2:
        opt += f' solver="{r.choice(["CG", "PGS"])}"'
    if r.random() < 0.1:
        opt += ' noslip_iterations="2"'
    opt += "/>"
    bodies, close, joints = "", "", []
    for b in range(r.randint(1, 4)):
        chain = b > 0 and r.random() < 0.5
        if not chain:
            bodies += close
            close = ""
        grav = ' gravcomp="1"' if r.random() < 0.1 else ""
        bodies += (f'<body name="b{b}" pos="{r.uniform(-.5, .5):.3f} {r.uniform(-.5, .5):.3f} '
                   f'{r.uniform(.05, 1):.3f}"{grav}>')
        close = "</body>" + close
        jt = r.choice(["hinge", "slide", "ball"] if chain else ["free", "hinge", "slide", "ball", None])
        if jt == "free":
            bodies += f'<freejoint name="j{b}"/>'
        elif jt:
            rng = ""
            if r.random() < 0.4:
                rng = (f' range="0 {r.uniform(.1, 1.5):.3f}"' if jt == "ball"
                       else f' range="{-r.uniform(.01, 1):.3f} {r.uniform(.01, 1):.3f}"')
            extra = f' damping="{r.uniform(0, 2):.3f}"' if r.random() < 0.3 else ""
            extra += f' frictionloss="{r.uniform(0, 1):.3f}"' if r.random() < 0.2 else ""
            bodies += f'<joint name="j{b}" type="{jt}" axis="{r.uniform(-1, 1):.3f} 0 1"{rng}{extra}/>'
            if jt != "ball":
                joints.append(f"j{b}")
        shape = r.choice(["sphere", "box", "capsule", "cylinder"])
        bodies += (f'<geom type="{shape}" size="{r.uniform(.02, .2):.3f} {r.uniform(.02, .2):.3f} '
                   f'{r.uniform(.02, .2):.3f}" mass="{r.choice([1, 0.01, 100])}"'
                   + (f' condim="{r.choice([1, 3, 4, 6])}"' if r.random() < 0.3 else "") + "/>")
    bodies += close
    act = ""
    for j in joints:
        if r.random() < 0.5:
            act += r.choice([f'<motor joint="{j}" ctrlrange="-1 1"/>',
                             f'<position joint="{j}" kp="{r.uniform(1, 100):.2f}"/>',
                             f'<velocity joint="{j}" kv="{r.uniform(.1, 10):.2f}"/>',
                             f'<general joint="{j}" dyntype="filter" dynprm="0.05"/>',
                             f'<general joint="{j}" nsample="3" interp="zoh" delay="0.01"/>'])
    eq = f'<equality><joint joint1="{joints[0]}" joint2="{joints[1]}"/></equality>' \
        if len(joints) >= 2 and r.random() < 0.4 else ""
    tendon = ""
    if joints and r.random() < 0.3:
        tendon = ('<tendon><fixed limited="true" range="-.5 .5">'
                  + "".join(f'<joint joint="{j}" coef="{r.uniform(-1, 1):.2f}"/>' for j in joints)
                  + "</fixed></tendon>")
    ext = ""
    if plugin:
        ext = ('<extension><plugin plugin="mjcenic"><instance name="c">'
               f'<config key="accuracy" value="{r.choice(["1e-3", "1e-2", "0"])}"/>'
               '<config key="max_steps_per_call" value="500"/></instance></plugin></extension>')
    return (f"<mujoco>{ext}{opt}<worldbody><geom type='plane' size='2 2 .1'/>{bodies}</worldbody>"
            + (f"<actuator>{act}</actuator>" if act else "") + eq + tendon + "</mujoco>")


OPTIONS = {
    "mode": ["fixed", "cenic", "trapezoid", "rk4"],
    "accuracy": [1e-1, 1e-3, 1e-5, 1e-12, 0, -1, math.nan],
    "max_step": [0, 0.001, 0.1, 1e-9, -1],
    "min_step": [0, 1e-6, 0.5, 2],
    "initial_step": [0, 1e-4, 10],
    "length_scale": [0, 0.1, 1e-300],
    "error_norm": ["weighted", "drake", "full_state", "bogus"],
    "extrapolate": [True, False],
    "global_accuracy": [True, False],
    "error_control": [True, False],
    "max_iterations": [1, 2, 100, 0],
    "linear_solver": ["auto", "dense", "sparse", "islands", "pcg", "lowrank", "block", "tree"],
    "controller_mode": ["zero_order_hold", "explicit", "implicit"],
    "speculative_margin": [0, 0.01],
}


def finite(d):
    import numpy as np
    return (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))
            and np.all(np.isfinite(d.act)) and math.isfinite(d.time))


def run_case(seed, errors=None):
    """One case; returns a list of invariant violations (empty: fine); the
    clear errors it met are appended to `errors`."""
    import mujoco
    import numpy as np
    import mjcenic
    r = random.Random(seed)
    bad = []
    plugin = r.random() < 0.15
    xml = random_mjcf(r, plugin)
    try:
        m = mujoco.MjModel.from_xml_string(xml)
    except Exception:
        return bad  # MJCF MuJoCo refuses (or the plugin refuses its config)
    if r.random() < 0.1:
        m.opt.timestep = r.choice([0.0, -0.01, 1e10, 1e-12, math.nan])
    opts = {k: r.choice(v) for k, v in r.sample(sorted(OPTIONS.items()), r.randint(0, 4))}
    opts["max_steps_per_call"] = r.randint(1, 2000)
    try:
        d = mujoco.MjData(m)  # MuJoCo itself refuses e.g. history buffers with timestep < 0
    except Exception:
        return bad
    if plugin:  # the plugin path: mj_step as the user calls it (crashes and hangs only)
        try:
            for _ in range(r.randint(1, 5)):
                mujoco.mj_step(m, d)
        except Exception:
            pass
        return bad
    try:
        s = mjcenic.Stepper(m, **opts)
    except Exception as e:
        if not str(e).startswith("mjcenic"):
            bad.append(f"unclear create error {type(e).__name__}: {e}")
        elif errors is not None:
            errors.append(str(e))
        return bad

    def check(call, target, data, *args):
        q, v, t = data.qpos.copy(), data.qvel.copy(), data.time
        try:
            call(*args)
        except Exception as e:
            msg = str(e)
            if errors is not None:
                errors.append(msg)
            if not msg.startswith("mjcenic"):
                bad.append(f"unclear error {type(e).__name__}: {msg}")
            if isinstance(e, ValueError) and "was not advanced" in msg:
                if not (np.array_equal(q, data.qpos, equal_nan=True)
                        and np.array_equal(v, data.qvel, equal_nan=True)
                        and (t == data.time or (math.isnan(t) and math.isnan(data.time)))):
                    bad.append(f"state changed by a refused call: {msg}")
            return False
        if not finite(data):
            bad.append(f"success with a non-finite state ({call.__name__})")
        if target is not None and data.time != target:
            bad.append(f"success at time {data.time}, target {target}")
        return True

    for _ in range(r.randint(1, 6)):
        if r.random() < 0.25:
            arr = r.choice([a for a in (d.qpos, d.qvel, d.ctrl, d.qfrc_applied) if a.size] or [d.qpos])
            if arr.size:
                arr[r.randrange(arr.size)] = r.choice(HOSTILE)
        if r.random() < 0.1:
            d.time = r.choice([1e17, -5.0, 1e6, math.nan])
        op = r.randrange(8)
        if op in (0, 1):
            n = r.choice([1, 1, 3])
            check(s.step, None, d, d, n)
        elif op == 2:
            t = d.time + r.choice([0, 0.01, 0.05, -0.01])
            check(s.advance_to, t, d, t, d)
        elif op == 3:
            check(s.step_once, None, d, d)
        elif op == 4:
            mujoco.mj_resetData(m, d)
        elif op == 5:
            e = copy.copy(d)
            check(s.step, None, e, e)
        elif op == 6:
            del s
            s = mjcenic.Stepper(m, **opts)
        else:
            s2 = mjcenic.Stepper(m, **opts)
            e = copy.copy(d)
            ts = [threading.Thread(target=check, args=(s.step, None, d, d)),
                  threading.Thread(target=check, args=(s2.step, None, e, e))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        if not finite(d) or not (np.all(np.isfinite(d.ctrl)) and np.all(np.isfinite(d.qfrc_applied))):
            mujoco.mj_resetData(m, d)
    return bad


def class_random_api(r, out):
    """A case of the random grammar above (run_case draws from its own seed)."""
    errors = []
    bad = run_case(r.randrange(2**62), errors)
    if bad:
        out["silent wrong"] += 1
        out["problems"].append("; ".join(bad[:3]))
    else:
        out["clear error" if errors else "ran correctly"] += 1


# ----------------------------------------------------------------------------- classes

PENDULUM = """<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
  <geom type="capsule" fromto="0 0 0 0 0 -1" size=".05" mass="1"/></body></worldbody>
  <actuator><motor joint="j"/></actuator></mujoco>"""


class Boom(Exception):
    pass


def class_callbacks(r, out):
    """A Python mjcb_control / mjcb_passive / user controller raising at a random
    call: the same exception as mj_step raises (callbacks) or a RuntimeError
    naming it (controller), the data kept; in rollouts, that rollout's error."""
    import mujoco
    import numpy as np
    import mjcenic
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    d = mujoco.MjData(m)
    d.qpos[0] = r.uniform(-1, 1)
    kind = r.choice(["mjcb_control", "mjcb_passive", "controller"])
    fail_at = r.randint(1, 6)
    calls = [0]

    def cb(model, data):
        calls[0] += 1
        if calls[0] >= fail_at:
            raise Boom(f"call {calls[0]}")
    opts = {"mode": r.choice(["fixed", "cenic", "trapezoid"])}
    try:
        if kind == "controller":
            s = mjcenic.Stepper(m, controller=cb, **opts)
        else:
            getattr(mujoco, f"set_{kind}")(cb)
            s = mjcenic.Stepper(m, **opts)
        if r.random() < 0.5:
            state0 = np.zeros((3, mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
            state0[:, 1] = [r.uniform(-1, 1) for _ in range(3)]
            res = mjcenic.rollout(m, None, state0, nstep=4, nthread=r.randint(1, 3), **opts)
            if kind == "controller" or calls[0] < fail_at:  # (rollouts take no controller)
                out["ran correctly"] += 1
            elif any(e is not None and "Boom" in e for e in res.errors):
                out["clear error"] += 1
            else:
                out["silent wrong"] += 1
                out["problems"].append(f"rollout with a raising {kind}: {res.errors}")
            return
        for _ in range(r.randint(1, 4)):
            q, t = d.qpos.copy(), d.time
            try:
                r.choice([lambda: s.step(d), lambda: s.advance_to(d.time + 0.01, d),
                          lambda: s.step_once(d)])()
            except Boom:
                if kind == "controller" or not (np.array_equal(q, d.qpos) and d.time == t):
                    out["problems"].append(f"{kind}: Boom escaped or the state moved")
                    out["silent wrong"] += 1
                else:
                    out["clear error"] += 1
                return
            except RuntimeError as e:
                if kind == "controller" and "Boom" in str(e):
                    out["clear error"] += 1
                else:
                    out["problems"].append(f"{kind}: {e}")
                    out["silent wrong"] += 1
                return
        out["ran correctly" if calls[0] < fail_at else "silent wrong"] += 1
        if calls[0] >= fail_at:
            out["problems"].append(f"{kind} raised but the call succeeded")
    finally:
        mujoco.set_mjcb_control(None)
        mujoco.set_mjcb_passive(None)


def class_concurrency(r, out):
    """One stepper, 2–4 threads with their own MjData: each call succeeds or is
    refused naming the concurrent use."""
    import mujoco
    import mjcenic
    from conftest import ROOT
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/clutter.xml"))
    s = mjcenic.Stepper(m, mode=r.choice(["fixed", "cenic"]))
    results = []

    def work():
        d = mujoco.MjData(m)
        for _ in range(r.randint(3, 10)):
            try:
                s.step(d)
                results.append("ok")
            except RuntimeError as e:
                results.append("refused" if "another thread" in str(e) else f"bad: {e}")
    ts = [threading.Thread(target=work) for _ in range(r.randint(2, 4))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    bad = [x for x in results if x.startswith("bad")]
    if bad:
        out["silent wrong"] += 1
        out["problems"].append(bad[0])
    else:
        out["clear error" if "refused" in results else "ran correctly"] += 1


INTS = [0, 1, -1, 2, 2**31 - 1, 2**31, -2**31 - 1, 2**63, 2**100, 2.0, True, "3", None]


def class_integers(r, out):
    """Extreme sizes and counts for every integer argument: step(nstep),
    rollout(nstep, nbatch, chunk_size, nthread) and the count options."""
    import mujoco
    import numpy as np
    import mjcenic
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    d = mujoco.MjData(m)
    which = r.choice(["nstep", "rollout_nstep", "chunk_size", "nthread", "nbatch", "option"])
    v = r.choice(INTS)
    try:
        if which == "nstep":
            if isinstance(v, int) and not isinstance(v, bool) and v > 1000:
                v = -v  # a huge positive count is legitimately long work (as in mj_step)
            mjcenic.Stepper(m).step(d, nstep=v)
        elif which == "option":
            key = r.choice(["max_iterations", "max_steps_per_call"])
            mjcenic.Stepper(m, **{key: v}).advance_to(0.01, d)
        else:
            nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
            kw = {"nstep": 2}
            nbatch = 3
            if which == "rollout_nstep":
                kw["nstep"] = v if not (isinstance(v, int) and v > 100) else -v
            elif which == "chunk_size":
                kw["chunk_size"] = v
                kw["nthread"] = r.randint(1, 3)
            elif which == "nthread":
                kw["nthread"] = v
            else:
                # (the batch is the rows of initial_state: a count, not a bool)
                nbatch = v if type(v) is int and 0 <= v <= 64 else 0
            res = mjcenic.rollout(m, None, np.zeros((max(nbatch, 1), nstate))[:nbatch], **kw)
            assert np.all(np.isfinite(res.state)), "non-finite rollout state"
        out["ran correctly"] += 1
    except (TypeError, ValueError) as e:
        if not any(w in str(e) for w in ("mjcenic", "nstep", "chunk", "nthread", "nbatch")):
            out["problems"].append(f"{which}={v!r}: unclear {type(e).__name__}: {e}")
            out["silent wrong"] += 1
        else:
            out["clear error"] += 1
    except RuntimeError as e:
        out["clear error" if str(e).startswith("mjcenic") else "silent wrong"] += 1


def class_tolerances(r, out):
    """Tolerances at both ends and together: a clear error, or the pendulum
    released at 1 rad swings through the bottom in 0.5 s."""
    import mujoco
    import mjcenic
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    d = mujoco.MjData(m)
    d.qpos[0] = 1.0
    opts = {"mode": r.choice(["fixed", "cenic", "trapezoid"]),
            "accuracy": r.choice([1e-12, 1e-6, 1e-3, 1, 1.5, 1e3, 1e300]),
            "max_steps_per_call": 20000}
    for key, values in (("kappa", [1e-12, 1e-3, 1, 100]), ("solver_tolerance", [1e-300, 1e-3, 1]),
                        ("length_scale", [0, 1e-6, 1e3]), ("error_per_unit_step", [0, 1e-9, 0.1]),
                        ("adaptive_tolerance", [True, False]), ("dense_output", [True, False])):
        if r.random() < 0.4:
            opts[key] = r.choice(values)
    try:
        s = mjcenic.Stepper(m, **opts)
        s.advance_to(0.5, d)
    except (ValueError, RuntimeError) as e:
        out["clear error" if str(e).startswith("mjcenic") else "silent wrong"] += 1
        return
    if d.qpos[0] < 0.5:
        out["ran correctly"] += 1
    else:
        out["silent wrong"] += 1
        out["problems"].append(f"frozen pendulum with {opts}")


def class_model_edits(r, out):
    """A model array edited between calls, in every mode, dense output on or off:
    the very next call follows it."""
    import mujoco
    import mjcenic
    opts = {"mode": r.choice(["fixed", "cenic", "trapezoid"]),
            "dense_output": r.random() < 0.5, "accuracy": r.choice([1e-2, 1e-3])}
    field = r.choice(["dof_damping", "actuator_gainprm", "body_mass", "geom_friction"])
    if field == "geom_friction":  # a box sliding at 5 m/s: friction 0 keeps its speed
        m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody>
          <geom type="plane" size="5 5 .1" friction="1"/>
          <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" friction="1"/></body>
          </worldbody></mujoco>""")
        d = mujoco.MjData(m)
        d.qvel[0] = 5.0
    else:
        m = mujoco.MjModel.from_xml_string(PENDULUM)
        d = mujoco.MjData(m)
        d.qpos[0] = 1.0
        d.ctrl[0] = 1.0
    s = mjcenic.Stepper(m, **opts)
    s.step(d, r.randint(10, 150))
    v = d.qvel[0]
    if field == "dof_damping":
        m.dof_damping[0] = r.choice([1e5, 1e6])
    elif field == "actuator_gainprm":
        m.actuator_gainprm[0, 0] = -1e5 if v > 0 else 1e5
    elif field == "body_mass":
        m.body_mass[1] = 1e-4
        m.body_inertia[1] = 1e-6
    else:
        m.geom_friction[:, 0] = 0.0
    s.step(d)
    w = d.qvel[0]
    ok = (abs(w) < 1e-2 * abs(v) if field == "dof_damping" else
          w * v < 0 if field == "actuator_gainprm" else
          abs(w - v) > 1.0 if field == "body_mass" else abs(w - v) < 1e-4)
    out["ran correctly" if ok else "silent wrong"] += 1
    if not ok:
        out["problems"].append(f"{field} edit ignored with {opts}: qvel {v} -> {w}")


def class_install_plugin(r, out, tmp):
    """install-plugin paths: same file, empty, non-library, read-only, missing,
    a directory as the library: exit 0/1/2 with a message, never a traceback,
    and the source library intact."""
    import pathlib
    from conftest import BUILD
    tmp = pathlib.Path(tmp)
    lib = tmp / "libmjcenic.so"
    if not lib.exists():
        lib.write_bytes((BUILD / "libmjcenic.so").read_bytes())
    size = lib.stat().st_size
    notes = tmp / "notes.txt"
    notes.write_text("notes")
    ro = tmp / "ro"
    ro.mkdir(exist_ok=True)
    ro.chmod(0o555)
    case = r.choice([
        ["--dir", tmp, "--library", lib], ["--dir", tmp, "--library", lib, "--symlink"],
        ["--dir", "", "--library", lib], ["--dir", tmp / "x", "--library", notes],
        ["--dir", ro, "--library", lib], ["--dir", tmp, "--library", tmp / "missing.so"],
        ["--dir", tmp, "--library", ro], ["--dir", tmp, "--library", ""],
        ["--dir", ro, "--library", notes],
    ])
    # In this process, with the default directory (the mujoco package's) pointed
    # at a scratch one: no case may write into the mujoco package.
    import contextlib
    import io
    from mjcenic import install_plugin
    default = tmp / "default_dir"
    default.mkdir(exist_ok=True)
    saved = install_plugin.default_directory
    install_plugin.default_directory = lambda: default
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = install_plugin.main([str(x) for x in case])
    except Exception as e:  # noqa: BLE001 - a traceback is the failure
        rc, err = -1, io.StringIO(f"Traceback: {type(e).__name__}: {e}")
    finally:
        install_plugin.default_directory = saved
        ro.chmod(0o755)
    intact = lib.is_file() and not lib.is_symlink() and lib.stat().st_size == size
    if rc not in (0, 1, 2) or not intact or (case[1] == "" and any(default.iterdir())):
        out["silent wrong"] += 1
        out["problems"].append(f"install-plugin {case}: rc {rc}, intact {intact}, "
                               f"{err.getvalue()[-300:]}")
    else:
        out["clear error" if rc else "ran correctly"] += 1


CLASSES = {"random_api": class_random_api, "callbacks": class_callbacks,
           "concurrency": class_concurrency, "integers": class_integers,
           "tolerances": class_tolerances, "model_edits": class_model_edits,
           "install_plugin": class_install_plugin}
OUTCOMES = ("clear error", "ran correctly", "silent wrong", "crash", "hang")
HANG_GUARD = 60.0  # s per case; the slowest cases take a few seconds
STARTUP_GUARD = 120.0  # s for a worker to import mujoco and mjcenic


def case_list(classes, seed, n):
    """The (class, case number) pairs a run covers, in order."""
    return [(name, seed * 1000003 + i) for name in classes for i in range(n)]


def worker(cases, tmp):
    """Runs the cases in order; one JSON line per case on stdout, announced on
    stderr first (the supervisor reads the announcement of a case that
    crashes or hangs)."""
    import tempfile
    for name, case in cases:
        print(json.dumps({"start": [name, case]}), flush=True)
        out = {k: 0 for k in OUTCOMES}
        out["problems"] = []
        r = random.Random(f"{name}-{case}")
        try:
            if name == "install_plugin":
                with tempfile.TemporaryDirectory(dir=tmp) as t:
                    CLASSES[name](r, out, t)
            else:
                CLASSES[name](r, out)
        except Exception as e:  # noqa: BLE001 - an escaped exception is an unclear error
            out["silent wrong"] += 1
            out["problems"].append(f"escaped {type(e).__name__}: {e}")
        outcome = next((k for k in ("silent wrong", "clear error", "ran correctly") if out[k]),
                       "ran correctly")
        print(json.dumps({"done": [name, case], "outcome": outcome,
                          "problems": out["problems"][:3]}), flush=True)


def supervise(cases, tmp, hang_guard=HANG_GUARD, log=None):
    """Runs `cases` in worker subprocesses: a case whose worker dies is a
    crash, one without a result within hang_guard seconds a hang (the worker
    is killed); the worker restarts at the next case. Returns
    {class: {outcome: count, "problems": [...]}}."""
    import queue
    from conftest import python_env
    here = os.path.dirname(os.path.abspath(__file__))
    summary = {name: dict({k: 0 for k in OUTCOMES}, problems=[]) for name, _ in cases}
    todo = list(cases)
    while todo:
        code = (f"import sys, json; sys.path.insert(0, {here!r}); import test_fuzz; "
                f"test_fuzz.worker([tuple(c) for c in json.loads(sys.argv[1])], {str(tmp)!r})")
        proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(todo)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=python_env())
        lines = queue.Queue()

        def read(stream=proc.stdout):
            for line in stream:
                lines.put(line)
            lines.put(None)
        threading.Thread(target=read, daemon=True).start()
        err_tail = []
        threading.Thread(target=lambda: err_tail.extend(proc.stderr), daemon=True).start()
        current, progress = None, False
        while True:
            try:  # (a worker's start-up, importing mujoco, is not a case's time)
                line = lines.get(timeout=hang_guard if current else max(hang_guard, STARTUP_GUARD))
            except queue.Empty:
                proc.kill()
                proc.wait()
                outcome, detail = "hang", f"no result in {hang_guard:g} s"
                current = current or todo[0]
                break
            if line is None:
                proc.wait()
                outcome = "crash" if current else None
                detail = f"worker exit {proc.returncode}: {''.join(err_tail)[-500:]}"
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a case's own output
            if not isinstance(msg, dict):
                continue
            if "start" in msg:
                current = tuple(msg["start"])
            elif "done" in msg:
                name = msg["done"][0]
                summary[name][msg["outcome"]] += 1
                summary[name]["problems"] += [f"case {msg['done'][1]}: {p}" for p in msg["problems"]]
                todo.remove(tuple(msg["done"]))
                current, progress = None, True
                if log:
                    log(name, msg["outcome"])
        if current is None:
            if todo and not progress:  # ended between cases twice: nothing to blame
                raise RuntimeError(f"fuzz worker ended without running a case: {detail}")
            if todo:
                continue
            break
        summary[current[0]][outcome] += 1
        summary[current[0]]["problems"].append(f"case {current[1]}: {outcome}: {detail}")
        todo.remove(current)
        if log:
            log(current[0], outcome)
    return summary


def table(summary):
    """The tally as text: one row per class, one column per outcome."""
    rows = [f"{'class':15s}" + "".join(f"{k:>15s}" for k in OUTCOMES) + f"{'cases':>8s}"]
    total = {k: 0 for k in OUTCOMES}
    for name, out in summary.items():
        rows.append(f"{name:15s}" + "".join(f"{out[k]:15d}" for k in OUTCOMES)
                    + f"{sum(out[k] for k in OUTCOMES):8d}")
        for k in OUTCOMES:
            total[k] += out[k]
    rows.append(f"{'total':15s}" + "".join(f"{total[k]:15d}" for k in OUTCOMES)
                + f"{sum(total.values()):8d}")
    return "\n".join(rows)


def check(summary):
    failures = {name: out["problems"][:5] for name, out in summary.items()
                if out["silent wrong"] or out["crash"] or out["hang"]}
    assert not failures, table(summary) + "\n" + json.dumps(failures, indent=1)


def test_supervisor_counts_crashes_and_hangs(tmp_path):
    # Cases that abort the worker or sleep past the guard are tallied as
    # crash and hang, and the cases after them still run (the worker defines
    # the two classes under MJCENIC_FUZZ_SELFTEST).
    os.environ["MJCENIC_FUZZ_SELFTEST"] = "1"
    try:
        summary = supervise([("_crash", 1), ("install_plugin", 1), ("_hang", 1),
                             ("install_plugin", 2)], tmp_path, hang_guard=3)
    finally:
        del os.environ["MJCENIC_FUZZ_SELFTEST"]
    assert summary["_crash"]["crash"] == 1 and summary["_hang"]["hang"] == 1, summary
    assert sum(summary["install_plugin"][k] for k in ("clear error", "ran correctly")) == 2, summary


def _selftest_classes():
    # The worker process's CLASSES for test_supervisor_counts_crashes_and_hangs.
    def crash(r, out):
        os.abort()

    def hang(r, out):
        import time
        time.sleep(60)
    CLASSES["_crash"], CLASSES["_hang"] = crash, hang


if os.environ.get("MJCENIC_FUZZ_SELFTEST"):
    _selftest_classes()


def test_fuzz_python_api_and_plugin(tmp_path):
    n = int(os.environ.get("MJCENIC_FUZZ_ITERATIONS", "40"))
    seed = int(os.environ.get("MJCENIC_FUZZ_SEED", "1"))
    summary = supervise(case_list(["random_api"], seed, n), tmp_path)
    print("\n" + table(summary))
    check(summary)


def test_fuzz_hostile_classes(tmp_path):
    n = int(os.environ.get("MJCENIC_FUZZ_CLASS_ITERATIONS", "8"))
    seed = int(os.environ.get("MJCENIC_FUZZ_SEED", "1"))
    summary = supervise(case_list([c for c in CLASSES if c != "random_api"], seed, n), tmp_path)
    print("\n" + table(summary))
    check(summary)


if __name__ == "__main__":
    print(table(supervise(case_list(CLASSES, int(sys.argv[1]), int(sys.argv[2])), "/tmp")))
