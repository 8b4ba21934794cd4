// Python bindings: mjcenic._mjcenic. Works directly on the official
// mujoco.MjModel / mujoco.MjData objects through their raw addresses; keeps
// Python references to them for as long as it holds the pointers.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/options_table.h"
#include "mjcenic/integrator/stepper.h"
#include "mujoco_errors.h"
#include "plugin.h"

namespace py = pybind11;

namespace {

const mjModel* AsModel(const py::object& o) {
  if (!py::hasattr(o, "_address") || !py::hasattr(o, "nq"))
    throw py::type_error("mjcenic: expected a mujoco.MjModel");
  return reinterpret_cast<const mjModel*>(o.attr("_address").cast<std::uintptr_t>());
}

mjData* AsData(const py::object& o) {
  if (!py::hasattr(o, "_address") || !py::hasattr(o, "qpos"))
    throw py::type_error("mjcenic: expected a mujoco.MjData");
  return reinterpret_cast<mjData*>(o.attr("_address").cast<std::uintptr_t>());
}

void Check(const absl::Status& s) {
  if (s.ok()) return;
  if (mjcenic::plugin::IsMujocoFatalError(s)) {
    // The mujoco package's own exception type, as from mujoco.mj_step.
    py::object fatal = py::module_::import("mujoco").attr("FatalError");
    PyErr_SetString(fatal.ptr(), std::string(s.message()).c_str());
    throw py::error_already_set();
  }
  if (s.code() == absl::StatusCode::kInvalidArgument) throw py::value_error(std::string(s.message()));
  throw std::runtime_error(std::string(s.message()));
}

// An option's value as Python sees it: numbers and flags natively, names as str.
template <class Codec, class T>
py::object OptionValue(const T& value) {
  if constexpr (std::is_same_v<typename Codec::Value, double> ||
                std::is_same_v<typename Codec::Value, int> ||
                std::is_same_v<Codec, mjcenic::option_codec::Flag>)
    return py::cast(value);
  else
    return py::str(Codec::Format(value));
}

py::dict OptionsDict(const mjcenic::StepperOptions& o) {
  py::dict r;
#define MJCENIC_PY_OPTION(key, member, codec, doc) \
  r[#key] = OptionValue<mjcenic::option_codec::codec>(o.member);
  MJCENIC_OPTIONS(MJCENIC_PY_OPTION)
#undef MJCENIC_PY_OPTION
  return r;
}

// One dict per option: key, default (as text, as in MJCF), expected values, doc.
py::list OptionTable() {
  const mjcenic::StepperOptions defaults;
  py::list rows;
#define MJCENIC_PY_OPTION_ROW(key, member, codec, doc)                            \
  rows.append(py::dict(py::arg("key") = #key,                                     \
                       py::arg("default") = mjcenic::option_codec::codec::Format( \
                           defaults.member),                                      \
                       py::arg("expect") = mjcenic::option_codec::codec::Expect(), \
                       py::arg("doc") = doc));
  MJCENIC_OPTIONS(MJCENIC_PY_OPTION_ROW)
#undef MJCENIC_PY_OPTION_ROW
  return rows;
}

py::list StatTable() {
  py::list rows;
#define MJCENIC_PY_STAT_ROW(name, type, doc) \
  rows.append(py::dict(py::arg("name") = #name, py::arg("type") = #type, py::arg("doc") = doc));
  MJCENIC_STATS(MJCENIC_PY_STAT_ROW)
#undef MJCENIC_PY_STAT_ROW
  return rows;
}

using Vector = py::array_t<double, py::array::c_style | py::array::forcecast>;

// A state vector of n entries, or zeros (both sides) when not given.
const double* StateArg(const std::optional<Vector>& x, int n, const char* name,
                       const std::vector<double>& zeros) {
  if (!x) return zeros.data();
  if (x->ndim() != 1 || x->shape(0) != n)
    throw py::value_error(std::string("mjcenic.error_norm: ") + name + " must have " +
                          std::to_string(n) + " entries");
  return x->data();
}

// mjcenic::ErrorNorm of (q, v, act) - (q_ref, v_ref, act_ref), as the
// stepper measures its error estimate.
double ErrorNormOf(const py::object& model, const Vector& q_ref, const Vector& q,
                   const std::optional<Vector>& v_ref, const std::optional<Vector>& v,
                   const std::optional<Vector>& act_ref, const std::optional<Vector>& act,
                   const std::string& kind, double length_scale) {
  const mjModel* m = AsModel(model);
  mjcenic::ErrorNormKind k;
  if (!mjcenic::option_codec::ErrorNormName::Parse(kind, &k))
    throw py::value_error("mjcenic.error_norm: kind must be " +
                          mjcenic::option_codec::ErrorNormName::Expect());
  if (!(length_scale >= 0)) throw py::value_error("mjcenic.error_norm: length_scale must be >= 0");
  if (v_ref.has_value() != v.has_value() || act_ref.has_value() != act.has_value())
    throw py::value_error("mjcenic.error_norm: give both or neither of v_ref/v and act_ref/act");
  const int nq = static_cast<int>(m->nq), nv = static_cast<int>(m->nv), na = static_cast<int>(m->na);
  const std::vector<double> zeros(std::max({nq, nv, na, 1}), 0.0);
  const std::optional<Vector> qr(q_ref), qq(q);
  const double* a_q = StateArg(qq, nq, "q", zeros);
  const double* b_q = StateArg(qr, nq, "q_ref", zeros);
  const double* a_v = StateArg(v, nv, "v", zeros);
  const double* b_v = StateArg(v_ref, nv, "v_ref", zeros);
  const double* a_act = StateArg(act, na, "act", zeros);
  const double* b_act = StateArg(act_ref, na, "act_ref", zeros);
  mjcenic::ErrorNorm norm(m, k, length_scale);
  int worst;
  return norm.Compute(m, a_q, a_v, a_act, b_q, b_v, b_act, &worst);
}

std::string ToText(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  return py::str(v).cast<std::string>();
}

class PyStepper {
 public:
  PyStepper(py::object model, py::dict options, py::object controller)
      : model_(std::move(model)), controller_(std::move(controller)), m_(AsModel(model_)),
        guard_(m_) {
    mjcenic::StepperOptions o;
    Check(mjcenic::plugin::OptionsFromModel(m_, &o));
    for (auto item : options) Check(mjcenic::SetOption(&o, ToText(item.first), ToText(item.second)));
    auto s = mjcenic::Stepper::Create(m_, o);
    Check(s.status());
    stepper_ = std::move(*s);
    if (!controller_.is_none()) {
      if (!PyCallable_Check(controller_.ptr()))
        throw py::type_error("mjcenic: controller must be callable as controller(model, data)");
      stepper_->SetController([this](const mjModel*, mjData*) -> bool {
        py::gil_scoped_acquire gil;
        bool ok = true;
        try {
          controller_(model_, data_);
        } catch (py::error_already_set& e) {
          controller_error_ = e.what();
          ok = false;
        }
        // Calls into the mujoco package replace this thread's MuJoCo error handler.
        mjcenic::plugin::FatalErrorGuard::Reinstall();
        return ok;
      });
    }
  }

  // Runs fn with the GIL released and `data` visible to the controller;
  // raises the controller's Python error, if any, or mujoco.FatalError for a
  // MuJoCo fatal error inside the step (d is then restored).
  template <class Fn>
  void Run(const py::object& data, mjData* d, Fn&& fn) {
    data_ = data;
    controller_error_.clear();
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = guard_.Run(m_, d, fn);
    }
    data_ = py::none();
    if (!controller_error_.empty())
      throw std::runtime_error("mjcenic: the controller raised: " + controller_error_);
    Check(s);
  }

  mjData* Data(const py::object& data) {
    mjData* d = AsData(data);
    if (d->signature != m_->signature)
      throw py::value_error("mjcenic: this MjData was not made for the stepper's MjModel");
    return d;
  }

  void Step(const py::object& data, int nstep) {
    mjData* d = Data(data);
    Run(data, d, [&] {
      absl::Status s;
      for (int i = 0; i < nstep && s.ok(); ++i) s = stepper_->Step(d);
      return s;
    });
  }

  void AdvanceTo(const py::object& data, double t) {
    mjData* d = Data(data);
    Run(data, d, [&] { return stepper_->AdvanceTo(d, t); });
  }

  void StepOnce(const py::object& data) {
    mjData* d = Data(data);
    Run(data, d, [&] { return stepper_->StepOnce(d); });
  }

  py::dict Stats() const {
    const mjcenic::StepperStats& st = stepper_->stats();
    py::dict r;
#define MJCENIC_PY_STAT(name, type, doc) r[#name] = st.name;
    MJCENIC_STATS(MJCENIC_PY_STAT)
#undef MJCENIC_PY_STAT
    r["accepted_steps"] = st.steps;  // alias of steps
    return r;
  }

  py::dict Options() const { return OptionsDict(stepper_->options()); }

  const mjcenic::Stepper& stepper() const { return *stepper_; }
  py::object model() const { return model_; }

 private:
  py::object model_;
  py::object controller_;
  py::object data_ = py::none();
  std::string controller_error_;
  const mjModel* m_;
  mjcenic::plugin::FatalErrorGuard guard_;
  std::unique_ptr<mjcenic::Stepper> stepper_;
};

}  // namespace

PYBIND11_MODULE(_mjcenic, mod) {
  if (mj_version() != mjVERSION_HEADER)
    throw std::runtime_error(std::string("mjcenic was built against MuJoCo ") +
                             std::to_string(mjVERSION_HEADER) + " but libmujoco " +
                             mj_versionString() + " is loaded");
  mjcenic::plugin::Register();
  mod.attr("MUJOCO_VERSION_HEADER") = mjVERSION_HEADER;
  mod.def("option_keys", [] { return mjcenic::OptionKeys(); },
          "Names of all stepper options (also the MJCF plugin config keys).");
  mod.def("option_table", &OptionTable,
          "One dict per option (key, default, expect, doc), in the order of the README table.");
  mod.def("stat_table", &StatTable, "One dict per statistic (name, type, doc).");
  mod.def("error_norm", &ErrorNormOf, py::arg("model"), py::arg("q_ref"), py::arg("q"),
          py::arg("v_ref") = py::none(), py::arg("v") = py::none(), py::arg("act_ref") = py::none(),
          py::arg("act") = py::none(), py::arg("kind") = "weighted", py::arg("length_scale") = 0.0,
          "The stepper's error norm of (q, v, act) - (q_ref, v_ref, act_ref).");
  mod.def(
      "validate_model_config",
      [](py::object model) {
        mjcenic::StepperOptions o;
        Check(mjcenic::plugin::OptionsFromModel(AsModel(model), &o));
      },
      "Raises ValueError naming the key if the model's mjcenic plugin config is invalid.");
  py::class_<PyStepper>(mod, "_Stepper")
      .def(py::init<py::object, py::dict, py::object>(), py::arg("model"), py::arg("options"),
           py::arg("controller") = py::none())
      .def("step", &PyStepper::Step, py::arg("data"), py::arg("nstep") = 1)
      .def("advance_to", &PyStepper::AdvanceTo, py::arg("data"), py::arg("time"))
      .def("step_once", &PyStepper::StepOnce, py::arg("data"))
      .def_property_readonly("stats", &PyStepper::Stats)
      .def_property_readonly("options", &PyStepper::Options)
      .def_property_readonly("warnings",
                             [](const PyStepper& s) { return s.stepper().warnings(); })
      .def_property_readonly("next_step", [](const PyStepper& s) { return s.stepper().next_step(); })
      .def_property_readonly("length_scale",
                             [](const PyStepper& s) { return s.stepper().length_scale(); })
      .def_property_readonly("model", &PyStepper::model);
}
