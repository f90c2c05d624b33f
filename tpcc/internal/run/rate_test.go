package run

import (
	"strings"
	"testing"

	"flushbench/tpcc/internal/workload"
)

// TestRateOptions: --rate takes a positive NOTPM up to MaxRateNOTPM and
// defaults --arrivals to uniform; --arrivals alone, or another spacing, is
// refused with one sentence.
func TestRateOptions(t *testing.T) {
	base := Opts{W: 1, Conns: 1, MeasureS: 10, IntervalS: 10}
	cases := []struct {
		rate     float64
		arrivals workload.Arrivals
		err      string
	}{
		{600, "", ""},
		{600, workload.ArrivalsPoisson, ""},
		{0, "", ""},
		{-1, "", "--rate -1"},
		{MaxRateNOTPM + 1, "", "--rate"},
		{0, workload.ArrivalsPoisson, "--arrivals needs --rate"},
		{600, "bursty", "--arrivals must be uniform or poisson"},
	}
	for _, c := range cases {
		o := base
		o.RateNOTPM, o.Arrivals = c.rate, c.arrivals
		err := o.normalize()
		if c.err == "" {
			if err != nil {
				t.Errorf("rate %v arrivals %q: %v", c.rate, c.arrivals, err)
			} else if c.rate > 0 && o.Arrivals == "" {
				t.Errorf("rate %v: no default arrivals", c.rate)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("rate %v arrivals %q: error %v, want %q", c.rate, c.arrivals, err, c.err)
		}
	}
}
