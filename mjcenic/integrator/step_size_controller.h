// Step-size selection with dead band (cenic-math.md §11.4, Drake's constants):
// accept iff ‖e‖ ≤ ε_acc; h_new = ρ h (ε_acc/‖e‖)^(1/p).
#pragma once

namespace mjcenic {

struct StepSizeControl {
  double safety = 0.9;        // ρ
  double max_growth = 5.0;
  double min_shrink = 0.1;
  double grow_threshold = 1.2;  // grow only if the proposal is ≥ 1.2 h
  double shrink_factor = 0.9;   // a rejected step retries with ≤ 0.9 h
  double order = 2.0;           // error-estimate order p
};

struct StepDecision {
  bool accept = false;
  double h_next = 0;
  bool underflow = false;  // the needed step is below the minimum
};

// `at_minimum` persists over the retries of one outer step (reset by the caller).
StepDecision AdjustStepSize(const StepSizeControl& c, double error, double accuracy, double h,
                            double h_max, double h_min, bool* at_minimum);

}  // namespace mjcenic
