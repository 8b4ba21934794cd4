#include "mujoco_errors.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <absl/strings/cord.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>

#include "mjcenic/adapter/callback_escape.h"

// libmujoco's thread-local log handler (exported, not in the public headers;
// the mujoco Python package uses it the same way). Returns the previous one.
extern "C" {
mjfLogHandler _mjPRIVATE_setTlsLogHandler(mjfLogHandler handler);
mjfLogHandler _mjPRIVATE_getGlobalLogHandler(void);
}

namespace mjcenic::plugin {

namespace {

constexpr const char* kPayload = "mjcenic/mujoco-fatal-error";

// Per thread: the handler that warnings go to while a guard is active, and
// how many guards are active (guards nest when a controller steps another
// stepper). Thread-local, not shared: each thread has its own.
thread_local mjfLogHandler tls_forward = nullptr;
thread_local int tls_depth = 0;

void OnLog(const mjLogMessage* msg) {
  if (msg->level == mjLOG_ERROR) {
    // Inside a MuJoCo call that may run user callbacks: jump back to its call
    // site, which raises the error again (mjcenic/adapter/callback_escape.h).
    if (adapter::CallbackEscape* escape = adapter::ActiveCallbackEscape()) {
      std::snprintf(escape->message, sizeof(escape->message), "%s%s%s", msg->subject,
                    msg->body ? ": " : "", msg->body ? msg->body : "");
      std::longjmp(escape->env, 1);
    }
    FatalErrorGuard::MujocoError e;
    std::snprintf(e.message, sizeof(e.message), "%s%s%s", msg->subject,
                  msg->body ? ": " : "", msg->body ? msg->body : "");
    throw e;
  }
  mjfLogHandler next = tls_forward ? tls_forward : _mjPRIVATE_getGlobalLogHandler();
  if (next) next(msg);
}

// The mjtNum arrays of mjSTATE_INTEGRATION (every element but eq_active), in
// the backup's order: fn(array, count); the arrays are null when d is.
template <class Fn>
void ForEachStateArray(const mjModel* m, mjData* d, Fn&& fn) {
  auto at = [d](mjtNum* mjData::*array) { return d ? d->*array : nullptr; };
  fn(d ? &d->time : nullptr, 1);
  fn(at(&mjData::qpos), m->nq);
  fn(at(&mjData::qvel), m->nv);
  fn(at(&mjData::act), m->na);
  fn(at(&mjData::history), m->nhistory);
  fn(at(&mjData::qacc_warmstart), m->nv);
  fn(at(&mjData::ctrl), m->nu);
  fn(at(&mjData::qfrc_applied), m->nv);
  fn(at(&mjData::xfrc_applied), 6 * m->nbody);
  fn(at(&mjData::mocap_pos), 3 * m->nmocap);
  fn(at(&mjData::mocap_quat), 4 * m->nmocap);
  fn(at(&mjData::userdata), m->nuserdata);
  fn(at(&mjData::plugin_state), m->npluginstate);
}

}  // namespace

bool IsMujocoFatalError(const absl::Status& s) { return s.GetPayload(kPayload).has_value(); }

bool IsPythonCallbackError(const absl::Status& s) {
  return IsMujocoFatalError(s) && absl::StrContains(s.message(), kPythonCallbackError);
}

FatalErrorGuard::FatalErrorGuard(const mjModel* m)
    : state_(mj_stateSize(m, mjSTATE_INTEGRATION)), eq_active_(sizeof(mjtBool) * m->neq) {
  // The backup copies d's arrays directly (mj_getState walks its element
  // table per call: ~1k instructions a step on a small model); if this
  // MuJoCo's integration state has elements the list does not know, it falls
  // back to mj_getState.
  long n = m->neq;
  ForEachStateArray(m, nullptr, [&](const mjtNum*, long k) { n += k; });
  direct_ = n == static_cast<long>(state_.size());
}

void FatalErrorGuard::Enter(const mjModel* m, mjData* d) {
  if (direct_) {
    mjtNum* out = state_.data();
    ForEachStateArray(m, d, [&](const mjtNum* x, long k) {
      if (k > 0) std::memcpy(out, x, sizeof(mjtNum) * k);
      out += k;
    });
    if (m->neq > 0) std::memcpy(eq_active_.data(), d->eq_active, sizeof(mjtBool) * m->neq);
  } else {
    mj_getState(m, d, state_.data(), mjSTATE_INTEGRATION);
  }
  pstack_ = d->pstack;
  pbase_ = d->pbase;
  const mjfLogHandler previous = _mjPRIVATE_setTlsLogHandler(&OnLog);
  previous_ = reinterpret_cast<void*>(previous);
  if (tls_depth++ == 0) tls_forward = previous;
}

void FatalErrorGuard::Leave() {
  _mjPRIVATE_setTlsLogHandler(reinterpret_cast<mjfLogHandler>(previous_));
  if (--tls_depth == 0) tls_forward = nullptr;
}

void FatalErrorGuard::Reinstall() {
  if (tls_depth > 0) _mjPRIVATE_setTlsLogHandler(&OnLog);
}

absl::Status FatalErrorGuard::Recover(const mjModel* m, mjData* d, const MujocoError& e) {
  if (direct_) {
    const mjtNum* in = state_.data();
    ForEachStateArray(m, d, [&](mjtNum* x, long k) {
      if (k > 0) std::memcpy(x, in, sizeof(mjtNum) * k);
      in += k;
    });
    if (m->neq > 0) std::memcpy(d->eq_active, eq_active_.data(), sizeof(mjtBool) * m->neq);
  } else {
    mj_setState(m, d, state_.data(), mjSTATE_INTEGRATION);
  }
  d->pstack = pstack_;
  d->pbase = pbase_;
  // The stages were left half-computed: recompute them at the restored state
  // (guarded too: the same error may recur; then d keeps its state only).
  // Not after a Python callback raised: its error is pending on the thread,
  // and the stages would call the callback again.
  const mjfLogHandler previous = _mjPRIVATE_setTlsLogHandler(&OnLog);
  try {
    if (!std::strstr(e.message, kPythonCallbackError)) {
      mj_fwdPosition(m, d);
      mj_fwdVelocity(m, d);
    }
  } catch (const MujocoError&) {
  }
  _mjPRIVATE_setTlsLogHandler(previous);
  d->pstack = pstack_;
  d->pbase = pbase_;
  absl::Status s = absl::InternalError(
      absl::StrCat("MuJoCo fatal error during the mjcenic step: ", e.message,
                   " (the data keeps its state from before the call)"));
  s.SetPayload(kPayload, absl::Cord("1"));
  return s;
}

}  // namespace mjcenic::plugin
