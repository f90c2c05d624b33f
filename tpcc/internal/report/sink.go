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
	Rate       *RateInterval // a fixed-rate run's schedule; nil in a closed loop
}

// RateInterval is a fixed-rate run's interval against its target.
type RateInterval struct {
	TargetNOTPM float64 // the rate asked for (--rate)
	NOTPM       float64 // New-Orders completed in the interval, a minute
	// Backlog is the scheduled starts due by the interval's end that no
	// connection had begun; Oldest how late the oldest of them was then.
	Backlog uint64
	Oldest  time.Duration
	// Below says NOTPM fell below HeldShare of the target.
	Below bool
}

// RateSummary is a fixed-rate run's measurement phase against its target.
type RateSummary struct {
	TargetNOTPM float64
	Arrivals    string
	Seed        uint64
	NOTPM       float64 // the phase's New-Orders a minute (= tpmc)
	// Intervals are the measurement intervals, Below those that fell below
	// HeldShare of the target.
	Intervals, Below int
	BacklogMax       uint64        // the largest backlog at an interval's end
	OldestMax        time.Duration // the latest the oldest waiting start was then
}

// HeldShare is the share of its target rate an interval must reach to
// hold it: below 95 %, a fixed-rate interval is marked (as the Insert
// Benchmark marks a step that falls short).
const HeldShare = 0.95

// Summary is the end of a run; Totals cover the measurement phase only.
type Summary struct {
	Totals      *measure.Totals
	MeasuredS   float64
	Interrupted bool
	Limits      [spec.NumTxTypes]int // late thresholds in force, as printed
	Client      string               // the client that carried the statements: go or libmariadb
	Rate        *RateSummary         // a fixed-rate run's; nil in a closed loop
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
