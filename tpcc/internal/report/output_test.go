package report

import (
	"bufio"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

const fixture = "../../testdata/tpcc_start-w10-c16-60s-mariadb10.11.log"

func readFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var lineRE = regexp.MustCompile(`^\s*(\d+), trx: (\d+), 95%: ([\d.]+), 99%: ([\d.]+), max_rt: ([\d.]+), (\d+)\|([\d.]+), (\d+)\|([\d.]+), (\d+)\|([\d.]+), (\d+)\|([\d.]+)$`)

// TestIntervalLineMatchesFixture re-renders every interval line of a real
// tpcc_start log from its parsed numbers and compares bytes.
func TestIntervalLineMatchesFixture(t *testing.T) {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(readFixture(t)))
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		atoi := func(s string) int { v, _ := strconv.Atoi(s); return v }
		atof := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		l := intervalLine{Sec: atoi(m[1]), NOCount: uint64(atoi(m[2])), NOP95: atof(m[3]), NOP99: atof(m[4]), NOMax: atof(m[5])}
		for k := 0; k < 4; k++ {
			l.Count[k] = uint64(atoi(m[6+2*k]))
			l.Max[k] = atof(m[7+2*k])
		}
		if got := string(appendIntervalText(nil, l)); got != sc.Text()+"\n" {
			t.Errorf("got  %q\nwant %q", got, sc.Text()+"\n")
		}
	}
	if n != 6 {
		t.Fatalf("parsed %d interval lines from fixture, want 6", n)
	}
}

// TestSummaryMatchesFixture renders the raw results, constraint check and
// TpmC for the fixture's counters and compares with the log's tail.
func TestSummaryMatchesFixture(t *testing.T) {
	fx := readFixture(t)
	want := fx[strings.Index(fx, "\n<Raw Results>"):]
	var tot measure.Totals
	raw := [][4]uint64{{9, 11250, 0, 0}, {1337, 9919, 0, 0}, {342, 783, 0, 0}, {513, 613, 0, 0}, {1, 1125, 0, 0}}
	avg := []float64{54.1, 15.4, 8.6, 99.8, 190.4}
	for i, r := range raw {
		tot.T[i] = measure.Counters{SC: r[0], LT: r[1], RT: r[2], FL: r[3], SumMS: avg[i] * float64(r[0]+r[1])}
	}
	if got := formatSummaryText(&tot, 60, spec.LateThresholds); got != want {
		t.Errorf("summary mismatch\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestHeaderAndIntervalFromStats(t *testing.T) {
	var b strings.Builder
	// Through the Sink, as the run loop calls it: header, ramp-up, the
	// (unprinted) ramp-up interval whose end starts the measurement.
	var sink Sink = NewTextSink(&b, Settings{Conn: mysqlwire.ConnOpts{Host: "127.0.0.1", Port: 33061, DB: "tpcc10", User: "root"}, W: 10, Conns: 16, RampupS: 10, MeasureS: 60, IntervalS: 10})
	sink.Begin()
	sink.Started()
	sink.Interval(&Interval{Seq: 1, ElapsedS: 10, LengthS: 10, EndsRampup: true, Stats: &measure.IntervalStats{}})
	fx := readFixture(t)
	want := fx[:strings.Index(fx, "  10, trx:")]
	if b.String() != want {
		t.Errorf("header mismatch\ngot:\n%q\nwant:\n%q", b.String(), want)
	}
	// The password never appears.
	b.Reset()
	tw := NewTextSink(&b, Settings{})
	tw.header(&Settings{Conn: mysqlwire.ConnOpts{Host: "h", Port: 1, DB: "d", User: "u", Password: "s3cret"}, W: 1, Conns: 1})
	if strings.Contains(b.String(), "s3cret") {
		t.Error("password printed in header")
	}

	var s measure.IntervalStats
	s.T[spec.TxNewOrder].Hist.Record(10 * time.Millisecond)
	s.T[spec.TxNewOrder].SC = 1
	s.T[spec.TxPayment].Hist.Record(2500 * time.Microsecond)
	s.T[spec.TxPayment].LT = 1
	got := string(appendIntervalText(nil, intervalLineOf(20, &s)))
	if got != "  20, trx: 1, 95%: 10.000, 99%: 10.000, max_rt: 10.000, 1|2.500, 0|0.000, 0|0.000, 0|0.000\n" {
		t.Errorf("interval from stats: %q", got)
	}
}

func TestIntervalJSON(t *testing.T) {
	var s measure.IntervalStats
	for i := 0; i < 100; i++ {
		s.T[spec.TxNewOrder].Hist.Record(time.Duration(i+1) * time.Millisecond)
	}
	s.T[spec.TxNewOrder].SC, s.T[spec.TxNewOrder].LT = 60, 40
	s.T[spec.TxPayment].RT, s.T[spec.TxDelivery].FL = 3, 2
	ts := time.Date(2026, 11, 21, 10, 0, 20, 123, time.UTC)
	line := appendIntervalJSON(nil, 2, ts, 20, 10, "measure", &s, nil)
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", line, err)
	}
	for _, k := range []string{"type", "seq", "ts", "elapsed_s", "interval_s", "phase", "new_order", "payment", "order_status", "delivery", "stock_level", "retries", "errors"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %q in %s", k, line)
		}
	}
	if m["type"] != "interval" || m["seq"].(float64) != 2 || m["phase"] != "measure" || m["elapsed_s"].(float64) != 20 || m["interval_s"].(float64) != 10 {
		t.Errorf("bad values: %s", line)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["ts"].(string)); err != nil || !strings.HasSuffix(m["ts"].(string), "Z") {
		t.Errorf("ts %v not RFC3339Nano UTC", m["ts"])
	}
	no := m["new_order"].(map[string]any)
	for _, k := range []string{"count", "p95_ms", "p99_ms", "max_ms"} {
		if _, ok := no[k]; !ok {
			t.Errorf("new_order missing %q", k)
		}
	}
	if no["count"].(float64) != 100 || no["max_ms"].(float64) != 100 || no["p95_ms"].(float64) < 94 || no["p95_ms"].(float64) > 96 {
		t.Errorf("new_order values: %v", no)
	}
	if m["retries"].(float64) != 3 || m["errors"].(float64) != 2 {
		t.Errorf("retries/errors: %s", line)
	}
	if strings.Contains(string(line), "\n") {
		t.Error("interval JSON must be one line")
	}
	hist, ok := m["hist"].(map[string]any)
	if !ok || len(hist) != int(spec.NumTxTypes) {
		t.Fatalf("hist: want one bucket list per type, got %v", m["hist"])
	}
	var n float64
	for _, pair := range hist["new_order"].([]any) {
		n += pair.([]any)[1].(float64)
	}
	if n != 100 || len(hist["payment"].([]any)) != 0 {
		t.Errorf("hist: New-Order buckets count %v (want 100), payment %v (want none)", n, hist["payment"])
	}
}

func TestLayoutJSONIsTheFirstLine(t *testing.T) {
	var b strings.Builder
	NewJSONSink(&b).Begin()
	var l struct {
		Type, Scheme, Unit string
		ExactBelowUS       int     `json:"exact_below_us"`
		SubBuckets         int     `json:"sub_buckets"`
		Buckets            int     `json:"buckets"`
		RelativeWidth      float64 `json:"relative_width"`
	}
	if err := json.Unmarshal([]byte(b.String()), &l); err != nil || strings.Count(b.String(), "\n") != 1 {
		t.Fatalf("layout line %q: %v", b.String(), err)
	}
	want := measure.HistogramLayout()
	if l.Type != "histogram_layout" || l.Scheme != "log-linear" || l.Unit != "us" || l.ExactBelowUS != want.ExactBelowUS ||
		l.SubBuckets != want.SubBuckets || l.Buckets != want.Buckets || l.RelativeWidth != want.RelativeWidth {
		t.Errorf("layout line %q, want %+v", b.String(), want)
	}
}

// jsonRun is a run's JSON lines as a reader decodes them.
type jsonRun struct {
	intervals []map[string]json.RawMessage
	summary   struct {
		Latency map[string]struct {
			P95 float64 `json:"p95_ms"`
			P99 float64 `json:"p99_ms"`
			Max float64 `json:"max_ms"`
		} `json:"latency"`
	}
}

func decodeJSONRun(t *testing.T, out string) jsonRun {
	t.Helper()
	var r jsonRun
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch head.Type {
		case "interval":
			var iv map[string]json.RawMessage
			json.Unmarshal([]byte(line), &iv)
			r.intervals = append(r.intervals, iv)
		case "summary":
			json.Unmarshal([]byte(line), &r.summary)
		}
	}
	return r
}

// intervalHistogram rebuilds one type's histogram of an interval line from
// its hist buckets and max_ms.
func intervalHistogram(t *testing.T, iv map[string]json.RawMessage, name string) measure.Histogram {
	t.Helper()
	var hist map[string][][2]uint64
	var figures struct {
		Max float64 `json:"max_ms"`
	}
	if err := json.Unmarshal(iv["hist"], &hist); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(iv[name], &figures); err != nil {
		t.Fatal(err)
	}
	var bs []measure.Bucket
	for _, p := range hist[name] {
		bs = append(bs, measure.Bucket{Index: int(p[0]), Count: uint32(p[1])})
	}
	h, err := measure.HistogramFromBuckets(bs, uint64(math.Round(figures.Max*1000)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

// TestSummaryLatencyIsTheMergeOfTheMeasuredIntervals: through the JSON
// sink, the summary's per-type p95/p99/max equal what a reader gets by
// merging the measurement intervals' emitted buckets; the ramp-up
// interval's (a 9 s outlier) is in neither.
func TestSummaryLatencyIsTheMergeOfTheMeasuredIntervals(t *testing.T) {
	var b strings.Builder
	sink := NewJSONSink(&b)
	sink.Begin()
	r := rand.New(rand.NewPCG(7, 8))
	var tot measure.Totals
	for seq := 1; seq <= 6; seq++ {
		var s measure.IntervalStats
		for tt := range s.T {
			for i := 0; i < 20+r.IntN(300); i++ {
				d := time.Duration(r.ExpFloat64() * float64(5+10*tt) * float64(time.Millisecond))
				if r.IntN(200) == 0 {
					d += time.Duration(r.IntN(2000)) * time.Millisecond
				}
				s.T[tt].Hist.Record(d)
				s.T[tt].LT++
			}
		}
		measured := seq > 1
		if !measured {
			s.T[spec.TxNewOrder].Hist.Record(9 * time.Second)
			s.T[spec.TxNewOrder].LT++
		} else {
			tot.Add(&s)
		}
		sink.Interval(&Interval{Seq: seq, ElapsedS: float64(seq), LengthS: 1, Measure: measured, Stats: &s})
	}
	sink.Summary(&Summary{Totals: &tot, MeasuredS: 5})
	run := decodeJSONRun(t, b.String())
	if len(run.intervals) != 6 || len(run.summary.Latency) != int(spec.NumTxTypes) {
		t.Fatalf("%d intervals, summary latency %v", len(run.intervals), run.summary.Latency)
	}
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, name := range spec.Names {
		var merged measure.Histogram
		for _, iv := range run.intervals[1:] {
			h := intervalHistogram(t, iv, name)
			merged.Merge(&h)
		}
		got, want := run.summary.Latency[name], [3]string{ms(merged.PercentileMS(95)), ms(merged.PercentileMS(99)), ms(merged.MaxMS())}
		if [3]string{ms(got.P95), ms(got.P99), ms(got.Max)} != want {
			t.Errorf("%s: summary p95/p99/max %v, merged intervals give %v", name, got, want)
		}
		if got.Max >= 9000 {
			t.Errorf("%s: the ramp-up outlier is in the summary's max %v", name, got.Max)
		}
	}
}

func TestSummaryJSON(t *testing.T) {
	var tot measure.Totals
	tot.T[spec.TxNewOrder] = measure.Counters{SC: 9, LT: 11250, SumMS: 54.1 * 11259}
	tot.T[spec.TxPayment] = measure.Counters{SC: 1, RT: 4, FL: 1}
	line := appendSummaryJSON(nil, 60, &tot, true, "libmariadb", nil)
	var m struct {
		Type        string  `json:"type"`
		MeasureS    float64 `json:"measure_s"`
		TpmC        float64 `json:"tpmc"`
		Totals      map[string]struct{ SC, LT, RT, FL uint64 }
		Retries     uint64 `json:"retries"`
		Errors      uint64 `json:"errors"`
		Interrupted bool   `json:"interrupted"`
		Client      string `json:"client"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", line, err)
	}
	if m.Type != "summary" || m.MeasureS != 60 || m.TpmC != 11259 || !m.Interrupted || m.Retries != 4 || m.Errors != 1 || m.Client != "libmariadb" {
		t.Errorf("summary values: %s", line)
	}
	if unknown := appendSummaryJSON(nil, 60, &tot, false, "", nil); strings.Contains(string(unknown), "client") {
		t.Errorf("an unknown client is named: %s", unknown)
	}
	if len(m.Totals) != 5 || m.Totals["new_order"].LT != 11250 || m.Totals["payment"].RT != 4 {
		t.Errorf("totals: %s", line)
	}
}

// latencyStats is an interval of a busy run: per type 1,000 response
// times spread over tens of milliseconds with a slow tail.
func latencyStats() *measure.IntervalStats {
	r := rand.New(rand.NewPCG(9, 10))
	var s measure.IntervalStats
	for tt := range s.T {
		for i := 0; i < 1000; i++ {
			ms := r.ExpFloat64() * 20
			if r.IntN(100) == 0 {
				ms += r.Float64() * 3000
			}
			s.T[tt].Hist.Record(time.Duration(ms * float64(time.Millisecond)))
			s.T[tt].LT++
		}
	}
	return &s
}

// BenchmarkIntervalJSON renders a whole interval line, buckets included.
func BenchmarkIntervalJSON(b *testing.B) {
	s, ts := latencyStats(), time.Now()
	var buf []byte
	for b.Loop() {
		buf = appendIntervalJSON(buf[:0], 7, ts, 70, 10, "measure", s, nil)
	}
	b.ReportMetric(float64(len(buf)), "bytes/line")
}

// BenchmarkIntervalBucketsJSON is what the buckets add to an interval line
// (once per interval, never per transaction).
func BenchmarkIntervalBucketsJSON(b *testing.B) {
	s := latencyStats()
	var buf []byte
	var buckets []measure.Bucket
	for b.Loop() {
		buf = buf[:0]
		for t := range s.T {
			buckets = s.T[t].Hist.AppendBuckets(buckets[:0])
			buf = appendBucketsJSON(buf, buckets)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/interval")
}

// BenchmarkTotalsAdd is the meter's per-interval accumulation, which now
// merges every type's histogram into the measurement phase's.
func BenchmarkTotalsAdd(b *testing.B) {
	s := latencyStats()
	var tot measure.Totals
	for b.Loop() {
		tot.Add(s)
	}
}

// TestEveryJSONLineCarriesTheFormat: the layout, interval and summary lines
// each start with their type and the format version flushbench checks
// (docs/tpcc.md, "JSON output").
func TestEveryJSONLineCarriesTheFormat(t *testing.T) {
	var s measure.IntervalStats
	var tot measure.Totals
	lines := map[string][]byte{
		"histogram_layout": appendLayoutJSON(nil, measure.HistogramLayout()),
		"interval":         appendIntervalJSON(nil, 1, time.Unix(0, 0), 10, 10, "warmup", &s, nil),
		"summary":          appendSummaryJSON(nil, 60, &tot, false, "go", nil),
	}
	for kind, line := range lines {
		want := `{"type":"` + kind + `","format":` + strconv.Itoa(FormatVersion) + `,`
		if !strings.HasPrefix(string(line), want) {
			t.Errorf("%s line does not start with %s: %s", kind, want, line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil || m["format"] != float64(FormatVersion) {
			t.Errorf("%s line: format %v (%v): %s", kind, m["format"], err, line)
		}
	}
}
