package spec

import "sync"

// deckSize is the number of cards per round: 10 New-Order, 10 Payment and
// one each of Order-Status, Delivery and Stock-Level, as in tpcc-mysql. This
// keeps the mix at exactly the TPC-C minimum percentages over every round.
const deckSize = 23

// DeckNewOrderShare is the share of New-Orders in every round of the deck
// (10 of 23): a fixed-rate run schedules NOTPM / 60 / DeckNewOrderShare
// transactions a second so that New-Orders arrive at NOTPM a minute.
const DeckNewOrderShare = 10.0 / deckSize

// Deck deals transaction types from shuffled rounds of deckSize cards.
type Deck struct {
	cards [deckSize]TxType
	pos   int
	rng   *Rand
}

// NewDeck returns a deck that shuffles with rng before each round.
func NewDeck(rng *Rand) *Deck {
	d := &Deck{rng: rng}
	i := 0
	for _, c := range [...]struct {
		t TxType
		n int
	}{{TxNewOrder, 10}, {TxPayment, 10}, {TxOrderStatus, 1}, {TxDelivery, 1}, {TxStockLevel, 1}} {
		for k := 0; k < c.n; k++ {
			d.cards[i] = c.t
			i++
		}
	}
	d.pos = deckSize // force a shuffle on the first draw
	return d
}

// Next returns the next transaction type.
func (d *Deck) Next() TxType {
	if d.pos == deckSize {
		d.rng.Shuffle(deckSize, func(i, j int) { d.cards[i], d.cards[j] = d.cards[j], d.cards[i] })
		d.pos = 0
	}
	t := d.cards[d.pos]
	d.pos++
	return t
}

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
