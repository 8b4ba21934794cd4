/* Drops a sphere with the C API and prints its height at t = 0.2 s and 1.5 s:
 *   consumer_c MODEL.xml  ->  "<z at 0.2> <z at 1.5> <accepted steps>"  */
#include <stdio.h>
#include <mjcenic.h>

int main(int argc, char** argv) {
  char err[1000] = "";
  if (argc != 2) return 2;
  mjModel* m = mj_loadXML(argv[1], NULL, err, sizeof(err));
  if (!m) { fprintf(stderr, "load: %s\n", err); return 1; }
  mjData* d = mj_makeData(m);
  mjcenicStepper* s = mjcenic_create(m, err, sizeof(err));
  if (!s) { fprintf(stderr, "create: %s\n", err); return 1; }
  if (mjcenic_advance_to(s, d, 0.2, err, sizeof(err))) { fprintf(stderr, "%s\n", err); return 1; }
  double z_fall = d->qpos[2];
  if (mjcenic_advance_to(s, d, 1.5, err, sizeof(err))) { fprintf(stderr, "%s\n", err); return 1; }
  mjcenicStats stats;
  mjcenic_get_stats(s, &stats);
  printf("%.9f %.9f %ld\n", z_fall, d->qpos[2], stats.steps);
  mjcenic_destroy(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
