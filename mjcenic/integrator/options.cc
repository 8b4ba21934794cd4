#include "mjcenic/integrator/options.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <absl/strings/str_cat.h>

#include "mjcenic/adapter/mujoco_state.h"
#include "mjcenic/integrator/options_table.h"

namespace mjcenic {

namespace option_codec {

bool ParseReal(std::string_view text, double* x) {
  const std::string s(text);
  // Decimal notation only: strtod would also read hexadecimal ("0x10" as 16).
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return false;
  char* end;
  *x = std::strtod(s.c_str(), &end);
  return *end == 0 && std::isfinite(*x);
}

std::string FormatReal(double x) {
  char b[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(b, sizeof(b), "%.*g", digits, x);
    if (std::strtod(b, nullptr) == x) break;
  }
  return b;
}

bool NonNegativeOrAuto::Parse(std::string_view s, double* x) {
  double y;
  if (!ParseReal(s, &y) || !(y >= 0 || y == -1)) return false;
  *x = y;
  return true;
}

bool LengthScaleValue::Parse(std::string_view s, double* x) {
  double y;
  if (!ParseReal(s, &y) || !(y == 0 || y >= kMinLengthScale)) return false;
  *x = y;
  return true;
}

bool StepCount::Parse(std::string_view s, long* n) {
  double x;
  if (!ParseReal(s, &x) || x < 0 || x != std::floor(x) || x > 1e15) return false;
  *n = static_cast<long>(x);
  return true;
}

bool Count::Parse(std::string_view s, int* n) {
  double x;
  if (!ParseReal(s, &x) || x < 1 || x != std::floor(x) || x > 1e6) return false;
  *n = static_cast<int>(x);
  return true;
}

bool Flag::Parse(std::string_view s, bool* b) {
  if (s == "true" || s == "1" || s == "on") *b = true;
  else if (s == "false" || s == "0" || s == "off") *b = false;
  else return false;
  return true;
}

bool FrictionlossName::Parse(std::string_view s, bool* b) {
  if (s == "mujoco") *b = false;
  else if (s == "stiction") *b = true;
  else return false;
  return true;
}

}  // namespace option_codec

namespace {

// The name of an enumerator whose values are 0, 1, ... in the order of names.
template <class E, size_t N>
const char* NameOf(const char* const (&names)[N], E e) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "unknown";
}

}  // namespace

const char* ToString(LinearSolverKind k) {
  return NameOf({"auto", "dense", "sparse", "islands", "pcg", "lowrank", "block", "tree"}, k);
}

const char* ToString(Mode mode) { return NameOf({"fixed", "cenic", "trapezoid"}, mode); }

const char* ToString(ControllerTreatment t) {
  return NameOf({"zero_order_hold", "explicit", "implicit"}, t);
}

const char* ToString(ErrorEstimate e) { return NameOf({"doubling", "embedded"}, e); }

bool ParseMode(const char* s, Mode* mode) { return option_codec::ModeName::Parse(s, mode); }

bool ParseControllerTreatment(const char* s, ControllerTreatment* t) {
  return option_codec::ControllerName::Parse(s, t);
}

absl::Status SetOption(StepperOptions* options, std::string_view key, std::string_view value) {
  // One branch per row of MJCENIC_OPTIONS: the codec parses into the member.
#define MJCENIC_SET_OPTION(name, member, codec, level, doc)                               \
  if (key == #name) {                                                                 \
    if (option_codec::codec::Parse(value, &options->member)) return absl::OkStatus(); \
    return absl::InvalidArgumentError(absl::StrCat("mjcenic option '", #name,           \
                                                   "': bad value '", std::string(value), \
                                                   "' (expected ",                      \
                                                   option_codec::codec::Expect(), ")")); \
  }
  MJCENIC_OPTIONS(MJCENIC_SET_OPTION)
#undef MJCENIC_SET_OPTION
  std::string keys;
  for (const std::string& k : OptionKeys()) keys += (keys.empty() ? "" : ", ") + k;
  return absl::InvalidArgumentError(
      absl::StrCat("mjcenic: unknown option '", std::string(key), "' (known: ", keys, ")"));
}

const std::vector<std::string>& OptionKeys() {
#define MJCENIC_OPTION_KEY(name, member, codec, level, doc) #name,
  static const std::vector<std::string> keys = {MJCENIC_OPTIONS(MJCENIC_OPTION_KEY)};
#undef MJCENIC_OPTION_KEY
  return keys;
}

namespace {

absl::Status InvalidOption(const char* what) {
  return absl::InvalidArgumentError(absl::StrCat("mjcenic: invalid option ", what));
}

// The options that apply to one scheme only, and the schemes' exclusions.
absl::Status CheckSchemeOptions(const StepperOptions& o) {
  if (o.extrapolate && o.mode != Mode::kCenic)
    return InvalidOption(absl::StrCat("extrapolate (applies to mode cenic only, not ",
                                      ToString(o.mode), ")")
                             .c_str());
  if (o.error_estimate == ErrorEstimate::kEmbedded && o.mode != Mode::kCenic)
    return InvalidOption(absl::StrCat("error_estimate embedded (applies to mode cenic only, not ",
                                      ToString(o.mode), ")")
                             .c_str());
  if (o.error_estimate == ErrorEstimate::kEmbedded && o.extrapolate)
    return InvalidOption("extrapolate with error_estimate embedded (extrapolation needs the "
                         "half steps of doubling)");
  return absl::OkStatus();
}

// The global_accuracy recipe (docs/how-it-works.md, "Accuracy: local and
// global error"), for options that set it.
absl::StatusOr<StepperOptions> ExpandGlobalAccuracy(const mjModel* m, const StepperOptions& o) {
  if (o.mode != Mode::kCenic)
    return InvalidOption(absl::StrCat("global_accuracy (applies to mode cenic only, not ",
                                      ToString(o.mode), ")")
                             .c_str());
  StepperOptions g = o;
  g.error_norm = ErrorNormKind::kFullState;
  g.extrapolate = g.error_estimate == ErrorEstimate::kDoubling;
  if (g.speculative_margin == 0)
    g.speculative_margin = 0.1 * ErrorNorm(m, g.error_norm, g.length_scale).length_scale();
  return g;
}

}  // namespace

absl::StatusOr<StepperOptions> ResolveOptions(const mjModel* m, const StepperOptions& o) {
  auto bad = [](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("mjcenic: invalid option ", what));
  };
  if (!(o.accuracy >= kMinAccuracy) || !std::isfinite(o.accuracy))
    return bad("accuracy (must be >= 1e-12: smaller errors are double round-off)");
  if (!(o.accuracy <= kMaxAccuracy))
    return bad(absl::StrCat("accuracy ", o.accuracy, " (must be <= 1: an error of the model's size)")
                   .c_str());
  if (!(o.kappa <= 1)) return bad(absl::StrCat("kappa ", o.kappa, " (must be <= 1)").c_str());
  // The Newton tolerances: above kMaxNewtonTolerance the warm start passes the
  // stopping test with 0 iterations on slow models and the physics freezes.
  if (!(o.solver.tolerance <= kMaxNewtonTolerance))
    return bad(absl::StrCat("solver_tolerance ", o.solver.tolerance, " (must be <= ",
                            kMaxNewtonTolerance, ")")
                   .c_str());
  if (o.mode != Mode::kFixed && o.adaptive_tolerance && o.error_control &&
      !(o.kappa * o.accuracy <= kMaxNewtonTolerance))
    return bad(absl::StrCat("kappa·accuracy = ", o.kappa, "·", o.accuracy,
                            " (the adaptive Newton tolerance, must be <= ", kMaxNewtonTolerance,
                            "; lower kappa or accuracy)")
                   .c_str());
  if (!(o.max_step >= 0) || !std::isfinite(o.max_step)) return bad("max_step (must be >= 0)");
  if (!(o.initial_step >= 0) || !std::isfinite(o.initial_step))
    return bad("initial_step (must be >= 0)");
  if (!(o.min_step >= 0) || !std::isfinite(o.min_step)) return bad("min_step (must be >= 0)");
  if (!(o.length_scale == 0 || o.length_scale >= kMinLengthScale) ||
      !std::isfinite(o.length_scale))
    return bad("length_scale (must be 0, from the model, or >= 1e-6 m)");
  if (!(o.error_per_unit_step >= 0) || !std::isfinite(o.error_per_unit_step))
    return bad("error_per_unit_step (must be >= 0 s)");
  // The floors together (docs/how-it-works.md, "Errors and progress"): a given length scale
  // L makes a translation of the model's size (stat.extent) a component of
  // extent/L in the weighted norm, with that much more round-off; the
  // accuracy must stay above it.
  if (o.length_scale > 0 && o.error_norm != ErrorNormKind::kDrake) {
    const double floor = kMinAccuracy * std::max(1.0, adapter::Extent(m) / o.length_scale);
    if (o.accuracy < floor)
      return bad(absl::StrCat("accuracy ", o.accuracy, " with length_scale ", o.length_scale,
                              " m: translations of the model's size (", adapter::Extent(m),
                              " m) would have to be exact to ", o.accuracy * o.length_scale,
                              " m, below double round-off; needs accuracy >= ", floor)
                     .c_str());
  }
  if (!(o.velocity_horizon > 0) || !std::isfinite(o.velocity_horizon))
    return bad("velocity_horizon (must be > 0 s)");
  if (absl::Status s = CheckStepBounds(o); !s.ok()) return s;
  if (o.max_steps_per_call < 0) return bad("max_steps_per_call (must be >= 0)");
  if (!(o.kappa > 0)) return bad("kappa (must be > 0)");
  if (!(o.icf.stiction_tolerance > 0)) return bad("stiction_tolerance (must be > 0)");
  if (!(o.contact.mu_static_ratio >= 1)) return bad("mu_static_ratio (must be >= 1)");
  if (!(o.solver.tolerance > 0) || o.solver.max_iterations < 1)
    return bad("solver tolerance (> 0) / max_iterations (>= 1)");
  if (!(o.control.safety > 0 && o.control.safety <= 1 && o.control.max_growth > 1 &&
        o.control.min_shrink > 0 && o.control.min_shrink < 1 && o.control.order > 0))
    return bad("control (safety in (0,1], max_growth > 1, min_shrink in (0,1), order > 0)");
  if (absl::Status s = CheckSchemeOptions(o); !s.ok()) return s;
  if (adapter::HasHistoryBuffers(m))
    return absl::UnimplementedError(
        "mjcenic: actuator/sensor delay and history buffers are not supported");
  if (!o.global_accuracy) return o;
  return ExpandGlobalAccuracy(m, o);
}

absl::Status CheckStepBounds(const StepperOptions& o) {
  // The largest step: max_step, or its default where the mode has one
  // (fixed-step modes default to opt.timestep, which may change later).
  const bool controlled = o.mode != Mode::kFixed && o.error_control;
  const double h_max = o.max_step > 0 ? o.max_step : controlled ? kDefaultMaxStep : 0;
  const std::string max_name =
      o.max_step > 0 ? absl::StrCat("max_step (", o.max_step, " s)")
                     : absl::StrCat("the default max_step (", kDefaultMaxStep, " s)");
  if (h_max > 0 && o.min_step > h_max)
    return absl::InvalidArgumentError(absl::StrCat("mjcenic: invalid options: min_step (",
                                                   o.min_step, " s) exceeds ", max_name));
  if (h_max > 0 && o.initial_step > h_max)
    return absl::InvalidArgumentError(absl::StrCat("mjcenic: invalid options: initial_step (",
                                                   o.initial_step, " s) exceeds ", max_name));
  return absl::OkStatus();
}

}  // namespace mjcenic
