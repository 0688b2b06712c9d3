/* Four loop shapes of fast math (scripts/bench-fastmath.sh): the same
   loops as shapes.kir, over the same inputs, each timed 21 times (median
   and minimum printed). Built with gcc -O3 -march=native -ffast-math
   -fopenmp; glibc libmvec is what it calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N (1<<20)
static float x[N], y[N], z[N], o[N];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
void k0(void){
#pragma omp parallel for
  for (int i = 0; i < N; i++) o[i] = expf(-x[i]*x[i]) + y[i]*y[i];}
void k1(void){
#pragma omp parallel for
  for (int i = 0; i < N; i++) o[i] = cosf(z[i]) * tanhf(y[i]);}
void k2(void){
#pragma omp parallel for
  for (int i = 0; i < N; i++) o[i] = logf(1.0f + fabsf(y[i])) + floorf(3.0f*x[i]);}
void k3(void){
#pragma omp parallel for
  for (int i = 0; i < N; i++) o[i] = sinf(x[i]) * sqrtf(fabsf(z[i])) + expf(y[i]*0.5f);}
volatile float sink;
int cmp(const void*a,const void*b){double d=*(double*)a-*(double*)b;return d<0?-1:d>0;}
int main(void){
  for(int i=0;i<N;i++){x[i]=(i%1000)*0.001f-0.5f;y[i]=(i%777)*0.002f-0.7f;z[i]=(i%555)*0.01f;}
  void (*ks[4])(void)={k0,k1,k2,k3};
  for(int k=0;k<4;k++){double t[21];for(int r=0;r<21;r++){double a=now();ks[k]();t[r]=now()-a;sink+=o[(r*7919)%N];}qsort(t,21,sizeof t[0],cmp);printf("C k%d %.1f us (min %.1f)\n",k,t[10]*1e6,t[0]*1e6);}
}
