/* Does a CSR SpMV with random columns gain from transparent huge pages?
 * Each round allocates every array (row pointers, columns, values, x, y) as a
 * 2 MiB-aligned anonymous mapping, once on small pages and once advised
 * MADV_HUGEPAGE (as heddle's runtime/src/pages.rs does), fills them, and
 * times 15 SpMVs; the minimum per kind over 6 rounds is printed. (Mappings are
 * never unmapped: about 1.2 GB for a million rows of 5.)
 *   gcc -O2 benches/hugepages_gather.c -o /tmp/gather && /tmp/gather ROWS PER_ROW F32(0|1)
 * (docs/performance.md, "Kernel buffers on transparent huge pages"). */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
static void* get(size_t n,int adv){ size_t H=2<<20; n=(n+H-1)&~(H-1);
 char*p=mmap(0,n+H,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
 char*a=(char*)(((uintptr_t)p+H-1)&~(H-1)); if(adv) madvise(a,n,MADV_HUGEPAGE); return a;}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){ int N=atoi(argv[1]), d=atoi(argv[2]); int f32=atoi(argv[3]); size_t nnz=(size_t)N*d;
 double best[2]={1e9,1e9};
 for(int round=0;round<6;round++) for(int adv=0;adv<2;adv++){
  uint32_t*rp=get(4*(N+1),adv),*col=get(4*nnz,adv); void*val=get((f32?4:8)*nnz,adv),*x=get((f32?4:8)*N,adv),*y=get((f32?4:8)*N,adv);
  srand(1); for(int i=0;i<=N;i++) rp[i]=(uint32_t)i*d; for(size_t k=0;k<nnz;k++){col[k]=((unsigned)rand()*2654435761u)%N; if(f32)((float*)val)[k]=1; else ((double*)val)[k]=1;}
  for(int j=0;j<N;j++){ if(f32)((float*)x)[j]=1+(j%17)/100.; else ((double*)x)[j]=1+(j%17)/100.;}
  for(int r=0;r<15;r++){ double t=now();
   if(f32){ float*v=val,*xx=x,*yy=y; for(int i=0;i<N;i++){float s=0; for(uint32_t k=rp[i];k<rp[i+1];k++) s+=v[k]*xx[col[k]]; yy[i]=s;} }
   else { double*v=val,*xx=x,*yy=y; for(int i=0;i<N;i++){double s=0; for(uint32_t k=rp[i];k<rp[i+1];k++) s+=v[k]*xx[col[k]]; yy[i]=s;} }
   t=now()-t; if(t<best[adv]) best[adv]=t; }
  if(round==0 && adv==1){ char cmd[100]; sprintf(cmd,"grep AnonHugePages /proc/%d/smaps_rollup",getpid()); system(cmd);}
  }
 printf("N=%d d=%d f32=%d min small %.4f s huge %.4f s  huge/small speed %.2f\n",N,d,f32,best[0],best[1],best[0]/best[1]); }
