// Package batched is tpcc run --mode batched: the TPC-C business
// transactions in fewer round trips (IN lists, multi-row inserts, one join
// for Stock-Level, one commit per Delivery) with the spec's data updates,
// through database/sql. A different workload from tpcc-mysql's: its TpmC is
// not comparable with tpcc_start's.
package batched

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload"
)

// bg is used for every statement: a context without Done() lets database/sql
// and the driver skip their per-call cancellation watchers. Stopping is done
// between transactions instead (the stop flag), so nothing is cut mid-flight.
var bg = context.Background()

// worker is one client connection driving transactions from its own deck.
type worker struct {
	env   *workload.Env
	conn  *sql.Conn
	rng   *spec.Rand
	deck  *spec.Deck
	stats measure.Recorder
	stmts map[string]*sql.Stmt

	retrier workload.Retrier
	// home is the home warehouse of the transaction being run: Attempt's
	// input besides New-Order's.
	home int

	// scratch, reused across transactions to avoid allocation
	newOrderIn newOrderInput
	ids        []int64
	args       []any
	buf        []byte
}

// NewWorker returns connection id's worker; seed is its own generator's.
func NewWorker(id int, env *workload.Env, seed uint64) workload.Worker {
	r := env.NewRand(seed)
	w := &worker{env: env, rng: r, deck: spec.NewDeck(r), stmts: map[string]*sql.Stmt{},
		args: make([]any, 0, 9*15), buf: make([]byte, 0, 600)}
	w.retrier = workload.Retrier{Policy: workload.BatchedRetries, Tx: w, ConnID: id, Errors: env.Errors, Rec: &w.stats}
	return w
}

// Connect (re)opens the worker's dedicated connection. Prepared statements are
// per connection, so the cache is dropped with it.
func (w *worker) Connect(ctx context.Context) error {
	if w.conn != nil {
		for _, s := range w.stmts {
			s.Close()
		}
		w.conn.Close()
		w.conn = nil
	}
	clear(w.stmts)
	c, err := w.env.DB.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = c
	return nil
}

// Recorder is where Loop records.
func (w *worker) Recorder() *measure.Recorder { return &w.stats }

// Close closes the connection.
func (w *worker) Close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// prep returns the prepared statement for q, preparing it on first use.
func (w *worker) prep(q string) (*sql.Stmt, error) {
	if s, ok := w.stmts[q]; ok {
		return s, nil
	}
	s, err := w.conn.PrepareContext(bg, q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = s
	return s, nil
}

func (w *worker) exec(q string, args ...any) (sql.Result, error) {
	s, err := w.prep(q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(bg, args...)
}

func (w *worker) queryRow(q string, dest []any, args ...any) error {
	s, err := w.prep(q)
	if err != nil {
		return err
	}
	return s.QueryRowContext(bg, args...).Scan(dest...)
}

func (w *worker) query(q string, args ...any) (*sql.Rows, error) {
	s, err := w.prep(q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(bg, args...)
}

// The session runs with autocommit=0, so the first statement opens a
// transaction implicitly and no BEGIN round trip is needed.
func (w *worker) commit() error {
	_, err := w.conn.ExecContext(bg, "COMMIT")
	return err
}

// Rollback rolls back a failed attempt (workload.Transactor).
func (w *worker) Rollback() error {
	_, err := w.conn.ExecContext(bg, "ROLLBACK")
	return err
}

// otherWarehouse returns a warehouse id different from home, uniformly.
func (w *worker) otherWarehouse(home int) int { return w.rng.OtherWarehouse(home, w.env.W) }

// Loop runs transactions until stop is set. It returns only a fatal error.
func (w *worker) Loop(stop *atomic.Bool) error {
	for !stop.Load() {
		start, ok := w.env.NextStart(stop)
		if !ok {
			return nil
		}
		t := w.deck.Next()
		w.home = w.rng.Uniform(1, w.env.W)
		w.genInput(t, w.home)
		o, err := w.retrier.Run(t, start, stop)
		if err != nil || o.Stopped {
			return err
		}
		w.stats.Record(t, o.RT, o.Retries, o.Failed, w.env.Late[t])
	}
	return nil
}

// Reconnect gets a fresh connection, a few times if need be; a server that
// stays unreachable is fatal for the run (workload.Transactor).
func (w *worker) Reconnect() error {
	return workload.Reconnect(func() error {
		if err := w.Connect(bg); err != nil {
			return err
		}
		return w.conn.PingContext(bg)
	})
}

func (w *worker) genInput(t spec.TxType, home int) {
	if t == spec.TxNewOrder {
		w.genNewOrder(home)
	}
	// The other transactions draw their inputs inside Attempt: a retry after a
	// deadlock redraws them, which TPC-C allows and keeps the code simple.
}

// Attempt runs one attempt of a transaction of type t from w.home
// (workload.Transactor).
func (w *worker) Attempt(t spec.TxType) error {
	home := w.home
	switch t {
	case spec.TxNewOrder:
		return w.newOrder()
	case spec.TxPayment:
		return w.payment(home)
	case spec.TxOrderStatus:
		return w.orderStatus(home)
	case spec.TxDelivery:
		return w.delivery(home)
	case spec.TxStockLevel:
		return w.stockLevel(home)
	}
	return errors.New("unknown transaction type")
}

// inList returns "(?,?,...)" with n placeholders.
func inList(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
}
