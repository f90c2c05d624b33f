package report

import (
	"strconv"
	"time"
)

func appendMS(b []byte, d time.Duration) []byte {
	return appendF(b, float64(d)/float64(time.Millisecond))
}

// appendRateIntervalJSON appends a fixed-rate interval's member (nothing in
// a closed loop):
// ,"rate":{"target_notpm":x,"notpm":x,"backlog":N,"backlog_oldest_ms":x,"below":false}
// — the target, the New-Orders a minute completed in the interval, the
// scheduled starts due by its end that no connection had begun and how
// late the oldest of them was, and whether notpm fell below HeldShare of
// the target.
func appendRateIntervalJSON(b []byte, r *RateInterval) []byte {
	if r == nil {
		return b
	}
	b = append(b, `,"rate":{"target_notpm":`...)
	b = appendF(b, r.TargetNOTPM)
	b = append(b, `,"notpm":`...)
	b = appendF(b, r.NOTPM)
	b = append(b, `,"backlog":`...)
	b = appendU(b, r.Backlog)
	b = append(b, `,"backlog_oldest_ms":`...)
	b = appendMS(b, r.Oldest)
	b = append(b, `,"below":`...)
	b = strconv.AppendBool(b, r.Below)
	return append(b, '}')
}

// appendRateSummaryJSON appends a fixed-rate summary's member (nothing in a
// closed loop):
// ,"rate":{"target_notpm":x,"arrivals":"uniform","seed":N,"notpm":x,"intervals":N,
// "intervals_below":N,"backlog_max":N,"backlog_oldest_max_ms":x}
// — over the measurement phase: its New-Orders a minute (tpmc), its
// intervals and those below HeldShare of the target, the largest backlog
// at an interval's end and the latest its oldest start was then.
func appendRateSummaryJSON(b []byte, r *RateSummary) []byte {
	if r == nil {
		return b
	}
	b = append(b, `,"rate":{"target_notpm":`...)
	b = appendF(b, r.TargetNOTPM)
	b = append(b, `,"arrivals":`...)
	b = strconv.AppendQuote(b, r.Arrivals)
	b = append(b, `,"seed":`...)
	b = appendU(b, r.Seed)
	b = append(b, `,"notpm":`...)
	b = appendF(b, r.NOTPM)
	b = append(b, `,"intervals":`...)
	b = strconv.AppendInt(b, int64(r.Intervals), 10)
	b = append(b, `,"intervals_below":`...)
	b = strconv.AppendInt(b, int64(r.Below), 10)
	b = append(b, `,"backlog_max":`...)
	b = appendU(b, r.BacklogMax)
	b = append(b, `,"backlog_oldest_max_ms":`...)
	b = appendMS(b, r.OldestMax)
	return append(b, '}')
}
