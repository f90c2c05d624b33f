// Package report is what tpcc run writes: tpcc_start compatible text or
// JSON lines on stdout (both behind Sink), and tpcc_start's optional
// per-New-Order files (-f, -t).
package report

import (
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// Interval is one reporting interval as the run loop closes it.
type Interval struct {
	Seq        int       // 1, 2, ... over the whole run, ramp-up included
	At         time.Time // wall clock at the boundary
	ElapsedS   float64   // seconds from the run start to the boundary
	LengthS    float64   // seconds since the previous boundary
	Measure    bool      // belongs to the measurement phase (else ramp-up)
	EndsRampup bool      // the scheduled boundary at the end of ramp-up
	Stats      *measure.IntervalStats
}

// Summary is the end of a run; Totals cover the measurement phase only.
type Summary struct {
	Totals      *measure.Totals
	MeasuredS   float64
	Interrupted bool
	Limits      [spec.NumTxTypes]int // late thresholds in force, as printed
	Client      string               // the client that carried the statements: go or libmariadb
}

// Sink receives a run's progress in order: Begin once the connections are
// open, Started once they run, each Interval, Stopping and Stopped around
// the wait for the connections, then Summary. TextSink and JSONSink are the
// two outputs (--json chooses).
type Sink interface {
	Begin()
	Started()
	Interval(iv *Interval)
	Stopping()
	Stopped(conns int)
	Summary(s *Summary)
}

var (
	_ Sink = (*TextSink)(nil)
	_ Sink = (*JSONSink)(nil)
)
