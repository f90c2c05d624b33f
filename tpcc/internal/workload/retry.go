package workload

import (
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/measure"
	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

// RetryPolicy is what a workload does after an attempt of a transaction
// fails without losing the connection: the attempt is rolled back, then
// retried or given up. A lost connection is not the policy's to decide:
// the retry loop reconnects and counts the transaction as failed.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts of one transaction, the first
	// included; a transaction whose last attempt fails counts as failed.
	MaxAttempts int
	// Retryable reports whether an error is worth another attempt; nil
	// retries every error.
	Retryable func(error) bool
	// NoteEveryFailure prints each failed attempt's error (up to the
	// ErrorLog's limit), as tpcc_start does; otherwise only the error of a
	// transaction given up is printed.
	NoteEveryFailure bool
	// StopEndsRetries gives up a failing transaction once the run is
	// stopping, so that a policy with many attempts cannot hold the end of
	// the run.
	StopEndsRetries bool
}

// TpccMysqlRetries is tpcc-mysql's own policy (driver.c, MAX_RETRY): any
// error is rolled back and the transaction run again with the same input,
// up to 2000 attempts in all; every failed attempt counts in rt and is
// printed, the last one counts the transaction in fl.
var TpccMysqlRetries = RetryPolicy{MaxAttempts: 2000, NoteEveryFailure: true, StopEndsRetries: true}

// BatchedRetries is batched mode's policy: only deadlocks and lock wait
// timeouts (mysqlwire.IsRetryable) are retried, up to 20 times after the
// first attempt, because they say nothing about the transaction itself;
// any other error fails the transaction at once and is printed.
var BatchedRetries = RetryPolicy{MaxAttempts: 1 + 20, Retryable: mysqlwire.IsRetryable}

// retries reports whether the failed attempt number attempt (from 1) with
// error err gets another one.
func (p *RetryPolicy) retries(attempt int, err error, stop *atomic.Bool) bool {
	if attempt >= p.MaxAttempts {
		return false
	}
	if p.Retryable != nil && !p.Retryable(err) {
		return false
	}
	return !(p.StopEndsRetries && stop.Load())
}

// Transactor is a worker as the retry loop sees it; each workload's worker
// implements it. It is an interface rather than closures so that running a
// transaction allocates nothing.
type Transactor interface {
	// Attempt runs one attempt of a transaction of type t on the input
	// the worker drew for it.
	Attempt(t spec.TxType) error
	// Rollback rolls back a failed attempt.
	Rollback() error
	// Reconnect replaces a lost connection (see Reconnect); its error
	// ends the run.
	Reconnect() error
}

// Outcome is how one transaction ended: what measure.Recorder.Record counts.
type Outcome struct {
	// Start is when the first attempt started.
	Start time.Time
	// RT is the response time: from the first attempt's start to the last
	// one's end, failed attempts included.
	RT time.Duration
	// Retries is the failed attempts that were run again (rt).
	Retries int
	// Failed says the transaction was given up or its connection lost (fl).
	Failed bool
	// Stopped says the connection was lost while the run was stopping:
	// nothing to record, the worker's loop ends without an error.
	Stopped bool
}

// Retrier runs one connection's transactions from the first attempt to
// the end under a policy.
type Retrier struct {
	Policy RetryPolicy
	Tx     Transactor
	ConnID int // the connection's number, for a fatal error's message
	Errors *ErrorLog
	// Rec, when set, is told when each transaction starts (Begin), so an
	// interval that ends while it waits counts it as in flight.
	Rec *measure.Recorder
}

// Run runs a transaction of type t, timed from start, until an attempt
// succeeds or the policy gives it up. start is now in a closed loop and
// the scheduled start at a fixed rate (Env.NextStart), so a transaction
// that began late counts the wait. Its error is a FatalError: the
// connection was lost and could not be reopened.
func (r *Retrier) Run(t spec.TxType, start time.Time, stop *atomic.Bool) (Outcome, error) {
	o := Outcome{Start: start}
	if r.Rec != nil {
		r.Rec.Begin(t, o.Start)
	}
	for attempt := 1; ; attempt++ {
		err := r.Tx.Attempt(t)
		if err == nil {
			break
		}
		if mysqlwire.IsConnLost(err) {
			if stop.Load() {
				// The server went away as the run ended: not a
				// failure of this transaction worth reporting.
				o.Stopped = true
				return o, nil
			}
			return r.failAndReconnect(o, err)
		}
		if r.Policy.NoteEveryFailure {
			r.Errors.Note(t, err)
		}
		// Only a rollback that loses the connection changes what
		// happens next.
		if rbErr := r.Tx.Rollback(); rbErr != nil && mysqlwire.IsConnLost(rbErr) {
			return r.failAndReconnect(o, rbErr)
		}
		if !r.Policy.retries(attempt, err, stop) {
			if !r.Policy.NoteEveryFailure {
				r.Errors.Note(t, err)
			}
			o.Failed = true
			break
		}
		o.Retries++
	}
	o.RT = time.Since(o.Start)
	return o, nil
}

// failAndReconnect ends a transaction whose connection was lost with err:
// it counts as failed once the connection is back, and a connection that
// cannot be reopened ends the run.
func (r *Retrier) failAndReconnect(o Outcome, err error) (Outcome, error) {
	if rerr := r.Tx.Reconnect(); rerr != nil {
		return o, ConnectionLost(r.ConnID, err, rerr)
	}
	o.Failed = true
	o.RT = time.Since(o.Start)
	return o, nil
}
