#include "mjcenic/integrator/step_size_controller.h"

#include <algorithm>
#include <cmath>

namespace mjcenic {

StepDecision AdjustStepSize(const StepSizeControl& c, double e, double accuracy, double h,
                            double h_max, double h_min, bool* at_minimum) {
  StepDecision out;
  if (!std::isfinite(e)) {
    out.h_next = c.min_shrink * h;
    out.underflow = out.h_next < h_min;
    return out;
  }
  double hn = (e == 0) ? c.max_growth * h
                       : c.safety * h * std::pow(accuracy / e, 1.0 / c.order);
  if (hn > h) {
    *at_minimum = false;
    if (hn < c.grow_threshold * h) hn = h;  // dead band: no small growth
  }
  if (hn < h && *at_minimum) {
    out.accept = true;
    out.h_next = h;
    return out;
  }
  if (hn < h) hn = (e <= accuracy) ? h : std::min(hn, c.shrink_factor * h);
  hn = std::clamp(hn, c.min_shrink * h, c.max_growth * h);
  // Accept iff the error is within the accuracy (the dead band keeps h, growth
  // raises it). Decided before the h_max clamp: a step stretched by ≤ 0.1 % to
  // land on a target may exceed h_max and must still be accepted.
  const bool accept = hn >= h;
  hn = std::min(hn, h_max);
  if (hn < h_min && !accept) {
    out.underflow = true;
    out.h_next = h_min;
    return out;
  }
  hn = std::max(hn, h_min);
  if (hn == h_min) {
    *at_minimum = true;
    if (!accept) {
      out.h_next = hn;
      return out;  // reject
    }
  }
  out.accept = accept;
  out.h_next = hn;
  return out;
}

}  // namespace mjcenic
