package measure

import (
	"sync"
	"time"

	"flushbench/tpcc/internal/spec"
)

// Counters are tpcc-mysql's per-type raw results: sc (completed within the
// response-time threshold), lt (completed late), rt (deadlock / lock-wait
// retries), fl (failed), plus the response-time sum for avg_rt.
type Counters struct {
	SC, LT, RT, FL uint64
	SumMS          float64
}

// TypeInterval is what one transaction type did during one interval.
type TypeInterval struct {
	Hist Histogram
	Counters
}

// IntervalStats is one reporting interval across all types.
type IntervalStats struct {
	T [spec.NumTxTypes]TypeInterval
	// Open holds, per type, the ages of the transactions still in flight
	// at the interval's end (one per connection at most): each has waited
	// at least that long, and its completion, later, records its whole
	// response time in the interval it completes in. A reader that wants a
	// window's tail including the waits still open at its end adds these
	// (docs/statistics.md, "Response time").
	Open [spec.NumTxTypes]Histogram
}

// add accumulates o into c.
func (c *Counters) add(o *Counters) {
	c.SC += o.SC
	c.LT += o.LT
	c.RT += o.RT
	c.FL += o.FL
	c.SumMS += o.SumMS
}

func (s *IntervalStats) merge(o *IntervalStats) {
	for i := range s.T {
		s.T[i].Hist.Merge(&o.T[i].Hist)
		s.T[i].Counters.add(&o.T[i].Counters)
		s.Open[i].Merge(&o.Open[i])
	}
}

// Retries sums rt over all types.
func (s *IntervalStats) Retries() uint64 {
	var n uint64
	for i := range s.T {
		n += s.T[i].RT
	}
	return n
}

// Errors sums fl over all types.
func (s *IntervalStats) Errors() uint64 {
	var n uint64
	for i := range s.T {
		n += s.T[i].FL
	}
	return n
}

// Completed is sc+lt for type t.
func (s *IntervalStats) Completed(t spec.TxType) uint64 { return s.T[t].SC + s.T[t].LT }

// Recorder is owned by one connection; the reporter drains it at each tick.
// The mutex is uncontended except for that drain, so recording stays cheap
// without a shared hot lock.
type Recorder struct {
	mu  sync.Mutex
	cur IntervalStats
	// The transaction in flight, if any: its type and when its first
	// attempt started (Begin sets them, Record clears them).
	open      bool
	openType  spec.TxType
	openStart time.Time
}

// Begin marks a transaction of type t, started at start, as in flight
// until Record accounts it: an interval that ends meanwhile counts its age
// in Open.
func (w *Recorder) Begin(t spec.TxType, start time.Time) {
	w.mu.Lock()
	w.open, w.openType, w.openStart = true, t, start
	w.mu.Unlock()
}

// Record accounts one finished transaction.
func (w *Recorder) Record(t spec.TxType, rt time.Duration, retries int, failed bool, late time.Duration) {
	w.mu.Lock()
	w.open = false
	ti := &w.cur.T[t]
	ti.RT += uint64(retries)
	switch {
	case failed:
		ti.FL++
	default:
		// On time strictly below the limit, as tpcc-mysql counts.
		if rt >= late {
			ti.LT++
		} else {
			ti.SC++
		}
		ti.Hist.Record(rt)
		ti.SumMS += float64(rt) / float64(time.Millisecond)
	}
	w.mu.Unlock()
}

// DrainInto moves the connection's current interval, which ends at now,
// into dst and resets it; a transaction in flight adds its age at now to
// dst.Open (it stays in flight: its completion is recorded later).
func (w *Recorder) DrainInto(dst *IntervalStats, now time.Time) {
	w.mu.Lock()
	dst.merge(&w.cur)
	for i := range w.cur.T {
		w.cur.T[i] = TypeInterval{}
	}
	if w.open {
		dst.Open[w.openType].Record(now.Sub(w.openStart))
	}
	w.mu.Unlock()
}

// Totals accumulates the measurement phase: the counters and, per type, the
// merge of the intervals' histograms (the phase's percentiles come from it,
// never from averaging the intervals' percentiles). The intervals' Open
// ages are not added: each is a state at one instant, not completions.
type Totals struct {
	T       [spec.NumTxTypes]Counters
	Latency [spec.NumTxTypes]Histogram
}

// Add accumulates one measurement interval.
func (t *Totals) Add(s *IntervalStats) {
	for i := range t.T {
		t.T[i].add(&s.T[i].Counters)
		t.Latency[i].Merge(&s.T[i].Hist)
	}
}

// Retries sums rt over all types.
func (t *Totals) Retries() uint64 {
	var n uint64
	for i := range t.T {
		n += t.T[i].RT
	}
	return n
}

// Errors sums fl over all types.
func (t *Totals) Errors() uint64 {
	var n uint64
	for i := range t.T {
		n += t.T[i].FL
	}
	return n
}

// TpmC is (sc+lt of New-Order) * 60 / measured seconds.
func (t *Totals) TpmC(measureS float64) float64 {
	if measureS <= 0 {
		return 0
	}
	return float64(t.T[spec.TxNewOrder].SC+t.T[spec.TxNewOrder].LT) * 60 / measureS
}
