#!/usr/bin/env python3
"""Mutation check of the test suite (docs/development.md).

Each mutation below is a small deliberate bug in mjcenic/ or plugin/ (a sign
flip, a dropped term, an off-by-one index, a skipped check, a changed
constant). The script copies the tracked sources into a scratch directory
(never touching the checkout), builds it once, then for every mutation:
applies it to the scratch copy, rebuilds incrementally (ccache makes the
restore of a file free), and runs the tests aimed at it first (for a mutation
in mjcenic/icf/ also the hand-built unit problems of mjcenic_icf_tests) and
then the fast C++ subset (and, for mutations marked so, the Python suites), each stopping at
the first failure. A mutation is *killed* when a test fails, the build of the
tests fails, or a test run times out; it *survives* otherwise. Mutations known
not to change behaviour are marked equivalent (with the reason, repeated in
docs/development.md) and left out of the kill rate.

    python3 scripts/mutants.py [--json build/mutants.json] [--only ID,...] [--check]

`make mutants` runs it (not part of `make test`: each mutation rebuilds, and one
that the tests aimed at it let through runs the whole fast suite; most take 10 s).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Mutant:
    id: str
    file: str
    old: str
    new: str
    what: str
    focus: str = ""  # gtest filter run first (the tests aimed at it)
    python: list[str] = field(default_factory=list)  # pytest files aimed at it (run after focus)
    equivalent: str = ""  # reason it cannot change behaviour


A = "mjcenic/adapter/mujoco_adapter.cc"
CP = "mjcenic/adapter/contact_parameters.cc"
ST = "mjcenic/integrator/stepper.cc"
SC = "mjcenic/integrator/step_size_controller.cc"
EN = "mjcenic/integrator/error_norm.cc"
PO = "mjcenic/icf/pools.cc"
IM = "mjcenic/icf/icf_model.cc"
HE = "mjcenic/icf/linear/internal.h"  # AccumulateHessian
HS = "mjcenic/icf/linear/sparse.cc"
MS = "mjcenic/adapter/mujoco_stages.cc"
MST = "mjcenic/adapter/mujoco_state.cc"
SS = "mjcenic/integrator/stepper_schemes.cc"
WS = "mjcenic/integrator/warm_start.cc"
CA = "plugin/c_api.cc"
SO = "mjcenic/icf/icf_solver.cc"
OP = "mjcenic/integrator/options.cc"
SOUT = "mjcenic/integrator/stepper_outputs.cc"
CF = "mjcenic/adapter/constraint_forces.cc"
LIN = "mjcenic/icf/linear/"
PY = "python/mjcenic/"
# Python test files aimed at mutations below.
T_STIFF = "tests/python/test_joint_stiffness_solvers.py"
T_DENSE = "tests/python/test_dense_output.py"

MUTANTS = [
    # --- the survivors and single catches of the issue ---
    Mutant("joint-damping-ignored", A, "damping_[i] = m->dof_damping[i];", "damping_[i] = 0;",
           "joint damping ignored", "SlidesBuild.*:BoxBuild.*:Promises.*"),
    Mutant("joint-stiffness-ignored", A, "stiffness_[m->jnt_dofadr[j]] = m->jnt_stiffness[j];",
           "stiffness_[m->jnt_dofadr[j]] = 0;", "joint stiffness ignored",
           "SlidesBuild.*:BoxBuild.*:Promises.*"),
    Mutant("actuator-damping-no-gear", A, "m->actuator_damping[a] * g * g;",
           "m->actuator_damping[a] * g;", "actuator damping without gear²", "Promises.*"),
    Mutant("xfrc-ignored", A, "if (x[0] || x[1] || x[2] || x[3] || x[4] || x[5])",
           "if (false)", "xfrc_applied ignored", "Promises.*"),
    Mutant("xfrc-torque-dropped", A, "mj_applyFT(m, d, x, x + 3,",
           "mj_applyFT(m, d, x, x + 6,", "xfrc_applied torque read from the next body",
           "Promises.*"),
    Mutant("nonfinite-act", MST, '{"act", d->act, m->na},', "",
           "non-finite act not checked", "Promises.*"),
    Mutant("nonfinite-qfrc", MST, '{"qfrc_applied", d->qfrc_applied, m->nv},', "",
           "non-finite qfrc_applied not checked", "Promises.*"),
    Mutant("nonfinite-xfrc", MST, '{"xfrc_applied", d->xfrc_applied, 6 * m->nbody},', "",
           "non-finite xfrc_applied not checked", "Promises.*"),
    Mutant("nonfinite-mocap", MST, '{"mocap_pos", d->mocap_pos, 3 * m->nmocap},', "",
           "non-finite mocap_pos not checked", "Promises.*"),
    Mutant("nonfinite-mocap-quat", MST, '{"mocap_quat", d->mocap_quat, 4 * m->nmocap}};', "};",
           "non-finite mocap_quat not checked", "Promises.*"),
    Mutant("stiffness-cap-removed", CP, "if (omega_max > 0 && k_per_mass > omega_max * omega_max) {",
           "if (false) {", "contact-stiffness cap removed", "Promises.*"),
    Mutant("max-penetration-halved", MS, "p = std::max(p, -d->contact[i].dist);",
           "p = std::max(p, -0.5 * d->contact[i].dist);", "max_penetration statistic halved",
           "Promises.*"),
    Mutant("max-penetration-build-halved", A,
           "info->max_penetration = std::max(info->max_penetration, -con.dist);",
           "info->max_penetration = std::max(info->max_penetration, -0.5 * con.dist);",
           "build-side max_penetration halved", "BoxBuild.*:Promises.*"),
    Mutant("torque-contact-off-by-one", PO, "fn0[c] = contacts.fn0[contact[c]];",
           "fn0[c] = contacts.fn0[(contact[c] + 1) % contacts.size()];",
           "torque pool reads the next contact's normal force", "Promises.*:ContactTorque.*"),
    Mutant("pyramidal-factor-off", A, "if (contact_.pyramidal_factor && m->opt.cone == mjCONE_PYRAMIDAL",
           "if (false && m->opt.cone == mjCONE_PYRAMIDAL", "pyramidal-cone stiffness factor off",
           "Promises.*"),
    Mutant("pyramidal-factor-no-mu2", A, "/ (mu * mu * (1 + mu * mu)));", "/ (1 + mu * mu));",
           "pyramidal factor without 1/μ²", "Promises.*"),
    Mutant("passive-forces-dropped", A,
           "model->f[i] = d->qfrc_passive[i] - d->qfrc_bias[i] + (feedback ? 0.0 : d->qfrc_applied[i]);",
           "model->f[i] = -d->qfrc_bias[i] + (feedback ? 0.0 : d->qfrc_applied[i]);",
           "qfrc_passive (gravcomp, fluid, mjcb_passive, tendon springs) dropped",
           "SlidesBuild.*:MjstepAgreement.*:Promises.*"),
    Mutant("qfrc-applied-dropped", A, "(feedback ? 0.0 : d->qfrc_applied[i]);", "0.0;",
           "qfrc_applied ignored", "ContactTorque.*:Promises.*"),
    Mutant("version-check-skipped", ST, "if (library_version == mjVERSION_HEADER) return absl::OkStatus();",
           "return absl::OkStatus();", "a different libmujoco accepted", "Errors.*"),
    # --- contact mapping ---
    Mutant("refsafe-ignored", CP, "const double tau = refsafe ? std::max(solref[0], 2 * timestep) : solref[0];",
           "const double tau = solref[0];", "refsafe ignored", "Promises.*"),
    Mutant("margin-ignored", A, "const double phi = con.dist - con.includemargin;",
           "const double phi = con.dist;", "contact margin ignored", "Speculative*:Promises.*"),
    Mutant("effective-mass-one-side", A,
           "const double inv_mc = m->body_invweight0[2 * b1] + m->body_invweight0[2 * b2];",
           "const double inv_mc = m->body_invweight0[2 * b2];", "effective mass from one body",
           "Promises.*:Physics*"),
    Mutant("stiffening-off", A, "if (contact_.stiffening && con.dist - con.includemargin < 0) {",
           "if (false) {", "contact stiffening never applied"),
    Mutant("dissipation-sign", CP, "out.d = tau_d / out.x_nom;", "out.d = -tau_d / out.x_nom;",
           "Hunt–Crossley dissipation sign flipped"),
    Mutant("impedance-width", CP, "const double x = std::abs(violation) / width;",
           "const double x = std::abs(violation) / (2 * width);", "solimp width doubled"),
    Mutant("mu-static-ignored", A, "mu_s = std::max(mu_s, mu);", "mu_s = mu;",
           "static friction μ_s replaced by μ_d", "SlidesBuild.*:BoxBuild.*"),
    Mutant("torsion-ignored", A, "const double mu_spin = con.dim >= 4 ? con.friction[2] : 0.0;",
           "const double mu_spin = 0.0;", "torsional friction ignored", "ContactTorque.*"),
    Mutant("frame-rows-transpose", A,
           "      J[r * n + q] =\n          frame[3 * r] * diff[0] + frame[3 * r + 1] * diff[1]",
           "      J[r * n + q] =\n          frame[r] * diff[0] + frame[3 + r] * diff[1]",
           "contact frame transposed", "ContactMapping.RowsAreTheFrameTimesTheRelativePointJacobian"),
    # --- limits, equalities, gains, tendons ---
    Mutant("joint-limit-upper-sign", A, "c = model->limits.PutSingle(limit_rows_++, dof, -1.0,",
           "c = model->limits.PutSingle(limit_rows_++, dof, 1.0,",
           "upper joint limit pushes the wrong way",
           "SlidesBuild.*:BoxBuild.*:Promises.*"),
    Mutant("joint-limit-margin", A, "dof, 1.0, q - m->jnt_range[2 * j] - margin,",
           "dof, 1.0, q - m->jnt_range[2 * j],",
           "lower joint-limit margin ignored", "SlidesBuild.*:BoxBuild.*:Promises.*"),
    Mutant("tendon-limit-skipped", A, "if (!m->tendon_limited[t]) continue;", "continue;",
           "tendon limits skipped"),
    Mutant("tendon-limit-side-sign", A, "J[k] = (side == 0 ? 1 : -1) * d->ten_J[adr + k];",
           "J[k] = d->ten_J[adr + k];", "upper tendon limit pushes the wrong way", "Promises.*"),
    Mutant("ball-limit-skipped", A, "type != mjCNSTR_FRICTION_TENDON && !ball_limit)",
           "type != mjCNSTR_FRICTION_TENDON)", "ball-joint limits dropped"),
    Mutant("equality-skipped", A, "if (type != mjCNSTR_EQUALITY && type != mjCNSTR_FRICTION_DOF &&",
           "if (type == mjCNSTR_EQUALITY || type != mjCNSTR_FRICTION_DOF &&",
           "equality rows dropped", "SlidesBuild.*:BoxBuild.*"),
    Mutant("tendon-spring-sign", A, "const double f_lin = -k * x - b * d->ten_velocity[t];",
           "const double f_lin = k * x - b * d->ten_velocity[t];", "tendon spring sign"),
    Mutant("ctrl-not-clamped", A, "if (clampctrl && m->actuator_ctrllimited[a])",
           "if (false)", "ctrlrange not clamped"),
    Mutant("actuator-bias-dropped", A, "const double c = (g[0] + g1 * L0) * input + b0 + b1 * L0;",
           "const double c = (g[0] + g1 * L0) * input + b0;", "actuator length bias dropped"),
    Mutant("actuator-kv-dropped", A, "const double kq = -(g1 * input + b1), kv = -(g2 * input + b2);",
           "const double kq = -(g1 * input + b1), kv = 0;", "velocity feedback dropped"),
    Mutant("frictionloss-zero", A, "c = model->dry_friction.Put(friction_rows_++, dofs_, d->efc_frictionloss[row],",
           "c = model->dry_friction.Put(friction_rows_++, dofs_, 0.0,", "friction loss ignored"),
    # --- ICF model and solver ---
    Mutant("hessian-no-stiffness", HE, "sink(i, i, m.h * m.D[i] + m.h * m.h * m.K[i]);",
           "sink(i, i, m.h * m.D[i]);", "stiffness missing from the Hessian", "Promises.*"),
    Mutant("ldl-solve-diagonal", HS, "for (int j = 0; j < n_; ++j) y_[j] /= lx[lp[j]];",
           "for (int j = 0; j < n_; ++j) y_[j] *= lx[lp[j]];", "sparse solve multiplies by D",
           "LinearSolver.*"),
    Mutant("permuted-upper-transposed", HS, "entries.push_back({std::max(a, b), std::min(a, b), k});",
           "entries.push_back({std::min(a, b), std::max(a, b), k});",
           "sparse factor fed the lower instead of the upper triangle", "LinearSolver.*"),
    Mutant("momentum-no-damping", IM, "r[i] += h * D[i] * v0[i] + h * f[i];",
           "r[i] += h * f[i];", "damping term dropped from r", "Promises.*"),
    Mutant("hunt-crossley-sign", PO, "fn0[c] = Pos(fe0[c]) * Pos(1.0 - d[c] * vc[0]);",
           "fn0[c] = Pos(fe0[c]) * Pos(1.0 + d[c] * vc[0]);", "lagged normal force sign"),
    Mutant("near-rigid-bias", PO, "return -g0 / T;", "return g0 / T;",
           "near-rigid bias sign"),
    Mutant("friction-blend", PO, "return mu_d + (mu_s - mu_d) * w;", "return mu_d;",
           "static friction blending dropped"),
    Mutant("unilateral-open", "mjcenic/icf/pools.h", "if (kUnilateral && x <= 0) {", "if (kUnilateral && x < -1) {",
           "unilateral constraint pulls"),
    # --- stepper ---
    Mutant("failed-solve-is-fatal", SC, "dec.underflow = dec.h_next < h_min_;",
           "dec.underflow = true;", "failed solve ends the call instead of a retry at h/2",
           "Promises.*"),
    Mutant("rejected-no-restore", SS,
           "  adapter::LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());\n  if (!ok) return false;\n  Integrate(s.q_mid",
           "  if (!ok) return false;\n  Integrate(s.q_mid",
           "step doubling leaves d at the midpoint state"),
    Mutant("doubling-midpoint-h", SS, "            0.5 * h, s.q_mid.data(), s.act_mid.data());",
           "            h, s.q_mid.data(), s.act_mid.data());", "midpoint integrated over h"),
    Mutant("trapezoid-weight", SS, "s.impulse[i] = s.M_dv[i] + 0.5 * h * s.force_start[i];",
           "s.impulse[i] = s.M_dv[i] + h * s.force_start[i];", "trapezoid weight 1 instead of 1/2"),
    Mutant("extrapolate-sign", SS, "s.v_end[i] = 2 * s.v_end[i] - s.v_full[i];",
           "s.v_end[i] = 2 * s.v_full[i] - s.v_end[i];", "Richardson extrapolation reversed"),
    Mutant("extrapolate-ungated", SS, "  if (options_.extrapolate && CorrectionIsSmall()) Extrapolate();",
           "  if (options_.extrapolate) Extrapolate();",
           "every doubling step extrapolated, through impacts too", "CenicExtrapolation.*"),
    Mutant("act-filterexact", MST, "x += act_dot[j] * tau * (1 - std::exp(-h / tau));",
           "x += h * act_dot[j];", "filterexact integrated as Euler"),
    Mutant("act-limit-ignored", MST,
           "      if (m->actuator_actlimited[a])\n        x = std::clamp(x, m->actuator_actrange[2 * a], m->actuator_actrange[2 * a + 1]);\n      out[j] = x;",
           "      out[j] = x;", "actrange not enforced", "Promises.*"),
    Mutant("time-not-exact", ST, "FinishInternalStep(d, h, h == t_limit - t0 ? t_limit : t0 + h);",
           "FinishInternalStep(d, h, t0 + h);", "end time not snapped to the target", "Promises.*"),
    Mutant("step-count-check", SC, "if (!((t - t_start) > h_max * static_cast<double>(cap))) return absl::OkStatus();",
           "return absl::OkStatus();", "step-count refusal skipped", "StepSizeController.*"),
    Mutant("controller-order", SC, ": c.safety * h * std::pow(accuracy / e, 1.0 / c.order);",
           ": c.safety * h * std::pow(accuracy / e, 2.0 / c.order);", "step-size exponent doubled",
           "StepSizeController.*"),
    Mutant("controller-accept", SC, "const bool accept = hn >= h;", "const bool accept = true;",
           "every step accepted", "StepSizeController.*"),
    Mutant("norm-length-scale", MST, "(*weight)[i] = rotational[i] ? 1.0 : 1.0 / *L;",
           "(*weight)[i] = 1.0;", "translations not scaled by L", "ErrorNorm.*"),
    # --- step-size controller and error norm: their own unit tests ---
    Mutant("skip-budget-unchecked", SC,
           "if (!(e <= tol / kSkipMargin && skip_budget_ + e / tol <= 1)) return false;",
           "if (!(e <= tol / kSkipMargin)) return false;",
           "skipped estimates not bounded by their summed prediction",
           "StepSizeController.*:ErrorEstimate.*"),
    Mutant("ssc-growth-uncapped", SC, "hn = std::clamp(hn, c.min_shrink * h, c.max_growth * h);",
           "hn = std::max(hn, c.min_shrink * h);", "growth not capped at max_growth",
           "StepSizeController.*:AdjustStepSize.*"),
    Mutant("ssc-shrink-factor", SC, "if (hn < h) hn = (e <= accuracy) ? h : std::min(hn, c.shrink_factor * h);",
           "if (hn < h) hn = (e <= accuracy) ? h : std::min(hn, h);",
           "a rejected step not held below shrink_factor·h", "StepSizeController.*:AdjustStepSize.*"),
    Mutant("ssc-landing", SC, "if (remaining < 1.001 * h && remaining >= 0.95 * h) return remaining;",
           "if (remaining < 1.001 * h && remaining >= 0.95 * h) return h;",
           "a step close to the target does not land on it", "StepSizeController.*"),
    Mutant("ssc-failed-solve-half", SC, "    dec.h_next = 0.5 * h;", "    dec.h_next = 0.9 * h;",
           "a failed solve retries with 0.9 h, not h/2", "StepSizeController.*"),
    Mutant("ssc-underflow-silent", SC, "    out.underflow = true;", "    out.underflow = false;",
           "step-size underflow not reported", "StepSizeController.*:AdjustStepSize.*"),
    Mutant("ssc-depth-safety", SC, "if (ratio > 0) h_depth_ = kDepthSafety * h / ratio;",
           "if (ratio > 0) h_depth_ = h / ratio;", "depth-growth limit without its safety factor",
           "StepSizeController.*"),
    Mutant("ssc-progress-off-by-one", SC, "if (solver_limited_steps_ >= kMaxSolverLimitedSteps) {",
           "if (solver_limited_steps_ > kMaxSolverLimitedSteps) {",
           "progress guarantee one step late", "StepSizeController.*"),
    Mutant("ssc-growth-after-rejection", SC,
           "if (hn < c.grow_threshold * h || after_rejection) hn = h;",
           "if (hn < c.grow_threshold * h) hn = h;",
           "a step accepted after a rejection grows h", "StepSizeController.*:AdjustStepSize.*"),
    Mutant("ssc-unit-step-order", SC, "if (!jump_) c.order = std::max(1.0, c.order - 1);", "",
           "error per unit step sized with the per-step order", "StepSizeController.*"),
    Mutant("norm-act-range", MST, "const double w = range > 0 && std::isfinite(range) ? 1.0 / range : 1.0;",
           "const double w = 1.0;", "activations not divided by their range", "ErrorNorm.*"),
    Mutant("norm-full-state-L", EN, "x = std::max(x, std::abs(dv_[i]) / L_);",
           "x = std::max(x, std::abs(dv_[i]));", "full_state velocities not divided by L",
           "ErrorNorm.*"),
    Mutant("norm-tangent-off", EN,
           "if (tangent_model_ != nullptr) projection_.Apply(*tangent_model_, tangent_v_, dv);",
           "", "velocity differences not projected onto the rows' tangent space",
           "ErrorNorm.*:FourBarConvergence.GlobalAccuracy*"),
    Mutant("qacc-sign", MS, "d->qacc[i] = H > 0 ? (d->qvel[i] - v_start[i]) / H : 0;",
           "d->qacc[i] = H > 0 ? (v_start[i] - d->qvel[i]) / H : 0;", "post-step qacc sign"),
    Mutant("mjcb-control-skipped", MS, "if (mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION)) "
           "RunEscapable(mjcb_control, m_, d);",
           "", "mjcb_control never called"),
    # --- the second independent list's survivors and single-indirect kills ---
    Mutant("island-newton-eta", SO, "      isl_.eta[i] = theta / (1 - theta);",
           "      isl_.eta[i] = theta / (1 + theta);",
           "per-island Newton stopping test with η = θ/(1+θ): stops early",
           "IslandsStoppingRule.*:Islands*:IcfSolver*"),
    Mutant("options-mu-static-ratio", OP, "if (!(o.contact.mu_static_ratio >= 1))",
           "if (!(o.contact.mu_static_ratio >= 0))", "mu_static_ratio < 1 accepted",
           "OptionsValidation.*"),
    Mutant("options-kappa-upper", OP, "if (!(o.kappa <= 1)) return bad(",
           "if (!(o.kappa <= 2)) return bad(", "kappa up to 2 accepted", "OptionsValidation.*"),
    Mutant("options-control-order", OP, "o.control.min_shrink > 0 && o.control.min_shrink < 1 && o.control.order > 0))",
           "o.control.min_shrink > 0 && o.control.min_shrink < 1))",
           "step-size control order <= 0 accepted", "OptionsValidation.*"),
    Mutant("rollout-config-ignored", "python/bindings.cc",
           "      Check(mjcenic::plugin::OptionsFromModel(m, o.get()));\n", "",
           "mjcenic.rollout ignores the model's plugin <config>",
           python=["tests/python/test_rollout_config.py"]),
    Mutant("abi-major-only", PY + "_mujoco_check.py",
           "    if mujoco_module.__version__ == built_for:",
           "    if mujoco_module.__version__.split(\".\")[0] == built_for.split(\".\")[0]:",
           "MuJoCo ABI check compares the major version only",
           python=["tests/python/test_mujoco_abi_check.py"]),
    Mutant("islands-no-stiffness", LIN + "islands.cc",
           "add(i, i, model.h * model.D[i] + model.h * model.h * model.K[i]);",
           "add(i, i, model.h * model.D[i]);", "joint stiffness missing from the islands solver's Hessian",
           python=[T_STIFF]),
    Mutant("anchor-retry-advances", "mjcenic/adapter/stiction_anchors.cc",
           "advance = advance && d->time > last_time_;", "advance = advance && d->time >= last_time_;",
           "a retried step's rebuild advances the anchors again (bias doubles)",
           "StictionAnchorRetry.*"),
    Mutant("friction-reg-one-body", A, "(inv_mass_[b1] + inv_mass_[b2]);", "(inv_mass_[b2]);",
           "friction regularization R_t from one body's mass", "FrictionRegularization.*"),
    Mutant("pyramidal-share-condim3", CF,
           "const double share = dim == 3 ? slack * 0.5 : slack / (dim - 1);",
           "const double share = slack * 0.5;",
           "condim 4/6 pyramidal write-back shares the slack as for condim 3",
           python=["tests/python/test_contact_writeback.py"]),
    Mutant("dense-qvel-end", SOUT, "s.v_mid[i] = s.v_a[i] + sigma * (s.v_b[i] - s.v_a[i]);",
           "s.v_mid[i] = s.v_b[i];", "dense output writes the step's end velocity", "DenseOutput.*",
           python=[T_DENSE]),
    Mutant("dense-act-sigma", SOUT, "s.act_mid[i] = -sigma * s.act_euler[i];",
           "s.act_mid[i] = -s.act_euler[i];", "dense output activations without the σ weight",
           "DenseOutput.*", python=[T_DENSE]),
    # --- one per source file with logic that had none ---
    Mutant("block-no-stiffness", LIN + "block.cc",
           "Lc[(i - s0) * w + (i - s0)] += m.h * m.D[i] + m.h * m.h * m.K[i];",
           "Lc[(i - s0) * w + (i - s0)] += m.h * m.D[i];",
           "joint stiffness missing from the block solver's Hessian", python=[T_STIFF]),
    Mutant("lowrank-no-stiffness", LIN + "lowrank.cc",
           "AddTo(&A_, i, i, m.h * m.D[i] + m.h * m.h * m.K[i]);", "AddTo(&A_, i, i, m.h * m.D[i]);",
           "joint stiffness missing from the low-rank solver's Hessian", python=[T_STIFF]),
    Mutant("pcg-no-stiffness", LIN + "pcg.cc",
           "+= model.h * model.D[i] + model.h * model.h * model.K[i];", "+= model.h * model.D[i];",
           "joint stiffness missing from PCG's block preconditioner", python=[T_STIFF]),
    Mutant("tree-no-stiffness", LIN + "tree.cc",
           "H_[rowadr_[i] + rownnz_[i] - 1] += m.h * m.D[i] + m.h * m.h * m.K[i];",
           "H_[rowadr_[i] + rownnz_[i] - 1] += m.h * m.D[i];",
           "joint stiffness missing from the tree solver's Hessian", python=[T_STIFF]),
    Mutant("dense-solve-unreversed", LIN + "dense.cc",
           "std::reverse_copy(y_.begin(), y_.end(), x);", "std::copy(y_.begin(), y_.end(), x);",
           "dense solve returns the reversed-order solution", python=[T_STIFF]),
    Mutant("requested-solver-ignored", LIN + "linear_solver.cc",
           "  if (requested != LinearSolverKind::kAuto) return requested;\n", "",
           "the requested linear solver is ignored", "LinearSolver*:Islands*"),
    Mutant("evaluator-advance-alpha", "mjcenic/icf/evaluator.cc",
           "d->Av[i] += alpha[isl[i]] * d->Aw[i];", "d->Av[i] += d->Aw[i];",
           "A·v advanced by the full step instead of the line search's α"),
    Mutant("sweep-normal-sign", "mjcenic/icf/contact_sweeps.cc",
           "const double vf = vc[0] + P.bias[3 * c] - wn * g[0];",
           "const double vf = vc[0] + P.bias[3 * c] + wn * g[0];",
           "contact sweep's normal velocity without the contact's own impulse (sign)"),
    Mutant("warm-start-accel-sign", "mjcenic/integrator/warm_start.cc",
           "guess_dir[i] = c * h * accel_[i];", "guess_dir[i] = -c * h * accel_[i];",
           "Newton's guess extrapolates the acceleration backwards", "WarmStart.*"),
    Mutant("linearizer-kv-dropped", "mjcenic/adapter/controller_linearizer.cc",
           "feedback_.kv[i] = -(tau_perturbed_[i] - tau_x0_[i]) / dv;", "feedback_.kv[i] = 0;",
           "implicit controller's velocity gain dropped", "ControllerLinearizer*:Controller*"),
    Mutant("fingerprint-blocks-ignored", "mjcenic/adapter/model_fingerprint.cc",
           "    if (std::memcmp(copy_.data() + s.offset, s.data, s.bytes) != 0) {",
           "    if (std::memcmp(copy_.data() + s.offset, s.data, std::min<std::size_t>(s.bytes, 64)) != 0) {",
           "model fingerprint compares only each span's first 64 bytes", "ModelFingerprint*:DenseOutput.*"),
    Mutant("nstep-model-checked-late", "mjcenic/integrator/stepper.cc",
           "check_model = i == 0 ||", "check_model = i == 1 ||",
           "Step(d, nstep) compares the model for edits at its second step, not its first",
           "Reliability.*"),
    Mutant("nstep-callback-edit-unchecked", "mjcenic/integrator/stepper.cc",
           "check_model = i == 0 || callbacks;", "check_model = i == 0;",
           "Step(d, nstep) misses a model edit made by the controller between its steps",
           "Reliability.*"),
    Mutant("penetration-growth-from-zero", "mjcenic/adapter/penetration_check.cc",
           "double growth = -c.dist - Lookup(start_depths_, PairKey(c.geom[0], c.geom[1]));",
           "double growth = -c.dist;",
           "penetration growth measured from zero, not from the pair's start depth",
           "PenetrationCheck.*"),
    Mutant("penetration-points-not-carried-back", "mjcenic/adapter/penetration_check.cc",
           "growth = std::min(growth, -c.dist - std::max(0.0, StartDepthOfPoints(d, c)));",
           "growth = std::min(growth, -c.dist);",
           "a contact point the start query did not report counts as growth though its material "
           "points were as deep at x_t", "PenetrationCheck.*"),
    Mutant("limit-spring-scale-ignored", "mjcenic/adapter/penetration_check.cc",
           "if (start_violation > violation_tolerance && length_scale > 0)",
           "if (false)",
           "a limit on its large-violation spring is checked against 10⁻³ U, not the spring's "
           "nominal violation g τ_r²", "PenetrationCheck.*:TendonSpring.*"),
    Mutant("snapshot-ctrl-ignored", "mjcenic/adapter/state_snapshot.cc",
           "    fn(d->ctrl, m->nu);\n", "", "a changed ctrl does not restart dense output",
           "DenseOutput.*"),
    Mutant("fatal-error-no-restore", "plugin/mujoco_errors.cc",
           "      if (k > 0) std::memcpy(x, in, sizeof(mjtNum) * k);",
           "      if (false) std::memcpy(x, in, sizeof(mjtNum) * k);",
           "a MuJoCo fatal error inside a step leaves the state half-stepped"),
    Mutant("plugin-empty-config-value", "plugin/plugin.cc", "if (!value || !value[0]) continue;",
           "if (!value) continue;", "a plugin config key left unset is parsed as an empty value"),
    Mutant("cli-chunk-default", "mjcenic/cli/mjcenic_run.cc", "double chunk = 0.05;",
           "double chunk = 0.1;", "mjcenic-run advances in 0.1 s chunks, not 0.05 s"),
    Mutant("load-model-first-key", PY + "__init__.py", "    elif model.nkey > 0:",
           "    elif model.nkey > 1:", "load_model ignores a model's only keyframe"),
    Mutant("cli-positive-zero", PY + "_cliutil.py", "if not (v > 0 and math.isfinite(v)):",
           "if not (v >= 0 and math.isfinite(v)):", "CLI accepts 0 where a positive number is needed",
           python=["tests/python/test_cli_arguments.py"]),
    Mutant("cli-sample-default", PY + "cli.py",
           'p.add_argument("--sample", type=_cliutil.positive, default=0.01,',
           'p.add_argument("--sample", type=_cliutil.positive, default=0.02,',
           "mjcenic run samples every 20 ms, not 10 ms"),
    Mutant("rollout-no-broadcast", PY + "_rollout.py",
           "        if value == 1:\n            value = a.shape[dim]",
           "        if False:\n            value = a.shape[dim]",
           "rollout does not broadcast singleton dimensions",
           python=["tests/python/test_rollout.py"]),
    Mutant("ray-last-rollout-dropped", PY + "distributed.py",
           "        end = min(nbatch, begin + chunk_size)",
           "        end = min(nbatch - 1, begin + chunk_size)",
           "the Ray backend drops the last rollout (needs Ray installed)",
           python=["tests/python/test_rollout.py"]),
    Mutant("install-plugin-any-elf", PY + "install_plugin.py",
           'if b"mjcenic_create" not in data or b"mjcenic_step" not in data:', "if False:",
           "install-plugin accepts any ELF file"),
    Mutant("viewer-accuracy-keys-swapped", PY + "viewer.py",
           "acc = self.accuracy / 10 if keycode == KEY_TIGHTER else self.accuracy * 10",
           "acc = self.accuracy * 10 if keycode == KEY_TIGHTER else self.accuracy / 10",
           "viewer's tighter/looser accuracy keys swapped",
           python=["tests/python/test_command.py::test_viewer_keys_do_not_clash_with_mujocos_viewer"]),
    Mutant("compare-energy-no-kinetic", PY + "compare.py",
           "return float(ed.energy[0] + ed.energy[1])", "return float(ed.energy[0])",
           "compare's energy drift without the kinetic energy",
           python=["tests/python/test_compare_energy.py"]),
    Mutant("work-precision-error-sign", PY + "work_precision.py",
           "errs[i] = np.max(np.abs(dq))", "errs[i] = np.max(dq)",
           "trajectory error without |·|: errors in the negative direction missed",
           python=["tests/python/test_work_precision.py"]),
    Mutant("backend-range-inclusive", "python/build_backend/mjcenic_backend.py",
           '            < _version_tuple(rng["below"]))', '            <= _version_tuple(rng["below"]))',
           "the wheel build accepts the excluded MuJoCo version 'below'",
           python=["tests/python/test_build_backend_range.py"]),
    # --- linear solver kinds and the builder: their own unit tests ---
    Mutant("dense-assembly-upper", LIN + "dense.cc",
           "H[static_cast<size_t>(n - 1 - i) * n + (n - 1 - j)] += x;",
           "H[static_cast<size_t>(n - 1 - j) * n + (n - 1 - i)] += x;",
           "dense kind assembles into the upper triangle its factorization does not read"),
    Mutant("sparse-structure-unchecked", HS,
           "const bool same_structure = A_ && n_ == m.nv && clique_start_ == m.clique_start;",
           "const bool same_structure = A_ && n_ == m.nv;",
           "sparse kind keeps its analysis for new trees of the same nv"),
    Mutant("islands-partition-unchecked", LIN + "islands.cc",
           "model.num_islands == seen_num_islands_ && model.island_of_clique == seen_island_of_clique_ &&",
           "model.num_islands == seen_num_islands_ &&",
           "islands kind keeps its layout for another partition into as many islands"),
    Mutant("block-direct-upper", LIN + "block.cc", "if (a < 6) Taa[b * 6 + a] += x;",
           "if (a < 6) Taa[a * 6 + b] += x;",
           "a two-body contact's first block goes to the upper triangle the block Cholesky does "
           "not read"),
    Mutant("block-frozen-not-zeroed", LIN + "block.cc",
           "if (skip_[c]) std::fill(y_.begin() + clique_start_[c], y_.begin() + clique_start_[c + 1], 0.0);",
           "if (skip_[c]) {}", "block kind returns b, not 0, on a frozen island"),
    Mutant("lowrank-failed-factor-kept", LIN + "lowrank.cc",
           "std::fill(Hf_.begin() + o, Hf_.begin() + o + len, std::numeric_limits<double>::quiet_NaN());",
           "", "lowrank kind reuses a tree block's factor that a failed factorization overwrote"),
    Mutant("pcg-stop-unsquared", LIN + "pcg.cc",
           "    const double stop = tolerance_ * tolerance_ * bb;\n    SplitForward<N, false>(u, r);",
           "    const double stop = tolerance_ * bb;\n    SplitForward<N, false>(u, r);",
           "PCG stops at |r| ≤ sqrt(tol) |b|, not tol |b|"),
    Mutant("tree-pattern-unchecked", LIN + "tree.cc", "if (!in_pattern) return false;",
           "if (false) return false;", "tree kind factorizes H without the rows that leave M's pattern"),
    Mutant("tree-chain-check-loose", LIN + "linear_solver.cc", "if (row == end || *row != dof) {",
           "if (row == end) {", "a row across two branches counts as on one chain: kTree kept"),
    Mutant("mass-diag-first-entry", A,
           "model->M_diag[i] = d->M[m->M_rowadr[i] + m->M_rownnz[i] - 1];",
           "model->M_diag[i] = d->M[m->M_rowadr[i]];", "M_diag read from a row's first entry",
           "SlidesBuild.*:BoxBuild.*"),
    Mutant("joint-limit-delassus", A, "const double w = 1.0 / model->M_diag[dof];",
           "const double w = 1.0;", "joint limit rows without the Delassus estimate 1/M_ii",
           "SlidesBuild.*:BoxBuild.*"),
    # --- warm start: its own unit tests ---
    Mutant("warm-start-smooth-rule", WS, "c = dd < aa ? 1.0 : 0.0;", "c = 1.0;",
           "an island with contact rows extrapolates an acceleration that changed by more than "
           "its size", "WarmStart.*"),
    Mutant("warm-start-quadratic-island", WS, "c_[k] = smooth_[k] ? GuessFactor(s[0], s[1], s[2], h, tolerance) : 0.0;",
           "c_[k] = GuessFactor(s[0], s[1], s[2], h, tolerance);",
           "an island of piecewise-quadratic rows extrapolates like one with contacts",
           "WarmStart.*"),
    Mutant("warm-start-continues", WS, "continues_ = valid_ && std::equal(", "continues_ = valid_ || std::equal(",
           "the history applies to a step that does not start where the last one ended",
           "WarmStart.*"),
    Mutant("warm-start-near-rest", WS, "return h * h * aa < tol * tol;", "return false;",
           "near rest the guess still extrapolates", "WarmStart.*"),
    Mutant("warm-start-tight-only", WS, "tolerance <= kTightTolerance && continues_",
           "tolerance <= 1 && continues_", "the guess applies to loose solves", "WarmStart.*"),
    # --- error norm: its own unit tests ---
    Mutant("norm-propagation-horizon", EN, "+ (h / tau) * H;", "+ 0 * H;",
           "propagation weight without the horizon's decay", "ErrorNorm*"),
    Mutant("norm-propagated-weight", EN, "std::abs(dv_[i]) * vel_weight_[i]",
           "std::abs(dv_[i]) * tau_", "propagated norm weighs velocities by the horizon",
           "ErrorNorm*"),
    Mutant("norm-drift-ignored", EN, "(drift_set_ ? std::abs(drift_[i])", "(false ? std::abs(drift_[i])",
           "propagated_modes ignores the drift it was given", "ErrorNorm*"),
    # --- evaluator ---
    Mutant("evaluator-momentum-cost", "mjcenic/icf/evaluator.cc",
           "cost += v[i] * (0.5 * Av[i] - r[i]);", "cost += v[i] * (Av[i] - r[i]);",
           "one-island momentum cost without the ½"),
    Mutant("evaluator-contact-bias", "mjcenic/icf/evaluator.cc",
           "for (int q = 0; q < 3; ++q) vc[q] += pool.bias[3 * c + q];", "",
           "contact surface-velocity bias dropped from v_c"),
    # --- C API ---
    Mutant("capi-foreign-data", CA, "if (d->signature != m->signature || d->narena != m->narena)",
           "if (false)", "mjData of another model accepted"),
    Mutant("capi-registry-capacity", CA, "constexpr size_t kRegistryCapacity = 64;",
           "constexpr size_t kRegistryCapacity = 1;", "registry keeps one stepper", "CApi.*"),
]


def sh(cmd, cwd=None, timeout=None, env=None):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, timeout=timeout, env=env, capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -999, str(out)[-2000:] + "\nTIMEOUT", time.monotonic() - t


def check(mutants, src: Path) -> list[str]:
    problems = []
    ids = set()
    for mu in mutants:
        if mu.id in ids:
            problems.append(f"{mu.id}: duplicate id")
        ids.add(mu.id)
        text = (src / mu.file).read_text()
        n = text.count(mu.old)
        if n != 1:
            problems.append(f"{mu.id}: '{mu.old[:60]}' occurs {n} times in {mu.file}")
    return problems


# The C++ tests too slow for every mutant (1-3 s each; the whole C++ suite
# takes ~11 s); they run only when named by a mutant's focus filter.
SLOW_TESTS = "CenicConvergence.CylinderDrop:CenicEnergy.FirstVsSecondOrder"


# Python suites run for a mutant the C++ tests let through (stop at the first
# failure); a mutant may name its own.
PYTHON_SUITES = ["tests/python/test_python_api.py", "tests/python/test_reliability.py",
                 "tests/python/test_frontend_reliability.py", "tests/python/test_cli.py",
                 "tests/python/test_error_estimate.py"]


PYTHON_TARGETS = ["_mjcenic", "mjcenic-run"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scratch", default=str(ROOT / "build-mutants"))
    ap.add_argument("--json", default=str(ROOT / "build-mutants" / "mutants.json"))
    ap.add_argument("--only", default="", help="comma-separated mutant ids (run in that order)")
    ap.add_argument("--check", action="store_true", help="only check that every mutation applies")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--test-timeout", type=float, default=120,
                    help="seconds per test run (at least; 4x the unmutated run if longer); a run past it "
                    "(a hang) kills the mutant")
    ap.add_argument("--exclude", default=SLOW_TESTS, help="gtest patterns left out of the fast subset")
    ap.add_argument("--no-python", dest="python", action="store_false",
                    help="skip the Python suites (run for mutants the C++ tests let through)")
    args = ap.parse_args()

    mutants = MUTANTS
    if args.only:
        by_id = {m.id: m for m in MUTANTS}
        unknown = [i for i in args.only.split(",") if i not in by_id]
        if unknown:
            print(f"unknown mutant ids: {', '.join(unknown)}", file=sys.stderr)
            return 2
        mutants = [by_id[i] for i in dict.fromkeys(args.only.split(","))]  # in the order given
    problems = check(mutants, ROOT)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(mutants)} mutations apply")
        return 0

    scratch = Path(args.scratch).resolve()  # absolute: CCACHE_BASEDIR must be
    # The build directory sits in the copy as `build/` does in a checkout, so
    # that with CCACHE_BASEDIR every compile line is the checkout build's
    # (paths relative to the build directory): its ccache entries serve the
    # scratch build, and only the mutated file is compiled afresh.
    src, build = scratch / "src", scratch / "src" / "build"
    src.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    files = [f for f in files if f and not f.startswith("build") and (ROOT / f).is_file()]
    for f in files:  # copy only what changed, so the scratch build stays incremental
        a, b = ROOT / f, src / f
        if not b.exists() or b.read_bytes() != a.read_bytes():
            b.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(a, b)  # a fresh mtime: make must see the change
        if b.stat().st_mode != a.stat().st_mode:
            shutil.copymode(a, b)  # scripts the tests run stay executable
    # The tests find third-party models at <source>/../shared/models: link them.
    shared = (ROOT.parent / "shared").resolve()
    if shared.is_dir() and not (scratch / "shared").exists():
        (scratch / "shared").symlink_to(shared)
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", str(scratch))
    if not (build / "CMakeCache.txt").exists():
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"] \
            if shutil.which("ccache") else []
        rc, out, _ = sh(["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                         f"-DPython3_EXECUTABLE={sys.executable}"] + launcher, env=env)
        if rc:
            print(out, file=sys.stderr)
            return 2
    targets = ["mjcenic_tests", "mjcenic_icf_tests"]

    def build_tests(extra=()):
        return sh(["cmake", "--build", str(build), "-j", str(args.jobs), "--target"] + targets
                  + list(extra), env=env)

    timeout = {"s": 3600.0}  # the baseline's; then a multiple of it (below)

    def run_cpp(filter_, binary="mjcenic_tests"):
        return sh([str(build / binary), f"--gtest_filter={filter_}", "--gtest_fail_fast",
                   "--gtest_brief=1"], cwd=build, timeout=timeout["s"], env=env)

    def run_python(files_):
        penv = dict(env, MJCENIC_BUILD=str(build))
        return sh([sys.executable, "-m", "pytest", "-x", "-q"] + [str(src / f) for f in files_],
                  cwd=src, timeout=timeout["s"] + 300, env=penv)

    fast = "*-" + args.exclude
    t_start = time.monotonic()
    rc, out, dt = build_tests(PYTHON_TARGETS if args.python else [])
    if rc:
        print(out[-3000:], file=sys.stderr)
        return 2
    print(f"scratch build {dt:.0f} s", flush=True)
    rc, out, dt_base = run_cpp(fast)
    # A mutant's test run may take 4x the unmutated one (load varies) before it
    # counts as a hang.
    timeout["s"] = max(args.test_timeout, 4 * dt_base)
    print(f"baseline: fast C++ subset {dt_base:.0f} s, rc {rc}; test timeout {timeout['s']:.0f} s",
          flush=True)
    if rc:
        print(out[-3000:], file=sys.stderr)
        print("the unmutated suite fails: fix that first", file=sys.stderr)
        return 2

    results = []
    for mu in mutants:
        path = src / mu.file
        original = path.read_text()
        path.write_text(original.replace(mu.old, mu.new, 1))
        t0 = time.monotonic()
        r = {"id": mu.id, "file": mu.file, "what": mu.what, "equivalent": mu.equivalent}
        try:
            rc, out, _ = build_tests()
            if rc:
                r.update(status="killed", by="build")
            else:
                killed_by = None
                for label, (rc, out, _) in (
                        [("focus", run_cpp(mu.focus))] if mu.focus else []):
                    if rc:
                        killed_by = label
                if killed_by is None and mu.file.startswith("mjcenic/icf/"):
                    # The hand-built unit problems of icf/ (a few seconds) first.
                    rc, out, _ = run_cpp("*", "mjcenic_icf_tests")
                    if rc:
                        killed_by = "icf"
                ran_python = False
                if killed_by is None and mu.python and args.python:
                    # The Python tests aimed at it, before the whole C++ subset.
                    rc, out, _ = build_tests(PYTHON_TARGETS)
                    if rc == 0:
                        rc, out, _ = run_python(mu.python)
                    ran_python = True
                    if rc:
                        killed_by = "python"
                if killed_by is None:
                    rc, out, _ = run_cpp(fast)
                    if rc:
                        killed_by = "cpp"
                if killed_by is None and args.python and not ran_python:
                    # The Python extension (and the CLI the Python tests run) is built
                    # only for a mutant C++ let through.
                    rc, out, _ = build_tests(PYTHON_TARGETS)
                    if rc == 0:
                        rc, out, _ = run_python(mu.python or PYTHON_SUITES)
                    if rc:
                        killed_by = "python"
                if killed_by:
                    failed = [l.split("]", 1)[1].strip().split(" ")[0] for l in out.splitlines()
                              if l.startswith("[  FAILED  ]") and "." in l]
                    failed += [l.split()[1] for l in out.splitlines()
                               if l.startswith("FAILED ") and "::" in l]  # pytest
                    r.update(status="killed", by=killed_by, failed=failed[:3],
                             timeout="TIMEOUT" in out)
                else:
                    r.update(status="survived")
        finally:
            path.write_text(original)
        r["seconds"] = round(time.monotonic() - t0, 1)
        results.append(r)
        print(f"{r['status']:9s} {mu.id:32s} {r.get('by', ''):6s} {r['seconds']:6.1f} s "
              f"{' '.join(r.get('failed', []))}", flush=True)
        write_summary(results, len(mutants), t_start, args.json)

    summary = write_summary(results, len(mutants), t_start, args.json)
    print(f"kill rate {100 * summary['kill_rate']:.1f} % ({summary['killed']} of "
          f"{summary['mutants'] - summary['equivalent']}; {summary['equivalent']} equivalent), "
          f"{summary['minutes']} min; survivors: {', '.join(summary['survived']) or 'none'}; "
          f"JSON: {args.json}")
    return 0 if not summary["survived"] else 1


def write_summary(results, planned: int, t_start: float, path: str) -> dict:
    """The kill rate over the non-equivalent mutations run so far, written to
    `path` (after every mutation: an interrupted run keeps what it ran;
    "complete" says whether every planned mutation ran)."""
    counted = [r for r in results if not r["equivalent"]]
    killed = sum(r["status"] == "killed" for r in counted)
    summary = {
        "mutants": len(results), "complete": len(results) == planned,
        "equivalent": len(results) - len(counted), "killed": killed,
        "survived": [r["id"] for r in counted if r["status"] != "killed"],
        "kill_rate": round(killed / len(counted), 4) if counted else 1.0,
        "minutes": round((time.monotonic() - t_start) / 60, 1),
        "results": results,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    sys.exit(main())
