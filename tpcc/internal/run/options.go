package run

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload"
)

// Mode selects the workload tpcc run drives.
type Mode string

const (
	// ModeTpccMysql is tpcc-mysql's own workload (the default): the same
	// statements, round trips, lock order and commit points per transaction
	// type as tpcc_start, one deck shared by all connections, tpcc-mysql's
	// retries and lateness counting. Its TpmC is comparable with tpcc_start's.
	ModeTpccMysql Mode = "tpcc-mysql"
	// ModeBatched is flushbench's earlier workload: the same TPC-C business
	// transactions with fewer round trips (IN lists, multi-row inserts, one
	// join for Stock-Level, one commit per Delivery) and the spec's data
	// updates. A different workload: its TpmC is not comparable with
	// tpcc_start's.
	ModeBatched Mode = "batched"
)

// Opts configures tpcc run (tpcc_start's -w -c -r -l -i -f -t -m -o
// -0..-4).
type Opts struct {
	Conn mysqlwire.ConnOpts
	Mode Mode
	// Transport is how the Go client's connections wait for the server
	// (--transport; empty: blocking in tpcc-mysql mode, netpoll in
	// batched; the C client has none).
	Transport mysqlwire.Transport
	// Client carries tpcc-mysql mode's statements (--client; empty: go).
	Client    mysqlwire.Client
	W         int
	Conns     int
	RampupS   int
	MeasureS  int
	IntervalS int
	JSON      bool
	// LateMS overrides tpcc-mysql's late thresholds per type (-0..-4);
	// 0 keeps the default 5/5/5/80/20.
	LateMS [spec.NumTxTypes]int
	// ReportFile (-f) receives "<interval second> <response ms>" per
	// New-Order; TrxFile (-t) "t_num: N finish: s ns start: s ns" per
	// committed New-Order, as tpcc_start writes them.
	ReportFile, TrxFile string
	// MultiSchema (-m) > 0 spreads connections over databases
	// <db>_<(conn % MultiSchema) + SchemaOffset> (-o).
	MultiSchema, SchemaOffset int
	// CPUProfile is a pprof output file (--cpuprofile), for tuning.
	CPUProfile string
	// LateUnit scales the late thresholds {5,5,5,80,20}. tpcc-mysql compares
	// them with response times in milliseconds (see the fixtures: New-Order at
	// ~54 ms average is almost always "lt"), so Millisecond reproduces its
	// sc/lt split; Second gives the TPC-C spec's 90th-percentile limits.
	LateUnit time.Duration
	Seed     uint64
	// RateNOTPM > 0 runs at a fixed rate (--rate): New-Orders a minute
	// across all connections, the mix kept, on a schedule seeded by Seed
	// with Arrivals spacing (workload.Pacer); 0 runs the closed loop.
	RateNOTPM float64
	Arrivals  workload.Arrivals
	Out       io.Writer
	Err       io.Writer
}

// Exit codes of tpcc run.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitServerLost  = 3
	ExitInterrupted = 130 // interrupted before one full measurement interval
)

// The bounds of a run's settings. A connection costs a file descriptor, a
// server thread and (in tpcc-mysql mode's blocking transport) an OS thread
// and a P of its own, so -c is held to MaxConns and to what RLIMIT_NOFILE
// leaves after ReservedFiles; a setting beyond a bound is refused before
// anything connects (docs/tpcc.md, "Limits").
const (
	// MaxConns is the most connections a run opens (-c).
	MaxConns = 10000
	// MaxWarehouses is the most warehouses a run or load names (-w):
	// ~13 TB of data.
	MaxWarehouses = 100000
	// MaxSeconds bounds -r and -l (30 days): the schedule holds one entry per
	// interval.
	MaxSeconds = 30 * 24 * 3600
	// MaxLateMS bounds the late thresholds -0..-4 (one day).
	MaxLateMS = 24 * 3600 * 1000
	// MaxRateNOTPM bounds --rate: ten million New-Orders a minute is far
	// beyond any server, and keeps the schedule's gaps above a nanosecond.
	MaxRateNOTPM = 10_000_000
	// ReservedFiles are the descriptors a run needs besides its connections
	// (the schema pool, report files, standard streams).
	ReservedFiles = 64
)

// ConnsLimit is the most connections this process can open: MaxConns, or
// fewer when RLIMIT_NOFILE (which the Go runtime raises to its hard limit at
// start) leaves less, and a sentence saying which bound it is.
func ConnsLimit() (int, string) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(MaxConns+ReservedFiles) {
		n := max(int(lim.Cur)-ReservedFiles, 1)
		return n, fmt.Sprintf("the open-file limit (ulimit -n %d) leaves room for %d connections", lim.Cur, n)
	}
	return MaxConns, fmt.Sprintf("a run opens at most %d connections", MaxConns)
}

// checkBounds refuses the settings that make no run, or one the host cannot
// hold, with one sentence each.
func (o *Opts) checkBounds() error {
	if o.W < 1 || o.Conns < 1 || o.MeasureS < 1 || o.IntervalS < 1 || o.RampupS < 0 {
		return errors.New("need -w >= 1, -c >= 1, -l >= 1, -i >= 1, -r >= 0")
	}
	if o.W > MaxWarehouses {
		return fmt.Errorf("-w %d is more warehouses than the %d a run can name", o.W, MaxWarehouses)
	}
	if limit, why := ConnsLimit(); o.Conns > limit {
		return fmt.Errorf("-c %d is more connections than this host allows: %s", o.Conns, why)
	}
	if o.RampupS > MaxSeconds || o.MeasureS > MaxSeconds {
		return fmt.Errorf("-r %d / -l %d: a phase lasts at most %d s (30 days)", o.RampupS, o.MeasureS, MaxSeconds)
	}
	if o.IntervalS > o.MeasureS {
		return fmt.Errorf("-i %d is longer than the measurement (-l %d): no whole interval would be reported; use -i <= -l", o.IntervalS, o.MeasureS)
	}
	if o.MultiSchema < 0 || o.SchemaOffset < 0 {
		return fmt.Errorf("-m %d / -o %d: the number of schemas and their offset are >= 0", o.MultiSchema, o.SchemaOffset)
	}
	if o.RateNOTPM < 0 || o.RateNOTPM > MaxRateNOTPM {
		return fmt.Errorf("--rate %g: a rate is 0 < NOTPM <= %d (New-Orders a minute)", o.RateNOTPM, MaxRateNOTPM)
	}
	for i, v := range o.LateMS {
		if v < 0 || v > MaxLateMS {
			return fmt.Errorf("-%d %d: a response-time limit is 0..%d", i, v, MaxLateMS)
		}
	}
	return nil
}

// normalize fills the defaults and rejects impossible settings (exit code
// ExitUsage).
func (o *Opts) normalize() error {
	if err := o.checkBounds(); err != nil {
		return err
	}
	if o.Mode == "" {
		o.Mode = ModeTpccMysql
	}
	if o.Mode != ModeTpccMysql && o.Mode != ModeBatched {
		return fmt.Errorf("--mode must be %s or %s, not %q", ModeTpccMysql, ModeBatched, o.Mode)
	}
	if err := o.normalizeRate(); err != nil {
		return err
	}
	if o.LateUnit == 0 {
		o.LateUnit = time.Millisecond
	}
	if err := o.normalizeClient(); err != nil {
		return err
	}
	if o.Transport == "" && o.Client == mysqlwire.ClientGo {
		// tpcc_start's threading model for tpcc_start's workload: measured
		// nearer its TpmC under contention (docs/tpcc.md, "Client
		// implementation"); batched mode goes through database/sql.
		o.Transport = mysqlwire.TransportBlocking
		if o.Mode == ModeBatched {
			o.Transport = mysqlwire.TransportNetpoll
		}
	}
	if o.Transport == mysqlwire.TransportBlocking && o.Mode != ModeTpccMysql {
		return errors.New("--transport blocking needs --mode tpcc-mysql")
	}
	return nil
}

// normalizeClient chooses tpcc-mysql mode's client and rejects the
// combinations that cannot run: the C client in batched mode or in a
// build without it, and --transport with the C client (which does its own
// I/O).
func (o *Opts) normalizeClient() error {
	switch o.Client {
	case "", mysqlwire.ClientGo:
		// The Go client stays the default until the C client is measured
		// ahead of it on a quiet machine (docs/tpcc.md, "Client
		// implementation": so far neither TpmC nor client CPU per
		// New-Order is better).
		o.Client = mysqlwire.ClientGo
		return nil
	case mysqlwire.ClientLibmariadb:
	default:
		return fmt.Errorf("--client must be %s or %s, not %q", mysqlwire.ClientLibmariadb, mysqlwire.ClientGo, o.Client)
	}
	switch {
	case o.Mode != ModeTpccMysql:
		return errors.New("--client libmariadb needs --mode tpcc-mysql (batched mode goes through database/sql)")
	case o.Transport != "":
		return errors.New("--transport applies to --client go only (libmariadb does its own I/O, blocking like tpcc_start)")
	case !libmariadb.Available:
		return libmariadb.ErrNotBuilt
	}
	return nil
}

// normalizeRate defaults --arrivals to uniform at a fixed rate and refuses
// it without one.
func (o *Opts) normalizeRate() error {
	switch {
	case o.RateNOTPM == 0 && o.Arrivals != "":
		return errors.New("--arrivals needs --rate (a closed loop has no schedule)")
	case o.RateNOTPM == 0:
		return nil
	case o.Arrivals == "":
		o.Arrivals = workload.ArrivalsUniform
	case o.Arrivals != workload.ArrivalsUniform && o.Arrivals != workload.ArrivalsPoisson:
		return fmt.Errorf("--arrivals must be %s or %s, not %q", workload.ArrivalsUniform, workload.ArrivalsPoisson, o.Arrivals)
	}
	return nil
}

// lateLimits are the late thresholds in force, in LateUnit: tpcc-mysql's,
// each overridden by -0..-4 when given.
func (o *Opts) lateLimits() [spec.NumTxTypes]int {
	limits := spec.LateThresholds
	for i, v := range o.LateMS {
		if v > 0 {
			limits[i] = v
		}
	}
	return limits
}

// schemaOf returns the database connection i uses (tpcc_start -m/-o).
func (o *Opts) schemaOf(i int) string {
	if o.MultiSchema > 0 {
		return o.Conn.DB + "_" + strconv.Itoa(i%o.MultiSchema+o.SchemaOffset)
	}
	return o.Conn.DB
}
