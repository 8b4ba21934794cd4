// The step-size controller (integrator/step_size_controller.h): every rule
// that sizes an internal step, asserted numerically (cenic-math.md §11.4,
// §11.10, §11.12, §11.13; docs/how-it-works.md, "Errors and progress").
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "mjcenic/integrator/step_size_controller.h"

namespace mjcenic {
namespace {

TEST(AdjustStepSize, FreeFallExample) {
  // ε = 1e-3, g = 9.81, h = 0.01: e = ¼ g h² = 2.4525e-4 → accepted, next
  // step 0.9 · 0.01 · (1e-3 / 2.4525e-4)^½ = 0.0181735 s.
  const StepSizeControl c;
  bool at_min = false;
  const double e = 0.25 * 9.81 * 0.01 * 0.01;
  EXPECT_NEAR(e, 2.4525e-4, 1e-16);
  const StepDecision dec = AdjustStepSize(c, e, 1e-3, 0.01, 0.1, 1e-14, &at_min);
  EXPECT_TRUE(dec.accept);
  EXPECT_FALSE(dec.underflow);
  EXPECT_NEAR(dec.h_next, 0.0181735, 1e-7);
  EXPECT_DOUBLE_EQ(dec.h_next, 0.9 * 0.01 * std::sqrt(1e-3 / 2.4525e-4));
  // At that step e = 0.81 ε: accepted, step kept exactly.
  const double h1 = dec.h_next, e1 = 0.25 * 9.81 * h1 * h1;
  EXPECT_NEAR(e1 / 1e-3, 0.81, 1e-12);
  const StepDecision dec1 = AdjustStepSize(c, e1, 1e-3, h1, 0.1, 1e-14, &at_min);
  EXPECT_TRUE(dec1.accept);
  EXPECT_EQ(dec1.h_next, h1);
}

TEST(AdjustStepSize, GrowthShrinkAndGuards) {
  const StepSizeControl c;
  const double acc = 1e-3, h = 0.01, h_max = 1.0, h_min = 1e-14;
  bool at_min = false;
  // Growth limited to 5×: zero and tiny errors.
  for (double e : {0.0, 1e-30, 1e-12, 1e-8}) {
    const StepDecision d = AdjustStepSize(c, e, acc, h, h_max, h_min, &at_min);
    EXPECT_TRUE(d.accept) << e;
    EXPECT_DOUBLE_EQ(d.h_next, 5 * h) << e;
  }
  // ... and by h_max.
  {
    const StepDecision d = AdjustStepSize(c, 0.0, acc, h, 0.02, h_min, &at_min);
    EXPECT_TRUE(d.accept);
    EXPECT_EQ(d.h_next, 0.02);
  }
  // Dead band: 0.5625 ε < e ≤ ε keeps h exactly; e ≤ 0.5625 ε grows ≥ 1.2 h.
  for (double r : {0.57, 0.7, 0.81, 0.99, 1.0}) {
    const StepDecision d = AdjustStepSize(c, r * acc, acc, h, h_max, h_min, &at_min);
    EXPECT_TRUE(d.accept) << r;
    EXPECT_EQ(d.h_next, h) << r;
  }
  for (double r : {0.1, 0.3, 0.56}) {
    const StepDecision d = AdjustStepSize(c, r * acc, acc, h, h_max, h_min, &at_min);
    EXPECT_TRUE(d.accept) << r;
    EXPECT_GE(d.h_next, 1.2 * h) << r;
    EXPECT_NEAR(d.h_next, std::min(5.0, 0.9 / std::sqrt(r)) * h, 1e-15) << r;
  }
  // Rejection iff e > ε; the retry uses ≤ 0.9 h (and ≥ 0.1 h).
  for (double r : {1.0 + 1e-12, 1.001, 1.1, 2.0, 10.0, 1e3, 1e8}) {
    const StepDecision d = AdjustStepSize(c, r * acc, acc, h, h_max, h_min, &at_min);
    EXPECT_FALSE(d.accept) << r;
    EXPECT_LE(d.h_next, 0.9 * h) << r;
    EXPECT_GE(d.h_next, 0.1 * h * (1 - 1e-15)) << r;
    EXPECT_NEAR(d.h_next, std::clamp(0.9 / std::sqrt(r), 0.1, 0.9) * h, 1e-15) << r;
  }
  // NaN / infinite error: reject with 0.1 h.
  for (double e : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    const StepDecision d = AdjustStepSize(c, e, acc, h, h_max, h_min, &at_min);
    EXPECT_FALSE(d.accept);
    EXPECT_FALSE(d.underflow);
    EXPECT_DOUBLE_EQ(d.h_next, 0.1 * h);
  }
  // Underflow: the needed step is below the minimum.
  {
    const StepDecision d = AdjustStepSize(c, 1e6 * acc, acc, 1e-13, h_max, 5e-14, &at_min);
    EXPECT_FALSE(d.accept);
    EXPECT_TRUE(d.underflow);
  }
}

StepSizeRules Controlled(double accuracy = 1e-3) {
  StepSizeRules r;
  r.error_control = true;
  r.accuracy = accuracy;
  return r;
}

TEST(StepSizeController, LargestAndInitialStep) {
  // Error control: max_step, else 0.1 s; the first step min(0.1 h_max, timestep).
  StepSizeController c(Controlled());
  EXPECT_EQ(c.LargestStep(0.002), kDefaultMaxStep);
  EXPECT_EQ(c.Propose(0.0, 0.002), 0.002);
  StepSizeController big(Controlled());
  EXPECT_DOUBLE_EQ(big.Propose(0.0, 1.0), 0.1 * kDefaultMaxStep);
  StepSizeRules r = Controlled();
  r.initial_step = 3e-4;
  r.max_step = 0.05;
  StepSizeController set(r);
  EXPECT_EQ(set.LargestStep(0.002), 0.05);
  EXPECT_EQ(set.Propose(0.0, 0.002), 3e-4);
  // Without error control every step is the largest: max_step, else the timestep.
  StepSizeRules fixed;
  fixed.error_control = false;
  StepSizeController f(fixed);
  EXPECT_EQ(f.LargestStep(0.004), 0.004);
  EXPECT_EQ(f.Propose(0.0, 0.004), 0.004);
  const StepDecision d = f.Decide(true, 123.0, 0.004);
  EXPECT_TRUE(d.accept);
  EXPECT_EQ(f.min_step(), 0.0);
}

TEST(StepSizeController, LandsExactlyOnTheTarget) {
  StepSizeController c(Controlled());
  const double h = c.Propose(0.0, 0.001);
  ASSERT_EQ(h, 0.001);
  // Within 5 % short of the target or 0.1 % past it: stretched/shortened onto it.
  EXPECT_EQ(c.LandOn(h, 0.96 * h, false), 0.96 * h);
  EXPECT_EQ(c.LandOn(h, 1.0009 * h, false), 1.0009 * h);
  // Further past: h unchanged.
  EXPECT_EQ(c.LandOn(h, 1.002 * h, false), h);
  EXPECT_EQ(c.LandOn(h, 3 * h, false), h);
  // Far short: shortened onto it (limited: the proposal is not replaced by it) ...
  EXPECT_EQ(c.LandOn(h, 0.3 * h, false), 0.3 * h);
  const StepDecision d = c.Decide(true, 0.0, 0.3 * h);
  ASSERT_TRUE(d.accept);
  ASSERT_TRUE(c.Accept(d.h_next));
  EXPECT_EQ(c.next(), h);
  // ... unless dense output may end past it.
  EXPECT_EQ(c.LandOn(h, 0.3 * h, true), h);
  // An unlimited accepted step takes the decision's proposal (5 h for e = 0).
  EXPECT_EQ(c.LandOn(h, 10 * h, false), h);
  const StepDecision g = c.Decide(true, 0.0, h);
  ASSERT_TRUE(c.Accept(g.h_next));
  EXPECT_DOUBLE_EQ(c.next(), 5 * h);
}

TEST(StepSizeController, GrowthCappedAndRejectionShrinks) {
  StepSizeController c(Controlled(1e-3));
  const double h = c.Propose(0.0, 0.01);
  // Growth capped at max_growth = 5.
  StepDecision d = c.Decide(true, 1e-20, h);
  EXPECT_TRUE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 5 * h);
  // e = 4 ε: rejected, retry ρ h (ε/e)^½ = 0.45 h.
  d = c.Decide(true, 4e-3, h);
  EXPECT_FALSE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.45 * h);
  // e just above ε: the retry is at most shrink_factor·h = 0.9 h.
  d = c.Decide(true, 1.0001e-3, h);
  EXPECT_FALSE(d.accept);
  EXPECT_LE(d.h_next, 0.9 * h);
  // Huge e: at least min_shrink·h = 0.1 h.
  d = c.Decide(true, 1e6, h);
  EXPECT_FALSE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.1 * h);
  // With safety ρ = 1 an error just above ε would retry at ≈ h: the retry
  // is held to shrink_factor·h = 0.9 h.
  StepSizeControl unsafe;
  unsafe.safety = 1.0;
  bool at_min = false;
  d = AdjustStepSize(unsafe, 1.0001e-3, 1e-3, h, 1.0, 1e-14, &at_min);
  EXPECT_FALSE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.9 * h);
  // A failed solve retries with h/2.
  d = c.Decide(false, 0.0, h);
  EXPECT_FALSE(d.accept);
  EXPECT_FALSE(d.underflow);
  EXPECT_EQ(d.h_next, 0.5 * h);
}

TEST(StepSizeController, AStepAcceptedAfterARejectionDoesNotGrow) {
  // cenic-math §11.4: the attempt after a rejection is accepted with an
  // error that alone would grow h (0.1 ε: 0.9 h/√0.1 = 2.85 h), but the
  // next proposal keeps h; the next step, with no rejection, grows again.
  StepSizeController c(Controlled(1e-3));
  const double h0 = c.Propose(0.0, 0.01);
  StepDecision d = c.Decide(true, 4e-3, h0);
  ASSERT_FALSE(d.accept);
  const double h1 = d.h_next;
  ASSERT_DOUBLE_EQ(h1, 0.45 * h0);
  EXPECT_EQ(c.LandOn(h1, 1.0, false), h1);
  d = c.Decide(true, 1e-4, h1);
  EXPECT_TRUE(d.accept);
  EXPECT_EQ(d.h_next, h1);
  ASSERT_TRUE(c.Accept(d.h_next));
  EXPECT_EQ(c.next(), h1);
  EXPECT_EQ(c.Propose(h1, 0.01), h1);
  d = c.Decide(true, 1e-4, h1);
  EXPECT_TRUE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.9 * h1 / std::sqrt(0.1));
  // The same after a rejection by the depth-growth limit (§11.10).
  StepSizeRules r = Controlled(1e-3);
  r.depth_limit = true;
  StepSizeController depth(r);
  const double g0 = depth.Propose(0.0, 0.01);
  d = depth.Decide(true, 1e-4, g0);
  ASSERT_TRUE(d.accept);
  double g1;
  ASSERT_TRUE(depth.LimitDepth(2.0, g0, &g1));
  d = depth.Decide(true, 1e-4, g1);
  EXPECT_TRUE(d.accept);
  EXPECT_EQ(d.h_next, g1);
  // The rule alone: after_rejection keeps h, the dead band and the
  // shrinking side are unchanged.
  bool at_min = false;
  const StepSizeControl sc;
  EXPECT_EQ(AdjustStepSize(sc, 1e-6, 1e-3, 0.01, 1.0, 1e-14, &at_min, true).h_next, 0.01);
  EXPECT_DOUBLE_EQ(AdjustStepSize(sc, 1e-6, 1e-3, 0.01, 1.0, 1e-14, &at_min, false).h_next, 0.05);
  const StepDecision again = AdjustStepSize(sc, 4e-3, 1e-3, 0.01, 1.0, 1e-14, &at_min, true);
  EXPECT_FALSE(again.accept);
  EXPECT_DOUBLE_EQ(again.h_next, 0.0045);
}

TEST(StepSizeController, UnderflowIsAnError) {
  StepSizeRules r = Controlled();
  r.min_step = 1e-6;
  StepSizeController c(r);
  c.Propose(0.0, 0.01);
  EXPECT_EQ(c.min_step(), 1e-6);
  const StepDecision d = c.Decide(true, 1.0, 1.5e-6);  // needs 0.1·1.5e-6 < 1e-6
  EXPECT_FALSE(d.accept);
  EXPECT_TRUE(d.underflow);
  const absl::Status st = c.Underflow(0.0, 1.0, 1.5e-6, "");
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("step size underflow"), std::string::npos);
  // A failed solve whose half step is below the minimum underflows too.
  EXPECT_TRUE(c.Decide(false, 0.0, 1.5e-6).underflow);
  // The minimum step follows the time: 1e-14 |t|.
  StepSizeController late(Controlled());
  late.Propose(1e6, 0.01);
  EXPECT_DOUBLE_EQ(late.min_step(), 1e-8);
  // A timestep below it is refused.
  EXPECT_EQ(StepSizeController::CheckTimestep(1e17, 0.002).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(StepSizeController::CheckTimestep(1.0, 0.002).ok());
}

TEST(StepSizeController, DepthGrowthLimit) {
  StepSizeRules r = Controlled();
  r.depth_limit = true;
  StepSizeController c(r);
  const double h = c.Propose(0.0, 0.01);
  // Growth twice its tolerance: rejected, retry ρ_depth h / 2 = 0.45 h.
  ASSERT_TRUE(c.Decide(true, 0.0, h).accept);
  double retry = 0;
  EXPECT_TRUE(c.LimitDepth(2.0, h, &retry));
  EXPECT_DOUBLE_EQ(retry, 0.45 * h);
  // Twenty times: at least 0.1 h.
  EXPECT_TRUE(c.LimitDepth(20.0, h, &retry));
  EXPECT_DOUBLE_EQ(retry, 0.1 * h);
  // The next step, half its tolerance: accepted, the next step capped at
  // 0.9 h / 0.5 = 1.8 h (the error alone would give 5 h).
  ASSERT_EQ(c.Propose(0.0, 0.01), h);
  const StepDecision d = c.Decide(true, 0.0, h);
  EXPECT_FALSE(c.LimitDepth(0.5, h, &retry));
  ASSERT_TRUE(c.Accept(d.h_next));
  EXPECT_DOUBLE_EQ(c.next(), 1.8 * h);
}

TEST(StepSizeController, ProgressGuarantee) {
  // Accepted steps each after a failed solve: the 200th is an error.
  StepSizeController c(Controlled());
  for (int k = 1; k <= StepSizeController::kMaxSolverLimitedSteps; ++k) {
    const double h = c.Propose(0.0, 0.01);
    ASSERT_FALSE(c.Decide(false, 0.0, h).accept);
    const StepDecision d = c.Decide(true, 0.0, 0.5 * h);
    ASSERT_TRUE(d.accept);
    EXPECT_EQ(c.Accept(d.h_next), k < StepSizeController::kMaxSolverLimitedSteps) << k;
  }
  // A call needing more than max_steps_per_call steps of the largest step is refused.
  StepSizeRules r = Controlled();
  r.max_steps_per_call = 10;
  r.max_step = 0.01;
  StepSizeController capped(r);
  EXPECT_TRUE(capped.CheckStepCount(0.0, 0.09, 0.002).ok());
  EXPECT_EQ(capped.CheckStepCount(0.0, 0.11, 0.002).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(capped.CheckCallSteps(10, 0.0, 0.05, 0.1, 0.005).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(capped.CheckCallSteps(9, 0.0, 0.05, 0.1, 0.005).ok());
}

// One internal step of a call to `target` from t = 0 with the estimate's
// error `error`/drift (Decide and Accept as the stepper does); returns whether
// the estimate was skipped.
// `flight` ≥ 0: of the estimate, the trees in flight's predicted error (and
// the rest of it is `rest`; cenic-math §11.13, "Bodies in flight").
bool CallStep(StepSizeController* c, double target, int ncontacts, double drift, double error,
              bool* accepted = nullptr, double rest = -1, double flight = 0) {
  c->BeginCall();
  double h = c->Propose(0.0, 0.002);
  h = c->LandOn(h, target, false);
  double e = error;
  const bool skip = c->MaySkipEstimate(ncontacts) && c->SkipEstimate(drift, h, &e);
  if (!skip) c->NoteEstimate(error, drift, ncontacts, rest < 0 ? error : rest, flight);
  const StepDecision d = c->Decide(true, e, h);
  if (accepted) *accepted = d.accept;
  if (d.accept) c->Accept(d.h_next);
  return skip;
}

TEST(StepSizeController, TreesInFlightSkipAtTheirHalfStepsError) {
  // cenic-math §11.13, "Bodies in flight". Estimate 0.35 ε, all of it on a
  // tree in flight (its half-step positions 0.01 ε from the half steps): the
  // skipped step keeps that error, 0.36 ε predicted per step, so two steps
  // skip within the budget ε and the third estimates. The same estimate
  // anywhere else predicts x̂'s 0.7 ε > ε/4: every step estimates.
  StepSizeRules r = Controlled(1e-3);
  r.initial_step = 0.02;
  StepSizeController flying(r), resting(r);
  const double e = 3.5e-4, drift = 7e-4;
  std::vector<int> skips;
  for (int k = 0; k < 9; ++k)
    skips.push_back(CallStep(&flying, 0.002, 0, drift, e, nullptr, 0.0, e + 1e-5));
  EXPECT_EQ(skips, (std::vector<int>{0, 1, 1, 0, 1, 1, 0, 1, 1}));
  for (int k = 0; k < 5; ++k) EXPECT_FALSE(CallStep(&resting, 0.002, 0, drift, e));
  // The rest of the estimate still needs 2 rest ≤ ε/4, and the flight part
  // ≤ ε: either one above its bound estimates.
  StepSizeController mixed(r), fast(r);
  ASSERT_FALSE(CallStep(&mixed, 0.002, 0, drift, e, nullptr, 1.3e-4, 1e-4));
  EXPECT_FALSE(CallStep(&mixed, 0.002, 0, drift, e, nullptr, 1.3e-4, 1e-4));
  ASSERT_FALSE(CallStep(&fast, 0.002, 0, drift, e, nullptr, 0.0, 1.01e-3));
  EXPECT_FALSE(CallStep(&fast, 0.002, 0, drift, e, nullptr, 0.0, 1.01e-3));
}

TEST(StepSizeController, CappedStepSkipsTheEstimateWhileItPredictsASmallError) {
  // cenic-math §11.13. Proposal 0.02 s, calls of 2 ms: every step is cut to
  // land on the call's target. The first capped step estimates: error
  // 1e-5 = ε/100 at drift 2e-5 (scale ½: free fall). The full step's
  // predicted error is 2 · ½ · drift = drift.
  StepSizeRules r = Controlled(1e-3);
  r.initial_step = 0.02;
  StepSizeController c(r);
  EXPECT_FALSE(CallStep(&c, 0.002, 3, 2e-5, 1e-5));  // no scale yet: estimates
  // Predicted 2e-5 = ε/50 per step: skipped until the predictions add up to
  // ε (50 steps) or kMaxSkippedEstimates (32) steps were skipped.
  int skipped = 0;
  while (CallStep(&c, 0.002, 3, 2e-5, 1e-5)) ++skipped;
  EXPECT_EQ(skipped, StepSizeController::kMaxSkippedEstimates);
  // (That step estimated again.) Predicted 1e-4 = ε/10: the budget allows
  // 10 steps (9 if round-off puts their sum just past ε).
  skipped = 0;
  while (CallStep(&c, 0.002, 3, 1e-4, 5e-5)) ++skipped;
  EXPECT_GE(skipped, 9);
  EXPECT_LE(skipped, 10);
  // Predicted above ε/kSkipMargin (the drift grew: an impact, a new input):
  // estimates, even with budget left.
  EXPECT_FALSE(CallStep(&c, 0.002, 3, 1e-3 / StepSizeController::kSkipMargin * 1.01, 1e-5));
  // A contact count different from the estimate's: estimates.
  EXPECT_FALSE(CallStep(&c, 0.002, 4, 2e-5, 1e-5));
  EXPECT_TRUE(CallStep(&c, 0.002, 4, 2e-5, 1e-5));
  // A deepening contact (depth ratio > ½) ends skipping until the next estimate.
  double retry;
  EXPECT_FALSE(c.LimitDepth(0.6, 0.002, &retry));
  EXPECT_FALSE(CallStep(&c, 0.002, 4, 2e-5, 1e-5));
  EXPECT_TRUE(CallStep(&c, 0.002, 4, 2e-5, 1e-5));
  // A step the error sizes (the call is not shorter than the proposal) never
  // skips, nor does a retry after a rejection, nor a call's second step.
  StepSizeController free_steps(r);
  ASSERT_FALSE(CallStep(&free_steps, 0.002, 0, 2e-5, 1e-5));
  EXPECT_FALSE(CallStep(&free_steps, 1.0, 0, 2e-5, 1e-5));
  StepSizeController retry_c(r);
  ASSERT_FALSE(CallStep(&retry_c, 0.002, 0, 2e-5, 1e-5));
  retry_c.BeginCall();
  const double h = retry_c.LandOn(retry_c.Propose(0, 0.002), 0.002, false);
  ASSERT_FALSE(retry_c.Decide(true, 1.0, h).accept);
  EXPECT_FALSE(retry_c.MaySkipEstimate(0));
  StepSizeController second(r);
  ASSERT_FALSE(CallStep(&second, 0.002, 0, 2e-5, 1e-5));
  second.BeginCall();
  second.LandOn(second.Propose(0, 0.002), 0.002, false);
  ASSERT_TRUE(second.Decide(true, 1e-6, 0.002).accept);
  ASSERT_TRUE(second.Accept(0.02));
  second.LandOn(second.Propose(0, 0.002), 0.002, false);
  EXPECT_FALSE(second.MaySkipEstimate(0));
  // Without error control nothing is estimated or skipped.
  StepSizeRules fixed_rules;
  fixed_rules.error_control = false;
  StepSizeController fixed(fixed_rules);
  fixed.NoteEstimate(1e-5, 2e-5, 0, 1e-5, 0);
  fixed.BeginCall();
  fixed.LandOn(fixed.Propose(0, 0.01), 0.002, false);
  EXPECT_FALSE(fixed.MaySkipEstimate(0));
  // An estimate of error > 0 at zero drift gives no scale: never skipped.
  StepSizeController stiff(r);
  ASSERT_FALSE(CallStep(&stiff, 0.002, 0, 0.0, 1e-6));
  EXPECT_FALSE(CallStep(&stiff, 0.002, 0, 0.0, 1e-6));
}

TEST(StepSizeController, RejectionStormsChangeStrategy) {
  // cenic-math §11.13. An embedded estimate that does not fall like h² (a
  // velocity jump: e ∝ h Δv) gives way to doubling after two rejections of
  // one step; the next step starts embedded again.
  StepSizeController c(Controlled(1e-3));
  double h = c.Propose(0.0, 0.01);
  EXPECT_FALSE(c.EstimateByDoubling());
  for (int k = 0; k < StepSizeController::kRejectionsBeforeDoubling; ++k) {
    EXPECT_FALSE(c.EstimateByDoubling());
    const StepDecision d = c.Decide(true, 5e-3 * h / 1e-2, h);  // e = 0.5 h: ∝ h
    ASSERT_FALSE(d.accept);
    h = d.h_next;
  }
  EXPECT_TRUE(c.EstimateByDoubling());
  ASSERT_TRUE(c.Decide(true, 1e-4, h).accept);
  ASSERT_TRUE(c.Accept(h));
  c.Propose(0.0, 0.01);
  EXPECT_FALSE(c.EstimateByDoubling());
  // Errors that shrink like h² (a smooth step, too long): embedded goes on
  // until kMaxEmbeddedRejections.
  StepSizeController smooth(Controlled(1e-3));
  h = smooth.Propose(0.0, 0.01);
  const double C = 2e7;  // e = C h²: rejected at h = 0.01, 1e-3, 1e-4, 1e-5
  for (int k = 0; k < StepSizeController::kMaxEmbeddedRejections; ++k) {
    EXPECT_FALSE(smooth.EstimateByDoubling()) << k;
    const StepDecision d = smooth.Decide(true, C * h * h, h);
    ASSERT_FALSE(d.accept);
    h = d.h_next;
  }
  EXPECT_TRUE(smooth.EstimateByDoubling());
  // Depth-check rejections count toward the four too.
  h = c.Propose(0.0, 0.01);
  for (double ratio : {2.0, 1.35, 1.2, 1.05}) {  // falling with h, each > 1
    EXPECT_FALSE(c.EstimateByDoubling());
    ASSERT_TRUE(c.Decide(true, 0.0, h).accept);
    ASSERT_TRUE(c.LimitDepth(ratio, h, &h)) << ratio;
  }
  EXPECT_TRUE(c.EstimateByDoubling());
}

TEST(StepSizeController, DepthGrowthIsRejectedAtEverySizeAboveTheMinimum) {
  // cenic-math §11.10: the controller trusts the measure (which counts only
  // depth the step made, PenetrationCheck.*): a ratio above 1 is rejected at
  // every size, retried at max(ρ_depth h / r, 0.1 h), until the minimum step,
  // which is accepted; the next step is not exempt.
  StepSizeRules r = Controlled();
  r.depth_limit = true;
  r.min_step = 1e-6;
  StepSizeController c(r);
  double h = c.Propose(0.0, 0.01);
  int rejections = 0;
  for (;;) {
    ASSERT_TRUE(c.Decide(true, 0.0, h).accept);
    double next = 0;
    if (!c.LimitDepth(2.3, h, &next)) break;
    EXPECT_DOUBLE_EQ(next, std::max(0.9 * h / 2.3, 1e-6));
    h = next;
    ++rejections;
  }
  EXPECT_EQ(h, 1e-6);
  EXPECT_EQ(rejections, 10);  // 0.01 s → 1e-6 s by 0.9/2.3 per retry
  const double h1 = c.Propose(0.0, 0.01);
  ASSERT_TRUE(c.Decide(true, 0.0, h1).accept);
  double next = 0;
  EXPECT_TRUE(c.LimitDepth(2.3, h1, &next));
}

TEST(StepSizeController, ErrorPerUnitStep) {
  // T = 1 s: a step of h may make ε h/T; the scaled error e T/h is one order
  // lower in h (p = 1): h_next = ρ h (ε h / (e T)).
  StepSizeRules r = Controlled(1e-3);
  r.error_per_unit_step = 1.0;
  StepSizeController c(r);
  const double h = c.Propose(0.0, 0.001);  // the timestep, 1e-3
  const double e = 0.5e-6;                // scaled: 0.5e-3 = ε/2
  StepDecision d = c.Decide(true, e, h);
  EXPECT_TRUE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.9 * h * 2.0);
  // Scaled error 4 ε: rejected, retry 0.9 h / 4.
  d = c.Decide(true, 4e-6, h);
  EXPECT_FALSE(d.accept);
  EXPECT_DOUBLE_EQ(d.h_next, 0.225 * h);
  // The raw error did not shrink faster than h^1.5 with h (the same 4e-6 at
  // 0.225 h): a velocity jump, held to the per-step bound on the raw error
  // (order 2): 4e-6 ≤ ε, accepted; after the rejection the step does not
  // grow (§11.4).
  d = c.Decide(true, 4e-6, 0.225 * h);
  EXPECT_TRUE(d.accept);
  EXPECT_EQ(d.h_next, 0.225 * h);
  // Without that rejection the same raw bound grows the step, capped at 5.
  bool at_min = false;
  EXPECT_DOUBLE_EQ(
      AdjustStepSize(r.control, 4e-6, 1e-3, 0.225 * h, 1.0, 1e-14, &at_min).h_next,
      5 * 0.225 * h);
}

}  // namespace
}  // namespace mjcenic
