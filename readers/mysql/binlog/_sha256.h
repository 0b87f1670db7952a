/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the native rows pass's hash mask.

   The compression function twice: portable C, and the x86 SHA extensions (SHA-NI, the Intel reference
   sequence) chosen at module load when the CPU has them AND they give the portable function's digest on a
   self-test (sha256_select). Python's hmac.new(key, msg, sha256).hexdigest() is the reference: the tests
   (tests/unit/readers/mysql/binlog/test_native_masks.py) hold both functions to it over generated messages of
   every length around the block boundaries.

   The HMAC key is turned into its two keyed states once (hmac_states: the inner and outer SHA-256 states after
   the key XOR ipad / opad block); a value then costs the compressions of its own bytes plus one. */

#include <stdint.h>
#include <string.h>

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t SHA256_IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

#define ROR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* ``n`` 64-byte blocks at ``p`` into ``st``: the portable compression function. */
static void sha256_blocks_c(uint32_t st[8], const unsigned char *p, size_t n) {
    uint32_t w[64];
    for (; n; n--, p += 64) {
        for (int i = 0; i < 16; i++) w[i] = be32(p + 4 * i);
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
            uint32_t t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        st[0] += a; st[1] += b; st[2] += c; st[3] += d; st[4] += e; st[5] += f; st[6] += g; st[7] += h;
    }
}

typedef void (*sha256_blocks_fn)(uint32_t st[8], const unsigned char *p, size_t n);
static sha256_blocks_fn sha256_blocks = sha256_blocks_c;

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/* The same with the SHA extensions: four rounds per sha256rnds2 pair, the message schedule by
   sha256msg1/sha256msg2 (Intel's "Intel SHA Extensions" sequence, written as a loop over the 16 groups). */
__attribute__((target("sha,sse4.1,ssse3")))
static void sha256_blocks_ni(uint32_t st[8], const unsigned char *p, size_t n) {
    const __m128i MASK = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&st[0]);
    __m128i s1 = _mm_loadu_si128((const __m128i *)&st[4]);
    tmp = _mm_shuffle_epi32(tmp, 0xB1);          /* CDAB */
    s1 = _mm_shuffle_epi32(s1, 0x1B);            /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);    /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);         /* CDGH */
    for (; n; n--, p += 64) {
        __m128i abef = s0, cdgh = s1, w[4];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            __m128i m;
            if (i < 4) {
                m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), MASK);
            } else {
                m = _mm_sha256msg1_epu32(w[i & 3], w[(i - 3) & 3]);
                m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i - 1) & 3], w[(i - 2) & 3], 4));
                m = _mm_sha256msg2_epu32(m, w[(i - 1) & 3]);
            }
            w[i & 3] = m;
            __m128i k = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K256[4 * i]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, k);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(k, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);           /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);            /* DCHG */
    s0 = _mm_blend_epi16(tmp, s1, 0xF0);         /* DCBA */
    s1 = _mm_alignr_epi8(s1, tmp, 8);            /* HGFE */
    _mm_storeu_si128((__m128i *)&st[0], s0);
    _mm_storeu_si128((__m128i *)&st[4], s1);
}

static int cpu_has_sha_ni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19))) return 0;  /* SSSE3, SSE4.1 */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1;  /* SHA */
}
#endif

/* The digest of ``msg`` (``len`` bytes) continuing state ``st`` after ``prefix`` bytes already compressed
   (a multiple of 64: 0 for a plain hash, 64 after an HMAC key block). ``st`` is left spent. */
static void sha256_finish(uint32_t st[8], const unsigned char *msg, size_t len, uint64_t prefix,
                          unsigned char out[32]) {
    size_t full = len / 64;
    if (full) sha256_blocks(st, msg, full);
    unsigned char tail[128];
    size_t rest = len - full * 64;
    memcpy(tail, msg + full * 64, rest);
    tail[rest] = 0x80;
    size_t total = rest + 1 + 8 <= 64 ? 64 : 128;
    memset(tail + rest + 1, 0, total - rest - 1);
    uint64_t bits = (prefix + (uint64_t)len) * 8;
    for (int i = 0; i < 8; i++) tail[total - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha256_blocks(st, tail, total / 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(st[i] >> 24);
        out[4 * i + 1] = (unsigned char)(st[i] >> 16);
        out[4 * i + 2] = (unsigned char)(st[i] >> 8);
        out[4 * i + 3] = (unsigned char)st[i];
    }
}

/* The HMAC key's two states (inner, outer) as Python's hmac derives them: a key longer than a block is
   hashed first, then zero-padded to 64 bytes and XORed with 0x36 / 0x5C. */
static void hmac_states(const unsigned char *key, size_t len, uint32_t inner[8], uint32_t outer[8]) {
    unsigned char k[64], pad[64];
    memset(k, 0, sizeof k);
    if (len > 64) {
        uint32_t st[8];
        memcpy(st, SHA256_IV, sizeof st);
        sha256_finish(st, key, len, 0, k);
    } else {
        memcpy(k, key, len);
    }
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    memcpy(inner, SHA256_IV, 32);
    sha256_blocks(inner, pad, 1);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5C;
    memcpy(outer, SHA256_IV, 32);
    sha256_blocks(outer, pad, 1);
}

/* HMAC-SHA256 of ``msg`` under the keyed states, as 64 lower-case hex characters into ``hex``. */
static void hmac_hex(const uint32_t inner[8], const uint32_t outer[8], const unsigned char *msg, size_t len,
                     char hex[64]) {
    static const char H[] = "0123456789abcdef";
    uint32_t st[8];
    unsigned char d[32];
    memcpy(st, inner, 32);
    sha256_finish(st, msg, len, 64, d);
    memcpy(st, outer, 32);
    sha256_finish(st, d, 32, 64, d);
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = H[d[i] >> 4];
        hex[2 * i + 1] = H[d[i] & 15];
    }
}

/* Picks the SHA-NI compression when the CPU has it and it agrees with the portable one on a self-test;
   ``allow_ni`` 0 keeps the portable one (the tests run both). Returns 1 when SHA-NI is in use. */
static int sha256_select(int allow_ni) {
    sha256_blocks = sha256_blocks_c;
#if defined(__GNUC__) && defined(__x86_64__)
    if (allow_ni && cpu_has_sha_ni()) {
        unsigned char block[192];
        for (int i = 0; i < 192; i++) block[i] = (unsigned char)(i * 131 + 7);
        uint32_t a[8], b[8];
        memcpy(a, SHA256_IV, 32);
        memcpy(b, SHA256_IV, 32);
        sha256_blocks_c(a, block, 3);
        sha256_blocks_ni(b, block, 3);
        if (memcmp(a, b, 32) == 0) {
            sha256_blocks = sha256_blocks_ni;
            return 1;
        }
    }
#else
    (void)allow_ni;
#endif
    return 0;
}
