package tpcc

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// maxAttempts is tpcc-mysql's MAX_RETRY: a transaction that fails (any
// error) is rolled back and run again with the same input up to this many
// times in all; every failed attempt counts in rt, and after the last the
// transaction counts in fl (its attempts minus one stay in rt).
const maxAttempts = 2000

// SharedDeck is tpcc-mysql's sequence.c: one deck of 23 cards for all
// connections, reshuffled under the lock when it runs out, so the mix is
// exact across the whole client rather than per connection.
type SharedDeck struct {
	mu sync.Mutex
	d  *Deck
}

// NewSharedDeck returns a shared deck shuffled with its own generator.
func NewSharedDeck(seed uint64) *SharedDeck { return &SharedDeck{d: NewDeck(NewRand(seed))} }

// Next deals the next card.
func (s *SharedDeck) Next() TxType {
	s.mu.Lock()
	t := s.d.Next()
	s.mu.Unlock()
	return t
}

// mWorker is one tpcc-mysql mode connection.
type mWorker struct {
	id    int
	rn    *runner
	db    string // schema (tpcc_start -m/-o: one of several)
	conn  driver.Connector
	sess  *session
	rng   *Rand
	stats workerStats

	in         mInput
	rolledBack bool

	// scratch reused across transactions
	order              [maxOrderLines]int
	ids                []int64
	dist, hdata, cdata []byte
	bal, sum           []byte
	nowSec             int64
	nowText            []byte
}

func newMWorker(id int, rn *runner, seed uint64, db string, conn driver.Connector) *mWorker {
	r := NewRand(seed)
	r.C = rn.consts
	return &mWorker{id: id, rn: rn, db: db, conn: conn, rng: r, ids: make([]int64, 0, 400),
		hdata: make([]byte, 0, 32), cdata: make([]byte, 0, 512), dist: make([]byte, 0, 24)}
}

func (w *mWorker) workerStats() *workerStats { return &w.stats }

// connect opens the connection and prepares all statements.
func (w *mWorker) connect(ctx context.Context) error {
	w.close()
	s, err := openSession(ctx, w.conn, mStmtTexts[:])
	if err != nil {
		return err
	}
	w.sess = s
	return nil
}

func (w *mWorker) close() {
	if w.sess != nil {
		w.sess.close()
		w.sess = nil
	}
}

// datetime is the client clock as 'YYYY-MM-DD HH:MM:SS' local time
// (tpcc-mysql's gettimestamp), formatted once per second.
func (w *mWorker) datetime() []byte {
	now := time.Now()
	if sec := now.Unix(); sec != w.nowSec {
		w.nowSec = sec
		w.nowText = now.AppendFormat(w.nowText[:0], "2006-01-02 15:04:05")
	}
	return w.nowText
}

func (w *mWorker) run(t TxType) error {
	switch t {
	case TxNewOrder:
		return w.newOrder()
	case TxPayment:
		return w.payment()
	case TxOrderStatus:
		return w.orderStatus()
	case TxDelivery:
		return w.delivery()
	default:
		return w.stockLevel()
	}
}

// loop runs transactions dealt from the shared deck until stop is set. It
// returns only a fatal error (server lost and not reachable again).
func (w *mWorker) loop(stop *atomic.Bool) error {
	for !stop.Load() {
		t := w.rn.deck.Next()
		w.genInput(t)
		start := time.Now()
		retries := 0
		failed := false
		for attempt := 1; ; attempt++ {
			w.rolledBack = false
			err := w.run(t)
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
			w.rn.noteError(t, err)
			if rbErr := w.sess.rollback(); rbErr != nil && isConnLost(rbErr) {
				if rerr := w.reconnect(); rerr != nil {
					return errFatal{fmt.Errorf("connection %d lost (%v) and reconnect failed: %w", w.id, rbErr, rerr)}
				}
				failed = true
				break
			}
			if attempt >= maxAttempts || stop.Load() {
				failed = true
				break
			}
			retries++
		}
		rt := time.Since(start)
		w.stats.record(t, rt, retries, failed, w.rn.late[t])
		if t == TxNewOrder && !failed {
			w.rn.files.newOrder(w.id, start, rt, w.rolledBack)
		}
	}
	return nil
}

// reconnect tries a few times to get a fresh connection; a server that
// stays unreachable is fatal for the run.
func (w *mWorker) reconnect() error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		if err = w.connect(bg); err == nil {
			return nil
		}
	}
	return err
}
