package tpcc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// bg is used for every statement: a context without Done() lets database/sql
// and the driver skip their per-call cancellation watchers. Stopping is done
// between transactions instead (the stop flag), so nothing is cut mid-flight.
var bg = context.Background()

// errNoRows wraps sql.ErrNoRows with the statement for diagnostics.
var errNoRows = sql.ErrNoRows

// worker is one client connection driving transactions from its own deck.
type worker struct {
	id    int
	rn    *runner
	conn  *sql.Conn
	rng   *Rand
	deck  *Deck
	stats workerStats
	stmts map[string]*sql.Stmt

	// scratch, reused across transactions to avoid allocation
	no   newOrderIn
	ids  []int64
	args []any
	buf  []byte
}

func newWorker(id int, rn *runner, seed uint64) *worker {
	r := NewRand(seed)
	r.C = rn.consts
	return &worker{id: id, rn: rn, rng: r, deck: NewDeck(r), stmts: map[string]*sql.Stmt{},
		args: make([]any, 0, 9*15), buf: make([]byte, 0, 600)}
}

// connect (re)opens the worker's dedicated connection. Prepared statements are
// per connection, so the cache is dropped with it.
func (w *worker) connect(ctx context.Context) error {
	if w.conn != nil {
		for _, s := range w.stmts {
			s.Close()
		}
		w.conn.Close()
		w.conn = nil
	}
	clear(w.stmts)
	c, err := w.rn.db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = c
	return nil
}

func (w *worker) workerStats() *workerStats { return &w.stats }

func (w *worker) close() {
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

func (w *worker) rollback() error {
	_, err := w.conn.ExecContext(bg, "ROLLBACK")
	return err
}

// otherWarehouse returns a warehouse id different from home, uniformly.
func (w *worker) otherWarehouse(home int) int {
	x := w.rng.Uniform(1, w.rn.W-1)
	if x >= home {
		x++
	}
	return x
}

// maxRetries bounds deadlock/lock-wait retries of one transaction; after
// that it counts as a failure.
const maxRetries = 20

// errFatal marks a worker that lost its server and could not reconnect.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// loop runs transactions until stop is set. It returns only a fatal error.
func (w *worker) loop(stop *atomic.Bool) error {
	for !stop.Load() {
		t := w.deck.Next()
		home := w.rng.Uniform(1, w.rn.W)
		w.genInput(t, home)
		start := time.Now()
		retries := 0
		failed := false
		for {
			err := w.run(t, home)
			if err == nil {
				break
			}
			if isConnLost(err) {
				if stop.Load() {
					return nil
				}
				if rerr := w.reconnect(); rerr != nil {
					return errFatal{fmt.Errorf("connection %d lost (%v) and reconnect failed: %w", w.id, err, rerr)}
				}
				failed = true
				break
			}
			if rbErr := w.rollback(); rbErr != nil && isConnLost(rbErr) {
				if rerr := w.reconnect(); rerr != nil {
					return errFatal{fmt.Errorf("connection %d lost (%v) and reconnect failed: %w", w.id, rbErr, rerr)}
				}
				failed = true
				break
			}
			if isRetryable(err) && retries < maxRetries {
				retries++
				continue
			}
			w.rn.noteError(t, err)
			failed = true
			break
		}
		w.stats.record(t, time.Since(start), retries, failed, w.rn.late[t])
	}
	return nil
}

// reconnect tries a few times to get a fresh connection; a server that
// stays unreachable is fatal for the run.
func (w *worker) reconnect() error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		if err = w.connect(bg); err == nil {
			if err = w.conn.PingContext(bg); err == nil {
				return nil
			}
		}
	}
	return err
}

func (w *worker) genInput(t TxType, home int) {
	if t == TxNewOrder {
		w.genNewOrder(home)
	}
	// The other transactions draw their inputs inside run: a retry after a
	// deadlock redraws them, which TPC-C allows and keeps the code simple.
}

func (w *worker) run(t TxType, home int) error {
	switch t {
	case TxNewOrder:
		return w.newOrder()
	case TxPayment:
		return w.payment(home)
	case TxOrderStatus:
		return w.orderStatus(home)
	case TxDelivery:
		return w.delivery(home)
	case TxStockLevel:
		return w.stockLevel(home)
	}
	return errors.New("unknown transaction type")
}

// inList returns "(?,?,...)" with n placeholders.
func inList(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
}

// itoa is strconv.Itoa, named for brevity in query builders.
var itoa = strconv.Itoa
