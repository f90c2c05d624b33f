package measure

import (
	"testing"
	"time"

	"flushbench/tpcc/internal/spec"
)

// TestOpenTransactionIsCountedAtEachIntervalEnd: a transaction that waits
// across two interval ends is in Open at both, with its age then, and in
// the histogram of the interval it completes in with its whole response
// time (from its start); once recorded it is no longer open.
func TestOpenTransactionIsCountedAtEachIntervalEnd(t *testing.T) {
	var rec Recorder
	start := time.Unix(1000, 0)
	rec.Begin(spec.TxNewOrder, start)

	var first, second, third IntervalStats
	rec.DrainInto(&first, start.Add(10*time.Second))
	rec.DrainInto(&second, start.Add(20*time.Second))
	if n, top := first.Open[spec.TxNewOrder].Count(), first.Open[spec.TxNewOrder].MaxMS(); n != 1 || top != 10000 {
		t.Fatalf("first interval: %d open, oldest %.3f ms; want 1 of 10000 ms", n, top)
	}
	if top := second.Open[spec.TxNewOrder].MaxMS(); top != 20000 {
		t.Fatalf("second interval: oldest open %.3f ms, want 20000", top)
	}
	if first.Completed(spec.TxNewOrder) != 0 || first.T[spec.TxNewOrder].Hist.Count() != 0 {
		t.Fatal("an open transaction was counted as completed")
	}

	rec.Record(spec.TxNewOrder, 25*time.Second, 0, false, time.Hour)
	rec.DrainInto(&third, start.Add(30*time.Second))
	if got := third.T[spec.TxNewOrder].Hist.MaxMS(); got != 25000 {
		t.Errorf("completed with max %.3f ms, want the whole 25000", got)
	}
	for ty := range third.Open {
		if third.Open[ty].Count() != 0 {
			t.Errorf("type %d still open after its completion was recorded", ty)
		}
	}
}

// TestOpenMergesAcrossConnections: each connection's transaction in flight
// adds one age to the interval's Open of its type; Totals ignores them.
func TestOpenMergesAcrossConnections(t *testing.T) {
	var a, b, c Recorder
	now := time.Unix(2000, 0)
	a.Begin(spec.TxNewOrder, now.Add(-3*time.Second))
	b.Begin(spec.TxNewOrder, now.Add(-7*time.Second))
	c.Begin(spec.TxPayment, now.Add(-time.Second))
	var s IntervalStats
	for _, r := range []*Recorder{&a, &b, &c} {
		r.DrainInto(&s, now)
	}
	no, pay := &s.Open[spec.TxNewOrder], &s.Open[spec.TxPayment]
	if no.Count() != 2 || no.MaxMS() != 7000 || pay.Count() != 1 || pay.MaxMS() != 1000 {
		t.Fatalf("open New-Order %d (oldest %.0f ms), Payment %d (%.0f ms); want 2 (7000) and 1 (1000)",
			no.Count(), no.MaxMS(), pay.Count(), pay.MaxMS())
	}
	var tot Totals
	tot.Add(&s)
	if tot.Latency[spec.TxNewOrder].Count() != 0 {
		t.Error("Totals.Add counted in-flight ages as completions")
	}
}
