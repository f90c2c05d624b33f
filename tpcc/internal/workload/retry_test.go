package workload

import (
	"bytes"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/spec"
)

// The errors a server sends, as the driver returns them.
var (
	deadlock    = &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	lockWait    = &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction"}
	duplicate   = &mysql.MySQLError{Number: 1062, Message: "Duplicate entry '1-1-3001' for key 'PRIMARY'"}
	noSuchTable = &mysql.MySQLError{Number: 1146, Message: "Table 'tpcc1.orders' doesn't exist"}
	serverLost  = &mysql.MySQLError{Number: 2013, Message: "Lost connection to server during query"}
)

// fakeTx is a worker whose attempts fail as attempt says (nil: they
// succeed), counting what the retry loop asks of it.
type fakeTx struct {
	attempt      func(n int) error // the error of attempt n (from 1)
	rollbackErr  error
	reconnectErr error

	attempts, rollbacks, reconnects int
}

func (f *fakeTx) Attempt(spec.TxType) error {
	f.attempts++
	if f.attempt == nil {
		return nil
	}
	return f.attempt(f.attempts)
}

func (f *fakeTx) Rollback() error {
	f.rollbacks++
	return f.rollbackErr
}

func (f *fakeTx) Reconnect() error {
	f.reconnects++
	return f.reconnectErr
}

// failFirst fails the first n attempts with err, then succeeds.
func failFirst(n int, err error) func(int) error {
	return func(a int) error {
		if a <= n {
			return err
		}
		return nil
	}
}

// always fails every attempt with err.
func always(err error) func(int) error { return func(int) error { return err } }

// run runs one New-Order under policy p on f and returns its outcome, its
// error and the error lines printed.
func run(t *testing.T, p RetryPolicy, f *fakeTx, stop *atomic.Bool) (Outcome, error, []string) {
	t.Helper()
	var out bytes.Buffer
	r := Retrier{Policy: p, Tx: f, ConnID: 7, Errors: NewErrorLog(&out)}
	if stop == nil {
		stop = new(atomic.Bool)
	}
	o, err := r.Run(spec.TxNewOrder, time.Now(), stop)
	var lines []string
	if s := strings.TrimSuffix(out.String(), "\n"); s != "" {
		lines = strings.Split(s, "\n")
	}
	return o, err, lines
}

// TestBatchedRetriesOnlyDeadlocksAndLockWaits is the error classification:
// deadlock (1213) and lock wait timeout (1205), also wrapped, are retried;
// every other error fails the transaction at its first attempt.
func TestBatchedRetriesOnlyDeadlocksAndLockWaits(t *testing.T) {
	cases := []struct {
		err   error
		retry bool
	}{
		{deadlock, true},
		{lockWait, true},
		{fmt.Errorf("new_order: stock: %w", deadlock), true},
		{duplicate, false},
		{noSuchTable, false},
		{&mysql.MySQLError{Number: 1690, Message: "BIGINT UNSIGNED value is out of range"}, false},
		{errors.New("unknown transaction type"), false},
	}
	for _, c := range cases {
		f := &fakeTx{attempt: failFirst(3, c.err)}
		o, err, printed := run(t, BatchedRetries, f, nil)
		if err != nil {
			t.Fatalf("%v: %v", c.err, err)
		}
		if c.retry {
			if o.Failed || o.Retries != 3 || f.attempts != 4 || f.rollbacks != 3 || len(printed) != 0 {
				t.Errorf("%v: retried %d times in %d attempts, %d rollbacks, failed %v, printed %q; want 3 retries, 4 attempts, 3 rollbacks, committed, nothing printed",
					c.err, o.Retries, f.attempts, f.rollbacks, o.Failed, printed)
			}
			continue
		}
		if !o.Failed || o.Retries != 0 || f.attempts != 1 || f.rollbacks != 1 || len(printed) != 1 {
			t.Errorf("%v: retried %d times in %d attempts, %d rollbacks, failed %v, printed %q; want failed at the first attempt, rolled back, printed once",
				c.err, o.Retries, f.attempts, f.rollbacks, o.Failed, printed)
		}
	}
}

// TestBatchedGivesUpAfterTwentyRetries: a transaction that keeps
// deadlocking counts 20 retries and one failure, and prints only that.
func TestBatchedGivesUpAfterTwentyRetries(t *testing.T) {
	f := &fakeTx{attempt: always(deadlock)}
	o, err, printed := run(t, BatchedRetries, f, nil)
	if err != nil || !o.Failed || o.Retries != 20 || f.attempts != 21 {
		t.Fatalf("err %v, failed %v, %d retries in %d attempts; want failed after 20 retries in 21 attempts", err, o.Failed, o.Retries, f.attempts)
	}
	if len(printed) != 1 || printed[0] != "tpcc: new_order failed: "+deadlock.Error() {
		t.Errorf("printed %q, want the one final deadlock", printed)
	}
}

// TestBatchedRetriesWhileStopping: batched mode's retries are bounded by
// 20, so a stopping run lets the transaction finish.
func TestBatchedRetriesWhileStopping(t *testing.T) {
	var stop atomic.Bool
	stop.Store(true)
	f := &fakeTx{attempt: failFirst(2, lockWait)}
	o, err, _ := run(t, BatchedRetries, f, &stop)
	if err != nil || o.Failed || o.Retries != 2 {
		t.Fatalf("err %v, failed %v, %d retries; want committed after 2 retries", err, o.Failed, o.Retries)
	}
}

// TestTpccMysqlRetriesAnyError: tpcc-mysql retries every error, each
// failed attempt printed and counted in rt.
func TestTpccMysqlRetriesAnyError(t *testing.T) {
	for _, e := range []error{duplicate, noSuchTable, deadlock, lockWait, errors.New("short read")} {
		f := &fakeTx{attempt: failFirst(2, e)}
		o, err, printed := run(t, TpccMysqlRetries, f, nil)
		if err != nil || o.Failed || o.Retries != 2 || f.attempts != 3 || f.rollbacks != 2 {
			t.Errorf("%v: err %v, failed %v, %d retries, %d attempts, %d rollbacks; want committed at attempt 3 after 2 rolled-back retries",
				e, err, o.Failed, o.Retries, f.attempts, f.rollbacks)
		}
		if len(printed) != 2 {
			t.Errorf("%v: printed %q, want each of the 2 failed attempts", e, printed)
		}
	}
}

// TestTpccMysqlGivesUpAfter2000Attempts is tpcc-mysql's MAX_RETRY: 1999
// retries and one failure; the error log prints only the first ten.
func TestTpccMysqlGivesUpAfter2000Attempts(t *testing.T) {
	f := &fakeTx{attempt: always(duplicate)}
	o, err, printed := run(t, TpccMysqlRetries, f, nil)
	if err != nil || !o.Failed || o.Retries != 1999 || f.attempts != 2000 || f.rollbacks != 2000 {
		t.Fatalf("err %v, failed %v, %d retries, %d attempts, %d rollbacks; want failed after 2000 attempts (1999 retries), each rolled back",
			err, o.Failed, o.Retries, f.attempts, f.rollbacks)
	}
	if len(printed) != maxErrorsShown {
		t.Errorf("printed %d lines, want the first %d", len(printed), maxErrorsShown)
	}
}

// TestTpccMysqlStopEndsRetries: a stopping run gives up a failing
// transaction after the attempt in flight instead of up to 2000 more.
func TestTpccMysqlStopEndsRetries(t *testing.T) {
	var stop atomic.Bool
	f := &fakeTx{attempt: func(n int) error {
		if n == 3 {
			stop.Store(true)
		}
		return deadlock
	}}
	o, err, _ := run(t, TpccMysqlRetries, f, &stop)
	if err != nil || !o.Failed || o.Retries != 2 || f.attempts != 3 {
		t.Fatalf("err %v, failed %v, %d retries in %d attempts; want failed at attempt 3 (2 retries)", err, o.Failed, o.Retries, f.attempts)
	}
}

// policies are both workloads' policies, for what they handle alike.
var policies = map[string]RetryPolicy{"tpcc-mysql": TpccMysqlRetries, "batched": BatchedRetries}

// TestLostConnectionFailsTheTransaction: a lost connection is reconnected,
// not rolled back on or retried; the transaction counts as failed with the
// retries before it, and nothing is printed.
func TestLostConnectionFailsTheTransaction(t *testing.T) {
	for name, p := range policies {
		for _, lost := range []error{serverLost, mysql.ErrInvalidConn, driver.ErrBadConn} {
			f := &fakeTx{attempt: func(n int) error {
				if n == 1 {
					return deadlock
				}
				return lost
			}}
			o, err, printed := run(t, p, f, nil)
			if err != nil || !o.Failed || o.Stopped || o.Retries != 1 || f.attempts != 2 || f.rollbacks != 1 || f.reconnects != 1 {
				t.Errorf("%s, %v: err %v, %+v, %d attempts, %d rollbacks, %d reconnects; want failed after 1 retry, 1 rollback, 1 reconnect",
					name, lost, err, o, f.attempts, f.rollbacks, f.reconnects)
			}
			if name == "batched" && len(printed) != 0 {
				t.Errorf("%s: printed %q for a retried deadlock and a lost connection", name, printed)
			}
		}
	}
}

// TestLostConnectionWhileStopping: the server going away as the run ends
// is not a failure: nothing to record, no reconnect, no error.
func TestLostConnectionWhileStopping(t *testing.T) {
	for name, p := range policies {
		var stop atomic.Bool
		stop.Store(true)
		f := &fakeTx{attempt: always(serverLost)}
		o, err, _ := run(t, p, f, &stop)
		if err != nil || !o.Stopped || o.Failed || f.reconnects != 0 || f.rollbacks != 0 {
			t.Errorf("%s: err %v, %+v, %d reconnects, %d rollbacks; want stopped, nothing else", name, err, o, f.reconnects, f.rollbacks)
		}
	}
}

// TestRollbackLosingConnectionFailsTheTransaction: a rollback that finds
// the connection gone ends the transaction as failed after a reconnect;
// a rollback error on a live connection does not change the course.
func TestRollbackLosingConnectionFailsTheTransaction(t *testing.T) {
	for name, p := range policies {
		f := &fakeTx{attempt: failFirst(1, deadlock), rollbackErr: fmt.Errorf("read: %w", io.ErrUnexpectedEOF)}
		o, err, _ := run(t, p, f, nil)
		if err != nil || !o.Failed || o.Retries != 0 || f.attempts != 1 || f.reconnects != 1 {
			t.Errorf("%s: err %v, %+v, %d attempts, %d reconnects; want failed at the first attempt after a reconnect", name, err, o, f.attempts, f.reconnects)
		}
		f = &fakeTx{attempt: failFirst(1, deadlock), rollbackErr: lockWait}
		o, err, _ = run(t, p, f, nil)
		if err != nil || o.Failed || o.Retries != 1 || f.reconnects != 0 {
			t.Errorf("%s, rollback error %v: err %v, %+v, %d reconnects; want committed after 1 retry", name, lockWait, err, o, f.reconnects)
		}
	}
}

// TestReconnectFailureIsFatal: a connection that cannot be reopened ends
// the run with a FatalError naming the connection and both errors.
func TestReconnectFailureIsFatal(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	for name, p := range policies {
		f := &fakeTx{attempt: always(serverLost), reconnectErr: refused}
		_, err, _ := run(t, p, f, nil)
		var fatal FatalError
		if !errors.As(err, &fatal) || !errors.Is(err, refused) {
			t.Fatalf("%s: error %v, want a FatalError wrapping the reconnect's", name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "connection 7 lost") || !strings.Contains(msg, serverLost.Error()) {
			t.Errorf("%s: message %q does not name connection 7 and the lost connection's error", name, msg)
		}
	}
}

// TestOutcomeIsWhatTheRunCounts: an outcome recorded the way the workers
// record it gives tpcc-mysql's raw results: retries in rt, a transaction
// given up in fl (not in sc/lt, not in the response times), one that
// committed after retries in sc with its retries in rt.
func TestOutcomeIsWhatTheRunCounts(t *testing.T) {
	var rec measure.Recorder
	late := time.Hour
	for _, f := range []*fakeTx{{attempt: failFirst(4, deadlock)}, {attempt: always(deadlock)}, {}} {
		o, err, _ := run(t, BatchedRetries, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(spec.TxNewOrder, o.RT, o.Retries, o.Failed, late)
	}
	var s measure.IntervalStats
	rec.DrainInto(&s, time.Now())
	got := s.T[spec.TxNewOrder].Counters
	if got.SC != 2 || got.LT != 0 || got.RT != 4+20 || got.FL != 1 {
		t.Fatalf("sc %d lt %d rt %d fl %d; want sc 2, lt 0, rt 24, fl 1", got.SC, got.LT, got.RT, got.FL)
	}
	if n := s.T[spec.TxNewOrder].Hist.Count(); n != 2 {
		t.Errorf("%d response times recorded, want the 2 committed transactions'", n)
	}
}

// TestRunAllocatesNothing: the retry loop runs once per transaction, so
// a transaction that commits must not add garbage to the workers'
// allocation-free loops. (A failed attempt allocates in the error
// classification, mysqlwire's errors.As targets, not here.)
func TestRunAllocatesNothing(t *testing.T) {
	for name, p := range policies {
		f := &fakeTx{}
		r := Retrier{Policy: p, Tx: f, Errors: NewErrorLog(&bytes.Buffer{})}
		var stop atomic.Bool
		if n := testing.AllocsPerRun(100, func() {
			if o, err := r.Run(spec.TxPayment, time.Now(), &stop); err != nil || o.Failed {
				t.Fatalf("%s: %+v, %v", name, o, err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per transaction", name, n)
		}
	}
}
