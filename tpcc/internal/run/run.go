package tpcc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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

// RunOpts configures tpcc run (tpcc_start's -w -c -r -l -i -f -t -m -o
// -0..-4).
type RunOpts struct {
	Conn ConnOpts
	Mode Mode
	// Transport is how tpcc-mysql-mode connections wait for the server
	// (--transport; empty: netpoll).
	Transport Transport
	W         int
	Conns     int
	RampupS   int
	MeasureS  int
	IntervalS int
	JSON      bool
	// LateMS overrides tpcc-mysql's late thresholds per type (-0..-4);
	// 0 keeps the default 5/5/5/80/20.
	LateMS [numTxTypes]int
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
	Out      io.Writer
	Err      io.Writer
}

// Exit codes of tpcc run.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitServerLost  = 3
	ExitInterrupted = 130 // interrupted before one full measurement interval
)

// lateThresholds are tpcc-mysql's per-type limits, printed as "(5)" etc.
var lateThresholds = [numTxTypes]int{5, 5, 5, 80, 20}

type runner struct {
	RunOpts
	db     *sql.DB
	consts Constants
	late   [numTxTypes]time.Duration
	deck   *SharedDeck
	files  *runFiles

	errMu    sync.Mutex
	errShown int
}

// maxErrorsShown limits per-run error messages on stderr; all are counted.
const maxErrorsShown = 10

func (r *runner) noteError(t TxType, err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.errShown < maxErrorsShown {
		r.errShown++
		fmt.Fprintf(r.Err, "tpcc: %s failed: %v\n", t, err)
	}
}

// tick is one reporting boundary, in seconds from the run start.
type tick struct {
	at      int
	measure bool // the interval ending here belongs to the measurement phase
}

// schedule returns the interval boundaries: every -i seconds during ramp-up,
// a boundary exactly at the end of ramp-up (so no interval mixes phases),
// then every -i seconds of measurement, the last one at rampup+measure.
func schedule(rampup, measure, interval int) []tick {
	var ts []tick
	for t := interval; t < rampup; t += interval {
		ts = append(ts, tick{at: t})
	}
	if rampup > 0 {
		ts = append(ts, tick{at: rampup})
	}
	for t := interval; t < measure; t += interval {
		ts = append(ts, tick{at: rampup + t, measure: true})
	}
	ts = append(ts, tick{at: rampup + measure, measure: true})
	return ts
}

// driverWorker is one connection's transaction loop, in either mode.
type driverWorker interface {
	connect(ctx context.Context) error
	loop(stop *atomic.Bool) error
	workerStats() *workerStats
	close()
}

// schemaOf returns the database connection i uses (tpcc_start -m/-o).
func (o *RunOpts) schemaOf(i int) string {
	if o.MultiSchema > 0 {
		return o.Conn.DB + "_" + strconv.Itoa(i%o.MultiSchema+o.SchemaOffset)
	}
	return o.Conn.DB
}

// Run executes the benchmark and returns the process exit code.
func Run(ctx context.Context, o RunOpts) (int, error) {
	if o.W < 1 || o.Conns < 1 || o.MeasureS < 1 || o.IntervalS < 1 || o.RampupS < 0 {
		return ExitUsage, errors.New("need -w >= 1, -c >= 1, -l >= 1, -i >= 1, -r >= 0")
	}
	if o.Mode == "" {
		o.Mode = ModeTpccMysql
	}
	if o.Mode != ModeTpccMysql && o.Mode != ModeBatched {
		return ExitUsage, fmt.Errorf("--mode must be %s or %s, not %q", ModeTpccMysql, ModeBatched, o.Mode)
	}
	if o.LateUnit == 0 {
		o.LateUnit = time.Millisecond
	}
	if o.Transport == "" {
		o.Transport = TransportNetpoll
	}
	if o.Transport == TransportBlocking {
		if o.Mode != ModeTpccMysql {
			return ExitUsage, errors.New("--transport blocking needs --mode tpcc-mysql")
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(blockingGOMAXPROCS(o.Conns)))
	}
	rn := &runner{RunOpts: o}
	for i, v := range lateThresholds {
		if o.LateMS[i] > 0 {
			v = o.LateMS[i]
		}
		rn.late[i] = time.Duration(v) * o.LateUnit
	}
	rn.consts = RunConstants(NewRand(o.Seed))
	rn.deck = NewSharedDeck(o.Seed ^ 0x5DEECE66D)
	files, err := openRunFiles(o.ReportFile, o.TrxFile)
	if err != nil {
		return ExitError, err
	}
	defer files.close()
	rn.files = files

	// Every schema the connections use must hold at least -w warehouses.
	seen := map[string]bool{}
	for i := 0; i < o.Conns; i++ {
		name := o.schemaOf(i)
		if seen[name] {
			continue
		}
		seen[name] = true
		c := o.Conn
		c.DB = name
		db, err := openDB(ctx, &c, true, map[string]string{"autocommit": "0"}, o.Conns+1)
		if err != nil {
			return ExitError, err
		}
		if err := ensureLoaded(ctx, db, name, o.W); err != nil {
			db.Close()
			return ExitError, err
		}
		if rn.db == nil {
			rn.db = db
			defer db.Close()
		} else {
			db.Close()
		}
	}

	workers := make([]driverWorker, o.Conns)
	for i := range workers {
		seed := o.Seed + uint64(i+1)*0x9E3779B97F4A7C15
		if o.Mode == ModeBatched {
			workers[i] = newWorker(i, rn, seed)
		} else {
			conn, err := newConnector(&o.Conn, o.schemaOf(i), o.Transport)
			if err != nil {
				return ExitError, err
			}
			workers[i] = newMWorker(i, rn, seed, o.schemaOf(i), conn)
		}
		if err := workers[i].connect(ctx); err != nil {
			return ExitError, o.Conn.explain(err)
		}
	}
	defer func() {
		for _, w := range workers {
			w.close()
		}
	}()

	var tw *textWriter
	if !o.JSON {
		tw = &textWriter{w: o.Out}
		tw.header(&o)
	}

	var stop atomic.Bool
	fatal := make(chan error, len(workers))
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range workers {
		wg.Add(1)
		go func(w driverWorker) {
			defer wg.Done()
			if err := w.loop(&stop); err != nil {
				fatal <- err
			}
		}(w)
	}

	var totals Totals
	var agg IntervalStats
	seq := 0
	prev := 0.0
	measuredS := 0.0
	fullMeasureIntervals := 0
	interrupted := false
	collect := func() {
		agg = IntervalStats{}
		for _, w := range workers {
			w.workerStats().drainInto(&agg)
		}
	}
	emit := func(now time.Time, elapsed float64, measure bool) {
		seq++
		if measure {
			totals.add(&agg)
			measuredS += elapsed - prev
		}
		if o.JSON {
			phase := "warmup"
			if measure {
				phase = "measure"
			}
			writeLine(o.Out, appendIntervalJSON(nil, seq, now, elapsed, elapsed-prev, phase, &agg))
		} else if measure {
			tw.interval(int(elapsed-float64(o.RampupS)+0.5), &agg)
		}
		prev = elapsed
	}

	if tw != nil && o.RampupS > 0 {
		tw.rampup(o.RampupS)
	}
	if tw != nil && o.RampupS == 0 {
		tw.measuringStart()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
loop:
	for _, tk := range schedule(o.RampupS, o.MeasureS, o.IntervalS) {
		timer.Reset(time.Until(start.Add(time.Duration(tk.at) * time.Second)))
		select {
		case <-timer.C:
			collect()
			now := time.Now()
			emit(now, float64(tk.at), tk.measure)
			if tk.measure {
				fullMeasureIntervals++
				files.timeCount.Store(int64(tk.at - o.RampupS))
			}
			if tw != nil && !tk.measure && tk.at == o.RampupS {
				tw.measuringStart()
			}
		case err := <-fatal:
			stop.Store(true)
			return ExitServerLost, fmt.Errorf("server connection lost during run: %w", err)
		case <-ctx.Done():
			// Signal: report the partial interval so the summary equals
			// the sum of the printed intervals, then stop.
			collect()
			now := time.Now()
			emit(now, now.Sub(start).Seconds(), tk.measure)
			interrupted = true
			break loop
		}
	}
	stop.Store(true)
	if tw != nil {
		tw.stopping()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(o.Err, "tpcc: some connections did not finish their transaction within 30 s")
	}
	if tw != nil {
		tw.dots(len(workers))
	}

	if o.JSON {
		writeLine(o.Out, appendSummaryJSON(nil, measuredS, &totals, interrupted))
	} else {
		limits := lateThresholds
		for i, v := range o.LateMS {
			if v > 0 {
				limits[i] = v
			}
		}
		tw.summary(&totals, measuredS, limits)
	}
	if interrupted && fullMeasureIntervals == 0 {
		return ExitInterrupted, nil
	}
	return ExitOK, nil
}

// writeLine writes b plus a newline in one call; stdout is unbuffered, so
// each line is visible to a reader immediately.
func writeLine(w io.Writer, b []byte) {
	w.Write(append(b, '\n'))
}
