/*
 * gcc_cov.c - the coverage of rbfly's Cython modules, for libFuzzer.
 *
 * scripts/fuzz.sh --gcc-cov builds the Cython modules with GCC's
 * -fsanitize-coverage=trace-pc,trace-cmp: each basic block calls
 * __sanitizer_cov_trace_pc, each comparison __sanitizer_cov_trace_cmp*.
 * GCC has no inline 8-bit counters (clang's -fsanitize-coverage=
 * inline-8bit-counters), which libFuzzer reads; this library, loaded
 * first and globally by fuzz/run.py, defines those hooks: a basic block
 * counts in a table of 8-bit counters, by its address (hashed; two blocks
 * may share a counter), and fuzz/run.py hands the table to libFuzzer
 * (__sanitizer_cov_8bit_counters_init, __sanitizer_cov_pcs_init); a
 * comparison goes on to libFuzzer's own hook, once rbfly_cov_bind found it
 * in the library atheris loaded, so that libFuzzer learns the operands it
 * should try.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* counters: a power of 2; about 3 times the basic blocks of rbfly's
   Cython modules, so that few share one */
#define COUNTERS (1 << 18)

static uint8_t counters[COUNTERS];
/* libFuzzer's table of PCs: a PC and its flags per counter */
static uintptr_t pcs[2 * COUNTERS];

typedef void (*cmp1_t)(uint8_t, uint8_t);
typedef void (*cmp2_t)(uint16_t, uint16_t);
typedef void (*cmp4_t)(uint32_t, uint32_t);
typedef void (*cmp8_t)(uint64_t, uint64_t);
typedef void (*switch_t)(uint64_t, uint64_t *);

static cmp1_t cmp1, const_cmp1;
static cmp2_t cmp2, const_cmp2;
static cmp4_t cmp4, const_cmp4;
static cmp8_t cmp8, const_cmp8;
static switch_t trace_switch;

/* Find libFuzzer's comparison hooks in the library at path (loaded
   already); 0 when found. */
int rbfly_cov_bind(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL)
        return -1;
    cmp1 = (cmp1_t) dlsym(lib, "__sanitizer_cov_trace_cmp1");
    cmp2 = (cmp2_t) dlsym(lib, "__sanitizer_cov_trace_cmp2");
    cmp4 = (cmp4_t) dlsym(lib, "__sanitizer_cov_trace_cmp4");
    cmp8 = (cmp8_t) dlsym(lib, "__sanitizer_cov_trace_cmp8");
    const_cmp1 = (cmp1_t) dlsym(lib, "__sanitizer_cov_trace_const_cmp1");
    const_cmp2 = (cmp2_t) dlsym(lib, "__sanitizer_cov_trace_const_cmp2");
    const_cmp4 = (cmp4_t) dlsym(lib, "__sanitizer_cov_trace_const_cmp4");
    const_cmp8 = (cmp8_t) dlsym(lib, "__sanitizer_cov_trace_const_cmp8");
    trace_switch = (switch_t) dlsym(lib, "__sanitizer_cov_trace_switch");
    if (!cmp1 || !cmp2 || !cmp4 || !cmp8 || !const_cmp1 || !const_cmp2
            || !const_cmp4 || !const_cmp8 || !trace_switch)
        return -2;
    return 0;
}

size_t rbfly_cov_size(void) { return COUNTERS; }
void *rbfly_cov_counters(void) { return counters; }
void *rbfly_cov_pcs(void) { return pcs; }

void __sanitizer_cov_trace_pc(void) {
    uintptr_t pc = (uintptr_t) __builtin_return_address(0);
    size_t i = (size_t) ((pc ^ (pc >> 18)) * 0x9E3779B1u) & (COUNTERS - 1);
    counters[i]++;
    pcs[2 * i] = pc;
}

void __sanitizer_cov_trace_cmp1(uint8_t a, uint8_t b) { if (cmp1) cmp1(a, b); }
void __sanitizer_cov_trace_cmp2(uint16_t a, uint16_t b) { if (cmp2) cmp2(a, b); }
void __sanitizer_cov_trace_cmp4(uint32_t a, uint32_t b) { if (cmp4) cmp4(a, b); }
void __sanitizer_cov_trace_cmp8(uint64_t a, uint64_t b) { if (cmp8) cmp8(a, b); }
void __sanitizer_cov_trace_const_cmp1(uint8_t a, uint8_t b) { if (const_cmp1) const_cmp1(a, b); }
void __sanitizer_cov_trace_const_cmp2(uint16_t a, uint16_t b) { if (const_cmp2) const_cmp2(a, b); }
void __sanitizer_cov_trace_const_cmp4(uint32_t a, uint32_t b) { if (const_cmp4) const_cmp4(a, b); }
void __sanitizer_cov_trace_const_cmp8(uint64_t a, uint64_t b) { if (const_cmp8) const_cmp8(a, b); }
void __sanitizer_cov_trace_switch(uint64_t v, uint64_t *cases) {
    if (trace_switch)
        trace_switch(v, cases);
}
/* floating point comparisons: libFuzzer has no use for them */
void __sanitizer_cov_trace_cmpf(float a, float b) { (void) a; (void) b; }
void __sanitizer_cov_trace_cmpd(double a, double b) { (void) a; (void) b; }
