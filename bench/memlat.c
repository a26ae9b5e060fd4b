/* Random-access latency of this machine's memory, by footprint: a chain of
 * dependent 4-byte loads at random places in a buffer of the given size
 * (transparent huge pages asked for), then the same loads with their
 * addresses known in advance and prefetched a few loads ahead.
 *
 *   cc -O2 -o /tmp/memlat bench/memlat.c && /tmp/memlat 0.032 1 5
 *
 * Arguments: footprints in GB. Prints ns per load for each. Used to read
 * the full-size simulation's speed (bench/RESULTS.md, "Largest preset at
 * full size"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <xmmintrin.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t state = 88172645463325252ull;
static inline uint64_t rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static volatile uint32_t zero = 0;

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: memlat GB [GB ...]\n");
    return 2;
  }
  for (int a = 1; a < argc; a++) {
    double gb = atof(argv[a]);
    size_t bytes = (size_t)(gb * 1e9);
    if (gb <= 0 || bytes < 4096) {
      fprintf(stderr, "memlat: '%s' is not a size in GB of at least 4 KB\n", argv[a]);
      return 2;
    }
    size_t huge = 2u << 20, n = bytes / 4;
    char *raw = mmap(0, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      perror("memlat: mmap");
      return 1;
    }
    uint32_t *buf = (uint32_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(buf, bytes, MADV_HUGEPAGE);
    memset(buf, 0, bytes);
    const size_t loads = 4000000, ahead = 16;
    uint64_t *at = malloc((loads + ahead) * sizeof *at);
    for (size_t i = 0; i < loads + ahead; i++) at[i] = rnd() % n;
    uint32_t z = zero;
    uint64_t j = 0;
    double t0 = now();
    for (size_t i = 0; i < loads; i++) j = buf[at[i] + (j & z)];
    double chain = (now() - t0) / loads * 1e9;
    t0 = now();
    for (size_t i = 0; i < loads; i++) {
      _mm_prefetch((const char *)&buf[at[i + ahead]], _MM_HINT_T0);
      j = buf[at[i] + (j & z)];
    }
    double fetched = (now() - t0) / loads * 1e9;
    printf("%8.3f GB: dependent load %6.1f ns, prefetched %d ahead %5.1f ns (%lu)\n", gb, chain,
           (int)ahead, fetched, (unsigned long)(j & 1));
    munmap(raw, bytes + huge);
    free(at);
  }
  return 0;
}
