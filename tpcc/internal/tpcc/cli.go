package tpcc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

const usage = `usage: tpcc <command> [flags]

commands:
  load   create the schema and populate W warehouses (TPC-C 4.3)
  run    drive the tpcc-mysql transaction mix and report (tpcc_start compatible)
  check  verify TPC-C consistency conditions

connection flags (all commands, tpcc_start compatible):
  -h host (127.0.0.1)  -P port (3306)  -S unix socket  -d database
  -u user (root)       -p password (default: $MYSQL_PWD)

run "tpcc <command> -help" for the command's flags.
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

// newFlags returns a flag set with the common connection flags. -h is the
// host (as in tpcc_start), so help is only -help / --help.
func newFlags(name string, stderr io.Writer, c *ConnOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("tpcc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Host, "h", "127.0.0.1", "server host (TCP)")
	fs.IntVar(&c.Port, "P", 3306, "server port")
	fs.StringVar(&c.Socket, "S", "", "unix socket (used instead of TCP when given)")
	fs.StringVar(&c.DB, "d", "", "database name (required)")
	fs.StringVar(&c.User, "u", "root", "user")
	fs.StringVar(&c.Password, "p", "", "password (default: $MYSQL_PWD)")
	return fs
}

// parse parses args, applies MYSQL_PWD and checks required values.
func parse(fs *flag.FlagSet, args []string, c *ConnOpts, w *int) (int, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, nil
		}
		return ExitUsage, nil // flag already printed the error and usage
	}
	if fs.NArg() > 0 {
		return ExitUsage, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	pSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "p" {
			pSet = true
		}
	})
	if !pSet {
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

func cmdLoad(args []string, stdout, stderr io.Writer) (int, error) {
	var o LoadOpts
	fs := newFlags("load", stderr, &o.Conn)
	fs.IntVar(&o.W, "w", 0, "number of warehouses (required)")
	fs.IntVar(&o.Workers, "workers", runtime.NumCPU(), "parallel loader connections")
	fs.BoolVar(&o.Drop, "drop", false, "drop the database first if it already has tables")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
	if code, err := parse(fs, args, &o.Conn, &o.W); code >= 0 || err != nil {
		return code, err
	}
	o.Seed, o.Out = *seed, stdout
	ctx, cancel := signalContext()
	defer cancel()
	if err := Load(ctx, o); err != nil {
		return ExitError, err
	}
	return ExitOK, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var o RunOpts
	fs := newFlags("run", stderr, &o.Conn)
	fs.IntVar(&o.W, "w", 0, "number of warehouses to use (required, <= loaded)")
	fs.IntVar(&o.Conns, "c", 1, "connections")
	fs.IntVar(&o.RampupS, "r", 10, "ramp-up seconds")
	fs.IntVar(&o.MeasureS, "l", 60, "measurement seconds")
	fs.IntVar(&o.IntervalS, "i", 10, "report interval seconds")
	fs.BoolVar(&o.JSON, "json", false, "one JSON object per line instead of tpcc_start text")
	lateUnit := fs.String("late-unit", "ms", "unit of the late thresholds 5/5/5/80/20: ms (tpcc-mysql behaviour) or s (TPC-C spec)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
	if code, err := parse(fs, args, &o.Conn, &o.W); code >= 0 || err != nil {
		return code, err
	}
	switch *lateUnit {
	case "ms":
		o.LateUnit = time.Millisecond
	case "s":
		o.LateUnit = time.Second
	default:
		return ExitUsage, fmt.Errorf("-late-unit must be ms or s, not %q", *lateUnit)
	}
	o.Seed, o.Out, o.Err = *seed, stdout, stderr
	ctx, cancel := signalContext()
	defer cancel()
	return Run(ctx, o)
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var o CheckOpts
	fs := newFlags("check", stderr, &o.Conn)
	fs.IntVar(&o.W, "w", 0, "number of warehouses to check (required)")
	if code, err := parse(fs, args, &o.Conn, &o.W); code >= 0 || err != nil {
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
