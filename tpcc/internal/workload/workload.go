// Package workload holds what the two workloads of tpcc run share: the
// Worker each connection is, the Env one run's connections share, the
// error log and the retry loop with both workloads' policies (retry.go).
// The workloads themselves are workload/tpccmysql (tpcc-mysql's
// own, the default) and workload/batched (fewer round trips), one file per
// transaction.
package workload

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// Worker is one connection's transaction loop, in either mode.
type Worker interface {
	// Connect opens the connection (and prepares its statements).
	Connect(ctx context.Context) error
	// Loop runs transactions until stop is set; it returns only a fatal
	// error (the server lost and not reachable again).
	Loop(stop *atomic.Bool) error
	// Recorder is where Loop records each finished transaction.
	Recorder() *measure.Recorder
	// Close closes the connection.
	Close()
}

// NewOrderLog receives every completed New-Order (tpcc_start's -f and -t
// files; report.RunFiles).
type NewOrderLog interface {
	NewOrder(conn int, start time.Time, rt time.Duration, rolledBack bool)
}

// Env is what all connections of one run share.
type Env struct {
	W      int                            // warehouses in use (-w)
	Late   [spec.NumTxTypes]time.Duration // on-time limit per type (sc below, lt from)
	Consts spec.Constants                 // run-time NURand constants
	Errors *ErrorLog
	// Deck is tpcc-mysql mode's one deck for all connections.
	Deck *spec.SharedDeck
	// NewOrders logs tpcc-mysql mode's New-Orders (-f, -t).
	NewOrders NewOrderLog
	// DB is batched mode's pool (one dedicated connection per worker).
	DB *sql.DB
	// Pacer is a fixed-rate run's schedule (--rate); nil runs the closed
	// loop, each connection starting its next transaction when the last
	// one ends.
	Pacer *Pacer
}

// maxErrorsShown limits per-run error messages on stderr; all are counted.
const maxErrorsShown = 10

// ErrorLog prints the first few transaction errors of a run.
type ErrorLog struct {
	w     io.Writer
	mu    sync.Mutex
	shown int
}

// NewErrorLog prints to w (stderr).
func NewErrorLog(w io.Writer) *ErrorLog { return &ErrorLog{w: w} }

// Note prints "tpcc: <type> failed: <err>" for the first maxErrorsShown.
func (l *ErrorLog) Note(t spec.TxType, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown < maxErrorsShown {
		l.shown++
		fmt.Fprintf(l.w, "tpcc: %s failed: %v\n", t, err)
	}
}

// FatalError marks a worker that lost its server and could not reconnect.
type FatalError struct{ Err error }

func (e FatalError) Error() string { return e.Err.Error() }
func (e FatalError) Unwrap() error { return e.Err }

// ConnectionLost is the FatalError of connection id after err, when
// reconnecting failed with rerr.
func ConnectionLost(id int, err, rerr error) error {
	return FatalError{fmt.Errorf("connection %d lost (%v) and reconnect failed: %w", id, err, rerr)}
}

// Reconnect calls connect up to three times, 500 ms apart, and returns its
// last error: a server that stays unreachable is fatal for the run.
func Reconnect(connect func() error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		if err = connect(); err == nil {
			return nil
		}
	}
	return err
}

// NewRand returns a connection's generator, seeded with seed, whose NURand
// draws (CustomerID, ItemID, LastNameNum) use the run's constants: every
// connection of a run must share them (TPC-C 2.1.6).
func (e *Env) NewRand(seed uint64) *spec.Rand {
	r := spec.NewRand(seed)
	r.C = e.Consts
	return r
}
