// Package tpccmysql is tpcc run's default workload, tpcc-mysql's own: the
// 35 statements tpcc_start prepares (statements.go), issued per
// transaction type in the same order with the same round trips, lock order
// and commit points (one file per transaction), one 23-card deck shared by
// all connections, and any error retried with the same input up to 2000
// times (workload.TpccMysqlRetries). It runs on a
// mysqlwire.PreparedSession of either client (the C library's
// libmariadb.Session or the Go mysqlwire.Session); its statement stream is
// checked through each against a real tpcc_start run's general log
// (testdata/statement-shapes.txt, cmd/tpcc's TestTpccMysqlStatementStream).
package tpccmysql

import (
	"context"
	"database/sql/driver"
	"runtime"
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
	"flushbench/tpcc/internal/workload"
)

// bg is the reconnect's context: reconnecting is not cut short by a signal
// (the stop flag ends the loop between transactions).
var bg = context.Background()

// worker is one tpcc-mysql mode connection.
type worker struct {
	id    int
	env   *workload.Env
	open  mysqlwire.SessionOpener
	sess  mysqlwire.PreparedSession
	rng   *spec.Rand
	stats measure.Recorder

	in         input
	rolledBack bool // the attempt ran New-Order's deliberate rollback
	retrier    workload.Retrier

	// scratch reused across transactions
	order              [spec.MaxOrderLines]int
	ids                []int64
	dist, hdata, cdata []byte
	bal, sum           []byte
	nowSec             int64
	nowText            []byte
}

// NewWorker returns connection id's worker, which connects through open
// (the client, with its schema and transport); seed is its own
// generator's.
func NewWorker(id int, env *workload.Env, seed uint64, open mysqlwire.SessionOpener) workload.Worker {
	w := &worker{id: id, env: env, open: open, rng: env.NewRand(seed), ids: make([]int64, 0, 400),
		hdata: make([]byte, 0, 32), cdata: make([]byte, 0, 512), dist: make([]byte, 0, 24)}
	w.retrier = workload.Retrier{Policy: workload.TpccMysqlRetries, Tx: w, ConnID: id, Errors: env.Errors, Rec: &w.stats}
	return w
}

// Recorder is where Loop records.
func (w *worker) Recorder() *measure.Recorder { return &w.stats }

// Connect opens the connection and prepares all statements.
func (w *worker) Connect(ctx context.Context) error {
	w.Close()
	s, err := w.open.Open(ctx, statementTexts[:])
	if err != nil {
		return err
	}
	w.sess = s
	return nil
}

// Close closes the session.
func (w *worker) Close() {
	if w.sess != nil {
		w.sess.Close()
		w.sess = nil
	}
}

// datetime is the client clock as 'YYYY-MM-DD HH:MM:SS' local time
// (tpcc-mysql's gettimestamp), formatted once per second.
func (w *worker) datetime() []byte {
	now := time.Now()
	if sec := now.Unix(); sec != w.nowSec {
		w.nowSec = sec
		w.nowText = now.AppendFormat(w.nowText[:0], "2006-01-02 15:04:05")
	}
	return w.nowText
}

// Attempt runs one attempt of a transaction of type t on the input drawn
// for it (workload.Transactor).
func (w *worker) Attempt(t spec.TxType) error {
	w.rolledBack = false
	switch t {
	case spec.TxNewOrder:
		return w.newOrder()
	case spec.TxPayment:
		return w.payment()
	case spec.TxOrderStatus:
		return w.orderStatus()
	case spec.TxDelivery:
		return w.delivery()
	default:
		return w.stockLevel()
	}
}

// Rollback rolls back a failed attempt (workload.Transactor).
func (w *worker) Rollback() error { return w.sess.Rollback() }

// Loop runs transactions dealt from the shared deck until stop is set. It
// returns only a fatal error (server lost and not reachable again). A
// client that needs it keeps the whole loop, reconnects included, on one
// OS thread.
func (w *worker) Loop(stop *atomic.Bool) error {
	if w.open.ThreadPerConnection() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	for !stop.Load() {
		start, ok := w.env.NextStart(stop)
		if !ok {
			return nil
		}
		t := w.env.Deck.Next()
		w.genInput(t)
		o, err := w.retrier.Run(t, start, stop)
		if err != nil || o.Stopped {
			return err
		}
		w.stats.Record(t, o.RT, o.Retries, o.Failed, w.env.Late[t])
		if t == spec.TxNewOrder && !o.Failed {
			w.env.NewOrders.NewOrder(w.id, o.Start, o.RT, w.rolledBack)
		}
	}
	return nil
}

// Reconnect opens a fresh session, a few times if need be; a server that
// stays unreachable is fatal for the run (workload.Transactor).
func (w *worker) Reconnect() error {
	return workload.Reconnect(func() error { return w.Connect(bg) })
}

// appendBytes appends a text column value (nil for NULL).
func appendBytes(dst []byte, v driver.Value) []byte {
	switch x := v.(type) {
	case []byte:
		return append(dst, x...)
	case string:
		return append(dst, x...)
	}
	return dst
}
