/*
 * prof_draw.c - the heap profile's draws: the intervals between samples
 * (exponential, with the rate as mean), and the countdowns they make in
 * the bins (the sampling and the countdown are described at the top of
 * prof.c).
 *
 * E = -ln(u), u uniform in (0, 1], without libm: u = f * 2^-n with f in
 * [1, 2) (n from the count of leading zeros), ln u = ln f - n ln 2, and
 * ln f from a table of 64 and a cubic (error under 1e-9, far below the
 * sampling noise; no branch, no division: a sample's draw is a short
 * chain of multiplications).  The uniform comes from a per-thread
 * xorshift64* generator.
 */
#include "alloc_init.h"
#include "tcache.h"
#include "sizeclass.h"
#include "prof.h"
#include "counter.h"

#include <string.h>

static __thread uint64_t prof_rng __attribute__((tls_model("initial-exec")));
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	if (x == 0)	/* seeded on first use: the key and this thread */
		x = (jp__settings.key ^ (uintptr_t)s) * 0x9e3779b97f4a7c15ULL | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* 1 / c and ln c for c = 1 + (i + 1/2) / 64, the middle of the i-th 64th
 * of [1, 2) (to the double nearest, from 40-digit decimals). */
static const double exp1_inv[64] = {
	0.9922480620155039, 0.9770992366412213, 0.9624060150375939,
	0.9481481481481482, 0.9343065693430657, 0.920863309352518,
	0.9078014184397163, 0.8951048951048951, 0.8827586206896552,
	0.8707482993197279, 0.8590604026845637, 0.847682119205298,
	0.8366013071895425, 0.8258064516129032, 0.8152866242038217,
	0.8050314465408805, 0.7950310559006211, 0.7852760736196319,
	0.7757575757575758, 0.7664670658682635, 0.757396449704142,
	0.7485380116959064, 0.7398843930635838, 0.7314285714285714,
	0.7231638418079096, 0.7150837988826816, 0.7071823204419889,
	0.6994535519125683, 0.6918918918918919, 0.6844919786096256,
	0.6772486772486772, 0.6701570680628273, 0.6632124352331606,
	0.6564102564102564, 0.649746192893401, 0.6432160804020101,
	0.6368159203980099, 0.6305418719211823, 0.624390243902439,
	0.6183574879227053, 0.6124401913875598, 0.6066350710900474,
	0.6009389671361502, 0.5953488372093023, 0.5898617511520737,
	0.5844748858447488, 0.579185520361991, 0.5739910313901345,
	0.5688888888888889, 0.5638766519823789, 0.5589519650655022,
	0.5541125541125541, 0.5493562231759657, 0.5446808510638298,
	0.540084388185654, 0.5355648535564853, 0.5311203319502075,
	0.5267489711934157, 0.5224489795918368, 0.5182186234817814,
	0.5140562248995983, 0.5099601593625498, 0.5059288537549407,
	0.5019607843137255
};
static const double exp1_ln[64] = {
	0.007782140442054949, 0.02316705928153438, 0.0383188643021366,
	0.053244514518812285, 0.06795066190850775, 0.08244366921107459,
	0.09672962645855111, 0.11081436634029011, 0.12470347850095724,
	0.13840232285911913, 0.15191604202584197, 0.16524957289530717,
	0.1784076574728183, 0.19139485299962947, 0.2042155414286909,
	0.21687393830061436, 0.22937410106484582, 0.24171993688714516,
	0.25391520998096345, 0.26596354849713794, 0.2778684510034563,
	0.28963329258304266, 0.3012613305781618, 0.3127557100038969,
	0.324119468654212, 0.3353555419211378, 0.34646676734620857,
	0.3574558889218038, 0.3683255611587076, 0.37907835293496944,
	0.3897167511400252, 0.4002431641270127, 0.4106599249852684,
	0.42096929464412963, 0.4311734648183713, 0.4412745608048752,
	0.45127464413945856, 0.46117571512217015, 0.470979715218791,
	0.4806885293457519, 0.4903039880451938, 0.4998278695564493,
	0.5092619017898079, 0.5186077642080457, 0.5278670896208424,
	0.5370414658968836, 0.5461324375981357, 0.5551415075405016,
	0.564070138284803, 0.5729197535617855, 0.5816917396346225,
	0.5903874466021763, 0.5990081896460834, 0.6075552502245418,
	0.616029877215514, 0.6244332880118935, 0.6327666695710378,
	0.6410311794209312, 0.6492279466251099, 0.65735807270836,
	0.6654226325450905, 0.6734226752121667, 0.6813592248079031,
	0.689233281238809
};

double jp__prof_exp1(uint64_t r)
{
	/* u = r / 2^64 = f * 2^-(lz+1), f = the mantissa in [1, 2) */
	unsigned lz, i;
	uint64_t m, bits;
	double f, x, lnf;

	if (r == 0)
		r = 1;
	lz = (unsigned)__builtin_clzll(r);
	m = r << lz;			/* bit 63 set */
	/* f from m's 52 bits below its leading one, as a double's mantissa
	 * with exponent 0 (no conversion; what is cut off is under 2^-52). */
	bits = (uint64_t)1023 << 52 | (m << 1) >> 12;
	memcpy(&f, &bits, sizeof f);
	/* ln f = ln c + ln(f / c), c the middle of the 64th of [1, 2) f is
	 * in (its next 6 bits): x = f / c - 1 is within 1/129 of 0, and
	 * ln(1 + x) = x - x^2/2 + x^3/3 leaves out less than x^4/4, 1e-9. */
	i = (unsigned)(m >> 57) & 63;
	x = f * exp1_inv[i] - 1;
	lnf = exp1_ln[i] + x * (1 + x * (-0.5 + x * (1.0 / 3)));
	/* -ln u = (lz + 1) ln 2 - ln f */
	return ((double)lz + 1) * 0.69314718055994530942 - lnf;
}

uint64_t jp__prof_interval(uint64_t *state, uint64_t mean)
{
	double b = jp__prof_exp1(rng_next(state)) * (double)mean;

	/* E is below 45 (u >= 2^-64): at most 45 GiB * 45 */
	return (uint64_t)b + 1;
}

uint64_t jp__prof_draw(void)
{
	return jp__prof_interval(&prof_rng, jp__settings.prof_rate);
}

/* Blocks of class cls to hand out up to and including the next sample:
 * floor((interval - 1) / size) + 1 of an interval of
 * jp__prof_interval, floor(E * rate / size) + 1, without its integer
 * division (the rate over the size is worked out while E is). */
static uint64_t class_countdown(uint32_t cls)
{
	double per = (double)jp__settings.prof_rate / jp__classes[cls].bsize;
	double k = jp__prof_exp1(rng_next(&prof_rng)) * per;

	return k >= (double)((uint64_t)1 << 40) ? (uint64_t)1 << 40 : (uint64_t)(int64_t)k + 1;
}

void jp__prof_bin_arm(struct jp_bin *b, uint32_t cls)
{
	uint64_t cn = JP_CNT_LOAD(b->cn);
	uint64_t target = ((uint64_t)1 << 48) - class_countdown(cls);

	/* nalloc_hi + count stays the same (modulo 2^64). */
	JP_CNT_SET(b->nalloc_hi, JP_CNT_LOAD(b->nalloc_hi) - (target - JP_CN_NALLOC(cn)));
	JP_CNT_SET(b->cn, JP_CN_CREDIT(cn) | target << 16);
}
