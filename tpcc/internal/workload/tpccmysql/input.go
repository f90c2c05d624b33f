package tpccmysql

import "flushbench/tpcc/internal/spec"

// orderLine is one New-Order line's input.
type orderLine struct{ iid, supW, qty int }

// input is one transaction's input, drawn once before the first attempt
// and reused by every retry (tpcc-mysql's driver.c).
type input struct {
	w, d, c   int
	n         int
	allLocal  bool
	lines     [spec.MaxOrderLines]orderLine
	byName    bool
	cW, cD    int
	last      []byte
	amount    int // Payment h_amount, whole dollars
	carrier   int
	threshold int
}

// genInput draws the input of a transaction of type t the way tpcc-mysql's
// driver.c does (uniform home warehouse, no terminal binding).
func (w *worker) genInput(t spec.TxType) {
	r, in := w.rng, &w.in
	W := w.env.W
	in.w = r.Uniform(1, W)
	switch t {
	case spec.TxNewOrder:
		in.d = r.Uniform(1, spec.DistrictsPerW)
		in.c = r.CustomerID()
		in.n = r.Uniform(5, spec.MaxOrderLines)
		rbk := r.Uniform(1, 100)
		in.allLocal = true
		for i := 0; i < in.n; i++ {
			l := &in.lines[i]
			l.iid = r.ItemID()
			if i == in.n-1 && rbk == 1 {
				l.iid = spec.UnusedItemID
			}
			// 1% remote; with one warehouse "remote" is the home warehouse
			// but still clears o_all_local (tpcc-mysql's other_ware).
			if r.Uniform(1, 100) != 1 {
				l.supW = in.w
			} else {
				l.supW = w.otherWare(in.w)
				in.allLocal = false
			}
			l.qty = r.Uniform(1, 10)
		}
	case spec.TxPayment:
		in.d = r.Uniform(1, spec.DistrictsPerW)
		in.c = r.CustomerID()
		in.last = spec.LastName(in.last[:0], r.LastNameNum())
		in.amount = r.Uniform(1, 5000)
		in.byName = r.Uniform(1, 100) <= 60
		if r.Uniform(1, 100) <= 85 {
			in.cW, in.cD = in.w, in.d
		} else {
			in.cW, in.cD = w.otherWare(in.w), r.Uniform(1, spec.DistrictsPerW)
		}
	case spec.TxOrderStatus:
		in.d = r.Uniform(1, spec.DistrictsPerW)
		in.c = r.CustomerID()
		in.last = spec.LastName(in.last[:0], r.LastNameNum())
		in.byName = r.Uniform(1, 100) <= 60
	case spec.TxDelivery:
		in.carrier = r.Uniform(1, 10)
	case spec.TxStockLevel:
		in.d = r.Uniform(1, spec.DistrictsPerW)
		in.threshold = r.Uniform(10, 20)
	}
}

// otherWare is tpcc-mysql's other_ware: a uniformly drawn warehouse other
// than home, or home itself when there is only one.
func (w *worker) otherWare(home int) int {
	if w.env.W == 1 {
		return home
	}
	return w.rng.OtherWarehouse(home, w.env.W)
}
