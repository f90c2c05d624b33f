package report

import (
	"io"
	"strconv"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// JSON lines are built by hand: the schema is fixed and small, and field
// order stays exactly as documented.

func appendF(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', 3, 64) }

func appendU(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// appendIntervalJSON renders
// {"type":"interval","seq":1,"ts":"...","elapsed_s":20.000,"interval_s":10.000,"phase":"warmup",
// "new_order":{"count":N,"p95_ms":x,"p99_ms":x,"max_ms":x},...,"retries":N,"errors":N}.
// count is completed transactions (sc+lt); for New-Order it includes the 1%
// that roll back by design, as tpcc-mysql counts them.
func appendIntervalJSON(b []byte, seq int, ts time.Time, elapsed, interval float64, phase string, s *measure.IntervalStats) []byte {
	b = append(b, `{"type":"interval","seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"ts":"`...)
	b = ts.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","elapsed_s":`...)
	b = appendF(b, elapsed)
	b = append(b, `,"interval_s":`...)
	b = appendF(b, interval)
	b = append(b, `,"phase":"`...)
	b = append(b, phase...)
	b = append(b, '"')
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		h := &s.T[t].Hist
		b = append(b, `,"`...)
		b = append(b, spec.Names[t]...)
		b = append(b, `":{"count":`...)
		b = appendU(b, s.Completed(t))
		b = append(b, `,"p95_ms":`...)
		b = appendF(b, h.PercentileMS(95))
		b = append(b, `,"p99_ms":`...)
		b = appendF(b, h.PercentileMS(99))
		b = append(b, `,"max_ms":`...)
		b = appendF(b, h.MaxMS())
		b = append(b, '}')
	}
	b = append(b, `,"retries":`...)
	b = appendU(b, s.Retries())
	b = append(b, `,"errors":`...)
	b = appendU(b, s.Errors())
	return append(b, '}')
}

// appendSummaryJSON renders the final
// {"type":"summary","measure_s":60.000,"tpmc":...,"totals":{"new_order":{"sc":..,"lt":..,"rt":..,"fl":..,"avg_ms":..},...},
// "retries":N,"errors":N,"interrupted":false}. Totals cover the measurement
// phase only.
func appendSummaryJSON(b []byte, measureS float64, tot *measure.Totals, interrupted bool) []byte {
	b = append(b, `{"type":"summary","measure_s":`...)
	b = appendF(b, measureS)
	b = append(b, `,"tpmc":`...)
	b = appendF(b, tot.TpmC(measureS))
	b = append(b, `,"totals":{`...)
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		c := &tot.T[t]
		if t > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, spec.Names[t]...)
		b = append(b, `":{"sc":`...)
		b = appendU(b, c.SC)
		b = append(b, `,"lt":`...)
		b = appendU(b, c.LT)
		b = append(b, `,"rt":`...)
		b = appendU(b, c.RT)
		b = append(b, `,"fl":`...)
		b = appendU(b, c.FL)
		avg := 0.0
		if n := c.SC + c.LT; n > 0 {
			avg = c.SumMS / float64(n)
		}
		b = append(b, `,"avg_ms":`...)
		b = appendF(b, avg)
		b = append(b, '}')
	}
	b = append(b, `},"retries":`...)
	b = appendU(b, tot.Retries())
	b = append(b, `,"errors":`...)
	b = appendU(b, tot.Errors())
	b = append(b, `,"interrupted":`...)
	b = strconv.AppendBool(b, interrupted)
	return append(b, '}')
}

// JSONSink writes one JSON object per line: every interval (ramp-up ones
// with phase "warmup") and the summary.
type JSONSink struct {
	w io.Writer
}

// NewJSONSink writes to w.
func NewJSONSink(w io.Writer) *JSONSink { return &JSONSink{w: w} }

// Begin writes nothing: JSON lines have no header.
func (j *JSONSink) Begin() {}

// Started writes nothing.
func (j *JSONSink) Started() {}

// Interval writes one interval line.
func (j *JSONSink) Interval(iv *Interval) {
	phase := "warmup"
	if iv.Measure {
		phase = "measure"
	}
	writeLine(j.w, appendIntervalJSON(nil, iv.Seq, iv.At, iv.ElapsedS, iv.LengthS, phase, iv.Stats))
}

// Stopping writes nothing.
func (j *JSONSink) Stopping() {}

// Stopped writes nothing.
func (j *JSONSink) Stopped(int) {}

// Summary writes the summary line.
func (j *JSONSink) Summary(s *Summary) {
	writeLine(j.w, appendSummaryJSON(nil, s.MeasuredS, s.Totals, s.Interrupted))
}

// writeLine writes b plus a newline in one call; stdout is unbuffered, so
// each line is visible to a reader immediately.
func writeLine(w io.Writer, b []byte) {
	w.Write(append(b, '\n'))
}
