package spec

import (
	"strings"
	"testing"
)

func TestUniformRange(t *testing.T) {
	r := NewRand(1)
	seen := map[int]bool{}
	for i := 0; i < 10000; i++ {
		v := r.Uniform(3, 7)
		if v < 3 || v > 7 {
			t.Fatalf("Uniform(3,7) = %d", v)
		}
		seen[v] = true
	}
	if len(seen) != 5 {
		t.Fatalf("Uniform(3,7) produced %d distinct values, want 5", len(seen))
	}
}

func TestNURandRanges(t *testing.T) {
	r := NewRand(2)
	r.C = RunConstants(r)
	cases := []struct {
		a, x, y, c int
	}{{255, 0, 999, r.C.CLast}, {1023, 1, 3000, r.C.CID}, {8191, 1, 100000, r.C.OLIID}}
	for _, tc := range cases {
		counts := map[int]int{}
		for i := 0; i < 200000; i++ {
			v := r.NURand(tc.a, tc.x, tc.y, tc.c)
			if v < tc.x || v > tc.y {
				t.Fatalf("NURand(%d,%d,%d) = %d out of range", tc.a, tc.x, tc.y, v)
			}
			counts[v]++
		}
		// Non-uniform: the most frequent value must be well above the
		// uniform expectation.
		maxc := 0
		for _, c := range counts {
			maxc = max(maxc, c)
		}
		uniform := 200000 / (tc.y - tc.x + 1)
		if maxc < 2*uniform {
			t.Errorf("NURand(%d): max frequency %d not skewed vs uniform %d", tc.a, maxc, uniform)
		}
	}
	for i := 0; i < 1000; i++ {
		if v := r.CustomerID(); v < 1 || v > 3000 {
			t.Fatalf("CustomerID %d", v)
		}
		if v := r.ItemID(); v < 1 || v > 100000 {
			t.Fatalf("ItemID %d", v)
		}
		if v := r.LastNameNum(); v < 0 || v > 999 {
			t.Fatalf("LastNameNum %d", v)
		}
	}
}

func TestRunConstantsDelta(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		c := RunConstants(NewRand(seed))
		d := c.CLast - CLastLoad
		if d < 0 {
			d = -d
		}
		if d < 65 || d > 119 || d == 96 || d == 112 {
			t.Fatalf("seed %d: C_LAST run %d violates delta rule (delta %d)", seed, c.CLast, d)
		}
		if c.CID < 0 || c.CID > 1023 || c.OLIID < 0 || c.OLIID > 8191 {
			t.Fatalf("constants out of range: %+v", c)
		}
	}
}

func TestLastName(t *testing.T) {
	cases := map[int]string{0: "BARBARBAR", 371: "PRICALLYOUGHT", 999: "EINGEINGEING", 40: "BARPRESBAR", 123: "OUGHTABLEPRI"}
	for n, want := range cases {
		if got := string(LastName(nil, n)); got != want {
			t.Errorf("LastName(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStrings(t *testing.T) {
	r := NewRand(3)
	orig := 0
	for i := 0; i < 2000; i++ {
		s := string(r.AString(nil, 26, 50))
		if len(s) < 26 || len(s) > 50 {
			t.Fatalf("AString length %d", len(s))
		}
		for _, c := range s {
			if !strings.ContainsRune(alnum, c) {
				t.Fatalf("AString char %q", c)
			}
		}
		d := string(r.DataString(nil, 26, 50))
		if len(d) < 26 || len(d) > 50 {
			t.Fatalf("DataString length %d", len(d))
		}
		if strings.Contains(d, "ORIGINAL") {
			orig++
		}
		z := string(r.Zip(nil))
		if len(z) != 9 || !strings.HasSuffix(z, "11111") {
			t.Fatalf("zip %q", z)
		}
		n := string(r.NString(nil, 16, 16))
		if len(n) != 16 || strings.Trim(n, "0123456789") != "" {
			t.Fatalf("nstring %q", n)
		}
	}
	// ~10% contain ORIGINAL; 2000 draws => expect ~200.
	if orig < 120 || orig > 300 {
		t.Errorf("ORIGINAL in %d of 2000 data strings, want ~200", orig)
	}
}
