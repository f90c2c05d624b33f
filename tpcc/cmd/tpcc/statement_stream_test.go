package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload/tpccmysql"
)

// The statement stream of tpcc-mysql mode, captured by the server's general
// log, is checked against testdata/statement-shapes.txt: the normalized
// general log of a real tpcc_start run (per transaction type: statement
// texts, average count per transaction, commit points, frequent sequences).

// fixtureType is one transaction type of statement-shapes.txt.
type fixtureType struct {
	label    string
	stmts    map[string]string  // "S3" -> text
	avg      map[string]float64 // "S3" -> average count per transaction
	variants []string           // expanded sequences, e.g. "S1 S2 S4 S5 S6"
}

var (
	reTypeHeader = regexp.MustCompile(`^=== ([A-Za-z-]+): (\d+) transactions`)
	reStmtLine   = regexp.MustCompile(`^\s+(S\d+)\s+([\d.]+)\s+(.+)$`)
	reVariant    = regexp.MustCompile(`^\s+-- \d+ of \d+`)
	reRepeat     = regexp.MustCompile(`^\s+\[ x(\d+) repeat block:`)
	reSeqID      = regexp.MustCompile(`^\s+(S\d+)$`)
)

// parseShapes reads statement-shapes.txt.
func parseShapes(t *testing.T) map[string]*fixtureType {
	t.Helper()
	f, err := os.Open("../../testdata/statement-shapes.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*fixtureType{}
	var cur *fixtureType
	var seq, block []string
	repeat, inBlock := 0, false
	flush := func() {
		if cur != nil && len(seq) > 0 {
			cur.variants = append(cur.variants, strings.Join(seq, " "))
		}
		seq = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case reTypeHeader.MatchString(line):
			flush()
			label := reTypeHeader.FindStringSubmatch(line)[1]
			cur = &fixtureType{label: label, stmts: map[string]string{}, avg: map[string]float64{}}
			out[label] = cur
		case cur == nil:
		case reStmtLine.MatchString(line):
			m := reStmtLine.FindStringSubmatch(line)
			v, _ := strconv.ParseFloat(m[2], 64)
			cur.stmts[m[1]], cur.avg[m[1]] = m[3], v
		case reVariant.MatchString(line):
			flush()
		case reRepeat.MatchString(line):
			repeat, _ = strconv.Atoi(reRepeat.FindStringSubmatch(line)[1])
			inBlock, block = true, nil
		case strings.TrimSpace(line) == "]":
			for i := 0; i < repeat; i++ {
				seq = append(seq, block...)
			}
			inBlock = false
		case reSeqID.MatchString(line):
			id := reSeqID.FindStringSubmatch(line)[1]
			if inBlock {
				block = append(block, id)
			} else {
				seq = append(seq, id)
			}
		}
	}
	flush()
	return out
}

// grammars are the per-type statement sequences tpcc-mysql issues (ids of
// statement-shapes.txt), written from its sources; the test also checks
// that every sequence variant recorded in the fixture matches them.
var grammars = map[string]*regexp.Regexp{
	"New-Order":    regexp.MustCompile(`^S1 S2 S3 S4 S5( S6 S7 S8 S9){5,15} S10$|^S1 S2 S3 S4 S5( S6 S7 S8 S9){0,14} S6 S11$`),
	"Payment":      regexp.MustCompile(`^S1 S2 S3 S4( S5 S6)? S7( S9| S8 S10) S11 S12$`),
	"Order-Status": regexp.MustCompile(`^(S1|S2 S3) S4 S5 S6$`),
	"Delivery":     regexp.MustCompile(`^S1 S2 S3 S4 S5 S6 S7 S8( S1 S2 S3 S4 S5 S6 S7 S8){9}$`),
	"Stock-Level":  regexp.MustCompile(`^S1 S2( S3)* S4$`),
}

// literal matches one bound value as the general log shows it.
const literal = `(?:'(?:[^'\\]|\\.)*'|-?[0-9][0-9.eE+-]*|NULL)`

// logLine is one general-log record.
type logLine struct {
	thread  string
	command string
	arg     string
}

// A record's optional timestamp is "YYMMDD HH:MM:SS" with the hour space-padded
// ("261124  0:29:06" before 10:00), so the separator is one or more spaces.
var reLogLine = regexp.MustCompile(`^(?:\d{6}\s+[\d:]+)?\t+\s*(\d+) ([A-Za-z ]+?)\t(.*)$`)

func readGeneralLog(t *testing.T, path string) map[string][]logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]logLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := reLogLine.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = append(out[m[1]], logLine{m[1], m[2], m[3]})
		}
	}
	return out
}

// TestTpccMysqlStatementStream runs tpcc-mysql mode with the general log on
// and checks, per transaction type, the statement texts, their sequence
// (round trips, lock order, commit points) and their average count per
// transaction against tpcc_start's.
func TestTpccMysqlStatementStream(t *testing.T) {
	fx := parseShapes(t)
	if len(fx) != 5 {
		t.Fatalf("fixture has %d transaction types", len(fx))
	}
	checkGrammarsAcceptFixture(t, fx)
	for _, client := range clients {
		t.Run("client="+client, func(t *testing.T) {
			requireClient(t, client)
			checkStatementStream(t, fx, client)
		})
	}
}

// checkStatementStream runs tpcc-mysql mode through client with the
// general log on and checks every driver connection's statements against
// the fixture.
func checkStatementStream(t *testing.T, fx map[string]*fixtureType, client string) {
	logPath := captureRunLog(t, client)
	c := newStreamChecker(t, fx)
	workers := 0
	for thread, lines := range readGeneralLog(t, logPath) {
		if c.checkThread(thread, lines) {
			workers++
		}
	}
	if workers != 2 {
		t.Fatalf("found %d driver connections in the general log, want 2", workers)
	}
	c.checkAverages()
	t.Logf("transactions checked: %v; retried attempts: %d", fmt.Sprint(c.txns), c.retried)
}

// checkGrammarsAcceptFixture: the grammars must accept every sequence
// tpcc_start was seen issuing.
func checkGrammarsAcceptFixture(t *testing.T, fx map[string]*fixtureType) {
	t.Helper()
	for label, ft := range fx {
		g := grammars[label]
		if g == nil {
			t.Fatalf("no grammar for %s", label)
		}
		for _, v := range ft.variants {
			if !g.MatchString(v) {
				t.Errorf("%s: fixture sequence %q does not match the grammar", label, v)
			}
		}
	}
}

// streamRate is the statement-stream runs' fixed rate (New-Orders a minute):
// in 6 s about 700 New-Orders and 70 of each rarer type, enough for the
// per-transaction averages' tolerances (checkAverages), at about half the
// closed loop's pace here.
const streamRate = "7200"

// shapesLoaded: the first client's run loads database shapes; the next runs
// on what it left (the statement stream does not depend on the rows' state).
var shapesLoaded bool

// captureRunLog loads one warehouse (the first time), runs tpcc-mysql mode
// through client on two connections for 6 s at streamRate with the
// server's general log on, and returns the log's path.
func captureRunLog(t *testing.T, client string) string {
	t.Helper()
	s := sharedServer(t)
	conn := sock(s)
	if !shapesLoaded {
		if r := tpcc(t, append([]string{"load", "-d", "shapes", "-w", "1", "--workers", "2", "--drop"}, conn...)...); r.code != 0 {
			t.Fatalf("load: %s", r.stderr)
		}
		shapesLoaded = true
	}
	admin, err := sql.Open("mysql", "root@unix("+s.socket+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	admin.SetMaxOpenConns(1)
	logPath := filepath.Join(t.TempDir(), "general.log")
	for _, q := range []string{"SET GLOBAL log_output = 'FILE'", "SET GLOBAL general_log_file = '" + logPath + "'", "SET GLOBAL general_log = 1"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	r := tpcc(t, append([]string{"run", "-d", "shapes", "-w", "1", "-c", "2", "-r", "0", "-l", "6", "-i", "2", "--json", "--client", client, "--rate", streamRate}, conn...)...)
	if _, err := admin.Exec("SET GLOBAL general_log = 0"); err != nil {
		t.Fatal(err)
	}
	if r.code != 0 {
		t.Fatalf("run failed (%d): %s", r.code, r.stderr)
	}
	return logPath
}

// knownText is a fixture statement text and the pattern of its executions.
type knownText struct {
	text string
	re   *regexp.Regexp
}

// streamChecker reads the driver connections' statements against the
// fixture and counts executions per transaction type.
type streamChecker struct {
	t       *testing.T
	fx      map[string]*fixtureType
	texts   []knownText
	starts  map[string]string            // first statement of a database transaction -> type
	idOf    map[string]map[string]string // type -> text -> id
	counts  map[string]map[string]int    // type -> id -> executions
	txns    map[string]int
	retried int
}

func newStreamChecker(t *testing.T, fx map[string]*fixtureType) *streamChecker {
	c := &streamChecker{t: t, fx: fx, idOf: map[string]map[string]string{}, counts: map[string]map[string]int{}, txns: map[string]int{}}
	seen := map[string]bool{}
	for _, ft := range fx {
		for _, txt := range ft.stmts {
			if txt == "COMMIT" || txt == "ROLLBACK" || seen[txt] {
				continue
			}
			seen[txt] = true
			pat := strings.ReplaceAll(regexp.QuoteMeta(txt), `\?`, literal)
			c.texts = append(c.texts, knownText{txt, regexp.MustCompile("^" + pat + "$")})
		}
	}
	c.starts = map[string]string{
		fx["New-Order"].stmts["S1"]:    "New-Order",
		fx["Payment"].stmts["S1"]:      "Payment",
		fx["Order-Status"].stmts["S1"]: "Order-Status",
		fx["Order-Status"].stmts["S2"]: "Order-Status",
		fx["Delivery"].stmts["S1"]:     "Delivery",
		fx["Stock-Level"].stmts["S1"]:  "Stock-Level",
	}
	for label, ft := range fx {
		c.idOf[label] = map[string]string{}
		for id, txt := range ft.stmts {
			c.idOf[label][txt] = id
		}
	}
	return c
}

// normalize returns the fixture text an executed statement instantiates
// ("" for none).
func (c *streamChecker) normalize(arg string) string {
	for _, k := range c.texts {
		if k.re.MatchString(arg) {
			return k.text
		}
	}
	return ""
}

// checkThread checks one server thread's statements if it is a driver
// connection (it prepared New-Order's first statement), and says whether
// it was.
func (c *streamChecker) checkThread(thread string, lines []logLine) bool {
	prepares, driverConn := 0, false
	for _, l := range lines {
		if l.command == "Prepare" {
			prepares++
			driverConn = driverConn || l.arg == c.fx["New-Order"].stmts["S1"]
		}
	}
	if !driverConn {
		return false // the run's schema check, the admin connection
	}
	if prepares != tpccmysql.NumStatements {
		c.t.Errorf("thread %s prepared %d statements, want %d (once per connection)", thread, prepares, tpccmysql.NumStatements)
	}
	th := &threadStream{c: c, thread: thread}
	for _, l := range lines {
		switch l.command {
		case "Connect", "Prepare", "Quit", "Close stmt":
		case "Query":
			th.query(l.arg)
		case "Execute":
			th.execute(l.arg)
		default:
			c.t.Errorf("thread %s: unexpected command %s %q", thread, l.command, l.arg)
		}
	}
	if th.cur != "" {
		c.t.Errorf("thread %s: last %s transaction not finished: %v", thread, th.cur, th.seq)
	}
	return true
}

// threadStream follows one connection's business transactions.
type threadStream struct {
	c       *streamChecker
	thread  string
	cur     string   // type of the open business transaction
	seq     []string // its statement ids so far
	commits int
}

// query takes a text COMMIT or ROLLBACK (or the session's SET autocommit).
func (th *threadStream) query(arg string) {
	t := th.c.t
	if arg != "COMMIT" && arg != "ROLLBACK" {
		if th.cur == "" && len(th.seq) == 0 && strings.HasPrefix(arg, "SET autocommit") {
			return
		}
		t.Errorf("thread %s: unexpected query %q", th.thread, arg)
		return
	}
	if th.cur == "" {
		t.Errorf("thread %s: %s outside a transaction", th.thread, arg)
		return
	}
	if arg == "ROLLBACK" && th.cur != "New-Order" {
		// An attempt that failed (deadlock, lock wait) and is retried
		// from the start, as tpcc_start does.
		th.c.retried++
		th.cur, th.seq, th.commits = "", nil, 0
		return
	}
	th.seq = append(th.seq, th.c.idOf[th.cur][arg])
	th.commits++
	if th.cur != "Delivery" || th.commits == spec.DistrictsPerW {
		th.end()
	}
}

// execute takes one executed prepared statement.
func (th *threadStream) execute(arg string) {
	t := th.c.t
	txt := th.c.normalize(arg)
	if txt == "" {
		t.Errorf("thread %s: statement not issued by tpcc_start: %q", th.thread, arg)
		return
	}
	if th.cur == "" {
		if th.cur = th.c.starts[txt]; th.cur == "" {
			t.Errorf("thread %s: transaction starts with %q", th.thread, txt)
			return
		}
	}
	id := th.c.idOf[th.cur][txt]
	if id == "" {
		t.Errorf("thread %s: %s issued %q", th.thread, th.cur, txt)
	}
	th.seq = append(th.seq, id)
}

// end checks the finished business transaction against its grammar and
// counts its statements.
func (th *threadStream) end() {
	c := th.c
	got := strings.Join(th.seq, " ")
	if !grammars[th.cur].MatchString(got) {
		c.t.Errorf("thread %s: %s sequence %q is not tpcc-mysql's", th.thread, th.cur, got)
	}
	if c.counts[th.cur] == nil {
		c.counts[th.cur] = map[string]int{}
	}
	for _, id := range th.seq {
		c.counts[th.cur][id]++
	}
	c.txns[th.cur]++
	th.cur, th.seq, th.commits = "", nil, 0
}

// checkAverages compares average executions per transaction: exactly the
// fixture's where it is a whole number; within a sampling tolerance where
// it depends on random input.
func (c *streamChecker) checkAverages() {
	for label, ft := range c.fx {
		n := c.txns[label]
		if n == 0 {
			c.t.Errorf("no %s transactions in the run", label)
			continue
		}
		for id, want := range ft.avg {
			got := float64(c.counts[label][id]) / float64(n)
			var tol float64
			switch {
			case want == math.Trunc(want):
				tol = 1e-9
			case want < 1: // a fraction of transactions: binomial
				tol = 4*math.Sqrt(want*(1-want)/float64(n)) + 0.02
			default: // a count per transaction (order lines, items)
				tol = 0.15 * want
			}
			if math.Abs(got-want) > tol {
				c.t.Errorf("%s %s (%s): %.3f per transaction over %d, tpcc_start %.3f (tolerance %.3f)",
					label, id, ft.stmts[id], got, n, want, tol)
			}
		}
	}
}
