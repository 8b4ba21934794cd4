// Python bindings: mjcenic._mjcenic. Works directly on the official
// mujoco.MjModel / mujoco.MjData objects through their raw addresses; keeps
// Python references to them for as long as it holds the pointers.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

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

// "TypeName: message" of the Python error pending on this thread (GIL held),
// which is cleared; "" if none.
std::string TakePythonError() {
  if (!PyErr_Occurred()) return {};
  py::error_already_set e;  // fetches and clears it
  std::string text = py::str(e.type().attr("__name__")).cast<std::string>();
  const std::string value = py::str(e.value()).cast<std::string>();
  if (!value.empty()) text += ": " + value;
  return text;
}

void Check(const absl::Status& s) {
  if (s.ok()) return;
  // A Python callback set with mujoco.set_mjcb_* raised inside the step: its
  // exception, exactly as mujoco.mj_step raises it (the data keeps its state).
  if (mjcenic::plugin::IsPythonCallbackError(s) && PyErr_Occurred()) throw py::error_already_set();
  if (mjcenic::plugin::IsMujocoFatalError(s)) {
    // The mujoco package's own exception type, as from mujoco.mj_step.
    py::object fatal = py::module_::import("mujoco").attr("FatalError");
    PyErr_SetString(fatal.ptr(), std::string(s.message()).c_str());
    throw py::error_already_set();
  }
  if (s.code() == absl::StatusCode::kInvalidArgument) throw py::value_error(std::string(s.message()));
  throw std::runtime_error(std::string(s.message()));
}

// An option's value as Python sees it: reals as float, counts (int and long
// codecs) as int, flags as bool, names as str.
template <class Codec, class T>
py::object OptionValue(const T& value) {
  if constexpr (std::is_same_v<typename Codec::Value, double> ||
                std::is_same_v<typename Codec::Value, int> ||
                std::is_same_v<typename Codec::Value, long> ||
                std::is_same_v<Codec, mjcenic::option_codec::Flag>)
    return py::cast(value);
  else
    return py::str(Codec::Format(value));
}

py::dict OptionsDict(const mjcenic::StepperOptions& o) {
  py::dict r;
#define MJCENIC_PY_OPTION(key, member, codec, level, doc) \
  r[#key] = OptionValue<mjcenic::option_codec::codec>(o.member);
  MJCENIC_OPTIONS(MJCENIC_PY_OPTION)
#undef MJCENIC_PY_OPTION
  return r;
}

// One dict per option: key, default (as text, as in MJCF), expected values, doc,
// expert (not in the README's table; in docs/options.md).
py::list OptionTable() {
  const mjcenic::StepperOptions defaults;
  py::list rows;
#define MJCENIC_PY_OPTION_ROW(key, member, codec, level, doc)                     \
  rows.append(py::dict(py::arg("key") = #key,                                     \
                       py::arg("default") = mjcenic::option_codec::codec::Format( \
                           defaults.member),                                      \
                       py::arg("expect") = mjcenic::option_codec::codec::Expect(), \
                       py::arg("doc") = doc,                                      \
                       py::arg("expert") = mjcenic::level == mjcenic::kExpert));
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
        guard_(m_),
        mjdata_type_(py::module_::import("mujoco").attr("MjData")),
        address_name_(py::reinterpret_steal<py::object>(PyUnicode_InternFromString("_address"))) {
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
    // One call at a time: the stepper's workspaces (and the controller's
    // bound data) are per instance, so a second thread (or a controller
    // calling back into this stepper) would corrupt them.
    if (busy_.exchange(true))
      throw std::runtime_error(
          "mjcenic.Stepper: this stepper is already stepping (in another thread, or from its own "
          "controller); a Stepper is used by one thread at a time: make one Stepper per thread");
    struct Release {
      std::atomic<bool>* busy;
      ~Release() { busy->store(false); }
    } release{&busy_};
    data_ = data;
    controller_error_.clear();
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = guard_.Run(m_, d, fn);
    }
    data_ = py::none();
    // A raising mjcb_* callback left its Python error pending: it goes first.
    if (mjcenic::plugin::IsPythonCallbackError(s)) Check(s);
    if (!controller_error_.empty())
      throw std::runtime_error("mjcenic: the controller raised: " + controller_error_);
    Check(s);
  }

  // d was made for the stepper's model: the same compilation signature, or,
  // when the signatures differ (an unpickled MjModel carries signature 0), an
  // mjData of exactly the size one made for the model has.
  mjData* Data(const py::object& data) {
    // A mujoco.MjData (the common case) by one attribute read with an
    // interned name; anything else through AsData's checks.
    mjData* d = Py_TYPE(data.ptr()) == reinterpret_cast<PyTypeObject*>(mjdata_type_.ptr())
                    ? reinterpret_cast<mjData*>(data.attr(address_name_).cast<std::uintptr_t>())
                    : AsData(data);
    if (d->signature != m_->signature && !SameLayout(d))
      throw py::value_error("mjcenic: this MjData was not made for the stepper's MjModel");
    return d;
  }

  bool SameLayout(const mjData* d) {
    if (layout_nbuffer_ < 0) {
      mjData* probe = mj_makeData(m_);
      if (!probe) return false;
      layout_nbuffer_ = static_cast<long long>(probe->nbuffer);
      layout_narena_ = static_cast<long long>(probe->narena);
      mj_deleteData(probe);
    }
    return static_cast<long long>(d->nbuffer) == layout_nbuffer_ &&
           static_cast<long long>(d->narena) == layout_narena_;
  }

  void Step(const py::object& data, int nstep) {
    mjData* d = Data(data);
    Run(data, d, [&] { return stepper_->Step(d, nstep); });
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
  std::atomic<bool> busy_{false};
  long long layout_nbuffer_ = -1, layout_narena_ = -1;  // of an mjData for m_ (SameLayout)
  const mjModel* m_;
  mjcenic::plugin::FatalErrorGuard guard_;
  py::object mjdata_type_;   // mujoco.MjData
  py::object address_name_;  // "_address", interned
  std::unique_ptr<mjcenic::Stepper> stepper_;
};

// ---------------------------------------------------------------------------
// Batch rollouts (docs/architecture.md, "Batch rollouts"): mujoco.rollout's
// loop with mjcenic stepping. Each rollout gets a fresh Stepper, so its result
// depends only on its own inputs (model, options, initial state, controls),
// never on which thread ran it or what that thread ran before: results are
// bit-identical to a sequential loop of Stepper(model, **options).step(d) and
// independent of the thread count. Threads take rollouts from a shared
// counter (chunk_size at a time); the GIL is released throughout. The threads
// belong to a RolloutPool and live from its construction to Close().

// What one rollout reports besides its arrays.
struct RolloutOutcome {
  mjcenic::StepperStats stats;
  int nstep_done = 0;      // steps completed before a failure (nstep if none)
  std::string error;       // empty: the rollout completed
};

struct RolloutJob {
  std::vector<const mjModel*> models;                 // per rollout
  std::vector<const mjcenic::StepperOptions*> options;  // per rollout
  int nbatch = 0, nstep = 0;
  unsigned control_spec = 0;
  int nstate = 0, ncontrol = 0, nsensordata = 0;
  const double* state0 = nullptr;      // nbatch x nstate
  const double* warmstart0 = nullptr;  // nbatch x nv, optional
  const double* control = nullptr;     // nbatch x nstep x ncontrol, optional
  double* state = nullptr;             // nbatch x nstep x nstate
  double* sensordata = nullptr;        // nbatch x nstep x nsensordata
  std::vector<RolloutOutcome>* outcomes = nullptr;
};

// The inputs mujoco.rollout resets before every rollout unless control_spec
// holds them: ctrl, applied forces zeroed; mocap poses and eq_active from the
// model's defaults.
void ResetUnspecifiedInputs(const mjModel* m, mjData* d, unsigned spec) {
  if (!(spec & mjSTATE_CTRL)) std::fill_n(d->ctrl, m->nu, 0.0);
  if (!(spec & mjSTATE_QFRC_APPLIED)) std::fill_n(d->qfrc_applied, m->nv, 0.0);
  if (!(spec & mjSTATE_XFRC_APPLIED)) std::fill_n(d->xfrc_applied, 6 * m->nbody, 0.0);
  for (int b = 0; b < m->nbody; ++b) {
    const int id = m->body_mocapid[b];
    if (id < 0) continue;
    if (!(spec & mjSTATE_MOCAP_POS)) std::copy_n(m->body_pos + 3 * b, 3, d->mocap_pos + 3 * id);
    if (!(spec & mjSTATE_MOCAP_QUAT)) std::copy_n(m->body_quat + 4 * b, 4, d->mocap_quat + 4 * id);
  }
  if (!(spec & mjSTATE_EQ_ACTIVE)) std::copy_n(m->eq_active0, m->neq, d->eq_active);
}

// The first MuJoCo warning raised on d, as text, or "".
std::string FirstWarning(const mjData* d) {
  for (int i = 0; i < mjNWARNING; ++i)
    if (d->warning[i].number > 0)
      return std::string("MuJoCo warning: ") + mju_warningText(i, d->warning[i].lastinfo);
  return {};
}

// Rollout r on d; a failure is recorded in its outcome and the remaining rows
// repeat the last state (mujoco.rollout's convention for a rollout it stops).
void RunRollout(const RolloutJob& job, int r, mjData* d, mjcenic::plugin::FatalErrorGuard* guard) {
  const mjModel* m = job.models[r];
  RolloutOutcome& out = (*job.outcomes)[r];
  const size_t nstate = job.nstate, nsens = job.nsensordata, ncontrol = job.ncontrol;
  const size_t row0 = static_cast<size_t>(r) * static_cast<size_t>(job.nstep);
  auto write_row = [&](int t) {
    mj_getState(m, d, job.state + (row0 + t) * nstate, mjSTATE_FULLPHYSICS);
    std::copy_n(d->sensordata, nsens, job.sensordata + (row0 + t) * nsens);
  };

  ResetUnspecifiedInputs(m, d, job.control_spec);
  mj_setState(m, d, job.state0 + static_cast<size_t>(r) * nstate, mjSTATE_FULLPHYSICS);
  if (job.warmstart0)
    std::copy_n(job.warmstart0 + static_cast<size_t>(r) * m->nv, m->nv, d->qacc_warmstart);
  else
    std::fill_n(d->qacc_warmstart, m->nv, 0.0);
  for (int i = 0; i < mjNWARNING; ++i) d->warning[i].number = 0;

  int t = 0;
  try {
    auto stepper = mjcenic::Stepper::Create(m, *job.options[r]);
    if (!stepper.ok()) {
      out.error = std::string(stepper.status().message());
    } else {
      for (; t < job.nstep; ++t) {
        if (job.control)
          mj_setState(m, d, job.control + (row0 + t) * ncontrol, job.control_spec);
        absl::Status s = guard->Run(m, d, [&] { return (*stepper)->Step(d); });
        if (!s.ok()) {
          out.error = std::string(s.message());
          if (mjcenic::plugin::IsPythonCallbackError(s)) {
            // The callback's Python error is pending on this thread: it
            // becomes this rollout's error (and is cleared for the next).
            py::gil_scoped_acquire gil;
            const std::string py_error = TakePythonError();
            if (!py_error.empty())
              out.error = "a Python MuJoCo callback (mujoco.set_mjcb_*) raised " + py_error;
          }
          break;
        }
        write_row(t);
        out.error = FirstWarning(d);
        if (!out.error.empty()) {
          ++t;  // this step's row stands; the rest repeat it
          break;
        }
      }
      out.stats = (*stepper)->stats();
    }
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: this rollout fails, others go on
    out.error = std::string("mjcenic: ") + e.what();
  }
  out.nstep_done = out.error.empty() ? job.nstep : t;
  for (int k = t; k < job.nstep; ++k) write_row(k);
}

using OutArray = py::array_t<double, py::array::c_style>;

// A C-contiguous float64 array of exactly `size` entries (named in the error).
template <class Array>
const double* Sized(const Array& a, size_t size, const char* name) {
  if (static_cast<size_t>(a.size()) != size)
    throw py::value_error(std::string("mjcenic.rollout: ") + name + " must have " +
                          std::to_string(size) + " entries, got " + std::to_string(a.size()));
  return a.data();
}

// Worker threads kept from construction to Close() (mjcenic.Rollout, and
// mjcenic.rollout for one call): nthread - 1 threads of its own plus the
// calling thread. One call runs at a time; a second caller waits.
class RolloutPool {
 public:
  explicit RolloutPool(int nthread) {
    if (nthread < 1) throw py::value_error("mjcenic.Rollout: nthread must be >= 1");
    try {
      for (int k = 1; k < nthread; ++k) threads_.emplace_back([this, k] { ThreadMain(k); });
    } catch (const std::system_error&) {
      // No more threads (a resource limit): the ones started and the caller do the work.
    }
    nthread_ = static_cast<int>(threads_.size()) + 1;
  }
  ~RolloutPool() { Stop(); }
  RolloutPool(const RolloutPool&) = delete;
  RolloutPool& operator=(const RolloutPool&) = delete;

  int nthread() const { return nthread_; }
  bool closed() const { return closed_; }

  // Waits for a running call, then ends the threads. Called without the GIL.
  void Close() {
    std::lock_guard<std::mutex> call(call_mu_);
    closed_ = true;
    Stop();
  }

  // The entry point behind mjcenic.Rollout.rollout (shapes already
  // normalized by the package): fills state and sensordata and returns the
  // per-rollout statistics {name: array}, "nstep_done" and "error" (None
  // where it completed).
  py::dict Rollout(const py::list& models, const py::list& datas, int nstep,
                   unsigned control_spec, const Vector& state0,
                   const std::optional<Vector>& warmstart0, const std::optional<Vector>& control,
                   OutArray state, OutArray sensordata, const py::dict& options, long long chunk);

 private:
  void ThreadMain(int k) {
    long long seen = 0;
    for (;;) {
      const std::function<void(int)>* work;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        work = work_;
      }
      (*work)(k);  // does not throw
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  // work(k) on every thread k (0: the caller's), returning when all are done
  // (also when the caller's part throws: the others still use what work refers to).
  void RunOnAll(const std::function<void(int)>& work) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_ = &work;
      pending_ = static_cast<int>(threads_.size());
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr error;
    try {
      work(0);
    } catch (...) {
      error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    work_ = nullptr;
    if (error) std::rethrow_exception(error);
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& th : threads_)
      if (th.joinable()) th.join();
    threads_.clear();
  }

  static constexpr const char* kClosedError =
      "mjcenic.Rollout: rollout requested after thread pool shutdown (close() was called; "
      "make a new mjcenic.Rollout)";
  std::mutex call_mu_;  // one call at a time (and Close waits for it)
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* work_ = nullptr;
  long long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
  int nthread_ = 1;  // threads_ as started, plus the caller
};

py::dict RolloutPool::Rollout(const py::list& models, const py::list& datas, int nstep,
                              unsigned control_spec, const Vector& state0,
                              const std::optional<Vector>& warmstart0,
                              const std::optional<Vector>& control, OutArray state,
                              OutArray sensordata, const py::dict& options, long long chunk) {
  if (closed_) throw std::runtime_error(kClosedError);
  RolloutJob job;
  job.nbatch = static_cast<int>(py::len(models));
  job.nstep = nstep;
  job.control_spec = control_spec;
  if (job.nbatch < 1) throw py::value_error("mjcenic.rollout: no rollouts (nbatch is 0)");
  if (nstep < 0) throw py::value_error("mjcenic.rollout: nstep must be >= 0");
  if (py::len(datas) < 1) throw py::value_error("mjcenic.rollout: no MjData given");
  if (control_spec & ~static_cast<unsigned>(mjSTATE_USER))
    throw py::value_error("mjcenic.rollout: control_spec can only contain bits of mjSTATE_USER");
  if (chunk < 1) throw py::value_error("mjcenic.rollout: chunk_size must be >= 1");

  // Options per distinct model: its plugin <config>, then the keyword options,
  // checked as Stepper::Create checks them, so that bad options fail before any work.
  Check(mjcenic::CheckMujocoVersion(mj_version(), mj_versionString()));
  std::vector<std::pair<std::string, std::string>> given;
  for (auto item : options) given.emplace_back(ToText(item.first), ToText(item.second));
  std::vector<std::pair<const mjModel*, std::unique_ptr<mjcenic::StepperOptions>>> resolved;
  for (int r = 0; r < job.nbatch; ++r) {
    const mjModel* m = AsModel(models[r]);
    if (r > 0) {
      const mjModel* m0 = job.models[0];
      if (m->nq != m0->nq || m->nv != m0->nv || m->nu != m0->nu || m->na != m0->na ||
          m->nbody != m0->nbody || m->neq != m0->neq || m->nmocap != m0->nmocap ||
          m->nsensordata != m0->nsensordata ||
          mj_stateSize(m, mjSTATE_FULLPHYSICS) != mj_stateSize(m0, mjSTATE_FULLPHYSICS))
        throw py::value_error("mjcenic.rollout: the models are not compatible (sizes differ)");
    }
    auto it = std::find_if(resolved.begin(), resolved.end(),
                           [&](const auto& e) { return e.first == m; });
    if (it == resolved.end()) {
      auto o = std::make_unique<mjcenic::StepperOptions>();
      Check(mjcenic::plugin::OptionsFromModel(m, o.get()));
      for (const auto& [k, v] : given) Check(mjcenic::SetOption(o.get(), k, v));
      Check(mjcenic::ResolveOptions(m, *o).status());
      resolved.emplace_back(m, std::move(o));
      it = std::prev(resolved.end());
    }
    job.models.push_back(m);
    job.options.push_back(it->second.get());
  }
  const mjModel* m0 = job.models[0];
  std::vector<mjData*> data_ptrs;
  for (auto d : datas) {
    mjData* p = AsData(py::reinterpret_borrow<py::object>(d));
    if (p->signature != m0->signature)
      throw py::value_error("mjcenic.rollout: an MjData was not made for the rollout's model");
    data_ptrs.push_back(p);
  }

  job.nstate = mj_stateSize(m0, mjSTATE_FULLPHYSICS);
  job.ncontrol = mj_stateSize(m0, control_spec);
  job.nsensordata = static_cast<int>(m0->nsensordata);
  const size_t nb = job.nbatch, ns = nstep;
  job.state0 = Sized(state0, nb * job.nstate, "initial_state");
  if (warmstart0) job.warmstart0 = Sized(*warmstart0, nb * m0->nv, "initial_warmstart");
  if (control) job.control = Sized(*control, nb * ns * job.ncontrol, "control");
  Sized(state, nb * ns * job.nstate, "state");
  Sized(sensordata, nb * ns * job.nsensordata, "sensordata");
  if (!state.writeable() || !sensordata.writeable())
    throw py::value_error("mjcenic.rollout: state and sensordata must be writeable");
  job.state = state.mutable_data();
  job.sensordata = sensordata.mutable_data();

  std::vector<RolloutOutcome> outcomes(job.nbatch);
  job.outcomes = &outcomes;
  if (nstep > 0) {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> call(call_mu_);
    if (closed_) throw std::runtime_error(kClosedError);
    // 64-bit counter and a chunk of at most the batch: begin + chunk cannot
    // overflow however many times the threads add to it.
    chunk = std::clamp<long long>(chunk, 1, job.nbatch);
    const int nwork = static_cast<int>(std::min<size_t>(
        {data_ptrs.size(), static_cast<size_t>(nthread()), static_cast<size_t>(job.nbatch)}));
    std::atomic<long long> next{0};
    auto worker = [&](mjData* d) {
      mjcenic::plugin::FatalErrorGuard guard(m0);  // sized for m0; the models share sizes
      for (;;) {
        const long long begin = next.fetch_add(chunk);
        if (begin >= job.nbatch) break;
        const long long end = std::min<long long>(job.nbatch, begin + chunk);
        for (long long r = begin; r < end; ++r) RunRollout(job, static_cast<int>(r), d, &guard);
      }
    };
    const std::function<void(int)> work = [&](int k) {
      if (k >= nwork) return;
      if (k == 0) return worker(data_ptrs[0]);  // the caller, its thread state kept
      // A pool thread gets a Python thread state for the whole call: a Python
      // MuJoCo callback that raises leaves its error there (RunRollout reads
      // it), where a temporary one would drop it.
      const PyGILState_STATE gil = PyGILState_Ensure();
      PyThreadState* thread_state = PyEval_SaveThread();
      try {
        worker(data_ptrs[k]);
      } catch (...) {
        // (std::bad_alloc before this thread took a rollout: the other threads take them all)
      }
      PyEval_RestoreThread(thread_state);
      PyGILState_Release(gil);
    };
    RunOnAll(work);
  }

  py::dict stats;
#define MJCENIC_PY_ROLLOUT_STAT(name, type, doc)                          \
  {                                                                       \
    py::array_t<type> a(job.nbatch);                                      \
    for (int r = 0; r < job.nbatch; ++r) a.mutable_at(r) = outcomes[r].stats.name; \
    stats[#name] = a;                                                     \
  }
  MJCENIC_STATS(MJCENIC_PY_ROLLOUT_STAT)
#undef MJCENIC_PY_ROLLOUT_STAT
  py::array_t<int> done(job.nbatch);
  py::list errors;
  for (int r = 0; r < job.nbatch; ++r) {
    done.mutable_at(r) = outcomes[r].nstep_done;
    if (outcomes[r].error.empty())
      errors.append(py::none());
    else
      errors.append(py::str(outcomes[r].error));
  }
  stats["nstep_done"] = done;
  stats["error"] = errors;
  return stats;
}

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
          "One dict per option (key, default, expect, doc), in the order of the options table (README, docs/options.md).");
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
  py::class_<RolloutPool>(mod, "_RolloutPool")
      .def(py::init<int>(), py::arg("nthread"))
      .def("rollout", &RolloutPool::Rollout, py::arg("models"), py::arg("datas"),
           py::arg("nstep"), py::arg("control_spec"), py::arg("state0"), py::arg("warmstart0"),
           py::arg("control"), py::arg("state").noconvert(), py::arg("sensordata").noconvert(),
           py::arg("options"), py::arg("chunk_size"),
           "Batch rollouts on the pool's threads (use mjcenic.Rollout or mjcenic.rollout).")
      .def("close", &RolloutPool::Close, py::call_guard<py::gil_scoped_release>(),
           "Waits for a running call, then ends the threads.")
      .def_property_readonly("nthread", &RolloutPool::nthread)
      .def_property_readonly("closed", &RolloutPool::closed);
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
