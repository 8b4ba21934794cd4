"""Seeded randomized robustness suite through Python.

Random MJCF from a small grammar (free/ball/hinge/slide joints; sphere, box,
capsule, cylinder geoms over a plane; limits, equalities, actuators, a fixed
tendon; and settings mjcenic warns about or refuses: RK4/implicit
integrators, CG/PGS, noslip, actuator delay, gravcomp), random keyword
options (valid and invalid), random hostile states (NaN, Inf, 1e300, huge
times) and random call sequences (create, step(nstep), advance_to,
step_once, reset, copy, delete, two steppers in threads, and the MJCF plugin
driven by mujoco.mj_step). Invariant for every call: success with a finite
state at the target time, or an exception whose message starts with
"mjcenic" (ValueError for a refused state, with the state unchanged); never a
crash or a hang. The cases run in a subprocess (a crash fails the test
instead of ending pytest) with a hang guard; each case is bounded by
max_steps_per_call and a few calls.

Besides, test_fuzz_hostile_classes generates each class of hostile input on
its own and sorts every case into clear error / ran correctly / silent wrong
(a crash or a hang fails the test): Python callbacks that raise (mjcb_control,
mjcb_passive, a user controller) in Stepper calls and rollouts, one stepper
used from several threads, extreme sizes and counts for every integer
argument, tolerances at both ends and in combination, model edits between
calls in every mode, and install-plugin paths (same file, empty, non-library,
read-only, missing).

MJCENIC_FUZZ_ITERATIONS (default 60) and MJCENIC_FUZZ_SEED (default 1)
select the cases; MJCENIC_FUZZ_CLASS_ITERATIONS (default 6) the cases per
class (`make fuzz` runs a long sweep)."""
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


def run_case(seed):
    """One case; returns a list of invariant violations (empty: fine)."""
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
        return bad

    def check(call, target, data, *args):
        q, v, t = data.qpos.copy(), data.qvel.copy(), data.time
        try:
            call(*args)
        except Exception as e:
            msg = str(e)
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


def worker(seed, n):
    report = []
    for i in range(n):
        case = seed * 1000003 + i
        print(f"case {case}", file=sys.stderr, flush=True)  # names the case of a crash
        bad = run_case(case)
        if bad:
            report.append({"case": case, "problems": bad[:3]})
    print(json.dumps(report))


def test_fuzz_python_api_and_plugin():
    n = int(os.environ.get("MJCENIC_FUZZ_ITERATIONS", "60"))
    seed = int(os.environ.get("MJCENIC_FUZZ_SEED", "1"))
    from conftest import python_env
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import sys; sys.path.insert(0, {here!r}); import test_fuzz; test_fuzz.worker({seed}, {n})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=python_env(), timeout=max(600, 2 * n))
    assert proc.returncode == 0, f"fuzz worker crashed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == [], json.dumps(report, indent=1)


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
                nbatch = v if isinstance(v, int) and 0 <= v <= 64 else 0
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
                        ("dense_output", [True, False])):
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
    the next call follows it."""
    import mujoco
    import mjcenic
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    d = mujoco.MjData(m)
    d.qpos[0] = 1.0
    d.ctrl[0] = 1.0
    opts = {"mode": r.choice(["fixed", "cenic", "trapezoid"]),
            "dense_output": r.random() < 0.5, "accuracy": r.choice([1e-2, 1e-3])}
    s = mjcenic.Stepper(m, **opts)
    s.step(d, r.randint(50, 150))
    v = d.qvel[0]
    field = r.choice(["dof_damping", "actuator_gainprm", "body_mass"])
    if field == "dof_damping":
        m.dof_damping[0] = r.choice([1e5, 1e6])
    elif field == "actuator_gainprm":
        m.actuator_gainprm[0, 0] = -1e5 if v > 0 else 1e5
    else:
        m.body_mass[1] = 1e-4
        m.body_inertia[1] = 1e-6
    s.step(d)
    w = d.qvel[0]
    ok = (abs(w) < 1e-2 * abs(v) if field == "dof_damping" else
          w * v < 0 if field == "actuator_gainprm" else abs(w - v) > 1.0)
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


CLASSES = {"callbacks": class_callbacks, "concurrency": class_concurrency,
           "integers": class_integers, "tolerances": class_tolerances,
           "model_edits": class_model_edits, "install_plugin": class_install_plugin}


def classes_worker(seed, n, tmp):
    import tempfile
    summary = {}
    for name, fn in CLASSES.items():
        out = {"clear error": 0, "ran correctly": 0, "silent wrong": 0, "problems": []}
        for i in range(n):
            case = seed * 1000003 + i
            print(f"class {name} case {case}", file=sys.stderr, flush=True)
            r = random.Random(f"{name}-{case}")
            if name == "install_plugin":
                with tempfile.TemporaryDirectory(dir=tmp) as t:
                    fn(r, out, t)
            else:
                fn(r, out)
        summary[name] = out
    print(json.dumps(summary))


def test_fuzz_hostile_classes(tmp_path):
    n = int(os.environ.get("MJCENIC_FUZZ_CLASS_ITERATIONS", "6"))
    seed = int(os.environ.get("MJCENIC_FUZZ_SEED", "1"))
    from conftest import python_env
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r}); import test_fuzz; "
            f"test_fuzz.classes_worker({seed}, {n}, {str(tmp_path)!r})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=python_env(), timeout=max(600, 20 * n))
    assert proc.returncode == 0, f"class worker crashed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, out in summary.items():
        print(f"[ fuzz class ] {name:15s} clear error {out['clear error']:3d}, ran correctly "
              f"{out['ran correctly']:3d}, silent wrong {out['silent wrong']}")
    problems = {k: v["problems"][:3] for k, v in summary.items() if v["silent wrong"]}
    assert not problems, json.dumps(problems, indent=1)


if __name__ == "__main__":
    worker(int(sys.argv[1]), int(sys.argv[2]))
