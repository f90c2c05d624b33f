// Package spec holds what TPC-C itself defines and both workloads share:
// the transaction types and their deck, the random functions and NURand
// constants (2.1.6), the cardinalities and the customer last names.
package spec

import (
	"math/rand/v2"
)

// CLastLoad is the NURand C constant used for C_LAST when loading
// (TPC-C 2.1.6). It is fixed rather than random because the run-time C must
// satisfy a delta rule relative to it (2.1.6.1) and the schema has no place to
// record a per-load value that tpcc-mysql would understand.
const CLastLoad = 157

// Constants are the NURand C values for one process (TPC-C 2.1.6).
type Constants struct {
	CLast int // C for NURand(255, 0, 999): customer last names
	CID   int // C for NURand(1023, 1, 3000): customer ids
	OLIID int // C for NURand(8191, 1, 100000): item ids
}

// LoadConstants returns the C values used by the loader.
func LoadConstants(r *Rand) Constants {
	return Constants{CLast: CLastLoad, CID: r.Uniform(0, 1023), OLIID: r.Uniform(0, 8191)}
}

// validRunDelta reports whether a run-time C_LAST is acceptable relative to the
// load-time one: |C_RUN - C_LOAD| in [65, 119] and not 96 or 112 (2.1.6.1).
func validRunDelta(cRun, cLoad int) bool {
	d := cRun - cLoad
	if d < 0 {
		d = -d
	}
	return d >= 65 && d <= 119 && d != 96 && d != 112
}

// RunConstants picks run-time C values; C_LAST obeys the delta rule against
// CLastLoad so by-name lookups do not hit exactly the loaded distribution.
func RunConstants(r *Rand) Constants {
	c := Constants{CID: r.Uniform(0, 1023), OLIID: r.Uniform(0, 8191)}
	for {
		c.CLast = r.Uniform(0, 255)
		if validRunDelta(c.CLast, CLastLoad) {
			return c
		}
	}
}

// Rand is a cheap, non-locking random source; each goroutine owns one.
type Rand struct {
	r *rand.Rand
	C Constants
}

// NewRand returns a PCG-backed generator seeded with seed.
func NewRand(seed uint64) *Rand {
	return &Rand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Uniform returns an integer uniformly distributed in [lo, hi].
func (r *Rand) Uniform(lo, hi int) int {
	return lo + int(r.r.Uint64N(uint64(hi-lo+1)))
}

// NURand is TPC-C's non-uniform random function (2.1.6):
// (((random(0,A) | random(x,y)) + C) % (y-x+1)) + x.
func (r *Rand) NURand(a, x, y, c int) int {
	return (((r.Uniform(0, a) | r.Uniform(x, y)) + c) % (y - x + 1)) + x
}

// CustomerID draws a customer id with the run-time C.
func (r *Rand) CustomerID() int { return r.NURand(1023, 1, 3000, r.C.CID) }

// ItemID draws an item id with the run-time C.
func (r *Rand) ItemID() int { return r.NURand(8191, 1, 100000, r.C.OLIID) }

// LastNameNum draws the number behind a customer last name.
func (r *Rand) LastNameNum() int { return r.NURand(255, 0, 999, r.C.CLast) }

// Shuffle permutes n elements with swap.
func (r *Rand) Shuffle(n int, swap func(i, j int)) { r.r.Shuffle(n, swap) }

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// AString appends a random alphanumeric string with length in [lo, hi]
// (TPC-C a-string). Only [A-Za-z0-9] is produced, so values never need SQL
// escaping.
func (r *Rand) AString(b []byte, lo, hi int) []byte {
	n := r.Uniform(lo, hi)
	// One 64-bit draw yields 10 characters (6 bits each, rejection-free
	// modulo bias is acceptable for benchmark data).
	for n > 0 {
		v := r.r.Uint64()
		for k := 0; k < 10 && n > 0; k++ {
			b = append(b, alnum[(v&63)%62])
			v >>= 6
			n--
		}
	}
	return b
}

// NString appends a random numeric string with length in [lo, hi].
func (r *Rand) NString(b []byte, lo, hi int) []byte {
	n := r.Uniform(lo, hi)
	for i := 0; i < n; i++ {
		b = append(b, byte('0'+r.r.Uint64N(10)))
	}
	return b
}

// DataString appends an a-string of length [lo, hi] that with 10% probability
// contains "ORIGINAL" at a random position (I_DATA and S_DATA, 4.3.3.1).
func (r *Rand) DataString(b []byte, lo, hi int) []byte {
	start := len(b)
	b = r.AString(b, lo, hi)
	if r.Uniform(1, 10) == 1 {
		n := len(b) - start
		pos := start + r.Uniform(0, n-8)
		copy(b[pos:], "ORIGINAL")
	}
	return b
}

// Zip appends a zip code: 4 random digits followed by "11111" (4.3.2.7).
func (r *Rand) Zip(b []byte) []byte {
	b = r.NString(b, 4, 4)
	return append(b, "11111"...)
}

// State appends two random letters.
func (r *Rand) State(b []byte) []byte {
	return append(b, byte('A'+r.r.Uint64N(26)), byte('A'+r.r.Uint64N(26)))
}

var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// LastName appends the customer last name for num in [0, 999]: the syllables
// of its three decimal digits concatenated (4.3.2.3).
func LastName(b []byte, num int) []byte {
	b = append(b, syllables[num/100]...)
	b = append(b, syllables[(num/10)%10]...)
	return append(b, syllables[num%10]...)
}

// OtherWarehouse returns a warehouse id in [1, w] other than home,
// uniformly (w must be at least 2).
func (r *Rand) OtherWarehouse(home, w int) int {
	x := r.Uniform(1, w-1)
	if x >= home {
		x++
	}
	return x
}
