/* mjcenic C API: error-controlled ICF stepping for MuJoCo models.
 *
 *   mjcenicStepper* s = mjcenic_create(m, NULL, err, sizeof(err));
 *   while (...) { if (mjcenic_stepper_step(s, d, err, sizeof(err))) handle(err); }
 *   mjcenic_destroy(s);
 *
 * or, for code written around mj_step, swap one call:
 *
 *   mjcenic_step(m, d);      // instead of mj_step(m, d)
 */
#ifndef MJCENIC_H_
#define MJCENIC_H_

#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjcenicStepper_ mjcenicStepper;

/* Creates a stepper for m with default options; NULL on error (message in
 * error, if given). The stepper must not outlive m. */
mjcenicStepper* mjcenic_create(const mjModel* m, char* error, int error_sz);
void mjcenic_destroy(mjcenicStepper* s);

/* Advances d by m->opt.timestep. Returns 0 on success; otherwise d is left
 * unchanged and error holds the reason. */
int mjcenic_stepper_step(mjcenicStepper* s, mjData* d, char* error, int error_sz);

/* Same signature as mj_step. Keeps one stepper per (m, d) pair internally
 * (released with mjcenic_forget). On failure d is left unchanged, a MuJoCo
 * warning is raised (mjWARN_BADQACC) and the message is printed through
 * mju_warning. */
void mjcenic_step(const mjModel* m, mjData* d);

/* Releases the stepper mjcenic_step keeps for d (call before mj_deleteData). */
void mjcenic_forget(const mjData* d);

#ifdef __cplusplus
}
#endif

#endif  /* MJCENIC_H_ */
