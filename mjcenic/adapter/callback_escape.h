// MuJoCo calls that may run user callbacks (mjcb_control, mjcb_passive,
// mjcb_contactfilter, mjcb_sensor, mjcb_act_*) leave through a jump target
// when a MuJoCo error is raised inside them.
//
// The mujoco Python package's callback trampolines call mju_error when the
// Python callback raises. A C++ exception thrown from the error handler there
// would unwind through the trampoline's frames, which belong to the mujoco
// package's own C++ runtime; its personality routine crashes on them. So an
// error handler that finds an escape on its thread (ActiveCallbackEscape)
// longjmps to it instead, skipping only MuJoCo's C frames and the
// trampoline's (as the mujoco package's own error interception does), and
// the call site raises the error again with mju_error, where only mjcenic's
// frames lie between it and the handler's catcher.
#pragma once

#include <csetjmp>

#include <mujoco/mujoco.h>

namespace mjcenic::adapter {

struct CallbackEscape {
  std::jmp_buf env;
  CallbackEscape* outer = nullptr;
  char message[1100];  // the error, written by the handler before it jumps
};

// The innermost escape of this thread, or null.
CallbackEscape* ActiveCallbackEscape();

// Runs f(m, d) with an escape (see above).
void RunEscapable(void (*f)(const mjModel*, mjData*), const mjModel* m, mjData* d);

}  // namespace mjcenic::adapter
