/* Straight copies of an SpMV row's body against loops, in C (shortrow, issue 14 item 3).
 * f64 CSR, 32-bit positions and columns, n rows of L uniformly random columns, x of n.
 *   gcc -O2 -o /tmp/straight_copies benches/straight_copies.c && /tmp/straight_copies 100000 10 101
 * Prints per variant: the median ns per nonzero, and (in parentheses) the median over
 * repetitions of its time over loop1's in the same repetition. fix10 (ten copies, no
 * dispatch) only for L = 10. Findings: docs/performance.md, "shortrow". */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <string.h>
typedef uint32_t u32;
#define NOINLINE __attribute__((noinline))
#define A1(o) s+=val[k+o]*x[crd[k+o]];
/* A: plain loop, one accumulator */
NOINLINE void loop1(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; for(u32 k=pos[i];k<pos[i+1];k++) s+=val[k]*x[crd[k]]; y[i]=s;}
}
/* B: loop of pairs (like heddle's single_reduction_over) */
NOINLINE void pairs(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t k=pos[i],e=pos[i+1];
    if((e-k)&1){s+=val[k]*x[crd[k]];k++;}
    for(;k<e;k+=2){s+=val[k]*x[crd[k]]; s+=val[k+1]*x[crd[k+1]];}
    y[i]=s;}
}
#define C(m) case m: s+=val[e-m]*x[crd[e-m]];
/* C: switch (jump table in .rodata) into 15 straight copies, loop for >=16 */
NOINLINE void sw15(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t b=pos[i],e=pos[i+1]; uint64_t L=e-b;
    if(L<16){ switch(L){ C(15) C(14) C(13) C(12) C(11) C(10) C(9) C(8) C(7) C(6) C(5) C(4) C(3) C(2) C(1) case 0: ; } }
    else { for(uint64_t k=b;k<e;k++) s+=val[k]*x[crd[k]]; }
    y[i]=s;}
}
/* C2: sw15 with software prefetch of the streams a few rows ahead */
NOINLINE void sw15p(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t b=pos[i],e=pos[i+1]; uint64_t L=e-b;
    __builtin_prefetch(val+e+64); __builtin_prefetch(crd+e+64);
    if(L<16){ switch(L){ C(15) C(14) C(13) C(12) C(11) C(10) C(9) C(8) C(7) C(6) C(5) C(4) C(3) C(2) C(1) case 0: ; } }
    else { for(uint64_t k=b;k<e;k++) s+=val[k]*x[crd[k]]; }
    y[i]=s;}
}
/* C3: fixed 10 straight copies (only valid for L=10), no dispatch */
NOINLINE void fix10(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t k=pos[i];
    A1(0)A1(1)A1(2)A1(3)A1(4)A1(5)A1(6)A1(7)A1(8)A1(9)
    y[i]=s;}
}
/* D: switch into 7 copies for L<8, pairs loop otherwise */
NOINLINE void sw7(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t b=pos[i],e=pos[i+1]; uint64_t L=e-b;
    if(L<8){ switch(L){ C(7) C(6) C(5) C(4) C(3) C(2) C(1) case 0: ; } }
    else { uint64_t k=b; if(L&1){s+=val[k]*x[crd[k]];k++;}
      for(;k<e;k+=2){s+=val[k]*x[crd[k]]; s+=val[k+1]*x[crd[k+1]];} }
    y[i]=s;}
}
/* E: binary decomposition, no indirect jump: blocks of 8,4,2,1 */
NOINLINE void bin(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t k=pos[i],e=pos[i+1]; uint64_t L=e-k;
    if(L<16){
      if(L&8){A1(0)A1(1)A1(2)A1(3)A1(4)A1(5)A1(6)A1(7) k+=8;}
      if(L&4){A1(0)A1(1)A1(2)A1(3) k+=4;}
      if(L&2){A1(0)A1(1) k+=2;}
      if(L&1){A1(0)}
    } else { for(;k<e;k++) s+=val[k]*x[crd[k]]; }
    y[i]=s;}
}
/* F: Duff's device into a loop of 4 copies */
NOINLINE void duff4(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  for(int i=0;i<n;i++){double s=0; uint64_t b=pos[i],e=pos[i+1]; uint64_t L=e-b;
    uint64_t k=b+(L&3);  /* first the L mod 4 */
    switch(L&3){ case 3: s+=val[k-3]*x[crd[k-3]]; case 2: s+=val[k-2]*x[crd[k-2]]; case 1: s+=val[k-1]*x[crd[k-1]]; case 0: ; }
    for(;k<e;k+=4){A1(0)A1(1)A1(2)A1(3)}
    y[i]=s;}
}
/* G: computed goto with label table (gcc puts table in .rodata too, but relative) */
NOINLINE void cg15(int n, const u32*pos,const u32*crd,const double*val,const double*x,double*y){
  static const void* T[16]={&&l0,&&l1,&&l2,&&l3,&&l4,&&l5,&&l6,&&l7,&&l8,&&l9,&&l10,&&l11,&&l12,&&l13,&&l14,&&l15};
  for(int i=0;i<n;i++){double s=0; uint64_t b=pos[i],e=pos[i+1]; uint64_t L=e-b;
    if(L<16){ goto *T[L];
#define G(m) l##m: s+=val[e-m]*x[crd[e-m]];
      G(15) G(14) G(13) G(12) G(11) G(10) G(9) G(8) G(7) G(6) G(5) G(4) G(3) G(2) G(1) l0: ;
    } else { for(uint64_t k=b;k<e;k++) s+=val[k]*x[crd[k]]; }
    y[i]=s;}
}
typedef void(*F)(int,const u32*,const u32*,const double*,const double*,double*);
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int n=atoi(argv[1]), L=atoi(argv[2]), reps=atoi(argv[3]);
  u32*pos=malloc(4*(n+1)); u32*crd=malloc(4*(size_t)n*L); double*val=malloc(8*(size_t)n*L);
  double*x=malloc(8*n),*y=malloc(8*n),*y0=malloc(8*n); srand(1);
  for(int i=0;i<=n;i++) pos[i]=i*L;
  for(size_t k=0;k<(size_t)n*L;k++){crd[k]=rand()%n; val[k]=rand()/(double)RAND_MAX;}
  for(int i=0;i<n;i++) x[i]=rand()/(double)RAND_MAX;
  F fs[]={loop1,pairs,sw15,sw15p,fix10,sw7,bin,duff4,cg15}; const char*nm[]={"loop1","pairs","sw15","sw15p","fix10","sw7","bin","duff4","cg15"};
  int nf=9; if(L!=10){for(int f=4;f<8;f++){fs[f]=fs[f+1];nm[f]=nm[f+1];} nf=8;} double t[9][201];
  for(int r=0;r<reps;r++) for(int f=0;f<nf;f++){ double t0=now(); fs[f](n,pos,crd,val,x,y); t[f][r]=now()-t0;
     /* every variant adds a row's entries in order: the same bits as loop1 */
     if(f==0&&r==0) memcpy(y0,y,8*(size_t)n);
     else if(memcmp(y0,y,8*(size_t)n)){printf("%s differs from loop1\n",nm[f]); return 1;} }
  printf("n=%d L=%d:",n,L);
  static double rt[201];
  for(int f=0;f<nf;f++){ for(int r=0;r<reps;r++) rt[r]=t[f][r]/t[0][r]; qsort(rt,reps,sizeof(double),cmpd); qsort(t[f],reps,sizeof(double),cmpd); double m=t[f][reps/2]; printf(" %s %.2f(%.3f)",nm[f],m*1e9/((double)n*L),rt[reps/2]);}
  printf("\n"); return 0;}
