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

MJCENIC_FUZZ_ITERATIONS (default 60) and MJCENIC_FUZZ_SEED (default 1)
select the cases (`make fuzz` runs a long sweep)."""
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


if __name__ == "__main__":
    worker(int(sys.argv[1]), int(sys.argv[2]))
