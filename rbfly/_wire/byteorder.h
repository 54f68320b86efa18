/*
 * Big-endian (network order) loads and stores of unaligned integers.
 *
 * Both the AMQP 1.0 format and the RabbitMQ Streams protocol are
 * big-endian. memcpy + bswap compiles to a single mov + bswap on x86-64 and
 * is safe for unaligned addresses on every architecture.
 */
#ifndef RBFLY_BYTEORDER_H
#define RBFLY_BYTEORDER_H

#include <stdint.h>
#include <string.h>

/*
 * RBFLY_BE16/32/64 turn a value between host and big-endian order:
 *
 * - MSVC and clang-cl (Windows on x86, x64 and ARM64, all little-endian):
 *   the _byteswap_* intrinsics of <stdlib.h>;
 * - GCC and Clang: nothing on a big-endian target, __builtin_bswap* on a
 *   little-endian one;
 * - any other compiler (or -DRBFLY_BYTEORDER_SHIFTS): the loads and stores
 *   below assemble the bytes with shifts, which is correct whatever the
 *   byte order and needs no extension.
 */
#if defined(RBFLY_BYTEORDER_SHIFTS)
/* asked for (-DRBFLY_BYTEORDER_SHIFTS): the portable path, e.g. to test it */
#elif defined(_MSC_VER)
#include <stdlib.h>
#define RBFLY_BE16(x) _byteswap_ushort(x)
#define RBFLY_BE32(x) _byteswap_ulong(x)
#define RBFLY_BE64(x) _byteswap_uint64(x)
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RBFLY_BE16(x) (x)
#define RBFLY_BE32(x) (x)
#define RBFLY_BE64(x) (x)
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RBFLY_BE16(x) __builtin_bswap16(x)
#define RBFLY_BE32(x) __builtin_bswap32(x)
#define RBFLY_BE64(x) __builtin_bswap64(x)
#else
#define RBFLY_BYTEORDER_SHIFTS 1
#endif

#ifdef RBFLY_BYTEORDER_SHIFTS
static inline uint16_t rbfly_load_u16(const unsigned char *p) {
    return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}
static inline uint32_t rbfly_load_u32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t rbfly_load_u64(const unsigned char *p) {
    return ((uint64_t)rbfly_load_u32(p) << 32) | rbfly_load_u32(p + 4);
}
static inline void rbfly_store_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
}
static inline void rbfly_store_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}
static inline void rbfly_store_u64(unsigned char *p, uint64_t v) {
    rbfly_store_u32(p, (uint32_t)(v >> 32)); rbfly_store_u32(p + 4, (uint32_t)v);
}
#else
static inline uint16_t rbfly_load_u16(const unsigned char *p) {
    uint16_t v; memcpy(&v, p, 2); return RBFLY_BE16(v);
}
static inline uint32_t rbfly_load_u32(const unsigned char *p) {
    uint32_t v; memcpy(&v, p, 4); return RBFLY_BE32(v);
}
static inline uint64_t rbfly_load_u64(const unsigned char *p) {
    uint64_t v; memcpy(&v, p, 8); return RBFLY_BE64(v);
}
static inline void rbfly_store_u16(unsigned char *p, uint16_t v) {
    v = RBFLY_BE16(v); memcpy(p, &v, 2);
}
static inline void rbfly_store_u32(unsigned char *p, uint32_t v) {
    v = RBFLY_BE32(v); memcpy(p, &v, 4);
}
static inline void rbfly_store_u64(unsigned char *p, uint64_t v) {
    v = RBFLY_BE64(v); memcpy(p, &v, 8);
}
#endif
static inline float rbfly_load_f32(const unsigned char *p) {
    uint32_t v = rbfly_load_u32(p); float f; memcpy(&f, &v, 4); return f;
}
static inline double rbfly_load_f64(const unsigned char *p) {
    uint64_t v = rbfly_load_u64(p); double d; memcpy(&d, &v, 8); return d;
}
static inline void rbfly_store_f32(unsigned char *p, float f) {
    uint32_t v; memcpy(&v, &f, 4); rbfly_store_u32(p, v);
}
static inline void rbfly_store_f64(unsigned char *p, double d) {
    uint64_t v; memcpy(&v, &d, 8); rbfly_store_u64(p, v);
}

#endif
