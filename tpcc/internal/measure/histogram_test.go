package measure

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<22; us += 1 + us/97 {
		b := bucketOf(us)
		if b < prev {
			t.Fatalf("bucketOf not monotonic at %d", us)
		}
		prev = b
		mid := bucketMid(b)
		if us >= histLinear && math.Abs(mid-float64(us))/float64(us) > 1.0/histSub {
			t.Fatalf("bucketMid(bucketOf(%d)) = %f: error too large", us, mid)
		}
		if us < histLinear && mid != float64(us) {
			t.Fatalf("linear range not exact at %d", us)
		}
	}
	if b := bucketOf(math.MaxUint64); b != histBuckets-1 {
		t.Fatalf("huge value bucket %d", b)
	}
}

func TestPercentiles(t *testing.T) {
	var h Histogram
	if h.PercentileMS(95) != 0 || h.MaxMS() != 0 {
		t.Fatal("empty histogram should report 0")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var vals []float64
	for i := 0; i < 100000; i++ {
		ms := r.ExpFloat64() * 40 // latency-like, mean 40 ms
		vals = append(vals, ms)
		h.Record(time.Duration(ms * float64(time.Millisecond)))
	}
	sort.Float64s(vals)
	for _, p := range []float64{50, 95, 99} {
		exact := vals[int(math.Ceil(p/100*float64(len(vals))))-1]
		got := h.PercentileMS(p)
		if math.Abs(got-exact)/exact > 0.02 {
			t.Errorf("p%v = %.3f, exact %.3f", p, got, exact)
		}
	}
	if got, want := h.MaxMS(), vals[len(vals)-1]; math.Abs(got-want) > 0.001 {
		t.Errorf("max = %.3f want %.3f", got, want)
	}
	if h.Count() != 100000 {
		t.Errorf("count %d", h.Count())
	}
}

func TestPercentileSmall(t *testing.T) {
	var h Histogram
	for _, ms := range []int{1, 2, 3, 4, 100} {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
	// rank ceil(0.95*5)=5 -> the max, which is reported exactly.
	if got := h.PercentileMS(95); math.Abs(got-100) > 1.6 {
		t.Errorf("p95 = %f want ~100", got)
	}
	if got := h.PercentileMS(50); math.Abs(got-3) > 0.05 {
		t.Errorf("p50 = %f want ~3", got)
	}
	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 10 || m.MaxMS() != 100 {
		t.Errorf("merge: count %d max %f", m.Count(), m.MaxMS())
	}
}

// TestBucketBoundsAndPrecision: buckets tile the microseconds without gaps,
// each value falls in the bucket whose bounds contain it, and no bucket is
// wider than the layout's stated relative width of its lower bound (so the
// midpoint a percentile reports is within half of that of any value in it).
func TestBucketBoundsAndPrecision(t *testing.T) {
	l := HistogramLayout()
	if l.ExactBelowUS != 128 || l.SubBuckets != 64 || l.Buckets != 2304 || l.RelativeWidth != 1.0/64 {
		t.Fatalf("layout %+v", l)
	}
	widest := 0.0
	var prevHigh uint64
	for i := 0; i < l.Buckets; i++ {
		low, high := BucketBoundsUS(i)
		if low != prevHigh {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, low, prevHigh)
		}
		prevHigh = high
		if bucketOf(low) != i || bucketOf(high-1) != i {
			t.Fatalf("bucket %d [%d, %d): bucketOf gives %d and %d", i, low, high, bucketOf(low), bucketOf(high-1))
		}
		if i < l.ExactBelowUS {
			if high-low != 1 {
				t.Fatalf("bucket %d below %d µs is %d wide, not exact", i, l.ExactBelowUS, high-low)
			}
			continue
		}
		rel := float64(high-low) / float64(low)
		widest = math.Max(widest, rel)
		mid := bucketMid(i)
		for _, v := range []uint64{low, high - 1} {
			if math.Abs(mid-float64(v))/float64(v) > l.RelativeWidth/2 {
				t.Fatalf("bucket %d: midpoint %.1f is more than half the relative width from %d", i, mid, v)
			}
		}
	}
	if widest != l.RelativeWidth {
		t.Errorf("widest bucket %.6f of its lower bound, layout states %.6f", widest, l.RelativeWidth)
	}
}

// latencyLike draws n response times: mostly milliseconds, with a tail of
// slow ones, as a flushing stall gives.
func latencyLike(r *rand.Rand, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		ms := r.ExpFloat64() * 20
		if r.IntN(100) == 0 {
			ms += r.Float64() * 3000
		}
		out[i] = time.Duration(ms * float64(time.Millisecond))
	}
	return out
}

// roundTrip rebuilds h from its sparse buckets and exact maximum, as a
// reader of the JSON lines does.
func roundTrip(t *testing.T, h *Histogram) Histogram {
	t.Helper()
	got, err := HistogramFromBuckets(h.AppendBuckets(nil), h.MaxUS())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func samePercentiles(t *testing.T, what string, got, want *Histogram) {
	t.Helper()
	if got.Count() != want.Count() || got.MaxUS() != want.MaxUS() || got.counts != want.counts {
		t.Fatalf("%s: count %d max %d, want count %d max %d (or bucket counts differ)", what, got.Count(), got.MaxUS(), want.Count(), want.MaxUS())
	}
	for _, p := range []float64{1, 50, 90, 95, 99, 99.9, 100} {
		if g, w := got.PercentileMS(p), want.PercentileMS(p); g != w {
			t.Errorf("%s: p%v = %v, want %v", what, p, g, w)
		}
	}
}

func TestSparseBucketsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	for _, d := range latencyLike(r, 20000) {
		h.Record(d)
	}
	h.Record(1000 * time.Hour) // beyond the last bucket's nominal range (2^41 µs)
	got := roundTrip(t, &h)
	samePercentiles(t, "round trip", &got, &h)
	var empty Histogram
	got = roundTrip(t, &empty)
	samePercentiles(t, "empty round trip", &got, &empty)
	if b := empty.AppendBuckets(nil); len(b) != 0 {
		t.Errorf("empty histogram has buckets %v", b)
	}
}

// TestMergedIntervalsEqualWholeRun: merging the intervals' histograms, each
// rebuilt from its emitted buckets, gives the histogram of every observation
// at once, and Totals.Add builds the same.
func TestMergedIntervalsEqualWholeRun(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var whole, merged Histogram
	var tot Totals
	for iv := 0; iv < 30; iv++ {
		var s IntervalStats
		for _, d := range latencyLike(r, 50+r.IntN(500)) {
			s.T[2].Hist.Record(d)
			whole.Record(d)
		}
		rebuilt := roundTrip(t, &s.T[2].Hist)
		merged.Merge(&rebuilt)
		tot.Add(&s)
	}
	whole.sumUS = 0 // a rebuilt histogram has no sum
	samePercentiles(t, "merged intervals", &merged, &whole)
	tot.Latency[2].sumUS = 0
	samePercentiles(t, "Totals.Add", &tot.Latency[2], &whole)
	if tot.Latency[0].Count() != 0 {
		t.Error("Totals.Add put observations in another type")
	}
}

func TestHistogramFromBucketsRejectsMalformed(t *testing.T) {
	for name, c := range map[string]struct {
		bs  []Bucket
		max uint64
	}{
		"index out of range":     {[]Bucket{{Index: histBuckets, Count: 1}}, 1},
		"negative index":         {[]Bucket{{Index: -1, Count: 1}}, 1},
		"repeated index":         {[]Bucket{{Index: 5, Count: 1}, {Index: 5, Count: 1}}, 5},
		"decreasing index":       {[]Bucket{{Index: 6, Count: 1}, {Index: 5, Count: 1}}, 6},
		"zero count":             {[]Bucket{{Index: 5, Count: 0}}, 5},
		"max above last bucket":  {[]Bucket{{Index: 5, Count: 1}}, 6},
		"max below last bucket":  {[]Bucket{{Index: 200, Count: 1}}, 5},
		"max without any bucket": {nil, 3},
	} {
		if _, err := HistogramFromBuckets(c.bs, c.max); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
