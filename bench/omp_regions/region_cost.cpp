// Best-case cost of one OpenMP region (fork + join) at 2 threads after a serial gap of G us
// on the master: min / p5 / p25 over 3000 trials (the best trials are those where both
// threads had a core, so this holds up on a loaded machine). A gap shorter than the
// worker's spin (GOMP_SPINCOUNT) finds it awake, a longer one asleep. Build and run:
//   g++ -O2 -fopenmp region_cost.cpp -o /tmp/region_cost
//   for e in GOMP_SPINCOUNT=1000 OMP_WAIT_POLICY=passive; do env $e /tmp/region_cost; done
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void busy(double us) { double t = now_us(); while (now_us() - t < us) {} }
int main() {
  const int reps = 3000;
  for (double gap : {1.0, 10.0, 40.0}) {
    std::vector<double> tot;
    for (int r = 0; r < reps; ++r) {
      busy(gap);
      double t0 = now_us();
#pragma omp parallel num_threads(2)
      busy(5);
      tot.push_back(now_us() - t0 - 5);
    }
    std::sort(tot.begin(), tot.end());
    printf("gap %4.0f us: region overhead min %5.1f p5 %5.1f p25 %5.1f us\n", gap, tot[0], tot[reps / 20], tot[reps / 4]);
  }
}
