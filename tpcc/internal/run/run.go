// Package run is tpcc run's life: check the options and the loaded schemas,
// connect one Worker per connection (workload/tpccmysql or
// workload/batched), run them while the interval schedule drains their
// recorders into a report.Sink, stop them, and write the summary.
package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/report"
	"flushbench/tpcc/internal/schema"
	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload"
	"flushbench/tpcc/internal/workload/batched"
	"flushbench/tpcc/internal/workload/tpccmysql"
)

// Run executes the benchmark and returns the process exit code.
func Run(ctx context.Context, o Opts) (int, error) {
	if err := o.normalize(); err != nil {
		return ExitUsage, err
	}
	env := newEnv(&o)
	files, err := report.OpenRunFiles(o.ReportFile, o.TrxFile)
	if err != nil {
		return ExitError, err
	}
	defer files.Close()
	env.NewOrders = files
	if env.DB, err = openSchemas(ctx, &o); err != nil {
		if ctx.Err() != nil {
			return ExitInterrupted, errors.New("interrupted while connecting (0 connected)")
		}
		return ExitError, err
	}
	defer env.DB.Close()
	workers, err := connectWorkers(ctx, &o, env)
	if err != nil {
		if ctx.Err() != nil {
			return ExitInterrupted, err
		}
		return ExitError, err
	}
	defer func() {
		for _, w := range workers {
			w.Close()
		}
	}()
	// Only now, with every connection open: a GOMAXPROCS of -c+1 set before
	// the first connect would cost a run that cannot connect its memory
	// and threads (a P per connection).
	defer tuneRuntime(&o)()
	sink := newSink(&o)
	sink.Begin()

	var stop atomic.Bool
	m := &meter{o: &o, workers: workers, sink: sink, files: files, start: time.Now()}
	if o.RateNOTPM > 0 {
		// Set before the loops start, which then read it without a lock.
		env.Pacer = workload.NewPacer(o.RateNOTPM, o.Arrivals, o.Seed, m.start)
		m.rate = &rateMeter{pacer: env.Pacer}
	}
	fatal, done := startLoops(workers, &stop)
	sink.Started()
	if err := m.follow(ctx, fatal); err != nil {
		stop.Store(true)
		return ExitServerLost, err
	}
	stop.Store(true)
	sink.Stopping()
	waitLoops(done, o.Err)
	sink.Stopped(len(workers))
	sink.Summary(&report.Summary{Totals: &m.totals, MeasuredS: m.measuredS, Interrupted: m.interrupted, Limits: o.lateLimits(), Client: string(o.Client),
		Rate: m.rate.summary(&m.totals, m.measuredS)})
	if m.interrupted && m.fullMeasureIntervals == 0 {
		return ExitInterrupted, nil
	}
	return ExitOK, nil
}

// newEnv is what the connections share: the late limits as durations, the
// run-time NURand constants, tpcc-mysql mode's deck and the error log.
func newEnv(o *Opts) *workload.Env {
	env := &workload.Env{W: o.W, Errors: workload.NewErrorLog(o.Err)}
	for i, v := range o.lateLimits() {
		env.Late[i] = time.Duration(v) * o.LateUnit
	}
	env.Consts = spec.RunConstants(spec.NewRand(o.Seed))
	env.Deck = spec.NewSharedDeck(o.Seed ^ 0x5DEECE66D)
	return env
}

// openSchemas checks that every schema the connections use (-m/-o) holds
// at least -w warehouses, and returns a pool on the first (batched mode's
// connections come from it).
func openSchemas(ctx context.Context, o *Opts) (*sql.DB, error) {
	var first *sql.DB
	seen := map[string]bool{}
	for i := 0; i < o.Conns; i++ {
		name := o.schemaOf(i)
		if seen[name] {
			continue
		}
		seen[name] = true
		c := o.Conn
		c.DB = name
		db, err := mysqlwire.OpenDB(ctx, &c, true, map[string]string{"autocommit": "0"}, o.Conns+1)
		if err == nil {
			err = schema.EnsureLoaded(ctx, db, name, o.W)
			if err != nil {
				db.Close()
			}
		}
		if err != nil {
			if first != nil {
				first.Close()
			}
			return nil, err
		}
		if first == nil {
			first = db
		} else {
			db.Close()
		}
	}
	return first, nil
}

// connectWorkers creates and connects one worker per connection, each with
// its own seed, one after the other: the first that cannot connect ends the
// run before the rest are tried, and a signal (ctx) ends a pending connect.
// On an error the connected ones are closed.
func connectWorkers(ctx context.Context, o *Opts, env *workload.Env) (_ []workload.Worker, err error) {
	workers := make([]workload.Worker, 0, o.Conns)
	defer func() {
		if err != nil {
			for _, w := range workers {
				w.Close()
			}
		}
	}()
	for i := 0; i < o.Conns; i++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("interrupted while connecting (%d of %d connected)", i, o.Conns)
		}
		seed := o.Seed + uint64(i+1)*0x9E3779B97F4A7C15
		var w workload.Worker
		if o.Mode == ModeBatched {
			w = batched.NewWorker(i, env, seed)
		} else {
			open, err := o.opener(o.schemaOf(i))
			if err != nil {
				return nil, err
			}
			w = tpccmysql.NewWorker(i, env, seed, open)
		}
		if err := connectOne(ctx, w); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted while connecting (%d of %d connected)", i, o.Conns)
			}
			return nil, o.Conn.Explain(err)
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// connectOne connects w, or returns at once when ctx ends: the Go client's
// dial and handshake follow ctx, but the C client's connect is a cgo call
// that only its own timeout ends, so a signal does not wait for it (the
// process is ending; the abandoned connect dies with it).
func connectOne(ctx context.Context, w workload.Worker) error {
	done := make(chan error, 1)
	go func() { done <- w.Connect(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// opener is how a tpcc-mysql-mode connection to schema db opens its
// session: the chosen client, with the chosen transport for the Go one.
func (o *Opts) opener(db string) (mysqlwire.SessionOpener, error) {
	if o.Client == mysqlwire.ClientLibmariadb {
		return libmariadb.NewOpener(&o.Conn, db)
	}
	conn, err := mysqlwire.NewConnector(&o.Conn, db, o.Transport)
	if err != nil {
		return nil, err
	}
	return mysqlwire.GoOpener{Connector: conn}, nil
}

// newSink is the output --json chooses.
func newSink(o *Opts) report.Sink {
	if o.JSON {
		return report.NewJSONSink(o.Out)
	}
	return report.NewTextSink(o.Out, report.Settings{Conn: o.Conn, W: o.W, Conns: o.Conns,
		RampupS: o.RampupS, MeasureS: o.MeasureS, IntervalS: o.IntervalS})
}

// startLoops runs every worker's loop in its own goroutine. A loop's fatal
// error arrives on fatal; done closes when all loops have returned.
func startLoops(workers []workload.Worker, stop *atomic.Bool) (fatal <-chan error, done <-chan struct{}) {
	errs := make(chan error, len(workers))
	finished := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func(w workload.Worker) {
			defer wg.Done()
			if err := w.Loop(stop); err != nil {
				errs <- err
			}
		}(w)
	}
	go func() { wg.Wait(); close(finished) }()
	return errs, finished
}

// waitLoops waits for the loops to finish their transaction in flight, at
// most 30 s.
func waitLoops(done <-chan struct{}, stderr io.Writer) {
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(stderr, "tpcc: some connections did not finish their transaction within 30 s")
	}
}

// meter follows the schedule: at each boundary it drains the workers'
// recorders into one interval, hands it to the sink and adds measurement
// intervals to the totals.
type meter struct {
	o       *Opts
	workers []workload.Worker
	sink    report.Sink
	files   *report.RunFiles
	start   time.Time

	agg                  measure.IntervalStats
	totals               measure.Totals
	seq                  int
	prevS                float64 // elapsed seconds at the previous boundary
	measuredS            float64
	fullMeasureIntervals int
	interrupted          bool
	rate                 *rateMeter // a fixed-rate run's schedule; nil in a closed loop
}

// follow waits for each boundary of the schedule. A worker's fatal error
// ends it with that error; a signal ends it after reporting the partial
// interval (so the summary equals the sum of the printed intervals).
func (m *meter) follow(ctx context.Context, fatal <-chan error) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, tk := range schedule(m.o.RampupS, m.o.MeasureS, m.o.IntervalS) {
		timer.Reset(time.Until(m.start.Add(time.Duration(tk.at) * time.Second)))
		select {
		case <-timer.C:
			now := time.Now()
			m.collect(now)
			m.emit(now, float64(tk.at), tk.measure, !tk.measure && tk.at == m.o.RampupS)
			if tk.measure {
				m.fullMeasureIntervals++
				m.files.SetMeasuredSeconds(tk.at - m.o.RampupS)
			}
		case err := <-fatal:
			return fmt.Errorf("server connection lost during run: %w", err)
		case <-ctx.Done():
			now := time.Now()
			m.collect(now)
			m.emit(now, now.Sub(m.start).Seconds(), tk.measure, false)
			m.interrupted = true
			return nil
		}
	}
	return nil
}

// collect drains every worker's recorder into m.agg: the interval ending
// at now, with the ages of the transactions still in flight then.
func (m *meter) collect(now time.Time) {
	m.agg = measure.IntervalStats{}
	for _, w := range m.workers {
		w.Recorder().DrainInto(&m.agg, now)
	}
	m.rate.collect(now)
}

// emit closes the interval ending at elapsed seconds.
func (m *meter) emit(now time.Time, elapsed float64, measure, endsRampup bool) {
	m.seq++
	if measure {
		m.totals.Add(&m.agg)
		m.measuredS += elapsed - m.prevS
	}
	m.sink.Interval(&report.Interval{Seq: m.seq, At: now, ElapsedS: elapsed, LengthS: elapsed - m.prevS,
		Measure: measure, EndsRampup: endsRampup, Stats: &m.agg,
		Rate: m.rate.interval(&m.agg, elapsed-m.prevS, measure)})
	m.prevS = elapsed
}

// tuneRuntime sets the scheduler and collector for a run whose connections
// each block a thread (tpcc-mysql mode's clients) and returns what restores
// them. A GOMAXPROCS or GOGC the user set in the environment is kept.
func tuneRuntime(o *Opts) (restore func()) {
	blocking := o.Transport == mysqlwire.TransportBlocking
	if !blocking && o.Client != mysqlwire.ClientLibmariadb {
		return func() {}
	}
	procs := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		if blocking {
			runtime.GOMAXPROCS(mysqlwire.BlockingGOMAXPROCS(o.Conns))
		} else {
			// The C client's calls are cgo calls, system calls to the
			// scheduler: with an idle P left, sysmon lets a call that
			// blocks keep its P for up to 10 ms instead of handing it to
			// another thread.
			runtime.GOMAXPROCS(max(runtime.NumCPU(), o.Conns+2))
		}
	}
	setGC := os.Getenv("GOGC") == ""
	gc := 0
	if setGC {
		gc = debug.SetGCPercent(mysqlwire.BlockingGCPercent)
	}
	return func() {
		runtime.GOMAXPROCS(procs)
		if setGC {
			debug.SetGCPercent(gc)
		}
	}
}
