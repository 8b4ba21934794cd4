// Python bindings: mjcenic._mjcenic. Works directly on the official
// mujoco.MjModel / mujoco.MjData objects through their raw addresses; keeps
// Python references to them for as long as it holds the pointers.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
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
  if (s.code() == absl::StatusCode::kInvalidArgument) throw py::value_error(std::string(s.message()));
  throw std::runtime_error(std::string(s.message()));
}

std::string ToText(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  return py::str(v).cast<std::string>();
}

class PyStepper {
 public:
  PyStepper(py::object model, py::dict options, py::object controller)
      : model_(std::move(model)), controller_(std::move(controller)) {
    m_ = AsModel(model_);
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
        try {
          controller_(model_, data_);
          return true;
        } catch (py::error_already_set& e) {
          controller_error_ = e.what();
          return false;
        }
      });
    }
  }

  // Runs fn with the GIL released and `data` visible to the controller;
  // raises the controller's Python error, if any.
  template <class Fn>
  void Run(const py::object& data, Fn&& fn) {
    data_ = data;
    controller_error_.clear();
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = fn();
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
    Run(data, [&] {
      absl::Status s;
      for (int i = 0; i < nstep && s.ok(); ++i) s = stepper_->Step(d);
      return s;
    });
  }

  void AdvanceTo(const py::object& data, double t) {
    mjData* d = Data(data);
    Run(data, [&] { return stepper_->AdvanceTo(d, t); });
  }

  void StepOnce(const py::object& data) {
    mjData* d = Data(data);
    Run(data, [&] { return stepper_->StepOnce(d); });
  }

  py::dict Stats() const {
    const mjcenic::StepperStats& st = stepper_->stats();
    py::dict r;
    r["steps"] = st.steps;
    r["accepted_steps"] = st.steps;
    r["rejected_steps"] = st.rejected_steps;
    r["h_min"] = st.h_min;
    r["h_median"] = st.h_median;
    r["h_max"] = st.h_max;
    r["last_h"] = st.last_h;
    r["solves"] = st.solves;
    r["newton_iterations"] = st.newton_iterations;
    r["factorizations"] = st.factorizations;
    r["ls_iterations"] = st.ls_iterations;
    r["geometry_queries"] = st.geometry_queries;
    r["controller_calls"] = st.controller_calls;
    r["max_penetration"] = st.max_penetration;
    r["time_geometry"] = st.time_geometry;
    r["time_assembly"] = st.time_assembly;
    r["time_solve"] = st.time_solve;
    r["time_total"] = st.time_total;
    return r;
  }

  py::dict Options() const {
    const mjcenic::StepperOptions& o = stepper_->options();
    py::dict r;
    r["mode"] = mjcenic::ToString(o.mode);
    r["accuracy"] = o.accuracy;
    r["max_step"] = o.max_step;
    r["error_norm"] = mjcenic::ToString(o.error_norm);
    r["stiction_tolerance"] = o.icf.stiction_tolerance;
    r["contact_stiffness"] = o.contact.stiffness;
    r["contact_dissipation"] = o.contact.dissipation;
    r["mu_static"] = o.contact.mu_static;
    r["mu_static_ratio"] = o.contact.mu_static_ratio;
    r["hessian_reuse"] = o.solver.hessian_reuse;
    r["island_line_search"] = o.solver.island_line_search;
    r["adaptive_tolerance"] = o.adaptive_tolerance;
    r["controller_mode"] = mjcenic::ToString(o.controller);
    return r;
  }

  const mjcenic::Stepper& stepper() const { return *stepper_; }
  py::object model() const { return model_; }

 private:
  py::object model_;
  py::object controller_;
  py::object data_ = py::none();
  std::string controller_error_;
  const mjModel* m_;
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
