package report

import (
	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// appendOpenJSON renders the interval line's last member and closes it:
// ,"open":{"new_order":{"count":N,"max_ms":x,"hist":[[index,count],...]},...}}
// — per type with transactions still in flight at the interval's end,
// their number, the oldest one's age and the histogram of their ages (the
// layout of "hist"). A type with none in flight is absent; "open":{} says
// none was. Each is counted again, with its whole response time, in the
// interval it completes in: a reader adds these ages only for the last
// interval of the span it merges (docs/statistics.md, "Response time").
func appendOpenJSON(b []byte, s *measure.IntervalStats, scratch []measure.Bucket) []byte {
	b = append(b, `,"open":{`...)
	first := true
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		h := &s.Open[t]
		if h.Count() == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendTypeKey(b, t)
		b = append(b, `{"count":`...)
		b = appendU(b, h.Count())
		b = append(b, `,"max_ms":`...)
		b = appendF(b, h.MaxMS())
		b = append(b, `,"hist":`...)
		scratch = h.AppendBuckets(scratch[:0])
		b = appendBucketsJSON(b, scratch)
		b = append(b, '}')
	}
	return append(b, `}}`...)
}
