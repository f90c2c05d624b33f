package tpcc

import (
	"strconv"
	"time"
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
func appendIntervalJSON(b []byte, seq int, ts time.Time, elapsed, interval float64, phase string, s *IntervalStats) []byte {
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
	for t := TxNewOrder; t < numTxTypes; t++ {
		h := &s.T[t].Hist
		b = append(b, `,"`...)
		b = append(b, txNames[t]...)
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
func appendSummaryJSON(b []byte, measureS float64, tot *Totals, interrupted bool) []byte {
	b = append(b, `{"type":"summary","measure_s":`...)
	b = appendF(b, measureS)
	b = append(b, `,"tpmc":`...)
	b = appendF(b, tot.TpmC(measureS))
	b = append(b, `,"totals":{`...)
	for t := TxNewOrder; t < numTxTypes; t++ {
		c := &tot.T[t]
		if t > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, txNames[t]...)
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
