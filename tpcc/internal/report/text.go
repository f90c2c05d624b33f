package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

// Settings are the run options tpcc_start's header echoes.
type Settings struct {
	Conn                                   mysqlwire.ConnOpts
	W, Conns, RampupS, MeasureS, IntervalS int
}

// TextSink prints tpcc-mysql (tpcc_start) compatible text output, so tools
// that parse tpcc_start logs can parse ours: the header, ramp-up and
// measuring markers, one line per measurement interval (ramp-up intervals
// are not printed, as in tpcc_start) and the summary.
type TextSink struct {
	w io.Writer
	o Settings
}

// NewTextSink writes to w; o is echoed in the header.
func NewTextSink(w io.Writer, o Settings) *TextSink { return &TextSink{w: w, o: o} }

// Begin prints the header.
func (t *TextSink) Begin() { t.header(&t.o) }

// Started prints the ramp-up marker, or the measuring one without ramp-up.
func (t *TextSink) Started() {
	if t.o.RampupS > 0 {
		t.rampup(t.o.RampupS)
	} else {
		t.measuringStart()
	}
}

// Interval prints a measurement interval's line (seconds counted from the
// end of ramp-up), and the measuring marker when ramp-up ends.
func (t *TextSink) Interval(iv *Interval) {
	if iv.Measure {
		t.interval(int(iv.ElapsedS-float64(t.o.RampupS)+0.5), iv.Stats)
	}
	if iv.EndsRampup {
		t.measuringStart()
	}
}

// Stopping prints tpcc_start's "STOPPING THREADS".
func (t *TextSink) Stopping() { t.stopping() }

// Stopped prints one dot per connection.
func (t *TextSink) Stopped(conns int) { t.dots(conns) }

// Summary prints <Raw Results> through <TpmC>.
func (t *TextSink) Summary(s *Summary) { t.summary(s.Totals, s.MeasuredS, s.Limits) }

// maskPassword hides the password: tpcc-mysql echoes it, we never do.
func maskPassword(p string) string {
	if p == "" {
		return ""
	}
	return "*****"
}

func (t *TextSink) header(o *Settings) {
	var b strings.Builder
	b.WriteString("***************************************\n")
	b.WriteString("*** ###easy### TPC-C Load Generator ***\n")
	b.WriteString("***************************************\n")
	opt := func(k, v string) { fmt.Fprintf(&b, "option %s with value '%s'\n", k, v) }
	if o.Conn.Socket != "" {
		opt("S", o.Conn.Socket)
	} else {
		opt("h", o.Conn.Host)
		opt("P", strconv.Itoa(o.Conn.Port))
	}
	opt("d", o.Conn.DB)
	opt("u", o.Conn.User)
	opt("p", maskPassword(o.Conn.Password))
	opt("w", strconv.Itoa(o.W))
	opt("c", strconv.Itoa(o.Conns))
	opt("r", strconv.Itoa(o.RampupS))
	opt("l", strconv.Itoa(o.MeasureS))
	opt("i", strconv.Itoa(o.IntervalS))
	b.WriteString("<Parameters>\n")
	p := func(k string, v any) { fmt.Fprintf(&b, "%13s: %v\n", "["+k+"]", v) }
	if o.Conn.Socket != "" {
		p("socket", o.Conn.Socket)
	} else {
		p("server", o.Conn.Host)
		// tpcc_start indents [port] like [server] (not right-aligned).
		fmt.Fprintf(&b, "     [port]: %d\n", o.Conn.Port)
	}
	p("DBname", o.Conn.DB)
	p("user", o.Conn.User)
	p("pass", maskPassword(o.Conn.Password))
	p("warehouse", o.W)
	p("connection", o.Conns)
	p("rampup", strconv.Itoa(o.RampupS)+" (sec.)")
	p("measure", strconv.Itoa(o.MeasureS)+" (sec.)")
	io.WriteString(t.w, b.String())
}

func (t *TextSink) rampup(s int) {
	fmt.Fprintf(t.w, "\nRAMP-UP TIME.(%d sec.)\n", s)
}

func (t *TextSink) measuringStart() {
	io.WriteString(t.w, "\nMEASURING START.\n\n")
}

func (t *TextSink) interval(sec int, s *measure.IntervalStats) {
	t.w.Write(appendIntervalText(nil, intervalLineOf(sec, s)))
}

// intervalLine holds the numbers of one tpcc_start interval line.
type intervalLine struct {
	Sec                 int
	NOCount             uint64
	NOP95, NOP99, NOMax float64
	Count               [4]uint64  // Payment, Order-Status, Delivery, Stock-Level
	Max                 [4]float64 // their max response time, ms
}

func intervalLineOf(sec int, s *measure.IntervalStats) intervalLine {
	no := &s.T[spec.TxNewOrder].Hist
	l := intervalLine{Sec: sec, NOCount: s.Completed(spec.TxNewOrder), NOP95: no.PercentileMS(95), NOP99: no.PercentileMS(99), NOMax: no.MaxMS()}
	for t := spec.TxPayment; t < spec.NumTxTypes; t++ {
		l.Count[t-1] = s.Completed(t)
		l.Max[t-1] = s.T[t].Hist.MaxMS()
	}
	return l
}

// appendIntervalText formats one interval line exactly like tpcc_start:
// "%4d, trx: %d, 95%%: %.3f, 99%%: %.3f, max_rt: %.3f, %d|%.3f, %d|%.3f, %d|%.3f, %d|%.3f".
// Counts are completed transactions (sc+lt).
func appendIntervalText(b []byte, l intervalLine) []byte {
	return fmt.Appendf(b, "%4d, trx: %d, 95%%: %.3f, 99%%: %.3f, max_rt: %.3f, %d|%.3f, %d|%.3f, %d|%.3f, %d|%.3f\n",
		l.Sec, l.NOCount, l.NOP95, l.NOP99, l.NOMax, l.Count[0], l.Max[0], l.Count[1], l.Max[1], l.Count[2], l.Max[2], l.Count[3], l.Max[3])
}

func (t *TextSink) stopping() {
	io.WriteString(t.w, "\nSTOPPING THREADS")
}

func (t *TextSink) dots(n int) {
	io.WriteString(t.w, strings.Repeat(".", n)+"\n")
}

func (t *TextSink) summary(tot *measure.Totals, measureS float64, limits [spec.NumTxTypes]int) {
	io.WriteString(t.w, formatSummaryText(tot, measureS, limits))
}

// formatSummaryText renders <Raw Results> through <TpmC> as tpcc_start does;
// limits are the late thresholds in force (printed in parentheses).
func formatSummaryText(tot *measure.Totals, measureS float64, limits [spec.NumTxTypes]int) string {
	var b strings.Builder
	b.WriteString("\n<Raw Results>\n")
	for i := range tot.T {
		c := &tot.T[i]
		avg := 0.0
		if n := c.SC + c.LT; n > 0 {
			avg = c.SumMS / float64(n)
		}
		fmt.Fprintf(&b, "  [%d] sc:%d lt:%d  rt:%d  fl:%d avg_rt: %.1f (%d)\n", i, c.SC, c.LT, c.RT, c.FL, avg, limits[i])
	}
	fmt.Fprintf(&b, " in %d sec.\n", int(measureS+0.5))
	b.WriteString("\n<Raw Results2(sum ver.)>\n")
	for i := range tot.T {
		c := &tot.T[i]
		fmt.Fprintf(&b, "  [%d] sc:%d  lt:%d  rt:%d  fl:%d \n", i, c.SC, c.LT, c.RT, c.FL)
	}
	b.WriteString("\n<Constraint Check> (all must be [OK])\n [transaction percentage]\n")
	var all uint64
	for i := range tot.T {
		all += tot.T[i].SC + tot.T[i].LT
	}
	minPct := [spec.NumTxTypes]float64{0, 43.0, 4.0, 4.0, 4.0}
	for t := spec.TxPayment; t < spec.NumTxTypes; t++ {
		pct := 0.0
		if all > 0 {
			pct = float64(tot.T[t].SC+tot.T[t].LT) * 100 / float64(all)
		}
		fmt.Fprintf(&b, "%15s: %3.2f%% (>=%4.1f%%) %s\n", spec.Labels[t], pct, minPct[t], okNG(pct >= minPct[t]))
	}
	b.WriteString(" [response time (at least 90% passed)]\n")
	for t := spec.TxNewOrder; t < spec.NumTxTypes; t++ {
		pct := 0.0
		if n := tot.T[t].SC + tot.T[t].LT; n > 0 {
			pct = float64(tot.T[t].SC) * 100 / float64(n)
		}
		fmt.Fprintf(&b, "%15s: %3.2f%%  %s\n", spec.Labels[t], pct, okNG(pct >= 90))
	}
	fmt.Fprintf(&b, "\n<TpmC>\n                 %.3f TpmC\n", tot.TpmC(measureS))
	return b.String()
}

func okNG(ok bool) string {
	if ok {
		return "[OK]"
	}
	return "[NG] *"
}
