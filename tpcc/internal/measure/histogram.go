// Package measure is what the run measures: a log-linear latency histogram,
// tpcc-mysql's per-type counters (sc, lt, rt, fl) per interval and for the
// measurement phase, and the per-connection recorder the reporter drains.
package measure

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram in microseconds: values below
// 128 µs are exact, above that each power of two is split into 64 buckets,
// so a bucket is at most 1/64 (1.5625%) of its lower bound wide and a
// reported percentile (the bucket's midpoint) is within 1/128 (0.78%) of the
// recorded value (the response time truncated to whole µs). Recording is a few integer operations and never allocates,
// which matters because every transaction records once.
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

// bucketBounds returns bucket i's range [low, high) in µs. The last bucket
// also holds every larger value (beyond 2^41 µs, about 25 days).
func bucketBounds(i int) (low, high uint64) {
	if i < histLinear {
		return uint64(i), uint64(i) + 1
	}
	shift := (i-histLinear)/histSub + 1
	low = uint64((i-histLinear)%histSub+histSub) << uint(shift)
	return low, low + uint64(1)<<uint(shift)
}

// bucketMid returns a representative value (µs) for bucket i: the midpoint
// of the whole microseconds it holds, low + (width-1)/2 (exact below
// histLinear, where the width is 1).
func bucketMid(i int) float64 {
	low, high := bucketBounds(i)
	return float64(low) + float64(high-low-1)/2
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

// Layout describes the bucket scheme to readers of emitted buckets (the
// JSON lines' histogram_layout): enough to turn a bucket index back into
// its range of microseconds.
type Layout struct {
	// ExactBelowUS: buckets 0..ExactBelowUS-1 each hold exactly i µs.
	ExactBelowUS int
	// SubBuckets: above that, each power of two [2^k, 2^(k+1)) µs is split
	// into this many equal buckets.
	SubBuckets int
	// Buckets is the number of buckets; the last also holds every larger value.
	Buckets int
	// RelativeWidth is the widest bucket's width over its lower bound
	// (1/SubBuckets): the histogram's precision.
	RelativeWidth float64
}

// HistogramLayout is the layout every Histogram uses.
func HistogramLayout() Layout {
	return Layout{ExactBelowUS: histLinear, SubBuckets: histSub, Buckets: histBuckets, RelativeWidth: 1.0 / histSub}
}

// BucketBoundsUS returns bucket i's range [low, high) in µs (0 <= i < Buckets).
func BucketBoundsUS(i int) (low, high uint64) { return bucketBounds(i) }

// Bucket is one non-empty bucket of a histogram.
type Bucket struct {
	Index int
	Count uint32
}

// AppendBuckets appends h's non-empty buckets to dst in index order: the
// sparse form an interval's histogram is emitted in.
func (h *Histogram) AppendBuckets(dst []Bucket) []Bucket {
	if h.n == 0 {
		return dst
	}
	for i, c := range h.counts {
		if c != 0 {
			dst = append(dst, Bucket{Index: i, Count: c})
		}
	}
	return dst
}

// HistogramFromBuckets rebuilds a histogram from its sparse buckets and its
// exact maximum (µs), which is what a reader of the JSON lines has. Its sum
// is unknown and left 0; counts, maximum and percentiles equal the
// original's. A bucket index out of range, a repeated or decreasing index,
// a zero count or a maximum outside the last non-empty bucket is an error.
func HistogramFromBuckets(bs []Bucket, maxUS uint64) (Histogram, error) {
	var h Histogram
	prev := -1
	for _, b := range bs {
		if b.Index <= prev || b.Index >= histBuckets || b.Count == 0 {
			return Histogram{}, fmt.Errorf("bucket [%d,%d] after index %d: need increasing indexes below %d and counts above 0", b.Index, b.Count, prev, histBuckets)
		}
		h.counts[b.Index] = b.Count
		h.n += uint64(b.Count)
		prev = b.Index
	}
	if prev >= 0 {
		low, high := bucketBounds(prev)
		if prev == histBuckets-1 {
			high = math.MaxUint64
		}
		if maxUS < low || maxUS >= high {
			return Histogram{}, fmt.Errorf("maximum %d µs is not in the last non-empty bucket %d [%d, %d)", maxUS, prev, low, high)
		}
	} else if maxUS != 0 {
		return Histogram{}, fmt.Errorf("maximum %d µs without any bucket", maxUS)
	}
	h.maxUS = maxUS
	return h, nil
}

// MaxUS is the largest observation in whole microseconds (exact).
func (h *Histogram) MaxUS() uint64 { return h.maxUS }
