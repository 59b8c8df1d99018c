/* runtime/clock.h: the monotonic clock in milliseconds and the median of timings, which the
 * API's measurements, the backends' rooflines, build timings and the cache's lock waits all
 * use. (libfusec_llvm.so keeps its own clock: it is built without runtime/.) */
#ifndef FUSEC_RUNTIME_CLOCK_H
#define FUSEC_RUNTIME_CLOCK_H

/* CLOCK_MONOTONIC, in milliseconds. */
double rt_now_ms(void);
/* The median of t[0 .. n) (n >= 1), the mean of the middle two for an even n; sorts t. */
double rt_median(double *t, int n);

#endif
