package run

import (
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/report"
	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload"
)

// rateMeter follows a fixed-rate run against its schedule: the backlog at
// each interval's end and the measurement phase's figures. Its methods do
// nothing on a nil receiver (the closed loop).
type rateMeter struct {
	pacer   *workload.Pacer
	backlog uint64        // at the last collect
	oldest  time.Duration // at the last collect
	sum     report.RateSummary
}

// collect reads the schedule's queue at the interval's end.
func (r *rateMeter) collect(now time.Time) {
	if r == nil {
		return
	}
	r.backlog, r.oldest = r.pacer.Backlog(now)
}

// interval is the interval's figures against the target; a measurement
// interval counts in the summary.
func (r *rateMeter) interval(s *measure.IntervalStats, lengthS float64, measure bool) *report.RateInterval {
	if r == nil {
		return nil
	}
	iv := &report.RateInterval{TargetNOTPM: r.pacer.TargetNOTPM, Backlog: r.backlog, Oldest: r.oldest}
	if lengthS > 0 {
		iv.NOTPM = float64(s.Completed(spec.TxNewOrder)) * 60 / lengthS
	}
	iv.Below = iv.NOTPM < report.HeldShare*iv.TargetNOTPM
	if measure {
		r.sum.Intervals++
		if iv.Below {
			r.sum.Below++
		}
		r.sum.BacklogMax = max(r.sum.BacklogMax, iv.Backlog)
		r.sum.OldestMax = max(r.sum.OldestMax, iv.Oldest)
	}
	return iv
}

// summary is the measurement phase against the target.
func (r *rateMeter) summary(tot *measure.Totals, measuredS float64) *report.RateSummary {
	if r == nil {
		return nil
	}
	s := r.sum
	s.TargetNOTPM, s.Arrivals, s.Seed = r.pacer.TargetNOTPM, string(r.pacer.Arrivals), r.pacer.Seed
	s.NOTPM = tot.TpmC(measuredS)
	return &s
}
