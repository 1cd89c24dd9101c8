/* Is an `--input x.npy` vector worth 2 MiB alignment? heddle reads a plain .npy
 * array into a Vec (malloc's mapping: page-aligned, not 2 MiB-aligned) advised
 * MADV_HUGEPAGE on the whole huge pages inside it (runtime/src/io/read.rs), so
 * up to a huge page at each end stays on small pages. This times a CSR SpMV with
 * random columns whose x is such a vector (1 MiB + 16 bytes into a mapping,
 * only its inner whole huge pages advised) against x on an aligned advised
 * mapping (as pages::Words lays out), every other array aligned and advised;
 * the minimum per kind over 6 interleaved rounds of 15 SpMVs is printed.
 * A variant of benches/hugepages_gather.c.
 *   gcc -O2 benches/hugepages_x_alignment.c -o /tmp/xalign && /tmp/xalign ROWS PER_ROW F32(0|1)
 * (docs/performance.md, "leftovers: .npy inputs on 2 MiB-aligned huge pages?"). */
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
static void* inner(size_t n){ size_t H=2<<20; char*p=(char*)get(n+(4<<20),0)+(1<<20)+16;
 uintptr_t lo=((uintptr_t)p+H-1)&~(H-1), hi=((uintptr_t)p+n)&~(H-1); if(hi>lo) madvise((void*)lo,hi-lo,MADV_HUGEPAGE); return p;}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){ int N=atoi(argv[1]), d=atoi(argv[2]); int f32=atoi(argv[3]); size_t nnz=(size_t)N*d;
 double best[2]={1e9,1e9};
 for(int round=0;round<6;round++) for(int adv=0;adv<2;adv++){
  uint32_t*rp=get(4*(N+1),1),*col=get(4*nnz,1); void*val=get((f32?4:8)*nnz,1),*x=adv?get((f32?4:8)*N,1):inner((f32?4:8)*N),*y=get((f32?4:8)*N,adv);
  srand(1); for(int i=0;i<=N;i++) rp[i]=(uint32_t)i*d; for(size_t k=0;k<nnz;k++){col[k]=((unsigned)rand()*2654435761u)%N; if(f32)((float*)val)[k]=1; else ((double*)val)[k]=1;}
  for(int j=0;j<N;j++){ if(f32)((float*)x)[j]=1+(j%17)/100.; else ((double*)x)[j]=1+(j%17)/100.;}
  for(int r=0;r<15;r++){ double t=now();
   if(f32){ float*v=val,*xx=x,*yy=y; for(int i=0;i<N;i++){float s=0; for(uint32_t k=rp[i];k<rp[i+1];k++) s+=v[k]*xx[col[k]]; yy[i]=s;} }
   else { double*v=val,*xx=x,*yy=y; for(int i=0;i<N;i++){double s=0; for(uint32_t k=rp[i];k<rp[i+1];k++) s+=v[k]*xx[col[k]]; yy[i]=s;} }
   t=now()-t; if(t<best[adv]) best[adv]=t; }
  if(round==0 && adv==1){ char cmd[100]; sprintf(cmd,"grep AnonHugePages /proc/%d/smaps_rollup",getpid()); system(cmd);}
  }
 printf("N=%d d=%d f32=%d min x-misaligned %.4f s x-aligned %.4f s  aligned/misaligned speed %.2f\n",N,d,f32,best[0],best[1],best[0]/best[1]); }
