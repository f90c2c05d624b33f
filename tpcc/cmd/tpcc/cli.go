package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"flushbench/tpcc/internal/check"
	"flushbench/tpcc/internal/getopt"
	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/load"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/report"
	"flushbench/tpcc/internal/run"
	"flushbench/tpcc/internal/spec"
)

const usage = `usage: tpcc <command> [flags]

commands:
  load   create the schema and populate W warehouses (TPC-C 4.3)
  run    drive tpcc-mysql's workload (default; --mode batched for the other one)
         and report (tpcc_start compatible text, or --json)
  check  verify TPC-C consistency conditions
  version  one JSON line: the --json format version and the clients this build has

connection options (all commands, tpcc_start compatible; -w10 and -w 10 both work):
  -h host (127.0.0.1)  -P port (3306)  -S unix socket  -d database
  -u user (root)       -p password (-p "" for none; default: $MYSQL_PWD)

run "tpcc <command> --help" for the command's options.
`

// cli is the whole command line; it returns the process exit code.
func cli(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return run.ExitUsage
	}
	cmd, rest := args[0], args[1:]
	var code int
	var err error
	switch cmd {
	case "load":
		code, err = cmdLoad(rest, stdout, stderr)
	case "run":
		code, err = cmdRun(rest, stdout, stderr)
	case "check":
		code, err = cmdCheck(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "%s\n", versionJSON())
		return run.ExitOK
	case "help", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return run.ExitOK
	default:
		fmt.Fprintf(stderr, "tpcc: unknown command %q\n\n%s", cmd, usage)
		return run.ExitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "tpcc %s: %v\n", cmd, err)
	}
	return code
}

// connOpts adds the connection options every command takes (tpcc_start's
// names; -h is the host, so help is -help / --help).
func connOpts(s *getopt.Set, c *mysqlwire.ConnOpts) {
	s.String(&c.Host, "h", "", "127.0.0.1", "server host (TCP)")
	s.Int(&c.Port, "P", "", 3306, "server port")
	s.String(&c.Socket, "S", "", "", "unix socket (used instead of TCP when given)")
	s.String(&c.DB, "d", "", "", "database name (required)")
	s.String(&c.User, "u", "", "root", "user")
	s.String(&c.Password, "p", "", "", `password; -p "" is empty (default: $MYSQL_PWD)`)
}

// parseArgs parses args and checks the values every command needs. It
// returns -1 to go on, or the exit code (help printed, usage error).
func parseArgs(s *getopt.Set, args []string, c *mysqlwire.ConnOpts, w *int, synopsis string, stdout, stderr io.Writer) (int, error) {
	err := s.Parse(args)
	if errors.Is(err, getopt.ErrHelp) {
		s.Usage(stdout, synopsis)
		return run.ExitOK, nil
	}
	if err != nil {
		return run.ExitUsage, err
	}
	if !s.Was("p") {
		c.Password = os.Getenv("MYSQL_PWD")
	}
	if c.DB == "" {
		return run.ExitUsage, errors.New("-d database is required")
	}
	if *w < 1 {
		return run.ExitUsage, errors.New("-w warehouses is required (>= 1)")
	}
	if *w > run.MaxWarehouses {
		return run.ExitUsage, fmt.Errorf("-w %d is more warehouses than the %d tpcc can name", *w, run.MaxWarehouses)
	}
	return -1, nil
}

// versionJSON is what `tpcc version` prints, for flushbench's preflight:
// {"type":"version","format":1,"clients":["go","libmariadb"]}, and for a
// build without the C client "clients":["go"] plus "libmariadb": the
// sentence --client libmariadb would fail with.
func versionJSON() []byte {
	v := map[string]any{"type": "version", "format": report.FormatVersion,
		"clients": []string{string(mysqlwire.ClientGo)}}
	if libmariadb.Available {
		v["clients"] = []string{string(mysqlwire.ClientGo), string(mysqlwire.ClientLibmariadb)}
	} else {
		v["libmariadb"] = libmariadb.ErrNotBuilt.Error()
	}
	b, _ := json.Marshal(v)
	return b
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// loadOptions declares tpcc load's options (tpcc_load's h P d u p w l m n,
// plus -S and flushbench's long options) into o.
func loadOptions(o *load.Opts) *getopt.Set {
	s := &getopt.Set{Cmd: "load"}
	connOpts(s, &o.Conn)
	s.Int(&o.W, "w", "", 0, "number of warehouses (required)")
	s.Int(&o.Part, "l", "", 0, "load one part only: 1 items, 2 warehouse+district+stock, 3 customer+history, 4 orders")
	s.Int(&o.MinW, "m", "", 1, "first warehouse to load (partial loads)")
	s.Int(&o.MaxW, "n", "", 0, "last warehouse to load (partial loads; default -w)")
	s.Int(&o.Workers, "", "workers", runtime.NumCPU(), "parallel loader connections")
	s.Bool(&o.Drop, "drop", "drop the database first if it already has tables")
	s.Uint(&o.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	return s
}

func cmdLoad(args []string, stdout, stderr io.Writer) (int, error) {
	var o load.Opts
	s := loadOptions(&o)
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	if limit, why := run.ConnsLimit(); o.Workers > limit {
		return run.ExitUsage, fmt.Errorf("--workers %d is more connections than this host allows: %s", o.Workers, why)
	}
	o.Out = stdout
	ctx, cancel := signalContext()
	defer cancel()
	if err := load.Load(ctx, o); err != nil {
		return run.ExitError, err
	}
	return run.ExitOK, nil
}

// runOptions declares tpcc run's options (tpcc_start's h P d u p w c r l i
// f t m o S 0 1 2 3 4, plus flushbench's long options) into o.
func runOptions(o *run.Opts, mode, lateUnit, transport *string) *getopt.Set {
	s := &getopt.Set{Cmd: "run"}
	connOpts(s, &o.Conn)
	s.Int(&o.W, "w", "", 0, "number of warehouses to use (required, <= loaded)")
	s.Int(&o.Conns, "c", "", 1, "connections")
	s.Int(&o.RampupS, "r", "", 10, "ramp-up seconds")
	s.Int(&o.MeasureS, "l", "", 60, "measurement seconds")
	s.Int(&o.IntervalS, "i", "", 10, "report interval seconds")
	s.String(&o.ReportFile, "f", "", "", "report file: one line per New-Order (interval second, response ms)")
	s.String(&o.TrxFile, "t", "", "", "transaction file: start and finish time of every committed New-Order")
	s.Int(&o.MultiSchema, "m", "", 0, "multiple schemas: connection i uses database <d>_<i % m + o>")
	s.Int(&o.SchemaOffset, "o", "", 0, "offset of the multiple-schema numbers")
	for i, label := range spec.Labels {
		s.Int(&o.LateMS[i], strconv.Itoa(i), "", 0, fmt.Sprintf("%s response-time limit (default %d)", label, spec.LateThresholds[i]))
	}
	s.String(mode, "", "mode", string(run.ModeTpccMysql), "tpcc-mysql (tpcc_start's workload, default) or batched (fewer round trips; TpmC not comparable)")
	s.String((*string)(&o.Client), "", "client", "", "tpcc-mysql mode's client: go (the Go client, default) or libmariadb (the C library tpcc_start links, through cgo); see docs/tpcc.md")
	s.String(transport, "", "transport", "", "how --client go connections wait for replies: blocking (a blocking socket per connection, as tpcc_start; the tpcc-mysql mode default) or netpoll (Go's network poller; batched mode's only transport); see docs/tpcc.md")
	s.Bool(&o.JSON, "json", "one JSON object per line instead of tpcc_start text")
	s.String(lateUnit, "", "late-unit", "ms", "unit of the late thresholds: ms (tpcc-mysql behaviour) or s (TPC-C spec)")
	s.Uint(&o.Seed, "seed", uint64(time.Now().UnixNano()), "random seed (inputs, deck and --rate's schedule)")
	s.Float(&o.RateNOTPM, "rate", 0, "fixed rate: New-Orders a minute across all connections, the mix kept; latency from each transaction's scheduled start (default: closed loop); see docs/tpcc.md")
	s.String((*string)(&o.Arrivals), "", "arrivals", "", "--rate's schedule: uniform (evenly spaced, default) or poisson (seeded by --seed)")
	s.String(&o.CPUProfile, "", "cpuprofile", "", "write a pprof CPU profile of the run to this file")
	return s
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var o run.Opts
	var mode, lateUnit, transport string
	s := runOptions(&o, &mode, &lateUnit, &transport)
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	if !s.Was("i") && o.MeasureS >= 1 && o.MeasureS < o.IntervalS {
		// The default report interval (10 s) shrinks to a shorter -l; an -i
		// given longer than -l is refused (run.Opts.checkBounds).
		o.IntervalS = o.MeasureS
	}
	switch lateUnit {
	case "ms":
		o.LateUnit = time.Millisecond
	case "s":
		o.LateUnit = time.Second
	default:
		return run.ExitUsage, fmt.Errorf("--late-unit must be ms or s, not %q", lateUnit)
	}
	o.Mode = run.Mode(mode)
	if o.Mode != run.ModeTpccMysql && o.Mode != run.ModeBatched {
		return run.ExitUsage, fmt.Errorf("--mode must be %s or %s, not %q", run.ModeTpccMysql, run.ModeBatched, mode)
	}
	if o.Mode == run.ModeBatched && o.MultiSchema > 0 {
		return run.ExitUsage, errors.New("-m (multiple schemas) needs --mode tpcc-mysql")
	}
	o.Transport = mysqlwire.Transport(transport)
	if o.Transport != "" && o.Transport != mysqlwire.TransportNetpoll && o.Transport != mysqlwire.TransportBlocking {
		return run.ExitUsage, fmt.Errorf("--transport must be %s or %s, not %q", mysqlwire.TransportNetpoll, mysqlwire.TransportBlocking, transport)
	}
	if o.Mode == run.ModeBatched && o.Transport == mysqlwire.TransportBlocking {
		return run.ExitUsage, errors.New("--transport blocking needs --mode tpcc-mysql (batched mode goes through database/sql)")
	}
	for i, v := range o.LateMS {
		if v < 0 {
			return run.ExitUsage, fmt.Errorf("-%d must be a positive number of milliseconds", i)
		}
	}
	o.Out, o.Err = stdout, stderr
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return run.ExitUsage, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return run.ExitError, err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := signalContext()
	defer cancel()
	return run.Run(ctx, o)
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var o check.Opts
	s := &getopt.Set{Cmd: "check"}
	connOpts(s, &o.Conn)
	s.Int(&o.W, "w", "", 0, "number of warehouses to check (required)")
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	o.Out = stdout
	ctx, cancel := signalContext()
	defer cancel()
	ok, err := check.Run(ctx, o)
	if err != nil {
		return run.ExitError, err
	}
	if !ok {
		fmt.Fprintln(stdout, "CHECK FAILED")
		return run.ExitError, nil
	}
	fmt.Fprintln(stdout, "ALL CHECKS PASSED")
	return run.ExitOK, nil
}
