package tpcc

// TxType identifies one of the five TPC-C transactions. The numeric values
// are the indexes tpcc-mysql prints in <Raw Results> ([0]..[4]).
type TxType int

const (
	TxNewOrder TxType = iota
	TxPayment
	TxOrderStatus
	TxDelivery
	TxStockLevel
	numTxTypes
)

// txNames are the JSON keys for each type.
var txNames = [numTxTypes]string{"new_order", "payment", "order_status", "delivery", "stock_level"}

// txLabels are the names tpcc-mysql uses in its constraint check.
var txLabels = [numTxTypes]string{"New-Order", "Payment", "Order-Status", "Delivery", "Stock-Level"}

func (t TxType) String() string { return txNames[t] }

// deckSize is the number of cards per round: 10 New-Order, 10 Payment and
// one each of Order-Status, Delivery and Stock-Level, as in tpcc-mysql. This
// keeps the mix at exactly the TPC-C minimum percentages over every round.
const deckSize = 23

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
