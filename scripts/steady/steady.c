/* The eight-loop kernel of scripts/bench-steady.sh in C (the twin of
 * steady.kir and steady.py), and the saxpy triad over 16M f32. Built by the
 * script with gcc -O3 -march=native -fopenmp, with and without -ffast-math.
 *
 * Usage: steady eight|saxpy CALLS
 * Prints the median milliseconds per call of CALLS calls (after one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (1 << 20)
#define NS (1 << 24)

static float x[N], a[N], b[N], c[N], d[N], e[N], f[N], g[N], h[N];
static float sx[NS], sy[NS];

static void eight(void) {
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) a[i] = sinf(x[i]);
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) b[i] = sqrtf(fabsf(a[i]) + 1.0f);
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) c[i] = expf(-b[i]);
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) d[i] = fmaxf(c[i], 0.1f) / b[i];
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) e[i] = cosf(d[i] + x[i]);
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) {
      float t = expf(e[i] * 2.0f);
      f[i] = (t - 1.0f) / (t + 1.0f);
    }
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) g[i] = logf(f[i] * f[i] + 1.0f);
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++) h[i] = floorf(g[i] * 100.0f + x[i]);
  }
}

static void saxpy(void) {
  const float alpha = 2.0f;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < NS; i++) sy[i] = alpha * sx[i] + sy[i];
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *p, const void *q) {
  double u = *(const double *)p, v = *(const double *)q;
  return (u > v) - (u < v);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: steady eight|saxpy CALLS\n");
    return 2;
  }
  int calls = atoi(argv[2]);
  void (*fn)(void) = strcmp(argv[1], "saxpy") == 0 ? saxpy : eight;
  for (int i = 0; i < N; i++) x[i] = (float)i * (8.0f / N) - 4.0f;
  for (int i = 0; i < NS; i++) {
    sx[i] = (float)i * 0.5f;
    sy[i] = (float)i;
  }
  double *t = malloc(sizeof(double) * calls);
  fn();
  for (int k = 0; k < calls; k++) {
    double t0 = now_ms();
    fn();
    t[k] = now_ms() - t0;
  }
  qsort(t, calls, sizeof(double), cmp);
  /* A checksum, so no loop can be left out. */
  double sum = 0;
  for (int i = 0; i < N; i++) sum += h[i];
  fprintf(stderr, "checksum %g %g\n", sum, (double)sy[NS - 1]);
  printf("%.3f\n", t[calls / 2]);
  free(t);
  return 0;
}
