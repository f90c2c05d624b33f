package tpcc

import (
	"context"
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
)

const usage = `usage: tpcc <command> [flags]

commands:
  load   create the schema and populate W warehouses (TPC-C 4.3)
  run    drive tpcc-mysql's workload (default; --mode batched for the other one)
         and report (tpcc_start compatible text, or --json)
  check  verify TPC-C consistency conditions

connection options (all commands, tpcc_start compatible; -w10 and -w 10 both work):
  -h host (127.0.0.1)  -P port (3306)  -S unix socket  -d database
  -u user (root)       -p password (-p "" for none; default: $MYSQL_PWD)

run "tpcc <command> --help" for the command's options.
`

// Main is the whole CLI; it returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
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
	case "help", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "tpcc: unknown command %q\n\n%s", cmd, usage)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "tpcc %s: %v\n", cmd, err)
	}
	return code
}

// connOpts adds the connection options every command takes (tpcc_start's
// names; -h is the host, so help is -help / --help).
func connOpts(s *optSet, c *ConnOpts) {
	s.strVar(&c.Host, "h", "", "127.0.0.1", "server host (TCP)")
	s.intVar(&c.Port, "P", "", 3306, "server port")
	s.strVar(&c.Socket, "S", "", "", "unix socket (used instead of TCP when given)")
	s.strVar(&c.DB, "d", "", "", "database name (required)")
	s.strVar(&c.User, "u", "", "root", "user")
	s.strVar(&c.Password, "p", "", "", `password; -p "" is empty (default: $MYSQL_PWD)`)
}

// parseArgs parses args and checks the values every command needs. It
// returns -1 to go on, or the exit code (help printed, usage error).
func parseArgs(s *optSet, args []string, c *ConnOpts, w *int, synopsis string, stdout, stderr io.Writer) (int, error) {
	err := s.parse(args)
	if errors.Is(err, errHelp) {
		s.usage(stdout, synopsis)
		return ExitOK, nil
	}
	if err != nil {
		return ExitUsage, err
	}
	if !s.was("p") {
		c.Password = os.Getenv("MYSQL_PWD")
	}
	if c.DB == "" {
		return ExitUsage, errors.New("-d database is required")
	}
	if *w < 1 {
		return ExitUsage, errors.New("-w warehouses is required (>= 1)")
	}
	return -1, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// loadOptions declares tpcc load's options (tpcc_load's h P d u p w l m n,
// plus -S and flushbench's long options) into o.
func loadOptions(o *LoadOpts) *optSet {
	s := &optSet{cmd: "load"}
	connOpts(s, &o.Conn)
	s.intVar(&o.W, "w", "", 0, "number of warehouses (required)")
	s.intVar(&o.Part, "l", "", 0, "load one part only: 1 items, 2 warehouse+district+stock, 3 customer+history, 4 orders")
	s.intVar(&o.MinW, "m", "", 1, "first warehouse to load (partial loads)")
	s.intVar(&o.MaxW, "n", "", 0, "last warehouse to load (partial loads; default -w)")
	s.intVar(&o.Workers, "", "workers", runtime.NumCPU(), "parallel loader connections")
	s.boolVar(&o.Drop, "drop", "drop the database first if it already has tables")
	s.uintVar(&o.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	return s
}

func cmdLoad(args []string, stdout, stderr io.Writer) (int, error) {
	var o LoadOpts
	s := loadOptions(&o)
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	o.Out = stdout
	ctx, cancel := signalContext()
	defer cancel()
	if err := Load(ctx, o); err != nil {
		return ExitError, err
	}
	return ExitOK, nil
}

// runOptions declares tpcc run's options (tpcc_start's h P d u p w c r l i
// f t m o S 0 1 2 3 4, plus flushbench's long options) into o.
func runOptions(o *RunOpts, mode, lateUnit, transport *string) *optSet {
	s := &optSet{cmd: "run"}
	connOpts(s, &o.Conn)
	s.intVar(&o.W, "w", "", 0, "number of warehouses to use (required, <= loaded)")
	s.intVar(&o.Conns, "c", "", 1, "connections")
	s.intVar(&o.RampupS, "r", "", 10, "ramp-up seconds")
	s.intVar(&o.MeasureS, "l", "", 60, "measurement seconds")
	s.intVar(&o.IntervalS, "i", "", 10, "report interval seconds")
	s.strVar(&o.ReportFile, "f", "", "", "report file: one line per New-Order (interval second, response ms)")
	s.strVar(&o.TrxFile, "t", "", "", "transaction file: start and finish time of every committed New-Order")
	s.intVar(&o.MultiSchema, "m", "", 0, "multiple schemas: connection i uses database <d>_<i % m + o>")
	s.intVar(&o.SchemaOffset, "o", "", 0, "offset of the multiple-schema numbers")
	for i, label := range txLabels {
		s.intVar(&o.LateMS[i], strconv.Itoa(i), "", 0, fmt.Sprintf("%s response-time limit (default %d)", label, lateThresholds[i]))
	}
	s.strVar(mode, "", "mode", string(ModeTpccMysql), "tpcc-mysql (tpcc_start's workload, default) or batched (fewer round trips; TpmC not comparable)")
	s.strVar(transport, "", "transport", string(TransportNetpoll), "how connections wait for replies: netpoll (Go's network poller, default) or blocking (a blocking socket per connection, as tpcc_start; slower on a quiet host, see docs/benchmarks.md; tpcc-mysql mode only)")
	s.boolVar(&o.JSON, "json", "one JSON object per line instead of tpcc_start text")
	s.strVar(lateUnit, "", "late-unit", "ms", "unit of the late thresholds: ms (tpcc-mysql behaviour) or s (TPC-C spec)")
	s.uintVar(&o.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	s.strVar(&o.CPUProfile, "", "cpuprofile", "", "write a pprof CPU profile of the run to this file")
	return s
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var o RunOpts
	var mode, lateUnit, transport string
	s := runOptions(&o, &mode, &lateUnit, &transport)
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	switch lateUnit {
	case "ms":
		o.LateUnit = time.Millisecond
	case "s":
		o.LateUnit = time.Second
	default:
		return ExitUsage, fmt.Errorf("--late-unit must be ms or s, not %q", lateUnit)
	}
	o.Mode = Mode(mode)
	if o.Mode != ModeTpccMysql && o.Mode != ModeBatched {
		return ExitUsage, fmt.Errorf("--mode must be %s or %s, not %q", ModeTpccMysql, ModeBatched, mode)
	}
	if o.Mode == ModeBatched && o.MultiSchema > 0 {
		return ExitUsage, errors.New("-m (multiple schemas) needs --mode tpcc-mysql")
	}
	o.Transport = Transport(transport)
	if o.Transport != TransportNetpoll && o.Transport != TransportBlocking {
		return ExitUsage, fmt.Errorf("--transport must be %s or %s, not %q", TransportNetpoll, TransportBlocking, transport)
	}
	if o.Mode == ModeBatched && o.Transport == TransportBlocking {
		return ExitUsage, errors.New("--transport blocking needs --mode tpcc-mysql (batched mode goes through database/sql)")
	}
	for i, v := range o.LateMS {
		if v < 0 {
			return ExitUsage, fmt.Errorf("-%d must be a positive number of milliseconds", i)
		}
	}
	o.Out, o.Err = stdout, stderr
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return ExitUsage, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return ExitError, err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := signalContext()
	defer cancel()
	return Run(ctx, o)
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var o CheckOpts
	s := &optSet{cmd: "check"}
	connOpts(s, &o.Conn)
	s.intVar(&o.W, "w", "", 0, "number of warehouses to check (required)")
	if code, err := parseArgs(s, args, &o.Conn, &o.W, "-d DB -w W [options]", stdout, stderr); code >= 0 || err != nil {
		return code, err
	}
	o.Out = stdout
	ctx, cancel := signalContext()
	defer cancel()
	ok, err := Check(ctx, o)
	if err != nil {
		return ExitError, err
	}
	if !ok {
		fmt.Fprintln(stdout, "CHECK FAILED")
		return ExitError, nil
	}
	fmt.Fprintln(stdout, "ALL CHECKS PASSED")
	return ExitOK, nil
}
