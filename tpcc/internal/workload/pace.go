package workload

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/spec"
)

// Arrivals is how a fixed-rate run spaces its scheduled starts.
type Arrivals string

const (
	// ArrivalsUniform spaces the starts evenly, 1/rate apart.
	ArrivalsUniform Arrivals = "uniform"
	// ArrivalsPoisson draws the gaps from an exponential distribution of
	// mean 1/rate (a Poisson process): the bursts an open system sees.
	ArrivalsPoisson Arrivals = "poisson"
)

// TxPerSecond is the transactions a second a fixed rate of notpm
// New-Orders a minute schedules: the deck decides each one's type, and
// New-Orders are DeckNewOrderShare of them.
func TxPerSecond(notpm float64) float64 { return notpm / 60 / spec.DeckNewOrderShare }

// arrivalClock is the seeded schedule: the offset of each arrival from
// the run's start, one after another. It is a value (the generator's state
// included), so a copy continues the same schedule independently.
type arrivalClock struct {
	poisson bool
	gapNS   float64 // mean gap between arrivals, in nanoseconds
	rng     rand.PCG
	n       uint64  // arrivals dealt so far
	atNS    float64 // offset of the last arrival dealt (Poisson)
}

func newArrivalClock(a Arrivals, txPerSecond float64, seed uint64) arrivalClock {
	return arrivalClock{poisson: a == ArrivalsPoisson, gapNS: 1e9 / txPerSecond,
		rng: *rand.NewPCG(seed, seed^0xDA3E39CB94B95BDB)}
}

// next deals the next arrival's offset. Uniform offsets are n·gap (no
// drift from adding gaps up); Poisson ones add an exponential gap each.
func (c *arrivalClock) next() time.Duration {
	c.n++
	if !c.poisson {
		return time.Duration(float64(c.n) * c.gapNS)
	}
	u := float64(c.rng.Uint64()>>11) / (1 << 53) // [0, 1)
	c.atNS += -math.Log1p(-u) * c.gapNS
	return time.Duration(c.atNS)
}

// Pacer is a fixed-rate run's schedule, shared by all connections: a free
// connection claims the next scheduled start, waits for it if it lies
// ahead, and runs its transaction timed from it. When every connection is
// busy the starts fall due unclaimed — the backlog — and the connection
// that claims one late measures the wait in the transaction's latency (no
// coordinated omission: the schedule never waits for the server).
type Pacer struct {
	// TargetNOTPM is the rate asked for, New-Orders a minute.
	TargetNOTPM float64
	Arrivals    Arrivals
	Seed        uint64

	mu      sync.Mutex
	start   time.Time
	claim   arrivalClock  // the schedule as claimed
	nextAt  time.Duration // offset of the next start not claimed
	claimed uint64        // starts claimed
	due     arrivalClock  // the schedule as far as Backlog has counted
	dueAt   time.Duration // offset of the first start Backlog has not counted
	nDue    uint64        // starts due by the last Backlog
}

// NewPacer schedules notpm New-Orders a minute (> 0) from start.
func NewPacer(notpm float64, a Arrivals, seed uint64, start time.Time) *Pacer {
	c := newArrivalClock(a, TxPerSecond(notpm), seed)
	p := &Pacer{TargetNOTPM: notpm, Arrivals: a, Seed: seed, start: start, claim: c}
	p.nextAt = p.claim.next()
	p.due = p.claim
	p.dueAt = p.nextAt
	return p
}

// Claim takes the next scheduled start (it may lie in the past: the
// transaction is late by that much before it begins).
func (p *Pacer) Claim() time.Time {
	p.mu.Lock()
	at := p.start.Add(p.nextAt)
	p.nextAt = p.claim.next()
	p.claimed++
	p.mu.Unlock()
	return at
}

// Backlog is the schedule's queue at now: the starts due by then that no
// connection has claimed, and how late the oldest of them is (0 with
// none). Each call counts on from the previous one, so a whole run costs
// one step per arrival; now must not go back.
func (p *Pacer) Backlog(now time.Time) (count uint64, oldest time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.start.Add(p.dueAt).After(now) {
		p.nDue++
		p.dueAt = p.due.next()
	}
	if p.nDue <= p.claimed {
		return 0, 0
	}
	return p.nDue - p.claimed, now.Sub(p.start.Add(p.nextAt))
}

// waitSlice bounds one sleep of Wait, so a stop is seen within it.
const waitSlice = 50 * time.Millisecond

// Wait sleeps until due, and reports false when stop is set first.
func Wait(due time.Time, stop *atomic.Bool) bool {
	for {
		if stop.Load() {
			return false
		}
		d := time.Until(due)
		if d <= 0 {
			return true
		}
		time.Sleep(min(d, waitSlice))
	}
}

// NextStart is when a connection's next transaction starts, timed from
// then: now in a closed loop (no pacer), else the next scheduled start once
// it is reached. ok is false when stop was set while waiting.
func (e *Env) NextStart(stop *atomic.Bool) (start time.Time, ok bool) {
	if e.Pacer == nil {
		return time.Now(), true
	}
	due := e.Pacer.Claim()
	return due, Wait(due, stop)
}
