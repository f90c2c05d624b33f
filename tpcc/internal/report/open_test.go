package report

import (
	"encoding/json"
	"testing"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// TestIntervalJSONOpen: the interval line's "open" holds, per type with
// transactions in flight at its end, their count, the oldest age and the
// histogram of their ages; a type with none is absent, and an interval
// with none in flight has "open":{}.
func TestIntervalJSONOpen(t *testing.T) {
	type open struct {
		Count uint64      `json:"count"`
		MaxMS float64     `json:"max_ms"`
		Hist  [][2]uint64 `json:"hist"`
	}
	parse := func(s *measure.IntervalStats) map[string]open {
		t.Helper()
		line := appendIntervalJSON(nil, 3, time.Unix(0, 0), 30, 10, "measure", s, nil)
		var m struct {
			Open map[string]open `json:"open"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.Open == nil {
			t.Fatalf("line %s: %v (or no open object)", line, err)
		}
		return m.Open
	}
	var s measure.IntervalStats
	if got := parse(&s); len(got) != 0 {
		t.Fatalf("nothing in flight, open %v", got)
	}
	s.Open[spec.TxNewOrder].Record(20 * time.Second)
	s.Open[spec.TxNewOrder].Record(3 * time.Second)
	s.Open[spec.TxDelivery].Record(time.Second)
	got := parse(&s)
	no, ok := got["new_order"]
	if len(got) != 2 || !ok || no.Count != 2 || no.MaxMS != 20000 || got["delivery"].Count != 1 {
		t.Fatalf("open %+v: want new_order 2 (oldest 20000 ms) and delivery 1", got)
	}
	var n uint64
	for _, b := range no.Hist {
		n += b[1]
	}
	if n != 2 {
		t.Errorf("new_order open buckets hold %d, want 2", n)
	}
}
