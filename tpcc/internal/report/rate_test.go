package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flushbench/tpcc/internal/measure"
)

// TestRateMembersAreAdditive: a fixed-rate run's interval and summary
// lines carry "rate"; a closed loop's lines have none.
func TestRateMembersAreAdditive(t *testing.T) {
	var s measure.IntervalStats
	var tot measure.Totals
	iv := &RateInterval{TargetNOTPM: 600, NOTPM: 540, Backlog: 12, Oldest: 1500 * time.Millisecond, Below: true}
	var line struct {
		Rate map[string]any `json:"rate"`
	}
	if err := json.Unmarshal(appendIntervalJSON(nil, 1, time.Unix(0, 0), 10, 10, "measure", &s, iv), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"target_notpm": 600.0, "notpm": 540.0, "backlog": 12.0, "backlog_oldest_ms": 1500.0, "below": true}
	for k, v := range want {
		if line.Rate[k] != v {
			t.Errorf("interval rate.%s = %v, want %v", k, line.Rate[k], v)
		}
	}
	sum := &RateSummary{TargetNOTPM: 600, Arrivals: "poisson", Seed: 1 << 63, NOTPM: 590, Intervals: 6, Below: 1, BacklogMax: 12, OldestMax: 1500 * time.Millisecond}
	b := appendSummaryJSON(nil, 60, &tot, false, "go", sum)
	if !strings.Contains(string(b), `"rate":{"target_notpm":600.000,"arrivals":"poisson","seed":9223372036854775808,"notpm":590.000,"intervals":6,"intervals_below":1,"backlog_max":12,"backlog_oldest_max_ms":1500.000}`) {
		t.Errorf("summary: %s", b)
	}
	for _, b := range [][]byte{appendIntervalJSON(nil, 1, time.Unix(0, 0), 10, 10, "measure", &s, nil), appendSummaryJSON(nil, 60, &tot, false, "go", nil)} {
		if strings.Contains(string(b), `"rate"`) {
			t.Errorf("closed loop line with a rate: %s", b)
		}
	}
}
