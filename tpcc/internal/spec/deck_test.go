package spec

import "testing"

func TestDeckComposition(t *testing.T) {
	d := NewDeck(NewRand(4))
	for round := 0; round < 50; round++ {
		var n [NumTxTypes]int
		for i := 0; i < deckSize; i++ {
			n[d.Next()]++
		}
		want := [NumTxTypes]int{10, 10, 1, 1, 1}
		if n != want {
			t.Fatalf("round %d: composition %v, want %v", round, n, want)
		}
	}
}

func TestDeckShuffles(t *testing.T) {
	d := NewDeck(NewRand(5))
	first := make([]TxType, deckSize)
	for i := range first {
		first[i] = d.Next()
	}
	for round := 0; round < 20; round++ {
		for i := 0; i < deckSize; i++ {
			if d.Next() != first[i] {
				return
			}
		}
	}
	t.Fatal("deck order never changed over 20 rounds")
}
