"""Watch a model stepped by mjcenic in MuJoCo's own (passive) viewer, in real time.

    mjcenic view MODEL.xml [--slowdown K] [--accuracy 1e-3] [--mode cenic]
    mjcenic view MODEL.xml --headless OUT.png [--seconds 0.5]
    python -m mjcenic.viewer MODEL.xml

Pacing: every frame (60 Hz) the simulation is advanced to the wall-clock time
divided by the slow-down factor K, ending on it with advance_to; inside the
frame the integrator takes its own step sizes (step_once), so a quiet scene
moves in steps much longer than opt.timestep. With dense output (the default)
a step may span frames: the frame shows the state interpolated inside it
(docs/python.md, "Outputs inside a step"); with dense_output=false each frame ends a
step. When the stepper cannot keep up, the frame is shown late and the clock
is re-anchored (no catch-up burst).

Overlay: stepper and accuracy, the step size (mean accepted step over the last
second, and the step the controller proposes next), the achieved pace
(simulated / wall time over the last second) against the target 1/K, steps per
frame, rejected steps and the simulated time.

Keys (chosen not to clash with MuJoCo's viewer, which ignores '-', '=' and
space in passive mode and uses letters, digits, '[', ']', F1-F7, Tab, Esc,
Page Up, Left/Right for its own functions):
  space       pause / resume
  -  /  =     slower / faster (K x2 / K /2), like `simulate`'s own speed keys
  Down / Up   tighter accuracy (/10) / looser accuracy (x10)
  F8          toggle mj_step / mjcenic, for a side-by-side feel

`--headless OUT.png` runs the same paced loop for --seconds without a window
and writes the last frame with the overlay. It uses MUJOCO_GL if set, else the
first OpenGL backend that works here (egl, osmesa, glfw with a DISPLAY); if
none does, it says so in one line.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

import mujoco

import mjcenic

# GLFW key codes (what the passive viewer's key_callback receives).
KEY_PAUSE = 32          # space
KEY_SLOWER = 45         # '-'
KEY_FASTER = 61         # '='
KEY_TIGHTER = 264       # Down
KEY_LOOSER = 265        # Up
KEY_TOGGLE_MJSTEP = 297  # F8

FPS = 60.0
MAX_SLOWDOWN = 1024.0


class Session:
    """Stepping and pacing state, shared by the window loop and --headless."""

    def __init__(self, model, data, options=None, slowdown=1.0, clock=time.perf_counter):
        self.m, self.d = model, data
        self.options = dict(options or {})
        self.slowdown = float(slowdown)
        self.clock = clock
        self.use_mjstep = False
        self.paused = False
        self.end_time = None          # stop advancing at this simulated time
        self.frame_steps = 0
        self._make()
        self._anchor(clock())
        self._history = collections.deque()   # (wall, sim time, accepted steps)
        self._keys = collections.deque()      # pending key codes (key())
        self._steps_total = 0

    def _make(self):
        self.sim = mjcenic.Stepper(self.m, **self.options)
        self.accuracy = float(self.sim.options["accuracy"])
        self.mode = self.sim.options["mode"]

    def _anchor(self, now):
        self.wall_anchor, self.sim_anchor = now, self.d.time

    # -- keys -------------------------------------------------------------------------
    def key(self, keycode):
        """The viewer's key_callback (its own thread): queued, applied by the frame
        loop at the start of the next advance()."""
        self._keys.append(keycode)

    def handle_key(self, keycode):
        """Applies one key now (see the module doc for the bindings)."""
        now = self.clock()
        if keycode == KEY_PAUSE:
            self.paused = not self.paused
        elif keycode == KEY_SLOWER:
            self.slowdown = min(self.slowdown * 2, MAX_SLOWDOWN)
        elif keycode == KEY_FASTER:
            self.slowdown = max(self.slowdown / 2, 1.0 / MAX_SLOWDOWN)
        elif keycode in (KEY_TIGHTER, KEY_LOOSER):
            acc = self.accuracy / 10 if keycode == KEY_TIGHTER else self.accuracy * 10
            self.options["accuracy"] = min(max(acc, 1e-8), 1.0)
            self._make()
        elif keycode == KEY_TOGGLE_MJSTEP:
            self.use_mjstep = not self.use_mjstep
        else:
            return
        self._anchor(now)
        self._history.clear()

    # -- stepping ---------------------------------------------------------------------
    def advance(self, budget=0.8 / FPS):
        """Advances toward the wall-clock target; returns the wall time spent.

        The integrator takes its own steps (step_once) while the next one ends
        before the target and lands on it with advance_to; it stops early when
        `budget` seconds of wall time are used, and then re-anchors the clock."""
        while self._keys:
            self.handle_key(self._keys.popleft())
        now = self.clock()
        if self.paused:
            self._anchor(now)
            return 0.0
        target = self.sim_anchor + (now - self.wall_anchor) / self.slowdown
        if self.end_time is not None:
            target = min(target, self.end_time)
        start = self.clock()
        d, sim = self.d, self.sim
        steps0 = self._steps_total
        while d.time < target:
            if self.use_mjstep:
                mujoco.mj_step(self.m, d)
                self._steps_total += 1
            else:
                before = sim.stats["steps"]
                if sim.next_step > 0 and d.time + 1.001 * sim.next_step < target:
                    sim.step_once(d)
                else:
                    sim.advance_to(target, d)
                self._steps_total += sim.stats["steps"] - before
            if self.clock() - start > budget:
                break
        spent = self.clock() - start
        self.frame_steps = self._steps_total - steps0
        end = self.clock()
        if d.time < target - 2.0 / FPS / self.slowdown:  # fell behind: no catch-up burst
            self._anchor(end)
        self._history.append((end, d.time, self._steps_total))
        while len(self._history) > 2 and end - self._history[0][0] > 1.0:
            self._history.popleft()
        return spent

    # -- overlay ----------------------------------------------------------------------
    def values(self):
        """The overlay's numbers (also printed when the viewer closes)."""
        pace = step = None
        if len(self._history) >= 2:
            (w0, t0, n0), (w1, t1, n1) = self._history[0], self._history[-1]
            if w1 > w0:
                pace = (t1 - t0) / (w1 - w0)
            if n1 > n0:
                step = (t1 - t0) / (n1 - n0)
        st = self.sim.stats
        return {
            "stepper": "mj_step" if self.use_mjstep else f"mjcenic {self.mode}",
            "accuracy": self.accuracy,
            "step_size": step,
            "next_step": float(self.m.opt.timestep) if self.use_mjstep else float(self.sim.next_step),
            "timestep": float(self.m.opt.timestep),
            "pace": pace,
            "target_pace": 1.0 / self.slowdown,
            "steps_per_frame": self.frame_steps,
            "rejected_steps": int(st["rejected_steps"]),
            "time": float(self.d.time),
            "paused": self.paused,
        }

    def overlay(self):
        v = self.values()
        f = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
        left = ("stepper\naccuracy\nstep size\nnext step\npace\nsteps/frame\nrejected\ntime\n"
                "keys\n")
        right = (f"{v['stepper']}{' (paused)' if v['paused'] else ''}\n{v['accuracy']:.0e}\n"
                 f"{f(v['step_size'], '.2e')} s (opt.timestep {v['timestep']:.0e})\n"
                 f"{f(v['next_step'], '.2e')} s\n"
                 f"{f(v['pace'], '.2f')}x (target {v['target_pace']:.3g}x)\n"
                 f"{v['steps_per_frame']}\n{v['rejected_steps']}\n{v['time']:.3f} s\n"
                 "space pause, -/= speed\nDown/Up accuracy, F8 mj_step")
        return left, right


def run_frames(session, handle, duration=0.0, sleep=time.sleep):
    """The frame loop: advance, overlay, sync, wait for the next frame.

    `handle` is the passive viewer's handle or anything with is_running(),
    set_texts() and sync() (the offscreen renderer, a test double)."""
    if duration > 0:
        session.end_time = duration
    session._anchor(session.clock())
    while handle.is_running() and not (duration > 0 and session.d.time >= duration):
        frame_start = session.clock()
        session.advance()
        left, right = session.overlay()
        handle.set_texts((None, mujoco.mjtGridPos.mjGRID_TOPLEFT, left, right))
        handle.sync()
        rest = 1.0 / FPS - (session.clock() - frame_start)
        if rest > 0:
            sleep(rest)


# ----------------------------------------------------------------------------- headless

_PROBE = """
import os, sys
os.environ["MUJOCO_GL"] = sys.argv[1]
import mujoco
ctx = mujoco.GLContext(64, 64)
ctx.make_current()
m = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1'/></worldbody></mujoco>")
con = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_100)
print("ok")
"""


def _probe(backend, timeout=60):
    """None if `backend` makes an OpenGL context here (in a child process, since a
    failing backend can abort the process), else a one-line reason."""
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE, backend], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out"
    if p.returncode == 0 and "ok" in p.stdout:
        return None
    lines = [ln.strip() for ln in (p.stderr or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else f"exit code {p.returncode}")[:160]


def pick_gl_backend():
    """(backend, None) for the first working backend, or (None, one-line error)."""
    requested = os.environ.get("MUJOCO_GL", "").strip().lower()
    if requested:
        err = _probe(requested)
        return (requested, None) if err is None else \
            (None, f"MUJOCO_GL={requested} does not work here ({err}); unset it to let "
                   "mjcenic try egl, osmesa and glfw")
    tried = []
    for b in ["egl", "osmesa"] + (["glfw"] if os.environ.get("DISPLAY") else []):
        err = _probe(b)
        if err is None:
            return b, None
        tried.append(f"{b}: {err}")
    if not os.environ.get("DISPLAY"):
        tried.append("glfw: no DISPLAY")
    return None, ("no OpenGL backend works for --headless (" + "; ".join(tried) +
                  "); install EGL or OSMesa (e.g. libegl1, libosmesa6), or run under xvfb-run")


def _gl_context_class(backend):
    if backend == "egl":
        from mujoco.egl import GLContext
    elif backend == "osmesa":
        from mujoco.osmesa import GLContext
    else:
        from mujoco.glfw import GLContext
    return GLContext


class OffscreenHandle:
    """The passive viewer's handle interface, rendering offscreen with overlay."""

    def __init__(self, model, data, backend, width=640, height=480):
        self.m, self.d = model, data
        width = min(width, model.vis.global_.offwidth)
        height = min(height, model.vis.global_.offheight)
        self.ctx = _gl_context_class(backend)(width, height)
        self.ctx.make_current()
        self.con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.con)
        self.scn = mujoco.MjvScene(model, maxgeom=10000)
        self.cam = mujoco.MjvCamera()
        mujoco.mjv_defaultFreeCamera(model, self.cam)
        self.opt = mujoco.MjvOption()
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self.texts = None
        self.running = True

    def is_running(self):
        return self.running

    def set_texts(self, texts):
        self.texts = texts

    def sync(self):
        pass  # frames are rendered on demand (render())

    def render(self):
        import numpy as np
        mujoco.mjv_updateScene(self.m, self.d, self.opt, None, self.cam,
                               mujoco.mjtCatBit.mjCAT_ALL, self.scn)
        mujoco.mjr_render(self.rect, self.scn, self.con)
        if self.texts:
            _, grid, left, right = self.texts
            mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, grid, self.rect, left, right,
                               self.con)
        img = np.empty((self.rect.height, self.rect.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(img, None, self.rect, self.con)
        return np.flipud(img)

    def close(self):
        self.con.free()
        self.ctx.free()


def _write_png(path, img):
    """An RGB uint8 image as an 8-bit PNG (zlib, no imaging library needed)."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    h, w, _ = img.shape
    rows = b"".join(b"\x00" + img[r].tobytes() for r in range(h))  # filter type 0 per row
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


# ----------------------------------------------------------------------------- CLI

def add_arguments(p):
    from ._cliutil import add_stepper_args, nonneg, positive
    p.add_argument("model")
    p.add_argument("--keyframe", default=None, help="keyframe name (default: the first one)")
    p.add_argument("--slowdown", type=positive, default=1.0,
                   help="slow-down factor K: simulated time runs at 1/K of wall time (1)")
    p.add_argument("--duration", type=nonneg, default=0.0,
                   help="close after this much simulated time (0: run until closed)")
    p.add_argument("--headless", metavar="OUT.png", default=None,
                   help="no window: run the paced loop for --seconds offscreen and write the "
                        "last frame with the overlay")
    p.add_argument("--seconds", type=positive, default=0.5,
                   help="simulated time for --headless (0.5)")
    add_stepper_args(p)
    p.set_defaults(func=run)


def add_parser(sub):
    p = sub.add_parser("view", allow_abbrev=False,
                       help="MuJoCo's viewer, stepped by mjcenic in real time",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def _closing_line(s):
    print(f"viewer closed at t = {s.d.time:.3f} s", flush=True)
    print("overlay " + json.dumps(s.values()), flush=True)


def run(a, prog="mjcenic view"):
    from .cli import _check_output_path, _cliutil, load_or_report
    if a.headless:
        # The check `run --out` has: the image is written as PNG, into a
        # directory that exists and is writable.
        err = _check_output_path(a.headless, (".png",), "--headless", prog)
        if err:
            print(err, file=sys.stderr)
            return 2
        backend, err = pick_gl_backend()
        if err:
            print(f"{prog}: {err}", file=sys.stderr)
            return 1
    elif not os.environ.get("DISPLAY") and sys.platform.startswith("linux"):
        print(f"{prog}: no display (DISPLAY is not set): use --headless OUT.png, or run under "
              "xvfb-run", file=sys.stderr)
        return 1
    loaded = load_or_report(a.model, a.keyframe, prog)
    if loaded is None:
        return 1
    m, d = loaded
    try:
        s = Session(m, d, _cliutil.stepper_options(a), slowdown=a.slowdown)
    except (ValueError, TypeError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    if a.headless:
        try:
            handle = OffscreenHandle(m, d, backend)
        except Exception as e:  # noqa: BLE001 - one line instead of a GL traceback
            print(f"{prog}: could not create an offscreen {backend} context: "
                  f"{str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
            return 1
        run_frames(s, handle, duration=d.time + a.seconds)
        _write_png(a.headless, handle.render())
        handle.close()
        print(f"wrote {a.headless} at t = {d.time:.3f} s (OpenGL backend {backend})")
        _closing_line(s)
        return 0

    import mujoco.viewer as mjviewer
    try:
        v = mjviewer.launch_passive(m, d, key_callback=s.key)
    except Exception as e:  # noqa: BLE001 - GLFW / display errors: one line
        print(f"{prog}: could not open MuJoCo's viewer: {str(e).splitlines()[0] if str(e) else type(e).__name__} "
              "(use --headless OUT.png without a display)", file=sys.stderr)
        return 1
    with v:
        run_frames(s, v, duration=a.duration)
    _closing_line(s)
    # MuJoCo's GLFW viewer thread can crash during interpreter teardown on
    # virtual displays (seen with plain mj_step too); the session is over, so
    # leave without running Python's finalizers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv=None):
    p = argparse.ArgumentParser(prog="mjcenic view", allow_abbrev=False, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
