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

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RBFLY_BE16(x) (x)
#define RBFLY_BE32(x) (x)
#define RBFLY_BE64(x) (x)
#else
#define RBFLY_BE16(x) __builtin_bswap16(x)
#define RBFLY_BE32(x) __builtin_bswap32(x)
#define RBFLY_BE64(x) __builtin_bswap64(x)
#endif

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
