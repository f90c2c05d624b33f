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
