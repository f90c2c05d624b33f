package workload

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"flushbench/tpcc/internal/spec"
)

// TestSharedDeckMixAcrossConnections is the deck as tpcc-mysql mode uses
// it (Env.Deck): connections drawing concurrently from one deck get, over
// every whole number of 23-card rounds, exactly 10 New-Order, 10 Payment
// and one each of Order-Status, Delivery and Stock-Level per round
// (43.5 / 43.5 / 4.3 / 4.3 / 4.3 %), whatever their interleaving.
func TestSharedDeckMixAcrossConnections(t *testing.T) {
	const conns, roundsPerConn = 4, 50
	env := &Env{Deck: spec.NewSharedDeck(11)}
	counts := make([][spec.NumTxTypes]int, conns)
	var wg sync.WaitGroup
	for c := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < roundsPerConn*23; i++ {
				counts[c][env.Deck.Next()]++
			}
		}()
	}
	wg.Wait()
	var total [spec.NumTxTypes]int
	for _, n := range counts {
		for tt, k := range n {
			total[tt] += k
		}
	}
	const rounds = conns * roundsPerConn
	want := [spec.NumTxTypes]int{10 * rounds, 10 * rounds, rounds, rounds, rounds}
	if total != want {
		t.Fatalf("%d rounds dealt %v (new_order, payment, order_status, delivery, stock_level), want %v", rounds, total, want)
	}
}

// runConstants are run-time NURand C values, all non-zero so that a
// generator missing them draws differently.
var runConstants = spec.Constants{CLast: 223, CID: 259, OLIID: 7911}

// TestNewRandDrawsWithTheRunsConstants: every connection's generator
// draws customer ids, item ids and last names with the run's C values
// (NURand(A, x, y, C) of TPC-C 2.1.6), whatever its seed.
func TestNewRandDrawsWithTheRunsConstants(t *testing.T) {
	env := &Env{Consts: runConstants}
	for _, seed := range []uint64{1, 0x9E3779B97F4A7C15} {
		r, ref := env.NewRand(seed), spec.NewRand(seed)
		for i := 0; i < 1000; i++ {
			if got, want := r.CustomerID(), ref.NURand(1023, 1, 3000, runConstants.CID); got != want {
				t.Fatalf("seed %d draw %d: CustomerID %d, NURand(1023, 1, 3000, %d) %d", seed, i, got, runConstants.CID, want)
			}
			if got, want := r.ItemID(), ref.NURand(8191, 1, 100000, runConstants.OLIID); got != want {
				t.Fatalf("seed %d draw %d: ItemID %d, NURand(8191, 1, 100000, %d) %d", seed, i, got, runConstants.OLIID, want)
			}
			if got, want := r.LastNameNum(), ref.NURand(255, 0, 999, runConstants.CLast); got != want {
				t.Fatalf("seed %d draw %d: LastNameNum %d, NURand(255, 0, 999, %d) %d", seed, i, got, runConstants.CLast, want)
			}
		}
	}
}

// TestNewRandRanges: the workload's NURand draws stay within TPC-C's
// ranges and reach both ends of each (the C offset wraps modulo the
// range, so an off-by-one there shows at an end).
func TestNewRandRanges(t *testing.T) {
	r := (&Env{Consts: runConstants}).NewRand(3)
	draws := []struct {
		name   string
		lo, hi int
		draw   func() int
	}{
		{"CustomerID", 1, spec.CustomersPerD, r.CustomerID},
		{"ItemID", 1, spec.NumItems, r.ItemID},
		{"LastNameNum", 0, 999, r.LastNameNum},
	}
	for _, d := range draws {
		lo, hi := false, false
		for i := 0; i < 2_000_000 && !(lo && hi); i++ {
			v := d.draw()
			if v < d.lo || v > d.hi {
				t.Fatalf("%s drew %d, outside [%d, %d]", d.name, v, d.lo, d.hi)
			}
			lo, hi = lo || v == d.lo, hi || v == d.hi
		}
		if !lo || !hi {
			t.Errorf("%s: reached %d: %v, %d: %v in 2,000,000 draws", d.name, d.lo, lo, d.hi, hi)
		}
	}
}

// TestErrorLogPrintsTheFirstTen: every error is counted elsewhere; the log
// prints only the first maxErrorsShown of a run, naming the type.
func TestErrorLogPrintsTheFirstTen(t *testing.T) {
	var out bytes.Buffer
	l := NewErrorLog(&out)
	for i := 0; i < 25; i++ {
		l.Note(spec.TxPayment, errors.New("boom"))
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != maxErrorsShown || lines[0] != "tpcc: payment failed: boom" {
		t.Fatalf("printed %d lines starting %q, want %d of \"tpcc: payment failed: boom\"", len(lines), lines[0], maxErrorsShown)
	}
}

// TestReconnectTriesThreeTimes: a server back at the second try is used;
// one that stays away fails with the last try's error.
func TestReconnectTriesThreeTimes(t *testing.T) {
	calls := 0
	err := Reconnect(func() error {
		calls++
		if calls < 2 {
			return errors.New("refused")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("back at the second try: err %v after %d calls", err, calls)
	}
	calls = 0
	last := errors.New("refused 3")
	err = Reconnect(func() error {
		calls++
		if calls == 3 {
			return last
		}
		return errors.New("refused")
	})
	if err != last || calls != 3 {
		t.Fatalf("never back: err %v after %d calls, want %v after 3", err, calls, last)
	}
}
