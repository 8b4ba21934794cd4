"""`mjcenic compare`: mj_step and mjcenic on one or more MJCF models, each against its own
converged reference.

    mjcenic compare PATH... [--json OUT] [--markdown OUT] [--plots DIR]
                    [--duration 1.0] [--accuracies 1e-1,1e-2,1e-3] [--reps 3]
                    [--reference-accuracy 1e-4] [--reference-levels 3,10]

Which files are compared
  A PATH that is a file is always compared. A PATH that is a directory is
  searched recursively (hidden directories skipped). A *.xml file that another
  XML file of the searched tree pulls in with <include file=...> is never
  taken. Of the others, folder by folder:
    * if the folder holds files named scene*.xml, only those are taken;
    * otherwise every *.xml whose root element is <mujoco> is taken
      ("top-level-looking"); a file that is not even well-formed XML is taken
      too, so that its error is reported.
  Every file taken is loaded with mjcenic.load_model (MuJoCo's compiler plus
  the mjcenic plugin-config check). A file that fails is reported as one row
  with load_ok = false and the error text; the others are still compared.

What is run, per model
  Initial state: the first keyframe (mj_resetDataKeyframe, which also sets
  ctrl) or the default pose (mj_resetData), then mj_forward. ctrl is held at
  these start values for the whole run. The runs are:
    * each simulator's own reference (mjcenic.work_precision.reference): mj_step
      on the same model at dt/2^k, and mjcenic in fixed mode (error control off,
      the same ICF contact model as its error-controlled runs) at dt/2^k, for
      k = LO, LO+1, ... (--reference-levels LO,HI), refined until converged:
      the check (trajectory error of level k-1 against level k) is at most
      --reference-accuracy and the observed order log2(check_{k-1}/check_k)
      is at least 0.5 at each of the last two levels (or the check is below
      1/100 of the tolerance). A level
      predicted to exceed --reference-time-limit (the sum over the levels) is
      not run. A reference that does not converge is reported loudly: a
      WARNING line on stderr, "converged": false with the reason in the JSON
      metadata, NOT CONVERGED in the Markdown; its family's errors are still
      measured against its finest level;
    * mj_step dt=<model timestep>, mj_step dt=0.001 (skipped if it is the
      model's timestep; run on a copy of the model);
    * mjcenic acc=A (mode='cenic', dense_output=True) for each --accuracies A.
  Every run is measured against its own simulator's reference; no record holds
  an error of one simulator against the other (their contact models differ,
  so that difference is not an error of either).

How it is measured
  * Samples are taken on a common grid every 10 ms (plus T if T is not on it).
    mj_step is stepped with its fixed step and its qpos at a sample time is
    interpolated on the configuration manifold (mj_differentiatePos /
    mj_integratePos) between the two bracketing steps when the time is not a
    multiple of dt. mjcenic is advanced with advance_to(sample time) with
    dense_output=True: with ctrl held, a call may end inside an accepted step
    and gets the step's continuous extension there, so the samples never cap
    the step (the accuracy rows differ where the step is error-limited). The
    non-reference runs check --time-limit after every sample.
  * wall_time is the time spent inside mj_step / advance_to only (sampling,
    probing and the stepper's construction are excluded; the construction is
    reported as setup_time), min over --reps repetitions run in rounds,
    interleaved (runs over 5 s are timed once); references once.
    real_time_rate = sim_time/wall_time.
  * max_penetration [m] = max over sampled states of max(0, -contact.dist) over
    active contacts (contact.exclude == 0). The sampled states are: after every
    mj_step call for mj_step, every 10 ms sample for mjcenic and the
    references, plus the initial state. Contacts are recomputed for each
    sampled qpos on a scratch MjData (mj_kinematics, mj_flex, mj_collision), so
    both families use the same computation. For mjcenic,
    stepper_max_penetration additionally reports the stepper's own statistic
    (it sees every internal geometry query).
  * energy_drift [J] = |E(T) - E(0)|, E = potential + kinetic from
    mj_energyPos/mj_energyVel on a scratch MjData of a model copy with the
    mjENBL_ENERGY flag set (the stepped data is not touched). E(T) is taken at
    the run's final state (for mj_step, the first step at or after T).
  * trajectory_error [m, rad] = max over the sample times of the infinity norm
    of mj_differentiatePos(reference qpos -> run qpos), the reference being
    the run's own simulator's; end_error the same at T. reference_check is
    that reference's check, reference_converged its verdict, error_resolved
    whether the error is at least twice the check (below it the reference
    cannot tell the run's error apart from its own).
  * finite is false if the state became non-finite or MuJoCo flagged an
    instability (mjWARN_BADQACC/BADQPOS/BADQVEL, after which mj_step resets the
    data). A run that fails has its text in `error`; values that do not exist
    for it (trajectory_error and energy_drift of an unfinished run, everything
    of a model that did not load) are null. The JSON never contains NaN.
"""
import argparse
import copy
import importlib.util
import json
import math
import os
import pathlib
import sys
import xml.etree.ElementTree as ET

from . import work_precision

SAMPLE_INTERVAL = 0.01      # [s] common sample grid
MJSTEP_FINE_DT = 0.001      # [s] the second mj_step run

ROW_FIELDS = ["model", "path", "method", "family", "timestep", "accuracy", "is_reference",
              "load_ok", "error", "sim_time", "wall_time", "setup_time", "real_time_rate",
              "steps", "rejected_steps", "max_penetration", "stepper_max_penetration",
              "energy_drift", "trajectory_error", "end_error", "length_scale",
              "reference_method", "reference_check", "reference_converged", "error_resolved",
              "reps", "warnings", "finite"]


# ----------------------------------------------------------------------------- discovery

def _root_tag_and_includes(path):
    """Returns (root tag or None if not well-formed, [included absolute paths])."""
    try:
        root = ET.parse(str(path)).getroot()
    except (ET.ParseError, OSError, UnicodeDecodeError):
        return None, []
    incs = []
    for el in root.iter("include"):
        f = el.get("file")
        if f:
            incs.append(os.path.normpath(os.path.join(str(path.parent), f)))
    return root.tag, incs


def discover(directory):
    """The model files compare takes from `directory` (see the module doc)."""
    directory = pathlib.Path(directory)
    by_folder = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        xmls = sorted(pathlib.Path(dirpath) / f for f in filenames
                      if f.lower().endswith(".xml") and not f.startswith("."))
        if xmls:
            by_folder[pathlib.Path(dirpath)] = xmls
    info = {}
    included = set()
    for xmls in by_folder.values():
        for p in xmls:
            tag, incs = _root_tag_and_includes(p)
            info[p] = tag
            included.update(incs)
    chosen = []
    for folder, xmls in by_folder.items():
        top = [p for p in xmls if os.path.normpath(str(p)) not in included]
        scenes = [p for p in top if p.name.lower().startswith("scene")]
        if scenes:
            chosen.extend(scenes)
            continue
        chosen.extend(p for p in top if info[p] is None or info[p] == "mujoco")
    return chosen


def _labels(paths):
    """Short unique labels: the last two path components, longer where they clash."""
    parts = [pathlib.Path(p).parts for p in paths]
    n = {i: 2 for i in range(len(paths))}
    while True:
        labels = ["/".join(parts[i][-n[i]:]) for i in range(len(paths))]
        clash = [i for i in range(len(paths)) if labels.count(labels[i]) > 1
                 and n[i] < len(parts[i])]
        if not clash:
            return labels
        for i in clash:
            n[i] += 1


# ----------------------------------------------------------------------------- progress

class _Progress:
    """A tqdm bar on stderr (off when stderr is not a terminal): runs done, with
    the fraction of the current run, and the current run as its label."""

    def __init__(self, total, unit="run"):
        from ._cliutil import progress
        self.bar = progress(total=max(total, 1), desc="mjcenic compare", unit=unit,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total} " + unit + "s "
                                       "[{elapsed}<{remaining}]{postfix}")
        self.n = 0.0

    def update(self, done, label, final_of_run=False):
        done = min(max(done, self.n), self.bar.total)
        if done > self.n:
            self.bar.update(done - self.n)
            self.n = done
        self.bar.set_postfix_str(label[-60:], refresh=final_of_run)

    def finish(self):
        self.bar.close()


# ----------------------------------------------------------------------------- probes

class _Probe:
    """Scratch computations that never touch the stepped MjData."""

    def __init__(self, m):
        import mujoco
        self.mujoco = mujoco
        self.m = m
        self.cd = mujoco.MjData(m)              # contacts
        self.em = copy.deepcopy(m)              # energy
        self.em.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
        self.ed = mujoco.MjData(self.em)

    def penetration(self, d):
        mj, cd = self.mujoco, self.cd
        cd.qpos[:] = d.qpos
        if self.m.nmocap:
            cd.mocap_pos[:] = d.mocap_pos
            cd.mocap_quat[:] = d.mocap_quat
        mj.mj_kinematics(self.m, cd)
        if self.m.nflex:
            mj.mj_flex(self.m, cd)
        mj.mj_collision(self.m, cd)
        if cd.ncon == 0:
            return 0.0
        dist = cd.contact.dist
        active = cd.contact.exclude == 0
        if not active.any():
            return 0.0
        return max(0.0, float(-dist[active].min()))

    def energy(self, d):
        mj, ed = self.mujoco, self.ed
        ed.qpos[:] = d.qpos
        ed.qvel[:] = d.qvel
        if self.m.na:
            ed.act[:] = d.act
        if self.m.nmocap:
            ed.mocap_pos[:] = d.mocap_pos
            ed.mocap_quat[:] = d.mocap_quat
        ed.time = d.time
        mj.mj_fwdPosition(self.em, ed)
        mj.mj_energyPos(self.em, ed)
        mj.mj_energyVel(self.em, ed)
        return float(ed.energy[0] + ed.energy[1])

    def tangent_error(self, q, qref, length_scale):
        """The stepper's weighted error norm of the qpos difference (mjcenic.error_norm)."""
        from . import error_norm
        return error_norm(self.m, qref, q, length_scale=length_scale)


def _reset(m, d):
    import mujoco
    if m.nkey > 0:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    else:
        mujoco.mj_resetData(m, d)
    mujoco.mj_forward(m, d)


def _initial_state_name(m):
    import mujoco
    if m.nkey == 0:
        return "default pose"
    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, 0)
    return f"keyframe 0 '{name}'" if name else "keyframe 0"


# ----------------------------------------------------------------------------- runs

class _Entry:
    """One row's run: what to run and, after the first repetition, what it gave."""

    def __init__(self, method, family, timestep=None, accuracy=None, is_reference=False):
        self.method, self.family = method, family
        self.timestep, self.accuracy, self.is_reference = timestep, accuracy, is_reference
        self.run = None          # the first repetition's work_precision.Run
        self.wall = None         # min over the repetitions [s]
        self.reps = 0
        self.max_pen = 0.0
        self.e_final = None
        self.error = None
        self.times = ()          # the sample times [s after the start]


def _mjstep_entry(m, probe, dt, times, make_data, s, tick):
    """An mj_step run at dt; penetration after every mj_step call (first repetition)."""
    e = _Entry(f"mj_step dt={dt:g}", "mj_step", timestep=dt)

    def fn():
        first = e.reps == 0 and e.run is None
        pen = [probe.penetration(make_data())] if first else None

        def after_step(_mm, d):
            if pen is not None:
                pen[0] = max(pen[0], probe.penetration(d))
        r = work_precision.run_mjstep(m, dt, times, make_data, after_step=after_step,
                                      time_limit=s["time_limit"], tick=tick if first else None)
        if first:
            e.max_pen = pen[0]
        return r, {}
    return e, fn


def _mjcenic_entry(m, probe, acc, times, make_data, s, tick):
    """mjcenic cenic at `acc`, dense output (the samples do not cap the step); penetration at
    every sample (first repetition)."""
    e = _Entry(f"mjcenic acc={acc:g}", "mjcenic", accuracy=acc)

    def fn():
        first = e.reps == 0 and e.run is None
        pen = [0.0]

        def after_sample(d):
            if first:
                pen[0] = max(pen[0], probe.penetration(d))
        r = work_precision.run_mjcenic(m, {"mode": "cenic", "accuracy": acc}, times, make_data,
                                       after_sample=after_sample, time_limit=s["time_limit"],
                                       tick=tick if first else None)
        if first:
            e.max_pen = pen[0]
        return r, {}
    return e, fn


def _reference_entry(probe, sim, ref, make_data):
    """The row of a simulator's reference (its finest level); penetration at the samples."""
    if sim == "mj_step":
        e = _Entry(f"mj_step dt={ref['h']:g}", "mj_step", timestep=ref["h"], is_reference=True)
    else:
        e = _Entry(f"mjcenic fixed h={ref['h']:g}", "mjcenic", timestep=ref["h"],
                   is_reference=True)
    r = ref["run"]
    e.run, e.wall, e.reps = r, r.wall, 1
    d = make_data()
    for q in r.q[:r.n]:
        d.qpos[:] = q
        e.max_pen = max(e.max_pen, probe.penetration(d))
    return e


# ----------------------------------------------------------------------------- output

def _clean(x):
    """JSON-safe: NaN/inf become None (callers set `finite` accordingly)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _fmt(x, spec, scale=1.0):
    if x is None:
        return "—"
    return format(x * scale, spec)


def _md_cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def markdown(report):
    meta = report["metadata"]
    out = ["# mjcenic compare", "",
           f"MuJoCo {meta['mujoco_version']}, simulated duration {meta['duration']:g} s per run, "
           f"samples every {1000 * meta['sample_interval']:g} ms, mjcenic mode 'cenic' at "
           f"accuracies {', '.join(format(a, 'g') for a in meta['accuracies'])} with dense "
           "output.", ""]
    refs = []
    for mi in meta["models"]:
        if not mi["load_ok"]:
            continue
        parts = []
        for sim, ref in (mi.get("references") or {}).items():
            if ref.get("method") is None:
                parts.append(f"{sim}: none ({ref.get('note')})")
                continue
            order = f", order {ref['order']:.2f}" if ref.get("order") is not None else ""
            check = f"{ref['check']:.2g}" if ref.get("check") is not None else "—"
            parts.append(f"{sim}: {ref['method']} (check {check}{order}, "
                         + ("converged" if ref["converged"]
                            else f"**NOT CONVERGED**: {ref['note']}") + ")")
        refs.append(f"- `{mi['model']}`: " + "; ".join(parts))
    if refs:
        out += ["Each simulator against its own reference (mj_step at dt/2^k, mjcenic in fixed "
                "mode at dt/2^k; check = trajectory error of the next coarser level against "
                "it, order = observed convergence order):", ""] + refs + [""]
    # A model's warnings repeat on every mjcenic row: each text once, under the table.
    warn_ids = {}
    for r in report["rows"]:
        for w in r.get("warnings") or []:
            warn_ids.setdefault(w, len(warn_ids) + 1)
    unconverged = any(r.get("reference_converged") is False for r in report["rows"])
    out += ["| Model | Method | Wall time [s] | Real-time rate [×] | Steps | Rejected | "
            "Max penetration [mm] | Energy drift [J] | Trajectory error [m, rad] | Finite | Notes |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|---|"]
    for r in report["rows"]:
        if not r["load_ok"]:
            out.append(f"| {_md_cell(r['model'])} | — | — | — | — | — | — | — | — | — | "
                       f"load failed: {_md_cell(r['error'])} |")
            continue
        notes = []
        if r["is_reference"]:
            notes.append("reference" + ("" if r["reference_converged"] else " (not converged)"))
        else:
            if r["reference_converged"] is False:
                notes.append("reference not converged")
            if r["error_resolved"] is False:
                notes.append("below 2× the reference check: not resolved")
        if r["error"]:
            notes.append(r["error"])
        if r["warnings"]:
            notes.append("warnings " + ", ".join(f"[W{warn_ids[w]}]" for w in r["warnings"]))
        out.append("| " + " | ".join(_md_cell(c) for c in [
            r["model"], r["method"], _fmt(r["wall_time"], ".3g"),
            _fmt(r["real_time_rate"], ".3g"), r["steps"] if r["steps"] is not None else "—",
            r["rejected_steps"] if r["rejected_steps"] is not None else "—",
            _fmt(r["max_penetration"], ".3f", 1000.0), _fmt(r["energy_drift"], ".3g"),
            _fmt(r["trajectory_error"], ".2e"), "yes" if r["finite"] else "**no**",
            "; ".join(notes)]) + " |")
    if warn_ids:
        out += ["", "Warnings of mjcenic on the models (unsupported or approximated features; "
                "[Wn] in the Notes column):", ""]
        out += [f"- [W{k}] {_md_cell(w)}" for w, k in warn_ids.items()]
    if unconverged:
        out += ["", "A reference that did not converge (**NOT CONVERGED** above, \"reference "
                "not converged\" in the Notes) leaves its simulator's trajectory errors uncertain "
                "by about its check; the plots mark those points, and the reference itself, "
                "with a black ×."]
    out += ["",
            f"Wall time: time inside mj_step / advance_to only, min of {meta.get('reps', 1)} "
            "interleaved repetitions (runs over 5 s once; references once). Real-time rate: "
            "simulated / wall time. Max penetration: max(0, −dist) over active MuJoCo "
            "contacts, after every mj_step call, and at every 10 ms sample for mjcenic "
            "(dense output: the samples do not cap its step). Energy drift: |E(T) − E(0)|, "
            "potential + kinetic. Trajectory error: max over the 10 ms samples of the ∞-norm "
            "of mj_differentiatePos to the run's own simulator's reference (m, rad); never "
            "one simulator against the other.", ""]
    return "\n".join(out)


def _role(row, model_dt):
    """The series a row belongs to across models (model timesteps differ)."""
    if row["is_reference"]:
        return f"{row['family']} reference"
    if row["family"] == "mj_step":
        if model_dt is not None and abs(row["timestep"] - model_dt) <= 1e-12:
            return "mj_step, model dt"
        return row["method"]
    return row["method"]


def _short_label(label, width=34):
    """The model label wrapped on '/' into lines of at most ~width characters."""
    parts, lines, cur = label.split("/"), [], ""
    for i, part in enumerate(parts):
        piece = part + ("/" if i < len(parts) - 1 else "")
        if cur and len(cur) + len(piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur += piece
    lines.append(cur)
    return "\n".join(lines)


def _role_colors(roles):
    """One distinct colour per method role (never repeated): mj_step roles in
    blues/greys, mjcenic accuracies from orange to dark red, the references black (mjcenic)
    and grey (mj_step)."""
    import matplotlib.pyplot as plt
    refs = {"mjcenic reference": "black", "mj_step reference": "0.55"}
    mj = [r for r in roles if r.startswith("mj_step") and r not in refs]
    cen = [r for r in roles if r.startswith("mjcenic") and r not in refs]
    other = [r for r in roles if r not in mj and r not in cen and r not in refs]
    out = {}
    blues = plt.get_cmap("Blues")
    for i, r in enumerate(mj):
        out[r] = blues(0.9 - 0.45 * i / max(len(mj) - 1, 1))
    oranges = plt.get_cmap("autumn")
    reds = ["#f59f00", "#e8590c", "#a61e4d", "#5f3dc4", "#2b8a3e", "#495057"]
    for i, r in enumerate(cen):
        out[r] = reds[i] if len(cen) <= len(reds) else oranges(i / max(len(cen) - 1, 1))
    greens = plt.get_cmap("Greens")
    for i, r in enumerate(other):
        out[r] = greens(0.5 + 0.4 * i / max(len(other), 1))
    for r in roles:
        if r in refs:
            out[r] = refs[r]
    return out


def _log_ticks(axis, lo, hi):
    """Readable ticks on a log axis spanning [lo, hi]: 1-2-5 within about a
    decade and a half, decades otherwise (every other one beyond 5), plain
    numbers (0.002, 1e-05)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    decades = math.log10(hi / lo)
    subs = (1.0, 2.0, 5.0) if decades <= 1.6 else (1.0,)
    axis.set_major_locator(LogLocator(base=10.0 if decades <= 5 else 100.0, subs=subs,
                                      numticks=12))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _compact(v)))
    axis.set_minor_formatter(NullFormatter())


def _compact(v):
    """A short tick label: 0.01, 100, 1e-05 -> 1e-5."""
    if 1e-3 <= v < 1e4:
        return format(v, "g")
    e = math.log10(v)
    return f"1e{round(e)}" if abs(e - round(e)) < 1e-9 else format(v, ".0e")


def text_overlaps(fig):
    """Pairs of visible, non-empty texts of `fig` whose drawn boxes overlap (for
    the tests: a readable figure has none)."""
    import matplotlib.text
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # tick labels that are drawn: those of the ticks inside the view limits
    drawn_ticks, all_ticks = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                all_ticks.update(map(id, (tick.label1, tick.label2)))
            if ax.get_visible():
                for tick in axis._update_ticks():
                    drawn_ticks.update(map(id, (tick.label1, tick.label2)))
    boxes = []
    for t in fig.findobj(matplotlib.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if id(t) in all_ticks and id(t) not in drawn_ticks:
            continue
        if t.axes is not None and not t.axes.get_visible():
            continue
        bb = t.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((t.get_text(), bb))
    out = []
    fb = fig.bbox
    for text, bb in boxes:  # cut off at the figure's edge
        if bb.x0 < fb.x0 - 1 or bb.y0 < fb.y0 - 1 or bb.x1 > fb.x1 + 1 or bb.y1 > fb.y1 + 1:
            out.append((text, "<outside the figure>"))
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i][1], boxes[j][1]
            # overlap by more than a pixel in both directions
            if (min(a.x1, b.x1) - max(a.x0, b.x0) > 1.0
                    and min(a.y1, b.y1) - max(a.y0, b.y0) > 1.0):
                out.append((boxes[i][0], boxes[j][0]))
    return out


# A black × over a point whose reference did not converge (and over that reference).
_UNCONVERGED = dict(ls="none", marker="x", ms=5, mew=1.2, color="k", zorder=3)


def _unconverged_handle(label="error against a reference that did not converge"):
    from matplotlib.lines import Line2D
    return Line2D([], [], label=label, **_UNCONVERGED)


def plots(report, directory, overlaps=None):
    """Writes the plots; returns their paths.

      wall_time_vs_error.png  one panel per model (small multiples, own axes):
                              wall time vs trajectory error, one colour per method
      max_penetration.png     one row per model, max penetration on a log axis
                              (zero drawn at the axis floor), one colour per method
      real_time_rate.png      one row per model, simulated / wall time, log axis

    `overlaps`, if a dict, receives per file the pairs of overlapping labels
    (text_overlaps; empty when readable)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rows = [r for r in report["rows"] if r["load_ok"]]
    models = list(dict.fromkeys(r["model"] for r in rows))
    # display names: without the folders every model shares (models/...)
    common = os.path.commonpath(models) if len(models) > 1 and all(
        "/" in mo and not mo.startswith("/") for mo in models) else ""
    shown = {mo: (mo[len(common) + 1:] if common and mo.startswith(common + "/") else mo)
             for mo in models}
    model_dt = {mi["model"]: mi.get("timestep") for mi in report["metadata"]["models"]}
    roles = list(dict.fromkeys(_role(r, model_dt.get(r["model"])) for r in rows))
    color = _role_colors(roles)
    marker = {rl: ("D" if rl.endswith(" reference") else "s" if rl.startswith("mj_step")
                   else "o") for rl in roles}
    files = []
    T = report["metadata"]["duration"]

    def save(fig, name):
        f = directory / name
        if overlaps is not None:
            overlaps[name] = text_overlaps(fig)
        fig.savefig(f, dpi=100)
        plt.close(fig)
        files.append(str(f))

    def legend_handles(rls):
        return [Line2D([], [], color=color[rl], marker=marker[rl], ls="none", ms=7,
                       mfc="none" if rl.startswith("mj_step") else color[rl], label=rl)
                for rl in rls]

    # (a) small multiples: wall time vs trajectory error, one panel per model
    n = max(len(models), 1)
    ncols = min(5, n)
    nrows = int(math.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.5 * ncols, 2.9 * nrows + 1.0),
                             squeeze=False, layout="constrained")
    plot_roles = [rl for rl in roles if not rl.endswith(" reference")]
    checks = {mi["model"]: mi.get("references") or {} for mi in report["metadata"]["models"]}
    check_ls = {"mj_step": ":", "mjcenic": "--"}
    unconverged = [False]
    for k, ax in enumerate(axes.flat):
        if k >= len(models):
            ax.set_visible(False)
            continue
        mo = models[k]
        ax.set_title(_short_label(shown[mo]), fontsize=8)
        ax.tick_params(labelsize=7)
        notes = []
        drawn = 0
        for fam, ls in (("mj_step", ":"), ("mjcenic", "-")):
            pts = [r for r in rows if r["model"] == mo and r["family"] == fam
                   and not r["is_reference"]]
            pts.sort(key=lambda r: -(r["timestep"] or r["accuracy"] or 0))
            good = [r for r in pts if r["trajectory_error"] and r["trajectory_error"] > 0
                    and r["wall_time"] and r["wall_time"] > 0]
            for r in pts:
                if r["error"]:
                    notes.append(f"{r['method']}: failed")
                elif r["trajectory_error"] == 0:
                    notes.append(f"{r['method']}: error 0")
            if len(good) > 1:
                ax.plot([r["trajectory_error"] for r in good], [r["wall_time"] for r in good],
                        ls=ls, lw=0.8, color="0.6", zorder=1)
            for r in good:
                rl = _role(r, model_dt.get(mo))
                ax.plot(r["trajectory_error"], r["wall_time"], ls="none", marker=marker[rl],
                        ms=6, color=color[rl], mfc="none" if fam == "mj_step" else color[rl],
                        zorder=2)
                if r["reference_converged"] is False:
                    ax.plot(r["trajectory_error"], r["wall_time"], **_UNCONVERGED)
                    unconverged[0] = True
                drawn += 1
        for fam, ls in check_ls.items():  # below a reference's check: not resolved
            c = (checks.get(mo, {}).get(fam) or {}).get("check")
            if drawn and c and c > 0:
                ax.axvline(c, color="0.45", ls=ls, lw=0.9, zorder=0)
        if drawn:
            ax.set_xscale("log")
            ax.set_yscale("log")
            # at least a decade on each axis, so single points are not stretched
            for axis, get, set_ in ((ax.xaxis, ax.get_xlim, ax.set_xlim),
                                    (ax.yaxis, ax.get_ylim, ax.set_ylim)):
                lo, hi = get()
                if hi / lo < 10:
                    mid = math.sqrt(lo * hi)
                    lo, hi = mid / math.sqrt(10), mid * math.sqrt(10)
                    set_(lo, hi)
                _log_ticks(axis, lo, hi)
        else:
            ax.set_xticks([])
            ax.set_yticks([])
        if notes:
            ax.text(0.03, 0.03, "\n".join(notes[:3]) + ("\n…" if len(notes) > 3 else ""),
                    transform=ax.transAxes, fontsize=7, va="bottom", ha="left", color="0.3")
        ax.grid(True, which="major", alpha=0.3)
        if k % ncols == 0:
            ax.set_ylabel("wall time [s]", fontsize=7)
        if k >= len(models) - ncols:
            ax.set_xlabel("trajectory error [m, rad]", fontsize=7)
    import textwrap
    width_in = 3.5 * ncols
    title = (f"Wall time vs trajectory error, each simulator against its own reference, "
             f"{T:g} s simulated, one panel per model (own axes; lower left is better)")
    sub = ("hollow squares: mj_step, dots: mjcenic; vertical lines: reference checks"
           + ("; ×: reference not converged" if unconverged[0] else "")
           + (f"; models under {common}/" if common else ""))
    chars = max(30, int(width_in * 12))  # ~12 characters per inch at 10 pt
    fig.suptitle("\n".join(textwrap.wrap(title, chars) + textwrap.wrap(sub, chars)),
                 fontsize=10)
    check_handles = [Line2D([], [], color="0.45", ls=ls, lw=0.9,
                            label=f"{fam} reference check")
                     for fam, ls in check_ls.items()]
    handles = legend_handles(plot_roles) + check_handles + (
        [_unconverged_handle()] if unconverged[0] else [])
    fig.legend(handles=handles, loc="outside lower center",
               ncols=max(1, min(len(handles), 6, int(width_in / 2.3))), fontsize=8,
               frameon=False)
    save(fig, "wall_time_vs_error.png")

    # (b), (c) one row per model, a log axis, one marker per method
    def dot_plot(key, scale, xlabel, title, name, ref_line=None, resolution=0.0):
        """Values <= resolution (after scaling) are drawn at the floor, labelled 0."""
        fig, ax = plt.subplots(figsize=(11, 1.4 + 0.32 * n), layout="constrained")
        vals = [scale * r[key] for r in rows if r[key] is not None and scale * r[key] > resolution]
        zeros = any(r[key] is not None and scale * r[key] <= resolution for r in rows)
        lo, hi = (min(vals), max(vals)) if vals else (1e-3, 1.0)
        floor = 10 ** (math.floor(math.log10(lo)) - 1) if zeros else None
        k = len(roles)
        unconverged_refs = [False]
        for i, mo in enumerate(models):
            for j, rl in enumerate(roles):
                r = next((r for r in rows if r["model"] == mo
                          and _role(r, model_dt.get(mo)) == rl), None)
                if r is None or r[key] is None:
                    continue
                v = scale * r[key]
                y = i + (j - (k - 1) / 2) * (0.7 / max(k, 1))
                ax.plot(v if v > resolution else floor, y, ls="none", marker=marker[rl],
                        ms=5, color=color[rl],
                        mfc="none" if (v <= resolution or rl.startswith("mj_step"))
                        else color[rl])
                if r["is_reference"] and r["reference_converged"] is False:
                    ax.plot(v if v > resolution else floor, y, **_UNCONVERGED)
                    unconverged_refs[0] = True
        ax.set_xscale("log")
        x0 = floor / 2 if zeros else lo / 2
        x1 = 10 ** (math.log10(hi) + 0.15)
        ax.set_xlim(x0, x1)
        _log_ticks(ax.xaxis, x0, x1)
        if zeros:  # the floor stands for 0; the decade ticks above it
            from matplotlib.ticker import FixedLocator, FuncFormatter
            e0, e1 = round(math.log10(floor)) + 1, math.floor(math.log10(x1))
            every = 1 if e1 - e0 <= 8 else 2  # about 8 labels at most
            decades = [10.0 ** e for e in range(e1, e0 - 1, -every)]
            ax.xaxis.set_major_locator(FixedLocator([floor] + decades[::-1]))
            ax.xaxis.set_major_formatter(FuncFormatter(
                lambda v, _: "0" if v == floor else _compact(v)))
            ax.axvline(floor * 3, color="0.6", lw=0.8, ls="--")
        if ref_line is not None:
            ax.axvline(ref_line[0], color="0.3", lw=1.0)
            ax.text(ref_line[0], -0.9, ref_line[1], fontsize=7, ha="left", va="center",
                    color="0.3")
        ax.set_yticks(range(n))
        ax.set_yticklabels([shown[mo] for mo in models], fontsize=8)
        ax.set_ylim(n - 0.5, -1.3)
        for i in range(n):
            if i % 2 == 0:
                ax.axhspan(i - 0.5, i + 0.5, color="0.95", zorder=0)
        ax.grid(True, axis="x", which="major", alpha=0.4)
        ax.set_xlabel(xlabel)
        ax.set_title(title, fontsize=10)
        handles = legend_handles(roles) + (
            [_unconverged_handle("reference did not converge")] if unconverged_refs[0] else [])
        fig.legend(handles=handles, loc="outside lower center",
                   ncols=min(len(handles), 6), fontsize=8, frameon=False)
        save(fig, name)

    under = f"; models under {common}/" if common else ""
    dot_plot("max_penetration", 1000.0, "max penetration [mm] (log scale; 0 and below "
             "0.1 µm at the left)",
             f"Deepest penetration per model and method, {T:g} s simulated{under}\n(after "
             "every mj_step call / at every 10 ms sample of mjcenic; hollow: mj_step or 0)",
             "max_penetration.png", resolution=1e-4)
    dot_plot("real_time_rate", 1.0, "real-time rate [simulated s / wall s] (log scale)",
             f"Real-time rate per model and method, {T:g} s simulated, one core{under}\n"
             "(right of the line: faster than real time)", "real_time_rate.png",
             ref_line=(1.0, " real time"))
    return files


# ----------------------------------------------------------------------------- main

def _levels(text):
    """argparse type: LO,HI with 0 <= LO and LO + 3 <= HI <= 16 (the order test needs four
    levels: three checks, two observed orders)."""
    import argparse
    try:
        lo, hi = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two integers), got '{text}'")
    if not (0 <= lo and lo + 3 <= hi <= 16):
        raise argparse.ArgumentTypeError(f"expected 0 <= LO and LO + 3 <= HI <= 16 (four "
                                         f"levels at least), got '{text}'")
    return [lo, hi]


def _count(text):
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return v


def add_arguments(p):
    from ._cliutil import floats, nonneg, positive
    # nargs="*", checked in run(): `--ray PATH` would otherwise leave no PATH for argparse
    p.add_argument("paths", nargs="*", metavar="PATH", help="MJCF files or directories")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the JSON report here")
    p.add_argument("--markdown", metavar="OUT", help="write the Markdown table here")
    p.add_argument("--plots", metavar="DIR",
                   help="write PNG plots into this directory: wall_time_vs_error.png (one "
                        "panel per model) and max_penetration.png (log scale)")
    p.add_argument("--duration", type=nonneg, default=1.0, help="simulated time [s] (1.0)")
    p.add_argument("--accuracies", type=floats, default=[1e-1, 1e-2, 1e-3],
                   help="comma-separated mjcenic accuracies (1e-1,1e-2,1e-3)")
    p.add_argument("--reference-accuracy", type=positive, default=1e-4,
                   help="[m, rad] each simulator's reference counts as converged when its "
                        "check (the next coarser level's trajectory error against it) is at "
                        "most this and the levels converge (observed order >= 0.5) (1e-4)")
    p.add_argument("--reference-levels", type=_levels, default=[3, 10], metavar="LO,HI",
                   help="reference steps dt/2^k for k = LO..HI, refined until converged "
                        "(3,10)")
    p.add_argument("--reference-time-limit", type=positive, default=120.0,
                   help="wall time [s] per simulator's reference levels; a level predicted to "
                        "exceed it is not run and the reference counts as not converged (120)")
    p.add_argument("--time-limit", type=positive, default=600.0,
                   help="wall time [s] after which any other run is stopped (600)")
    p.add_argument("--reps", type=_count, default=3,
                   help="repetitions of every non-reference run, interleaved; the wall time "
                        "is their minimum (runs over 5 s are timed once) (3)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the models as Ray tasks (one CPU each), on the cluster at ADDRESS "
                        "(e.g. ray://host:10001 or auto) or, without one, on a local Ray; same "
                        "report as without --ray (wall times aside). Needs `pip install "
                        "'mjcenic[ray]'`; the workers read the model files by absolute path. A "
                        "model file or directory right after --ray is taken as a PATH")
    p.set_defaults(func=run)


_DESCRIPTION = ("Compare mj_step and mjcenic (cenic) on MJCF models: wall time, "
                "penetration, energy drift and trajectory error, each simulator against its "
                "own converged reference.")
_EPILOG = ("Directories are searched recursively; files that another XML includes are "
           "skipped; per folder the scene*.xml files are taken, or, if there are none, "
           "the *.xml files with a <mujoco> root. See `pydoc mjcenic.compare` for the exact "
           "measurement rules.")


def add_parser(sub):
    """`compare` as a subcommand of the `mjcenic` tree."""
    p = sub.add_parser("compare", allow_abbrev=False, help="mj_step against mjcenic on models",
                       description=_DESCRIPTION, epilog=_EPILOG)
    add_arguments(p)
    return p


def _parser():
    p = argparse.ArgumentParser(prog="mjcenic compare", allow_abbrev=False,
                                description=_DESCRIPTION, epilog=_EPILOG)
    add_arguments(p)
    return p


def _check_args(args):
    """None if the arguments are usable, else the error text (before any work). A model path
    that argparse gave to --ray (`--ray models/`) goes back to the paths (local Ray)."""
    if args.ray and (os.path.exists(args.ray) or args.ray.endswith(".xml")):
        args.paths = [args.ray] + list(args.paths)
        args.ray = ""
    if not args.paths:
        return "mjcenic compare: give at least one PATH (an MJCF file or a directory)"
    if args.ray is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            from .distributed import _RAY_MISSING
            return "mjcenic compare: --ray: " + _RAY_MISSING.removeprefix("mjcenic: ")
    return _check_outputs(args)


def _check_outputs(args):
    """None if every output can be written, else the error text (before any work)."""
    for path, flag in ((args.json_out, "--json"), (args.markdown, "--markdown")):
        if path and os.path.isdir(path):
            return f"mjcenic compare: {flag} {path} is a directory"
    if args.plots and os.path.exists(args.plots) and not os.path.isdir(args.plots):
        return f"mjcenic compare: --plots {args.plots} exists and is not a directory"
    if args.plots and importlib.util.find_spec("matplotlib") is None:
        return ("mjcenic compare: --plots needs matplotlib, which is not installed: "
                "pip install 'mjcenic[plots]'")
    return None


def _collect(paths):
    """[(path string, label, error or None)] in order, deduplicated.

    Labels: for a file given directly, its last two path components
    (kuka_iiwa_14/scene.xml); for a file found in a directory D, its path
    relative to D's parent (models/humanoid/humanoid.xml); made longer where
    two labels would clash."""
    out, seen = [], set()
    for raw in paths:
        p = pathlib.Path(raw)
        if p.is_dir():
            found = discover(p)
            if not found:
                print(f"mjcenic compare: no model files found in {raw}", file=sys.stderr)
            base = p.resolve().parent
            files = [(str(f), pathlib.Path(f).resolve().relative_to(base).as_posix(), None)
                     for f in found]
        else:
            err = None if p.exists() else f"no such file or directory: {raw}"
            files = [(str(p), "/".join(p.parts[-2:]), err)]
        for f, label, err in files:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append((f, label, err))
    labels = [c[1] for c in out]
    if len(set(labels)) != len(labels):
        longer = _labels([os.path.abspath(c[0]) for c in out])
        out = [(f, longer[i] if labels.count(label) > 1 else label, err)
               for i, (f, label, err) in enumerate(out)]
    return out


def _row(label, path, e, length_scale, refs, e0, m):
    """The report row of one run; its trajectory error is against its own family's
    reference (refs[e.family]), never the other simulator's."""
    r = e.run
    ref = refs.get(e.family)
    ref_run = ref["run"] if ref else None
    completed = r is not None and r.completed and r.error is None
    finite = r.finite if r is not None else False
    traj = end = None
    if completed and finite:
        if e.is_reference:
            traj = end = 0.0
        elif ref_run is not None:
            traj, end = work_precision.traj_error(m, r.q, ref_run.q)
    drift = None
    if completed and finite and e.e_final is not None and e0 is not None:
        drift = abs(e.e_final - e0)
    n = r.n if r is not None else 0
    sim_time = float(e.times[n - 1]) if n else 0.0
    check = ref["check"] if ref else None
    row = {
        "model": label, "path": path, "method": e.method, "family": e.family,
        "timestep": e.timestep, "accuracy": e.accuracy, "is_reference": e.is_reference,
        "load_ok": True, "error": e.error, "sim_time": sim_time,
        "wall_time": e.wall if e.wall is not None else (r.wall if r is not None else None),
        "setup_time": r.setup if r is not None else 0.0,
        "real_time_rate": None, "reps": e.reps,
        "steps": r.steps if r is not None else 0,
        "rejected_steps": r.rejected if r is not None else 0,
        "max_penetration": e.max_pen,
        "stepper_max_penetration": (float(r.stats["max_penetration"])
                                    if r is not None and r.stats else None),
        "energy_drift": drift, "trajectory_error": traj, "end_error": end,
        "length_scale": length_scale,
        "reference_method": ref["method"] if ref else None,
        "reference_check": check,
        "reference_converged": ref["converged"] if ref else None,
        "error_resolved": (None if traj is None or check is None or e.is_reference
                           else bool(traj >= 2.0 * check)),
        "warnings": list(r.warnings) if r is not None else [], "finite": finite,
    }
    if row["wall_time"] and row["wall_time"] > 0 and math.isfinite(row["wall_time"]):
        row["real_time_rate"] = sim_time / row["wall_time"]
    for k in ("max_penetration", "energy_drift", "trajectory_error", "end_error",
              "real_time_rate", "wall_time"):
        v = row[k]
        if v is not None and not math.isfinite(v):
            row[k] = None
            if k != "wall_time":
                row["finite"] = False
    return row


def _error_row(label, path, error):
    row = {k: None for k in ROW_FIELDS}
    row.update(model=label, path=path, load_ok=False, error=error, is_reference=False,
               warnings=[], finite=False)
    return row


def _compare_model(item, model=None, ticker=None, finished=None):
    """Every run of one model: each simulator's own reference (work_precision.reference:
    mj_step at dt/2^k, mjcenic fixed mode at dt/2^k, k refined until converged), mj_step at
    the model's timestep and at 1 ms, mjcenic at each accuracy; the non-reference runs are
    timed `reps` times, interleaved (min). item = (label, path, settings) with settings
    {times, accuracies, reference_accuracy, reference_levels, reference_time_limit,
    time_limit, reps}; the model is loaded from `path` unless given (a Ray task of
    `compare --ray` loads it on its worker). Returns (rows, model metadata); each row
    carries "_ran" (completed without error), which run() removes. ticker(label)(fraction)
    and finished(label) report progress (local path only)."""
    import mujoco

    import mjcenic
    label, path, s = item
    times = s["times"]
    if ticker is None:
        def ticker(_label):
            return lambda _frac: None
    if finished is None:
        def finished(_label):
            pass
    m = model
    if m is None:
        try:
            m = mjcenic.load_model(path)
        except Exception as e:  # noqa: BLE001 - a worker that cannot read the file
            err = str(e).strip() or type(e).__name__
            row = _error_row(label, path, err)
            row["_ran"] = False
            return [row], {"model": label, "path": path, "load_ok": False, "error": err,
                           "references": None}
    probe = _Probe(m)

    def make_data():
        d = mujoco.MjData(m)
        _reset(m, d)
        return d
    e0 = probe.energy(make_data())
    if not math.isfinite(e0):
        e0 = None
    try:
        length_scale = float(mjcenic.Stepper(m, mode="cenic").length_scale)
    except Exception:  # noqa: BLE001 - the mjcenic rows will carry the error
        length_scale = None
    dt0 = float(m.opt.timestep)
    meta = {"model": label, "path": path, "load_ok": True, "error": None,
            "nq": int(m.nq), "nv": int(m.nv), "nu": int(m.nu), "timestep": dt0,
            "initial_state": _initial_state_name(m), "length_scale": length_scale,
            "initial_energy": e0, "references": {}}

    # Each simulator's own reference, with its convergence check.
    refs, entries = {}, []
    for sim in ("mj_step", "mjcenic"):
        tick = ticker(f"{label}: {sim} reference")
        ref = work_precision.reference(
            m, work_precision.runner(sim, m, times, make_data, tick=tick), dt0,
            levels=tuple(s["reference_levels"]), tol=s["reference_accuracy"],
            time_limit=s["reference_time_limit"])
        ref["method"] = None
        if ref["run"] is not None:
            ent = _reference_entry(probe, sim, ref, make_data)
            ref["method"] = ent.method
            if ref["run"].ok:
                ent.e_final = probe.energy(ref["run"].data)
            entries.append(ent)
        refs[sim] = ref
        info = work_precision.summary(ref)
        info.pop("wall", None)   # timing: in the reference row, not in the metadata
        meta["references"][sim] = info
        finished(f"{label}: {sim} reference")

    dts = [dt0]
    if abs(MJSTEP_FINE_DT - dt0) > 1e-12:
        dts.append(MJSTEP_FINE_DT)
    else:
        meta["note"] = "the model's timestep is 1 ms: mj_step dt=0.001 run once"
        finished(f"{label}: mj_step")
    timed = []
    for dt in dts:
        ent, fn = _mjstep_entry(m, probe, dt, times, make_data, s, ticker(f"{label}: mj_step "
                                                                          f"dt={dt:g}"))
        timed.append((ent, fn))
    for acc in s["accuracies"]:
        ent, fn = _mjcenic_entry(m, probe, acc, times, make_data, s,
                                 ticker(f"{label}: mjcenic acc={acc:g}"))
        timed.append((ent, fn))
    by_id = {}
    jobs = []
    for ent, fn in timed:
        job = {"series": ent.method, "fn": fn}
        by_id[id(job)] = ent
        jobs.append(job)

    def first(job, run, _info):
        ent = by_id[id(job)]
        ent.run = run
        ent.error = run.error
        if run.ok:
            ent.e_final = probe.energy(run.data)
        finished(f"{label}: {ent.method}")

    work_precision.time_interleaved(jobs, max(1, int(s["reps"])), first=first)
    for job in jobs:
        ent = by_id[id(job)]
        if job["reps"]:
            ent.wall, ent.reps = job["wall"], job["reps"]
        elif ent.run is not None:
            ent.wall, ent.reps = ent.run.wall, 1
        if ent.error is None and "error_text" in job:
            ent.error = job["error_text"]
        entries.append(ent)

    order = {"mj_step": 0, "mjcenic": 1}
    entries.sort(key=lambda e: (e.is_reference, order[e.family], -(e.timestep or 0),
                                -(e.accuracy or 0)))
    rows = []
    for ent in entries:
        ent.times = times
        row = _row(label, path, ent, length_scale, refs, e0, m)
        row["_ran"] = ent.error is None and ent.run is not None and ent.run.completed
        rows.append(row)
    return rows, meta


def main(argv=None) -> int:
    return run(_parser().parse_args(sys.argv[1:] if argv is None else list(argv)))


def run(args) -> int:
    err = _check_args(args)
    if err:
        print(err, file=sys.stderr)
        return 2
    import mujoco
    import numpy as np  # noqa: F401 - fail early if missing

    import mjcenic

    T = args.duration
    n = int(math.floor(T / SAMPLE_INTERVAL + 1e-9))
    times = [k * SAMPLE_INTERVAL for k in range(n + 1)]
    if T - times[-1] > 1e-9:
        times.append(T)

    if args.ray is not None:
        # Connect (or start the local Ray) before any work, so that a bad address fails first.
        from . import distributed
        try:
            distributed.init(args.ray or None)
        except Exception as e:  # noqa: BLE001 - Ray's ConnectionError, bad address format
            msg = " ".join(str(e).split()) or type(e).__name__
            print(f"mjcenic compare: --ray: could not reach Ray at {args.ray or 'a new local Ray'}: "
                  f"{msg}", file=sys.stderr)
            return 2

    candidates = _collect(args.paths)

    # Load everything first, so that the progress bar knows the amount of work.
    loaded = []
    for path, label, err in candidates:
        model = None
        if err is None:
            try:
                model = mjcenic.load_model(path)
            except Exception as e:  # noqa: BLE001 - MuJoCo's / mjcenic's message
                err = str(e).strip() or type(e).__name__
        loaded.append((label, path, model, err))

    runs_per_model = 2 + 2 + len(args.accuracies)
    settings = {"times": times, "accuracies": list(args.accuracies),
                "reference_accuracy": args.reference_accuracy,
                "reference_levels": list(args.reference_levels),
                "reference_time_limit": args.reference_time_limit,
                "time_limit": args.time_limit, "reps": args.reps}
    rows, models_meta = [], []
    any_ran = False

    todo = []   # the models that loaded, in order; failed loads get their row here
    slots = []  # index in `rows` order: ("error", label, path, err) or ("model", i)
    for label, path, m, err in loaded:
        if m is None:
            slots.append(("error", label, path, err))
        else:
            slots.append(("model", len(todo)))
            todo.append((label, path, m))

    if args.ray is not None:
        from . import distributed
        prog = _Progress(len(todo), unit="model")
        items = [(label, os.path.abspath(path), settings) for label, path, _ in todo]
        try:
            outs = distributed.map_tasks(
                _compare_model, items, address=args.ray or None,
                progress=lambda k, total: prog.update(k, f"{k}/{total} models done",
                                                      final_of_run=True))
        finally:
            prog.finish()
        # The row's path is the one given on the command line, as in the local path.
        outs = [([dict(r, path=path) for r in model_rows], dict(meta, path=path))
                for (_, path, _), (model_rows, meta) in zip(todo, outs)]
    else:
        prog = _Progress(runs_per_model * len(todo))
        done = [0]

        def ticker(label):
            return lambda frac: prog.update(done[0] + frac, label)

        def finished(label):
            done[0] += 1
            prog.update(done[0], label + " done", final_of_run=True)

        outs = [_compare_model((label, path, settings), model=m, ticker=ticker,
                               finished=finished) for label, path, m in todo]
        prog.finish()

    for slot in slots:
        if slot[0] == "error":
            _, label, path, err = slot
            rows.append(_error_row(label, path, err))
            models_meta.append({"model": label, "path": path, "load_ok": False, "error": err,
                                "references": None})
            continue
        model_rows, meta = outs[slot[1]]
        for r in model_rows:
            ran = r.pop("_ran")  # always removed (not short-circuited)
            any_ran = any_ran or ran
            rows.append(r)
        models_meta.append(meta)
    prog.finish()

    report = {
        "metadata": {
            "tool": "mjcenic compare",
            "mujoco_version": mujoco.__version__,
            "mjcenic_built_for_mujoco": mjcenic.BUILT_FOR_MUJOCO,
            "duration": T, "sample_interval": SAMPLE_INTERVAL,
            "sample_times": len(times),
            "accuracies": list(args.accuracies),
            "reference_accuracy": args.reference_accuracy,
            "reference_levels": list(args.reference_levels),
            "reps": args.reps,
            "method": "each simulator against its own reference (mjcenic.work_precision): "
                      "mj_step at dt/2^k, mjcenic in fixed mode at dt/2^k",
            "reference_methods": {mi["model"]: ({sim: ref.get("method") for sim, ref
                                                 in mi["references"].items()}
                                                if mi.get("references") else None)
                                  for mi in models_meta},
            "models": models_meta,
            "units": {"wall_time": "s", "setup_time": "s", "sim_time": "s",
                      "real_time_rate": "simulated s per wall s", "max_penetration": "m",
                      "stepper_max_penetration": "m", "energy_drift": "J",
                      "trajectory_error": "m and rad (infinity norm of mj_differentiatePos)",
                      "end_error": "m and rad", "reference_check": "m and rad",
                      "length_scale": "m", "timestep": "s"},
            "fields": ROW_FIELDS,
        },
        "rows": rows,
    }
    report = _clean(report)
    for mi in models_meta:  # loudly: a reference that did not converge
        for sim, ref in (mi.get("references") or {}).items():
            if not ref["converged"]:
                print(f"mjcenic compare: WARNING: {mi['model']}: the {sim} reference did not "
                      f"converge ({ref['note']}); its family's trajectory errors are not "
                      f"trustworthy", file=sys.stderr)
    text = markdown(report)
    if args.json_out:
        pathlib.Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1, allow_nan=False)
    if args.markdown:
        pathlib.Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.markdown).write_text(text)
    if args.plots:
        plots(report, args.plots)
    print(text)
    if not any_ran:
        print("mjcenic compare: no model ran", file=sys.stderr)
    return 0 if any_ran else 1


if __name__ == "__main__":
    raise SystemExit(main())
