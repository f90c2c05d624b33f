package main

// Integration tests against a real MariaDB started in a sandbox. They run the
// CLI as a subprocess (this test binary re-executed with TPCC_TEST_MAIN=1) so
// exit codes, stdout/stderr separation and signals are tested for real.
//
// If mariadbd is not installed the tests skip, unless FLUSHBENCH_REQUIRE_MYSQL
// is set, in which case they fail. `go test -short` skips them too.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/run"
	"flushbench/tpcc/internal/spec"
)

func TestMain(m *testing.M) {
	if os.Getenv("TPCC_TEST_MAIN") == "1" {
		os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	code := m.Run()
	stopAllServers()
	os.Exit(code)
}

// sandbox is one mariadbd listening on a unix socket only.
type sandbox struct {
	dir    string
	socket string
	cmd    *exec.Cmd
	exited chan struct{}
}

var (
	serversMu  sync.Mutex
	servers    []*sandbox
	templateMu sync.Mutex
	template   string // a freshly installed datadir, copied per server
	shared     *sandbox
	sharedErr  error
	sharedOnce sync.Once
)

func findBinary(name string, fallbacks ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, f := range fallbacks {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return ""
}

// requireMariaDB skips (or fails, with FLUSHBENCH_REQUIRE_MYSQL) when the
// server binaries are missing.
func requireMariaDB(t *testing.T) (mariadbd, installDB string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped in -short mode")
	}
	mariadbd = findBinary("mariadbd", "/usr/sbin/mariadbd", "/usr/libexec/mariadbd")
	installDB = findBinary("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if mariadbd == "" || installDB == "" {
		if os.Getenv("FLUSHBENCH_REQUIRE_MYSQL") != "" {
			t.Fatal("mariadbd / mariadb-install-db not found and FLUSHBENCH_REQUIRE_MYSQL is set")
		}
		t.Skip("mariadbd not installed; set FLUSHBENCH_REQUIRE_MYSQL=1 to make this a failure")
	}
	return mariadbd, installDB
}

func installTemplate(installDB string) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	if template != "" {
		return template, nil
	}
	dir, err := os.MkdirTemp("", "tpcc-it-template-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(installDB, "--no-defaults", "--datadir="+dir, "--auth-root-authentication-method=normal",
		"--user=root", "--skip-test-db").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	template = dir
	return dir, nil
}

// startServer starts a new sandbox server and waits until it accepts
// connections.
func startServer(t *testing.T) (*sandbox, error) {
	mariadbd, installDB := requireMariaDB(t)
	tmpl, err := installTemplate(installDB)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tpcc-it-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("cp", "-a", tmpl, data).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy datadir: %v %s", err, out)
	}
	s := &sandbox{dir: dir, socket: filepath.Join(dir, "mysql.sock"), exited: make(chan struct{})}
	s.cmd = exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--socket="+s.socket, "--skip-networking",
		"--user=root", "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=48M",
		"--innodb-flush-log-at-trx-commit=2", "--log-error="+filepath.Join(dir, "err.log"))
	// The server must not outlive the test binary, even if it crashes.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	serversMu.Lock()
	servers = append(servers, s)
	serversMu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("unix", s.socket); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
			return nil, fmt.Errorf("mariadbd exited during startup:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mariadbd did not open %s within 60 s", s.socket)
		}
	}
}

func (s *sandbox) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
}

func stopAllServers() {
	serversMu.Lock()
	defer serversMu.Unlock()
	for _, s := range servers {
		s.kill()
		os.RemoveAll(s.dir)
	}
	if template != "" {
		os.RemoveAll(template)
	}
}

// sharedServer returns the server shared by the integration tests.
func sharedServer(t *testing.T) *sandbox {
	t.Helper()
	requireMariaDB(t)
	sharedOnce.Do(func() { shared, sharedErr = startServer(t) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

type result struct {
	code           int
	stdout, stderr string
}

// tpcc runs the CLI as a subprocess.
func tpcc(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TPCC_TEST_MAIN=1", "MYSQL_PWD=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func sock(s *sandbox) []string { return []string{"-S", s.socket, "-u", "root"} }

func args(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}

type intervalJSON struct {
	Type      string  `json:"type"`
	Seq       int     `json:"seq"`
	TS        string  `json:"ts"`
	ElapsedS  float64 `json:"elapsed_s"`
	IntervalS float64 `json:"interval_s"`
	Phase     string  `json:"phase"`
	NewOrder  struct {
		Count int     `json:"count"`
		P95   float64 `json:"p95_ms"`
	} `json:"new_order"`
	Errors      int                           `json:"errors"`
	TpmC        float64                       `json:"tpmc"`
	MeasureS    float64                       `json:"measure_s"`
	Totals      map[string]map[string]float64 `json:"totals"`
	Interrupted bool                          `json:"interrupted"`
	// Hist is an interval's sparse buckets per type; Latency the summary's
	// measurement-phase percentiles per type.
	Hist    map[string][][2]uint64        `json:"hist"`
	Latency map[string]map[string]float64 `json:"latency"`
	// Client is the summary's: the code that carried the statements.
	Client string `json:"client"`
	// MaxMS is each type's max_ms in an interval line.
	MaxMS map[string]float64 `json:"-"`
}

// parseJSONLines decodes a --json run's stdout; the histogram_layout line
// must come first.
func parseJSONLines(t *testing.T, out string) (intervals []intervalJSON, summary *intervalJSON) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var v intervalJSON
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", line, err)
		}
		if (v.Type == "histogram_layout") != (i == 0) {
			t.Fatalf("line %d is %q: the histogram_layout line comes first, once", i+1, line)
		}
		switch v.Type {
		case "histogram_layout":
		case "interval":
			v.MaxMS = maxOfEachType(t, line)
			intervals = append(intervals, v)
		case "summary":
			if summary != nil {
				t.Fatal("two summaries")
			}
			summary = &v
		default:
			t.Fatalf("unknown type in %q", line)
		}
	}
	return
}

// maxOfEachType reads max_ms of every type in an interval line.
func maxOfEachType(t *testing.T, line string) map[string]float64 {
	t.Helper()
	var types map[string]json.RawMessage
	json.Unmarshal([]byte(line), &types)
	out := map[string]float64{}
	for _, name := range spec.Names {
		var f struct {
			Max float64 `json:"max_ms"`
		}
		if err := json.Unmarshal(types[name], &f); err != nil {
			t.Fatalf("%s in %q: %v", name, line, err)
		}
		out[name] = f.Max
	}
	return out
}

// checkLatencyMerges: per type, merging the measurement intervals' emitted
// buckets gives the summary's p95, p99 and max, and the bucket counts add
// up to each interval's count.
func checkLatencyMerges(t *testing.T, ivs []intervalJSON, sum *intervalJSON) {
	t.Helper()
	for _, name := range spec.Names {
		var merged measure.Histogram
		for _, iv := range ivs {
			var bs []measure.Bucket
			for _, p := range iv.Hist[name] {
				bs = append(bs, measure.Bucket{Index: int(p[0]), Count: uint32(p[1])})
			}
			h, err := measure.HistogramFromBuckets(bs, uint64(math.Round(iv.MaxMS[name]*1000)))
			if err != nil {
				t.Fatalf("interval %d %s: %v", iv.Seq, name, err)
			}
			if name == "new_order" && h.Count() != uint64(iv.NewOrder.Count) {
				t.Errorf("interval %d: New-Order buckets hold %d, count is %d", iv.Seq, h.Count(), iv.NewOrder.Count)
			}
			if iv.Phase == "measure" {
				merged.Merge(&h)
			}
		}
		got := sum.Latency[name]
		ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
		if ms(got["p95_ms"]) != ms(merged.PercentileMS(95)) || ms(got["p99_ms"]) != ms(merged.PercentileMS(99)) || ms(got["max_ms"]) != ms(merged.MaxMS()) {
			t.Errorf("%s: summary latency %v, merged measurement intervals give p95 %.3f p99 %.3f max %.3f",
				name, got, merged.PercentileMS(95), merged.PercentileMS(99), merged.MaxMS())
		}
	}
}

// TestLoadRunCheck is the main end-to-end path: load 2 warehouses, check,
// run with JSON and text output and with tpcc_start's -f/-t files through
// each client, in both modes, over both transports of the Go client,
// checking consistency after each run.
func TestLoadRunCheck(t *testing.T) {
	s := sharedServer(t)
	conn := sock(s)

	r := tpcc(t, append([]string{"load", "-d", "it", "-w", "2", "--workers", "2"}, conn...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "COMPLETED SUCCESSFULLY") {
		t.Fatalf("load failed (%d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = tpcc(t, append([]string{"load", "-d", "it", "-w", "1"}, conn...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "--drop") {
		t.Errorf("second load without --drop should refuse: %d %s", r.code, r.stderr)
	}
	checkConsistent(t, conn, "after load")
	for _, client := range clients {
		t.Run("client="+client, func(t *testing.T) {
			requireClient(t, client)
			cc := args(conn, "--client", client)
			checkJSONRun(t, cc, client)
			checkConsistent(t, conn, "after JSON run")
			if client != string(mysqlwire.ClientGo) {
				// The text output and the -f/-t files are written above the
				// session interface, the same for either client: once is enough
				// (the Go tests run beside pytest and share its two cores).
				return
			}
			checkTextRun(t, cc)
			checkConsistent(t, conn, "after text run")
			checkRunFiles(t, cc)
			checkConsistent(t, conn, "after the run with files")
		})
	}

	// The batched mode (a different workload) on the same data, with
	// tpcc-mysql style flags and -f/-t files in the default mode.
	r = tpcc(t, append([]string{"run", "-dit", "-w2", "-c2", "-r0", "-l2", "-i1", "--json", "--mode", "batched", "--rate", testRate}, conn...)...)
	if _, sum := parseJSONLines(t, r.stdout); r.code != 0 || sum == nil || sum.TpmC <= 0 || sum.Errors != 0 {
		t.Fatalf("batched run (%d): %+v\n%s", r.code, sum, r.stderr)
	}
	checkConsistent(t, conn, "after batched run")

	// tpcc-mysql mode over Go's network poller (--transport netpoll; the
	// default is blocking sockets), on a unix socket here; the same
	// statements, so the same checks hold.
	r = tpcc(t, append([]string{"run", "-dit", "-w2", "-c3", "-r1", "-l3", "-i1", "--json", "--transport", "netpoll", "--rate", testRate}, conn...)...)
	if ivs, sum := parseJSONLines(t, r.stdout); r.code != 0 || sum == nil || sum.TpmC <= 0 || sum.Errors != 0 || len(ivs) != 4 {
		t.Fatalf("netpoll-transport run (%d): %+v\n%s", r.code, sum, r.stderr)
	}
	checkConsistent(t, conn, "after the netpoll-transport run")
}

// clients are tpcc-mysql mode's clients (--client); the tests that run
// the workload run it through each.
var clients = []string{string(mysqlwire.ClientGo), string(mysqlwire.ClientLibmariadb)}

// requireClient skips a client this test binary was built without (the C
// client needs cgo and libmariadb-dev), unless FLUSHBENCH_REQUIRE_MYSQL is
// set: then a missing client is a failure.
func requireClient(t *testing.T, client string) {
	t.Helper()
	if client != string(mysqlwire.ClientLibmariadb) || libmariadb.Available {
		return
	}
	if os.Getenv("FLUSHBENCH_REQUIRE_MYSQL") != "" {
		t.Fatal("built without the libmariadb client (CGO_ENABLED=0 or -tags nolibmariadb) and FLUSHBENCH_REQUIRE_MYSQL is set")
	}
	t.Skip("built without the libmariadb client")
}

// testRate is the fixed rate (New-Orders a minute) of the runs whose output,
// not their speed, is checked: 20 New-Orders and about 45 transactions a
// second, over a hundred in the shortest run, every type among them. These
// tests run beside pytest on two cores, where a closed loop flat out took a
// core from it for the run's length; the SIGINT runs stay in the closed loop.
const testRate = "1200"

// checkConsistent runs tpcc check on database it.
func checkConsistent(t *testing.T, conn []string, when string) {
	t.Helper()
	r := tpcc(t, append([]string{"check", "-d", "it", "-w", "2"}, conn...)...)
	if r.code != 0 || strings.Contains(r.stdout, "FAIL") || strings.Count(r.stdout, "PASS") < 7 {
		t.Fatalf("check %s failed (%d):\n%s\n%s", when, r.code, r.stdout, r.stderr)
	}
}

// checkJSONRun: ramp-up and measurement intervals on exact ticks, and a
// summary whose New-Order total is the sum of the measurement intervals.
func checkJSONRun(t *testing.T, conn []string, client string) {
	t.Helper()
	// 2 s ticks: one ramp-up interval and three measured ones, as short as the
	// check allows, at a fixed rate (the Go tests run beside pytest and share its
	// two cores: flat out, each second of a run took both; the closed loop runs
	// in the batched and netpoll runs below and in TestServerKilledMidRun).
	r := tpcc(t, append([]string{"run", "-d", "it", "-w", "2", "-c", "2", "-r", "2", "-l", "6", "-i", "2", "--json", "--rate", testRate}, conn...)...)
	if r.code != 0 {
		t.Fatalf("run failed (%d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ivs, sum := parseJSONLines(t, r.stdout)
	if len(ivs) != 4 {
		t.Fatalf("want 4 intervals (1 warmup + 3 measure), got %d:\n%s", len(ivs), r.stdout)
	}
	for i, iv := range ivs {
		wantPhase := "measure"
		if i == 0 {
			wantPhase = "warmup"
		}
		if iv.Seq != i+1 || iv.Phase != wantPhase || iv.ElapsedS != float64(2*(i+1)) || iv.IntervalS != 2 {
			t.Errorf("interval %d: %+v", i, iv)
		}
		if _, err := time.Parse(time.RFC3339Nano, iv.TS); err != nil {
			t.Errorf("bad ts %q", iv.TS)
		}
		if iv.NewOrder.Count == 0 {
			t.Errorf("interval %d has no New-Orders", i)
		}
	}
	if sum == nil || sum.TpmC <= 0 || sum.MeasureS != 6 || sum.Interrupted || sum.Errors != 0 {
		t.Fatalf("bad summary: %+v\nstderr: %s", sum, r.stderr)
	}
	if sum.Client != client {
		t.Errorf("the summary names client %q, the run asked for %q", sum.Client, client)
	}
	var noSum int
	for _, iv := range ivs[1:] {
		noSum += iv.NewOrder.Count
	}
	if tot := sum.Totals["new_order"]; int(tot["sc"]+tot["lt"]) != noSum {
		t.Errorf("summary New-Order sc+lt %v != sum of measure intervals %d", tot["sc"]+tot["lt"], noSum)
	}
	checkLatencyMerges(t, ivs, sum)
}

// checkTextRun: the output is tpcc_start compatible.
func checkTextRun(t *testing.T, conn []string) {
	t.Helper()
	r := tpcc(t, append([]string{"run", "-d", "it", "-w", "2", "-c", "2", "-r", "1", "-l", "2", "-i", "1", "--rate", testRate}, conn...)...)
	if r.code != 0 {
		t.Fatalf("text run failed (%d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	line := regexp.MustCompile(`(?m)^ {3}[12], trx: \d+, 95%: \d+\.\d{3}, 99%: \d+\.\d{3}, max_rt: \d+\.\d{3}(, \d+\|\d+\.\d{3}){4}$`)
	if n := len(line.FindAllString(r.stdout, -1)); n != 2 {
		t.Errorf("want 2 interval lines, got %d:\n%s", n, r.stdout)
	}
	for _, want := range []string{"RAMP-UP TIME.(1 sec.)", "MEASURING START.", "STOPPING THREADS..\n", "<Raw Results>", " in 2 sec.", "<TpmC>"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^ {17}\d+\.\d{3} TpmC$`).MatchString(r.stdout) {
		t.Errorf("no TpmC line:\n%s", r.stdout)
	}
}

// checkRunFiles: -f and -t write tpcc_start's lines; -0 shows as the
// New-Order limit.
func checkRunFiles(t *testing.T, conn []string) {
	t.Helper()
	dir := t.TempDir()
	rep, trx := filepath.Join(dir, "rt.txt"), filepath.Join(dir, "trx.txt")
	r := tpcc(t, append([]string{"run", "-dit", "-w2", "-c2", "-r1", "-l2", "-i1", "-f", rep, "-t" + trx, "-0", "1000", "--rate", testRate}, conn...)...)
	if r.code != 0 {
		t.Fatalf("run with -f/-t (%d): %s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^ {2}\[0\] sc:\d+ lt:\d+ .* \(1000\)$`).MatchString(r.stdout) {
		t.Errorf("-0 1000 not shown as the New-Order limit:\n%s", r.stdout)
	}
	for file, line := range map[string]*regexp.Regexp{
		rep: regexp.MustCompile(`^[0-2] \d+\.\d{3}$`),
		trx: regexp.MustCompile(`^t_num: [01] finish: \d+ \d+ start: \d+ \d+$`),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 10 {
			t.Errorf("%s has %d lines", file, len(lines))
		}
		for _, l := range lines {
			if !line.MatchString(l) {
				t.Errorf("%s: bad line %q", file, l)
				break
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	s := sharedServer(t)
	conn := sock(s)
	// A database with the tables missing.
	db, err := sql.Open("mysql", "root@unix("+s.socket+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE IF NOT EXISTS emptydb"); err != nil {
		t.Fatal(err)
	}
	r := tpcc(t, append([]string{"run", "-d", "emptydb", "-w", "1", "-l", "1"}, conn...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "run tpcc load first") {
		t.Errorf("missing tables: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, append([]string{"check", "-d", "nosuchdb", "-w", "1"}, conn...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "run tpcc load first") {
		t.Errorf("missing database: %d %q", r.code, r.stderr)
	}
	// -w larger than loaded (needs the dataset from a load).
	r = tpcc(t, append([]string{"load", "-d", "w1", "-w", "1"}, conn...)...)
	if r.code != 0 {
		t.Fatalf("load: %s", r.stderr)
	}
	r = tpcc(t, append([]string{"run", "-d", "w1", "-w", "5", "-l", "1"}, conn...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "-w 5 is larger than the 1 warehouses loaded") {
		t.Errorf("-w too large: %d %q", r.code, r.stderr)
	}
	// Wrong credentials name the user.
	r = tpcc(t, "run", "-S", s.socket, "-u", "root", "-p", "wrong", "-d", "w1", "-w", "1")
	if r.code == 0 || !strings.Contains(r.stderr, `access denied for user "root"`) || strings.Contains(r.stderr+r.stdout, "wrong") {
		t.Errorf("wrong password: %d %q", r.code, r.stderr)
	}
	// SIGINT mid-run: summary with interrupted:true, exit 0.
	for _, client := range clients {
		t.Run("SIGINT client="+client, func(t *testing.T) {
			requireClient(t, client)
			cmd := exec.Command(os.Args[0], append([]string{"run", "-d", "w1", "-w", "1", "-c", "2", "-r", "0", "-l", "60", "-i", "1", "--json", "--client", client}, conn...)...)
			cmd.Env = append(os.Environ(), "TPCC_TEST_MAIN=1")
			out, lines := startLines(t, cmd)
			waitLines(t, lines, 2)
			cmd.Process.Signal(os.Interrupt)
			drainLines(t, lines)
			code := waitExit(t, cmd)
			ivs, sum := parseJSONLines(t, out.String())
			if code != 0 || sum == nil || !sum.Interrupted || len(ivs) < 2 || sum.MeasureS <= 0 || sum.MeasureS > 30 {
				t.Errorf("SIGINT: exit %d summary %+v intervals %d", code, sum, len(ivs))
			}
		})
	}
}

func TestCLIErrorsNoServer(t *testing.T) {
	r := tpcc(t, "run", "-d", "x", "-w", "1", "--bogus")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "unknown option --bogus") {
		t.Errorf("unknown flag: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, "frobnicate")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "unknown command") {
		t.Errorf("unknown command: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, "run", "-d", "x")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "-w") {
		t.Errorf("missing -w: %d %q", r.code, r.stderr)
	}
	// Unreachable: a TCP port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	r = tpcc(t, "run", "-h", "127.0.0.1", "-P", port, "-d", "x", "-w", "1")
	if r.code == 0 || !strings.Contains(r.stderr, "cannot connect to MySQL server at 127.0.0.1:"+port) {
		t.Errorf("unreachable: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, "run", "-h", "127.0.0.1", "-P", port, "-d", "x", "-w", "1", "--transport", "netpoll")
	if r.code == 0 || !strings.Contains(r.stderr, "cannot connect to MySQL server at 127.0.0.1:"+port) {
		t.Errorf("unreachable, netpoll transport: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, "run", "-d", "x", "-w", "1", "--transport", "carrier-pigeon")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "--transport must be netpoll or blocking") {
		t.Errorf("bad transport: %d %q", r.code, r.stderr)
	}
	r = tpcc(t, "run", "-d", "x", "-w", "1", "--transport", "blocking", "--mode", "batched")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "needs --mode tpcc-mysql") {
		t.Errorf("blocking + batched: %d %q", r.code, r.stderr)
	}
	checkClientUsage(t)
}

// checkClientUsage: --client takes libmariadb or go, and refuses what the
// C client cannot do before connecting.
func checkClientUsage(t *testing.T) {
	t.Helper()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--client", "odbc"}, "--client must be libmariadb or go, not \"odbc\""},
		{[]string{"--client", "libmariadb", "--mode", "batched"}, "--client libmariadb needs --mode tpcc-mysql"},
		{[]string{"--client", "libmariadb", "--transport", "netpoll"}, "--transport applies to --client go only"},
	} {
		r := tpcc(t, append([]string{"run", "-d", "x", "-w", "1"}, c.args...)...)
		if r.code != run.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %d %q", c.args, r.code, r.stderr)
		}
	}
}

// TestServerKilledMidRun: intervals printed so far stay on stdout, the error
// goes to stderr and the exit code is run.ExitServerLost, through each
// client.
func TestServerKilledMidRun(t *testing.T) {
	for _, client := range clients {
		t.Run("client="+client, func(t *testing.T) {
			requireClient(t, client)
			checkServerKilledMidRun(t, client)
		})
	}
}

func checkServerKilledMidRun(t *testing.T, client string) {
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	defer s.kill()
	conn := sock(s)
	r := tpcc(t, append([]string{"load", "-d", "k", "-w", "1"}, conn...)...)
	if r.code != 0 {
		t.Fatalf("load: %s", r.stderr)
	}
	// At the tests' fixed rate: the server dies under connections waiting on it or on
	// their next scheduled start alike, and a closed loop kept both cores busy meanwhile.
	cmd := exec.Command(os.Args[0], append([]string{"run", "-d", "k", "-w", "1", "-c", "4", "-r", "0", "-l", "60", "-i", "1", "--json", "--client", client, "--rate", testRate}, conn...)...)
	cmd.Env = append(os.Environ(), "TPCC_TEST_MAIN=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, lines := startLines(t, cmd)
	waitLines(t, lines, 2)
	s.kill()
	drainLines(t, lines)
	code := waitExit(t, cmd)
	ivs, sum := parseJSONLines(t, out.String())
	if code != run.ExitServerLost || len(ivs) < 2 || sum != nil {
		t.Errorf("exit %d (want %d), %d intervals, summary %v\nstderr: %s", code, run.ExitServerLost, len(ivs), sum, errb.String())
	}
	if !strings.Contains(errb.String(), "lost") {
		t.Errorf("stderr should explain the lost server: %q", errb.String())
	}
}

// startLines starts cmd and returns its accumulated stdout and a channel
// receiving each stdout line as it arrives.
func startLines(t *testing.T, cmd *exec.Cmd) (*syncBuffer, <-chan string) {
	t.Helper()
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := &syncBuffer{}
	ch := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(pr, buf))
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return buf, ch
}

// drainLines reads the command's output to its end: cmd.Wait closes the pipe
// once the process has exited, and what was not read by then is lost.
func drainLines(t *testing.T, ch <-chan string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the command's output did not end within 60 s")
		}
	}
}

func waitLines(t *testing.T, ch <-chan string, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatalf("stdout closed after %d lines", i)
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %d stdout lines", n)
		}
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatal("process did not exit within 60 s")
		return -1
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
