// Package measure is what the run measures: a log-linear latency histogram,
// tpcc-mysql's per-type counters (sc, lt, rt, fl) per interval and for the
// measurement phase, and the per-connection recorder the reporter drains.
package measure

import (
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram in microseconds: values below
// 128 µs are exact, above that each power of two is split into 64 buckets,
// so a reported percentile is within ~1.6% of the true value. Recording is a
// few integer operations and never allocates, which matters because every
// transaction records once.
type Histogram struct {
	counts [histBuckets]uint32
	n      uint64
	sumUS  uint64
	maxUS  uint64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	histLinear  = 2 * histSub      // values below this are exact
	histShifts  = 34               // covers up to ~2^40 µs (~12 days)
	histBuckets = histLinear + histShifts*histSub
)

func bucketOf(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	shift := bits.Len64(us) - (histSubBits + 1)
	if shift > histShifts {
		return histBuckets - 1
	}
	return histLinear + (shift-1)*histSub + int(us>>uint(shift)) - histSub
}

// bucketMid returns a representative value (µs) for bucket i: its midpoint.
func bucketMid(i int) float64 {
	if i < histLinear {
		return float64(i)
	}
	shift := (i-histLinear)/histSub + 1
	low := uint64((i-histLinear)%histSub+histSub) << uint(shift)
	width := uint64(1) << uint(shift)
	return float64(low) + float64(width-1)/2
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(d / time.Microsecond)
	if d < 0 {
		us = 0
	}
	h.counts[bucketOf(us)]++
	h.n++
	h.sumUS += us
	if us > h.maxUS {
		h.maxUS = us
	}
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.n }

// MaxMS is the largest observation in milliseconds (exact).
func (h *Histogram) MaxMS() float64 { return float64(h.maxUS) / 1000 }

// SumMS is the sum of observations in milliseconds.
func (h *Histogram) SumMS() float64 { return float64(h.sumUS) / 1000 }

// PercentileMS returns the p-th percentile (0 < p <= 100) in milliseconds:
// the value at rank ceil(p/100*n), never above the exact maximum.
func (h *Histogram) PercentileMS(p float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(p / 100 * float64(h.n))
	if float64(rank) < p/100*float64(h.n) {
		rank++
	}
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i := range h.counts {
		cum += uint64(h.counts[i])
		if cum >= rank {
			v := bucketMid(i)
			if v > float64(h.maxUS) {
				v = float64(h.maxUS)
			}
			return v / 1000
		}
	}
	return h.MaxMS()
}

// Merge adds o into h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sumUS += o.sumUS
	if o.maxUS > h.maxUS {
		h.maxUS = o.maxUS
	}
}

// Reset clears h.
func (h *Histogram) Reset() { *h = Histogram{} }
