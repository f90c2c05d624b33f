package workload

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"flushbench/tpcc/internal/spec"
)

// offsets deals n scheduled starts from a pacer that began at t0, as
// offsets from t0.
func offsets(p *Pacer, t0 time.Time, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = p.Claim().Sub(t0)
	}
	return out
}

// TestScheduleIsSeeded: the same seed deals the same Poisson schedule,
// another seed another one.
func TestScheduleIsSeeded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := offsets(NewPacer(6000, ArrivalsPoisson, 42, t0), t0, 1000)
	b := offsets(NewPacer(6000, ArrivalsPoisson, 42, t0), t0, 1000)
	c := offsets(NewPacer(6000, ArrivalsPoisson, 43, t0), t0, 1000)
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
		if i > 0 && a[i] < a[i-1] {
			t.Fatalf("start %d at %v before start %d at %v", i, a[i], i-1, a[i-1])
		}
	}
	if !same || !differ {
		t.Fatalf("same seed same schedule: %v; other seed another: %v", same, differ)
	}
}

// TestScheduleGivesTheTargetRate: uniform and Poisson starts arrive at
// the transactions a second that make the target's New-Orders with the
// deck's mix (10 of 23 cards).
func TestScheduleGivesTheTargetRate(t *testing.T) {
	const notpm = 3000.0
	perS := notpm / 60 * 23 / 10 // 115 transactions a second
	if got := TxPerSecond(notpm); math.Abs(got-perS) > 1e-9 {
		t.Fatalf("TxPerSecond(%v) = %v, want %v", notpm, got, perS)
	}
	t0 := time.Unix(0, 0)
	const n = 200000
	for _, a := range []Arrivals{ArrivalsUniform, ArrivalsPoisson} {
		last := offsets(NewPacer(notpm, a, 7, t0), t0, n)[n-1]
		rate := n / last.Seconds()
		// Uniform is exact; Poisson's mean of 200,000 gaps has a standard
		// error of 0.22 %: 1 % is 4.5 of them (and the seed is fixed).
		if tol := map[Arrivals]float64{ArrivalsUniform: 1e-6, ArrivalsPoisson: 0.01}[a]; math.Abs(rate/perS-1) > tol {
			t.Errorf("%s: %d starts in %v = %.3f/s, want %.3f/s within %g", a, n, last, rate, perS, tol)
		}
	}
	// Poisson gaps vary as an exponential's do (coefficient of variation
	// 1), uniform ones not at all.
	s := offsets(NewPacer(notpm, ArrivalsPoisson, 7, t0), t0, n)
	var sum, sq float64
	for i := 1; i < n; i++ {
		g := (s[i] - s[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	mean := sum / (n - 1)
	if cv := math.Sqrt(sq/(n-1)-mean*mean) / mean; math.Abs(cv-1) > 0.02 {
		t.Errorf("Poisson gaps' coefficient of variation %.3f, want 1", cv)
	}
}

// TestBacklogCountsStartsDueAndUnclaimed: at a given instant the backlog is
// the starts due by then that no connection claimed, and the oldest one's
// lateness.
func TestBacklogCountsStartsDueAndUnclaimed(t *testing.T) {
	t0 := time.Unix(0, 0)
	// 600 NOTPM: 23 transactions a second, one every 1/23 s.
	p := NewPacer(600, ArrivalsUniform, 1, t0)
	gap := time.Second / 23
	if n, old := p.Backlog(t0.Add(gap / 2)); n != 0 || old != 0 {
		t.Fatalf("before the first start: backlog %d, oldest %v", n, old)
	}
	at := t0.Add(10*gap + gap/2) // ten starts due
	if n, old := p.Backlog(at); n != 10 || old < 9*gap || old > 10*gap {
		t.Fatalf("ten due, none claimed: backlog %d, oldest %v (want 10, ~%v)", n, old, 9*gap+gap/2)
	}
	for range 4 {
		p.Claim()
	}
	if n, old := p.Backlog(at); n != 6 || old < 5*gap || old > 6*gap {
		t.Fatalf("ten due, four claimed: backlog %d, oldest %v", n, old)
	}
	for range 8 { // claims run ahead of the schedule: nothing waits
		p.Claim()
	}
	if n, old := p.Backlog(at); n != 0 || old != 0 {
		t.Fatalf("twelve claimed of ten due: backlog %d, oldest %v", n, old)
	}
}

// slowTx is a stand-in connection whose every attempt takes d.
type slowTx struct{ d time.Duration }

func (s slowTx) Attempt(spec.TxType) error { time.Sleep(s.d); return nil }
func (slowTx) Rollback() error             { return nil }
func (slowTx) Reconnect() error            { return nil }

// TestLatencyRunsFromTheScheduledStart: one connection whose transactions
// take 20 ms, scheduled every ~4.3 ms, falls behind; each transaction's
// response time holds the wait since its scheduled start, so the k-th is at
// least k×(20 − 4.3) ms — where the closed loop's would stay ~20 ms. (Lower
// bounds only: a sleep never ends early.)
func TestLatencyRunsFromTheScheduledStart(t *testing.T) {
	const service = 20 * time.Millisecond
	begin := time.Now()
	env := &Env{Pacer: NewPacer(6000, ArrivalsUniform, 1, begin)} // 230 a second
	gap := time.Duration(float64(time.Second) / TxPerSecond(6000))
	r := Retrier{Policy: BatchedRetries, Tx: slowTx{service}, Errors: NewErrorLog(nil)}
	var stop atomic.Bool
	const n = 10
	var rts []time.Duration
	for range n {
		start, ok := env.NextStart(&stop)
		if !ok {
			t.Fatal("stopped")
		}
		o, err := r.Run(spec.TxPayment, start, &stop)
		if err != nil {
			t.Fatal(err)
		}
		rts = append(rts, o.RT)
	}
	for k, rt := range rts {
		if floor := time.Duration(k+1)*(service-gap) + gap; rt < floor {
			t.Errorf("transaction %d: response time %v, want at least %v (queued since its scheduled start)", k, rt, floor)
		}
	}
	if n, old := env.Pacer.Backlog(time.Now()); n < 30 || old < 100*time.Millisecond {
		t.Errorf("after %d transactions of %v at one every %v: backlog %d, oldest %v", len(rts), service, gap, n, old)
	}
	// The closed loop times from now.
	closed := &Env{}
	if start, ok := closed.NextStart(&stop); !ok || time.Since(start) > time.Second {
		t.Errorf("closed loop start %v, %v", start, ok)
	}
}

// TestWaitEndsOnStop: a connection waiting for a start far ahead returns
// when the run stops.
func TestWaitEndsOnStop(t *testing.T) {
	var stop atomic.Bool
	stop.Store(true)
	if Wait(time.Now().Add(time.Hour), &stop) {
		t.Fatal("Wait returned true with stop set")
	}
	stop.Store(false)
	if !Wait(time.Now().Add(-time.Second), &stop) {
		t.Fatal("a start already due does not wait")
	}
}
