// MuJoCo fatal errors (mju_error, e.g. "mj_stackAlloc: insufficient memory")
// inside a step, turned into a status for the front ends that return one
// (the C API's mjcenic_stepper_step/advance_to/step_once and the Python
// Stepper), instead of ending the process.
//
// Mechanism: for the duration of the call, a thread-local MuJoCo log handler
// (libmujoco's _mjPRIVATE_setTlsLogHandler, the hook the mujoco Python
// package itself uses for mujoco.FatalError) is installed on the calling
// thread; it turns an error message into a C++ exception, which unwinds
// through libmujoco's C frames (they hold no resources; libmujoco carries
// unwind tables) and through the stepper's frames, running their destructors
// (a longjmp would skip them). Inside MuJoCo calls that may run user callbacks
// the handler first jumps back to the call site, which raises the error again
// (mjcenic/adapter/callback_escape.h): the callbacks' frames may belong to
// another C++ runtime (the mujoco package's Python trampolines). The previous thread-local handler is restored
// afterwards and receives every warning. Nothing global is changed, so other
// threads, and MuJoCo calls outside mjcenic, keep MuJoCo's own behaviour.
//
// After a fatal error d gets back its integration state from before the call
// (mjSTATE_INTEGRATION), its arena stack is unwound, and the stages are
// recomputed (mj_forward, itself guarded).
#pragma once

#include <vector>

#include <absl/status/status.h>
#include <mujoco/mujoco.h>

namespace mjcenic::plugin {

// True for a status made from a MuJoCo fatal error by FatalErrorGuard.
bool IsMujocoFatalError(const absl::Status& s);

// mju_error's message from the mujoco package's callback trampolines when the
// Python callback raised; the Python error is then pending on the thread (the
// trampoline restored it), and d keeps its state from before the call, its
// stages not recomputed (that would call the callback again).
inline constexpr const char* kPythonCallbackError = "Python exception raised";
// True for a fatal-error status from a raising Python callback.
bool IsPythonCallbackError(const absl::Status& s);

class FatalErrorGuard {
 public:
  // Sizes the state buffer for m (no allocation per call afterwards).
  explicit FatalErrorGuard(const mjModel* m);

  // Runs fn() (returning absl::Status) on d; a MuJoCo fatal error on this
  // thread during it becomes a status (IsMujocoFatalError) and d is restored.
  template <class Fn>
  absl::Status Run(const mjModel* m, mjData* d, Fn&& fn) {
    Enter(m, d);
    try {
      absl::Status s = fn();
      Leave();
      return s;
    } catch (const MujocoError& e) {
      Leave();
      return Recover(m, d, e);
    }
  }

  // What the log handler throws.
  struct MujocoError {
    char message[1100];
  };

  // Puts the handler back on this thread after code that may have replaced
  // it (a Python callback that calls the mujoco package), if a guard is active.
  static void Reinstall();

 private:
  void Enter(const mjModel* m, mjData* d);
  void Leave();
  absl::Status Recover(const mjModel* m, mjData* d, const MujocoError& e);

  std::vector<mjtNum> state_;
  std::vector<unsigned char> eq_active_;  // d->eq_active's bytes (mjtBool)
  bool direct_ = false;  // state_ holds ForEachStateArray's arrays (else mj_getState's)
  size_t pstack_ = 0, pbase_ = 0;
  void* previous_ = nullptr;  // the thread's previous log handler
};

}  // namespace mjcenic::plugin
