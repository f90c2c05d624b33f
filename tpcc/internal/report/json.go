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

// FormatVersion is the version of the JSON lines' format, on every line as
// "format" (docs/tpcc.md, "JSON output"). flushbench reads one version and
// refuses a line of another, so a stale binary is named instead of its
// output being misread: bump it whenever a field changes meaning or goes.
const FormatVersion = 1

// appendHead starts a line: `{"type":"<kind>","format":1`.
func appendHead(b []byte, kind string) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","format":`...)
	return strconv.AppendInt(b, FormatVersion, 10)
}

func appendF(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', 3, 64) }

func appendU(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// appendTypeKey appends `"new_order":` (the type's JSON key): every
// per-type object of the interval and summary lines is keyed by it.
func appendTypeKey(b []byte, t spec.TxType) []byte {
	b = append(b, '"')
	b = append(b, spec.Names[t]...)
	return append(b, `":`...)
}

// appendComma separates the per-type members of an object that starts
// with the first type.
func appendComma(b []byte, t spec.TxType) []byte {
	if t > spec.TxNewOrder {
		return append(b, ',')
	}
	return b
}

// appendPercentilesJSON appends `"p95_ms":x,"p99_ms":x,"max_ms":x` from h:
// the same three figures in the interval lines (per interval) and in the
// summary's "latency" (the merged measurement phase).
func appendPercentilesJSON(b []byte, h *measure.Histogram) []byte {
	b = append(b, `"p95_ms":`...)
	b = appendF(b, h.PercentileMS(95))
	b = append(b, `,"p99_ms":`...)
	b = appendF(b, h.PercentileMS(99))
	b = append(b, `,"max_ms":`...)
	return appendF(b, h.MaxMS())
}

// appendLayoutJSON renders the first line, the bucket layout of the
// histograms the interval lines carry:
// {"type":"histogram_layout","format":1,"scheme":"log-linear","unit":"us","exact_below_us":128,
// "sub_buckets":64,"buckets":2304,"relative_width":0.015625}.
// relative_width is the precision: no bucket is wider than that share of
// its lower bound.
func appendLayoutJSON(b []byte, l measure.Layout) []byte {
	b = append(appendHead(b, "histogram_layout"), `,"scheme":"log-linear","unit":"us","exact_below_us":`...)
	b = strconv.AppendInt(b, int64(l.ExactBelowUS), 10)
	b = append(b, `,"sub_buckets":`...)
	b = strconv.AppendInt(b, int64(l.SubBuckets), 10)
	b = append(b, `,"buckets":`...)
	b = strconv.AppendInt(b, int64(l.Buckets), 10)
	b = append(b, `,"relative_width":`...)
	b = strconv.AppendFloat(b, l.RelativeWidth, 'g', -1, 64)
	return append(b, '}')
}

// appendIntervalJSON renders
// {"type":"interval","format":1,"seq":1,"ts":"...","elapsed_s":20.000,"interval_s":10.000,"phase":"warmup",
// "new_order":{"count":N,"p95_ms":x,"p99_ms":x,"max_ms":x},...,"retries":N,"errors":N,
// "hist":{"new_order":[[index,count],...],...}}.
// count is completed transactions (sc+lt); for New-Order it includes the 1%
// that roll back by design, as tpcc-mysql counts them. hist holds each
// type's non-empty histogram buckets (layout: the histogram_layout line);
// their counts add up to count. At a fixed rate "rate" follows "errors"
// (appendRateIntervalJSON). Then "open" (appendOpenJSON) and the closing
// brace.
func appendIntervalJSON(b []byte, seq int, ts time.Time, elapsed, interval float64, phase string, s *measure.IntervalStats, rate *RateInterval) []byte {
	b = append(appendHead(b, "interval"), `,"seq":`...)
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
		b = appendTypeKey(append(b, ','), t)
		b = append(b, `{"count":`...)
		b = appendU(b, s.Completed(t))
		b = appendPercentilesJSON(append(b, ','), &s.T[t].Hist)
		b = append(b, '}')
	}
	b = append(b, `,"retries":`...)
	b = appendU(b, s.Retries())
	b = append(b, `,"errors":`...)
	b = appendU(b, s.Errors())
	b = appendRateIntervalJSON(b, rate)
	b = append(b, `,"hist":{`...)
	var buckets []measure.Bucket
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		b = appendTypeKey(appendComma(b, t), t)
		buckets = s.T[t].Hist.AppendBuckets(buckets[:0])
		b = appendBucketsJSON(b, buckets)
	}
	return appendOpenJSON(append(b, '}'), s, buckets[:0])
}

// appendBucketsJSON renders sparse buckets as [[index,count],...].
func appendBucketsJSON(b []byte, buckets []measure.Bucket) []byte {
	b = append(b, '[')
	for i, bk := range buckets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(bk.Index), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(bk.Count), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendSummaryJSON renders the final
// {"type":"summary","format":1,"measure_s":60.000,"tpmc":...,"totals":{"new_order":{"sc":..,"lt":..,"rt":..,"fl":..,"avg_ms":..},...},
// "retries":N,"errors":N,"interrupted":false,"client":"go",("rate":{...} at a fixed rate: appendRateSummaryJSON)
// "latency":{"new_order":{"p95_ms":x,"p99_ms":x,"max_ms":x},...}}. client is
// the code that carried the statements (go or libmariadb; omitted when
// unknown). Totals
// cover the measurement phase only; latency's percentiles come from the
// merge of the measurement intervals' histograms (exactly what merging the
// intervals' hist buckets gives a reader).
func appendSummaryJSON(b []byte, measureS float64, tot *measure.Totals, interrupted bool, client string, rate *RateSummary) []byte {
	b = append(appendHead(b, "summary"), `,"measure_s":`...)
	b = appendF(b, measureS)
	b = append(b, `,"tpmc":`...)
	b = appendF(b, tot.TpmC(measureS))
	b = append(b, `,"totals":{`...)
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		c := &tot.T[t]
		b = appendTypeKey(appendComma(b, t), t)
		b = append(b, `{"sc":`...)
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
	if client != "" {
		b = append(b, `,"client":`...)
		b = strconv.AppendQuote(b, client)
	}
	b = appendRateSummaryJSON(b, rate)
	b = append(b, `,"latency":{`...)
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		b = appendTypeKey(appendComma(b, t), t)
		b = appendPercentilesJSON(append(b, '{'), &tot.Latency[t])
		b = append(b, '}')
	}
	return append(b, `}}`...)
}

// JSONSink writes one JSON object per line: the histogram layout, every
// interval (ramp-up ones with phase "warmup") and the summary.
type JSONSink struct {
	w io.Writer
}

// NewJSONSink writes to w.
func NewJSONSink(w io.Writer) *JSONSink { return &JSONSink{w: w} }

// Begin writes the histogram_layout line.
func (j *JSONSink) Begin() { writeLine(j.w, appendLayoutJSON(nil, measure.HistogramLayout())) }

// Started writes nothing.
func (j *JSONSink) Started() {}

// Interval writes one interval line.
func (j *JSONSink) Interval(iv *Interval) {
	phase := "warmup"
	if iv.Measure {
		phase = "measure"
	}
	writeLine(j.w, appendIntervalJSON(nil, iv.Seq, iv.At, iv.ElapsedS, iv.LengthS, phase, iv.Stats, iv.Rate))
}

// Stopping writes nothing.
func (j *JSONSink) Stopping() {}

// Stopped writes nothing.
func (j *JSONSink) Stopped(int) {}

// Summary writes the summary line.
func (j *JSONSink) Summary(s *Summary) {
	writeLine(j.w, appendSummaryJSON(nil, s.MeasuredS, s.Totals, s.Interrupted, s.Client, s.Rate))
}

// writeLine writes b plus a newline in one call; stdout is unbuffered, so
// each line is visible to a reader immediately.
func writeLine(w io.Writer, b []byte) {
	w.Write(append(b, '\n'))
}
