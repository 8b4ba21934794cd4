#include "mjcenic/integrator/options.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include <absl/strings/str_cat.h>

namespace mjcenic {

namespace {

using Setter = std::function<absl::Status(StepperOptions*, const std::string&)>;

absl::Status Bad(const std::string& key, const std::string& value, const std::string& expect) {
  return absl::InvalidArgumentError(absl::StrCat("mjcenic option '", key, "': bad value '",
                                                 value, "' (expected ", expect, ")"));
}

bool ParseDouble(const std::string& s, double* x) {
  if (s.empty()) return false;
  char* end;
  *x = std::strtod(s.c_str(), &end);
  return *end == 0 && std::isfinite(*x);
}

// A number in [lo, hi] (open at lo if strict).
Setter Number(std::function<double*(StepperOptions*)> field, double lo, bool strict,
              const char* expect) {
  return [=](StepperOptions* o, const std::string& v) -> absl::Status {
    double x;
    if (!ParseDouble(v, &x) || (strict ? !(x > lo) : !(x >= lo))) return Bad("", v, expect);
    *field(o) = x;
    return absl::OkStatus();
  };
}

Setter Flag(std::function<bool*(StepperOptions*)> field) {
  return [=](StepperOptions* o, const std::string& v) -> absl::Status {
    if (v == "true" || v == "1" || v == "on") *field(o) = true;
    else if (v == "false" || v == "0" || v == "off") *field(o) = false;
    else return Bad("", v, "true or false");
    return absl::OkStatus();
  };
}

const std::map<std::string, Setter>& Setters() {
  static const auto* setters = new std::map<std::string, Setter>{
      {"mode",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         return ParseMode(v.c_str(), &o->mode) ? absl::OkStatus()
                                               : Bad("", v, "fixed, cenic or trapezoid");
       }},
      {"accuracy", Number([](StepperOptions* o) { return &o->accuracy; }, 0, true, "> 0")},
      {"max_step", Number([](StepperOptions* o) { return &o->max_step; }, 0, false, ">= 0")},
      {"initial_step",
       Number([](StepperOptions* o) { return &o->initial_step; }, 0, false, ">= 0")},
      {"min_step", Number([](StepperOptions* o) { return &o->min_step; }, 0, false, ">= 0")},
      {"error_norm",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         for (ErrorNormKind k :
              {ErrorNormKind::kWeighted, ErrorNormKind::kDrake, ErrorNormKind::kFullState})
           if (v == ToString(k)) {
             o->error_norm = k;
             return absl::OkStatus();
           }
         return Bad("", v, "weighted, drake or full_state");
       }},
      {"length_scale",
       Number([](StepperOptions* o) { return &o->length_scale; }, 0, false, ">= 0")},
      {"error_control", Flag([](StepperOptions* o) { return &o->error_control; })},
      {"adaptive_tolerance", Flag([](StepperOptions* o) { return &o->adaptive_tolerance; })},
      {"kappa", Number([](StepperOptions* o) { return &o->kappa; }, 0, true, "> 0")},
      {"stiction_tolerance",
       Number([](StepperOptions* o) { return &o->icf.stiction_tolerance; }, 0, true,
              "> 0")},
      {"speculative_margin",
       Number([](StepperOptions* o) { return &o->speculative_margin; }, 0, false, ">= 0 [m]")},
      {"sigma_r",
       Number([](StepperOptions* o) { return &o->icf.sigma_R; }, 0, false,
              ">= 0 (ICF friction regularization factor)")},
      {"stiction_anchors", Flag([](StepperOptions* o) { return &o->icf.stiction_anchors; })},
      {"transition_width",
       Number([](StepperOptions* o) { return &o->icf.transition_width; }, 0, true, "> 0")},
      {"contact_stiffness",
       Number([](StepperOptions* o) { return &o->contact.stiffness; }, 0, false,
              ">= 0 (0: from solref/solimp)")},
      {"contact_dissipation",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         double x;
         if (!ParseDouble(v, &x) || !(x >= 0 || x == -1))
           return Bad("", v, ">= 0, or -1 for the solref mapping");
         o->contact.dissipation = x;
         return absl::OkStatus();
       }},
      {"contact_stiffening", Flag([](StepperOptions* o) { return &o->contact.stiffening; })},
      {"stiffness_scale",
       Number([](StepperOptions* o) { return &o->contact.stiffness_scale; }, 0, true,
              "> 0")},
      {"mu_static",
       Number([](StepperOptions* o) { return &o->contact.mu_static; }, 0, false, ">= 0")},
      {"mu_static_ratio",
       Number([](StepperOptions* o) { return &o->contact.mu_static_ratio; }, 1, false,
              ">= 1")},
      {"frictionloss_regularization",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         if (v == "mujoco") o->contact.frictionloss_stiction = false;
         else if (v == "stiction") o->contact.frictionloss_stiction = true;
         else return Bad("", v, "mujoco or stiction");
         return absl::OkStatus();
       }},
      {"controller_mode",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         return ParseControllerTreatment(v.c_str(), &o->controller)
                    ? absl::OkStatus()
                    : Bad("", v, "zero_order_hold, explicit or implicit");
       }},
      {"extrapolate", Flag([](StepperOptions* o) { return &o->extrapolate; })},
      {"global_accuracy", Flag([](StepperOptions* o) { return &o->global_accuracy; })},
      {"hessian_reuse", Flag([](StepperOptions* o) { return &o->solver.hessian_reuse; })},
      {"island_line_search",
       Flag([](StepperOptions* o) { return &o->solver.island_line_search; })},
      {"line_search_guess",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         if (v == "cubic") o->solver.line_search_guess = icf::LineSearchGuess::kCubic;
         else if (v == "quadratic") o->solver.line_search_guess = icf::LineSearchGuess::kQuadratic;
         else return Bad("", v, "cubic or quadratic");
         return absl::OkStatus();
       }},
      {"linear_solver",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         if (v == "auto") o->solver.linear_solver = icf::LinearSolverKind::kAuto;
         else if (v == "dense") o->solver.linear_solver = icf::LinearSolverKind::kDense;
         else if (v == "sparse") o->solver.linear_solver = icf::LinearSolverKind::kSparse;
         else if (v == "islands") o->solver.linear_solver = icf::LinearSolverKind::kIslands;
         else if (v == "pcg") o->solver.linear_solver = icf::LinearSolverKind::kPcg;
         else return Bad("", v, "auto, dense, sparse, islands or pcg");
         return absl::OkStatus();
       }},
      {"pcg_tolerance",
       Number([](StepperOptions* o) { return &o->solver.pcg_tolerance; }, 0, true, "> 0")},
      {"solver_tolerance",
       Number([](StepperOptions* o) { return &o->solver.tolerance; }, 0, true, "> 0")},
      {"max_iterations",
       [](StepperOptions* o, const std::string& v) -> absl::Status {
         double x;
         if (!ParseDouble(v, &x) || x < 1 || x != std::floor(x) || x > 1e6)
           return Bad("", v, "an integer >= 1");
         o->solver.max_iterations = static_cast<int>(x);
         return absl::OkStatus();
       }},
  };
  return *setters;
}

}  // namespace

const char* ToString(ControllerTreatment t) {
  switch (t) {
    case ControllerTreatment::kZeroOrderHold: return "zero_order_hold";
    case ControllerTreatment::kExplicit: return "explicit";
    case ControllerTreatment::kImplicit: return "implicit";
  }
  return "unknown";
}

bool ParseControllerTreatment(const char* s, ControllerTreatment* t) {
  for (ControllerTreatment x : {ControllerTreatment::kZeroOrderHold, ControllerTreatment::kExplicit,
                                ControllerTreatment::kImplicit})
    if (std::string(s) == ToString(x)) {
      *t = x;
      return true;
    }
  return false;
}

absl::Status SetOption(StepperOptions* options, std::string_view key, std::string_view value) {
  const auto& setters = Setters();
  const auto it = setters.find(std::string(key));
  if (it == setters.end()) {
    std::string keys;
    for (const auto& [k, unused] : setters) keys += (keys.empty() ? "" : ", ") + k;
    return absl::InvalidArgumentError(
        absl::StrCat("mjcenic: unknown option '", std::string(key), "' (known: ", keys, ")"));
  }
  const absl::Status s = it->second(options, std::string(value));
  if (s.ok()) return s;
  // Put the key into the message.
  const std::string msg(s.message());
  return absl::InvalidArgumentError(absl::StrCat("mjcenic option '", std::string(key),
                                                 "': bad value '", std::string(value), "'",
                                                 msg.substr(msg.find(" (expected"))));
}

const std::vector<std::string>& OptionKeys() {
  static const auto* keys = [] {
    auto* k = new std::vector<std::string>;
    for (const auto& [key, unused] : Setters()) k->push_back(key);
    return k;
  }();
  return *keys;
}

}  // namespace mjcenic
