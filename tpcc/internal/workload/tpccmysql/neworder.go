package tpcc

import (
	"bytes"
	"database/sql/driver"
	"sort"
)

// Statements of tpcc-mysql mode: the 35 texts tpcc_start prepares on every
// connection, character for character, so the server sees the same
// statements (and the same performance_schema digests). The per-transaction
// order, round trips and commit points are in testdata/statement-shapes.txt
// (a real tpcc_start run's general log); TestTpccMysqlStatementStream checks
// ours against it.
const (
	mNOCust = iota
	mNODist
	mNODistUpd
	mNOOrder
	mNONewOrder
	mNOItem
	mNOStock
	mNOStockUpd
	mNOLine
	mPayWhUpd
	mPayWh
	mPayDistUpd
	mPayDist
	mPayCount
	mPayByName
	mPayCust
	mPayCData
	mPayCustUpdBC
	mPayCustUpd
	mPayHistory
	mOSCount
	mOSByName
	mOSCust
	mOSOrder
	mOSLines
	mDlvMin
	mDlvDelete
	mDlvOCust
	mDlvOrder
	mDlvLines
	mDlvSum
	mDlvCust
	mSLNext
	mSLItems
	mSLCount
	numMStmts
)

var mStmtTexts = [numMStmts]string{
	mNOCust:       "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?",
	mNODist:       "SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE",
	mNODistUpd:    "UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?",
	mNOOrder:      "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES(?, ?, ?, ?, ?, ?, ?)",
	mNONewOrder:   "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (?,?,?)",
	mNOItem:       "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?",
	mNOStock:      "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE",
	mNOStockUpd:   "UPDATE stock SET s_quantity = ? WHERE s_i_id = ? AND s_w_id = ?",
	mNOLine:       "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
	mPayWhUpd:     "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?",
	mPayWh:        "SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = ?",
	mPayDistUpd:   "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?",
	mPayDist:      "SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = ? AND d_id = ?",
	mPayCount:     "SELECT count(c_id) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?",
	mPayByName:    "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
	mPayCust:      "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE",
	mPayCData:     "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	mPayCustUpdBC: "UPDATE customer SET c_balance = ?, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	mPayCustUpd:   "UPDATE customer SET c_balance = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	mPayHistory:   "INSERT INTO history(h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	mOSCount:      "SELECT count(c_id) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?",
	mOSByName:     "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
	mOSCust:       "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	mOSOrder:      "SELECT o_id, o_entry_d, COALESCE(o_carrier_id,0) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? AND o_id = (SELECT MAX(o_id) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?)",
	mOSLines:      "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
	mDlvMin:       "SELECT COALESCE(MIN(no_o_id),0) FROM new_orders WHERE no_d_id = ? AND no_w_id = ?",
	mDlvDelete:    "DELETE FROM new_orders WHERE no_o_id = ? AND no_d_id = ? AND no_w_id = ?",
	mDlvOCust:     "SELECT o_c_id FROM orders WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?",
	mDlvOrder:     "UPDATE orders SET o_carrier_id = ? WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?",
	mDlvLines:     "UPDATE order_line SET ol_delivery_d = ? WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?",
	mDlvSum:       "SELECT SUM(ol_amount) FROM order_line WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?",
	mDlvCust:      "UPDATE customer SET c_balance = c_balance + ? , c_delivery_cnt = c_delivery_cnt + 1 WHERE c_id = ? AND c_d_id = ? AND c_w_id = ?",
	mSLNext:       "SELECT d_next_o_id FROM district WHERE d_id = ? AND d_w_id = ?",
	mSLItems:      "SELECT DISTINCT ol_i_id FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= (? - 20)",
	mSLCount:      "SELECT count(*) FROM stock WHERE s_w_id = ? AND s_i_id = ? AND s_quantity < ?",
}

// mLine is one New-Order line's input.
type mLine struct{ iid, supW, qty int }

// mInput is one transaction's input, drawn once before the first attempt
// and reused by every retry (tpcc-mysql's driver.c).
type mInput struct {
	w, d, c   int
	n         int
	allLocal  bool
	lines     [maxOrderLines]mLine
	byName    bool
	cW, cD    int
	last      []byte
	amount    int // Payment h_amount, whole dollars
	carrier   int
	threshold int
}

// genInput draws the input of a transaction of type t the way tpcc-mysql's
// driver.c does (uniform home warehouse, no terminal binding).
func (w *mWorker) genInput(t TxType) {
	r, in := w.rng, &w.in
	W := w.rn.W
	in.w = r.Uniform(1, W)
	switch t {
	case TxNewOrder:
		in.d = r.Uniform(1, districtsPerW)
		in.c = r.CustomerID()
		in.n = r.Uniform(5, maxOrderLines)
		rbk := r.Uniform(1, 100)
		in.allLocal = true
		for i := 0; i < in.n; i++ {
			l := &in.lines[i]
			l.iid = r.ItemID()
			if i == in.n-1 && rbk == 1 {
				l.iid = unusedItemID
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
	case TxPayment:
		in.d = r.Uniform(1, districtsPerW)
		in.c = r.CustomerID()
		in.last = LastName(in.last[:0], r.LastNameNum())
		in.amount = r.Uniform(1, 5000)
		in.byName = r.Uniform(1, 100) <= 60
		if r.Uniform(1, 100) <= 85 {
			in.cW, in.cD = in.w, in.d
		} else {
			in.cW, in.cD = w.otherWare(in.w), r.Uniform(1, districtsPerW)
		}
	case TxOrderStatus:
		in.d = r.Uniform(1, districtsPerW)
		in.c = r.CustomerID()
		in.last = LastName(in.last[:0], r.LastNameNum())
		in.byName = r.Uniform(1, 100) <= 60
	case TxDelivery:
		in.carrier = r.Uniform(1, 10)
	case TxStockLevel:
		in.d = r.Uniform(1, districtsPerW)
		in.threshold = r.Uniform(10, 20)
	}
}

// otherWare is tpcc-mysql's other_ware: a uniformly drawn warehouse other
// than home, or home itself when there is only one.
func (w *mWorker) otherWare(home int) int {
	if w.rn.W == 1 {
		return home
	}
	return w.otherWarehouseOf(home)
}

func (w *mWorker) otherWarehouseOf(home int) int {
	x := w.rng.Uniform(1, w.rn.W-1)
	if x >= home {
		x++
	}
	return x
}

// newOrder is tpcc-mysql's neword(): customer and warehouse, district FOR
// UPDATE and its increment, the order rows, then per line (sorted by supply
// warehouse and item id, tpcc-mysql's deadlock avoidance) item, stock FOR
// UPDATE, stock update, order line; COMMIT. An unused item id rolls back
// where it is met, after the rows already written, and counts as done.
func (w *mWorker) newOrder() error {
	s, in := w.sess, &w.in
	dt := w.datetime()
	var cDiscount, wTax, dTax float64
	err := s.i(in.w).i(in.d).i(in.c).queryOne(mNOCust, 4, "New-Order customer", func(row []driver.Value) {
		cDiscount, wTax = asFloat(row[0]), asFloat(row[3])
	})
	if err != nil {
		return err
	}
	var oID int64
	err = s.i(in.d).i(in.w).queryOne(mNODist, 2, "New-Order district", func(row []driver.Value) {
		oID, dTax = asInt(row[0]), asFloat(row[1])
	})
	if err != nil {
		return err
	}
	if err := s.i(int(oID)).i(in.d).i(in.w).exec(mNODistUpd); err != nil {
		return err
	}
	allLocal := 0
	if in.allLocal {
		allLocal = 1
	}
	if err := s.i(int(oID)).i(in.d).i(in.w).i(in.c).b(dt).i(in.n).i(allLocal).exec(mNOOrder); err != nil {
		return err
	}
	if err := s.i(int(oID)).i(in.d).i(in.w).exec(mNONewOrder); err != nil {
		return err
	}
	order := w.order[:in.n]
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		la, lb := &in.lines[order[a]], &in.lines[order[b]]
		if la.supW != lb.supW {
			return la.supW < lb.supW
		}
		return la.iid < lb.iid
	})
	factor := (1 + wTax + dTax) * (1 - cDiscount)
	for num, idx := range order {
		l := &in.lines[idx]
		var price float64
		rows, err := s.i(l.iid).query(mNOItem)
		if err != nil {
			return err
		}
		found, err := s.next(rows, 3)
		if found {
			price = asFloat(s.row[0])
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if !found {
			w.rolledBack = true
			return s.rollback()
		}
		var sQty int64
		err = s.i(l.iid).i(l.supW).queryOne(mNOStock, 12, "New-Order stock", func(row []driver.Value) {
			sQty = asInt(row[0])
			// ol_dist_info is s_dist_<d_id> (column 2 + d_id - 1).
			if b, ok := row[1+in.d].([]byte); ok {
				w.dist = append(w.dist[:0], b...)
			} else {
				w.dist = w.dist[:0]
			}
		})
		if err != nil {
			return err
		}
		// tpcc-mysql's rule (the spec's is s_quantity >= qty + 10).
		if sQty > int64(l.qty) {
			sQty -= int64(l.qty)
		} else {
			sQty = sQty - int64(l.qty) + 91
		}
		if err := s.i(int(sQty)).i(l.iid).i(l.supW).exec(mNOStockUpd); err != nil {
			return err
		}
		amount := float64(l.qty) * price * factor
		if err := s.i(int(oID)).i(in.d).i(in.w).i(num + 1).i(l.iid).i(l.supW).i(l.qty).f(amount).b(w.dist).exec(mNOLine); err != nil {
			return err
		}
	}
	return s.commit()
}

// byNameRows fetches the ceil(n/2)-th row of a by-last-name cursor the way
// tpcc-mysql does (n from the preceding count; n = 0 fetches nothing) and
// hands it to use.
func (w *mWorker) byNameRows(id, cols int, n int64, use func(row []driver.Value)) error {
	s := w.sess
	rows, err := s.query(id)
	if err != nil {
		return err
	}
	want := (n + 1) / 2
	var got int64
	for got < want {
		ok, err := s.next(rows, cols)
		if err != nil || !ok {
			rows.Close()
			if err == nil {
				err = errNoRow{"customer by last name"}
			}
			return err
		}
		got++
		if got == want && use != nil {
			use(s.row[:cols])
		}
	}
	return rows.Close()
}

func (w *mWorker) countByName(id int, cW, cD int, last []byte) (int64, error) {
	var n int64
	err := w.sess.i(cW).i(cD).b(last).queryOne(id, 1, "count by last name", func(row []driver.Value) {
		n = asInt(row[0])
	})
	return n, err
}

// payment is tpcc-mysql's payment(): warehouse and district ytd updates each
// followed by the row's read, the customer (60% by last name: count, then
// the ordered cursor), FOR UPDATE, the balance written as an absolute value
// (c_data read and written back unchanged for bad credit), history; COMMIT.
func (w *mWorker) payment() error {
	s, in := w.sess, &w.in
	dt := w.datetime()
	if err := s.i(in.amount).i(in.w).exec(mPayWhUpd); err != nil {
		return err
	}
	err := s.i(in.w).queryOne(mPayWh, 6, "Payment warehouse", func(row []driver.Value) {
		w.hdata = appendBytes(w.hdata[:0], row[5])
	})
	if err != nil {
		return err
	}
	if err := s.i(in.amount).i(in.w).i(in.d).exec(mPayDistUpd); err != nil {
		return err
	}
	err = s.i(in.w).i(in.d).queryOne(mPayDist, 6, "Payment district", func(row []driver.Value) {
		d := appendBytes(nil, row[5])
		if len(d) > 10 {
			d = d[:10]
		}
		w.hdata = append(w.hdata, d...)
	})
	if err != nil {
		return err
	}
	// h_data: w_name then d_name; padded with 4 spaces only when they fill
	// 20 characters (tpcc-mysql's string handling).
	if len(w.hdata) >= 20 {
		w.hdata = append(w.hdata[:20], "    "...)
	}
	cID := in.c
	if in.byName {
		n, err := w.countByName(mPayCount, in.cW, in.cD, in.last)
		if err != nil {
			return err
		}
		s.i(in.cW).i(in.cD).b(in.last)
		if err := w.byNameRows(mPayByName, 1, n, func(row []driver.Value) { cID = int(asInt(row[0])) }); err != nil {
			return err
		}
	}
	var balance int64
	var badCredit bool
	err = s.i(in.cW).i(in.cD).i(cID).queryOne(mPayCust, 14, "Payment customer", func(row []driver.Value) {
		c, _ := row[9].([]byte)
		badCredit = bytes.Contains(c, []byte("BC"))
		b, _ := row[12].([]byte)
		balance = parseFixed(b, 2)
	})
	if err != nil {
		return err
	}
	balance -= int64(in.amount) * 100
	w.bal = appendFixed(w.bal[:0], balance, 2)
	if badCredit {
		err = s.i(in.cW).i(in.cD).i(cID).queryOne(mPayCData, 1, "Payment c_data", func(row []driver.Value) {
			w.cdata = appendBytes(w.cdata[:0], row[0])
		})
		if err != nil {
			return err
		}
		// tpcc-mysql builds the new c_data but binds the old one: c_data
		// never changes. Same here, so the server does the same work.
		if err := s.b(w.bal).b(w.cdata).i(in.cW).i(in.cD).i(cID).exec(mPayCustUpdBC); err != nil {
			return err
		}
	} else if err := s.b(w.bal).i(in.cW).i(in.cD).i(cID).exec(mPayCustUpd); err != nil {
		return err
	}
	if err := s.i(in.cD).i(in.cW).i(cID).i(in.d).i(in.w).b(dt).i(in.amount).b(w.hdata).exec(mPayHistory); err != nil {
		return err
	}
	return s.commit()
}

// orderStatus is tpcc-mysql's ordstat(). By last name it reads the middle
// customer's balance and name but keeps the randomly drawn c_id for the
// order lookup, as tpcc-mysql does.
func (w *mWorker) orderStatus() error {
	s, in := w.sess, &w.in
	if in.byName {
		n, err := w.countByName(mOSCount, in.w, in.d, in.last)
		if err != nil {
			return err
		}
		s.i(in.w).i(in.d).b(in.last)
		if err := w.byNameRows(mOSByName, 4, n, nil); err != nil {
			return err
		}
	} else if err := s.i(in.w).i(in.d).i(in.c).queryOne(mOSCust, 4, "Order-Status customer", nil); err != nil {
		return err
	}
	var oID int64
	err := s.i(in.w).i(in.d).i(in.c).i(in.w).i(in.d).i(in.c).queryOne(mOSOrder, 3, "Order-Status order", func(row []driver.Value) {
		oID = asInt(row[0])
	})
	if err != nil {
		return err
	}
	rows, err := s.i(in.w).i(in.d).i(int(oID)).query(mOSLines)
	if err != nil {
		return err
	}
	for {
		ok, err := s.next(rows, 5)
		if err != nil {
			rows.Close()
			return err
		}
		if !ok {
			break
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return s.commit()
}

// delivery is tpcc-mysql's delivery(): per district the oldest new order
// (MIN without a lock), its delete, the order's customer, carrier and
// delivery date updates, the order total and the customer's balance, then
// COMMIT — ten transactions per business transaction. A retry after an
// error starts again at district 1.
func (w *mWorker) delivery() error {
	s, in := w.sess, &w.in
	dt := w.datetime()
	for d := 1; d <= districtsPerW; d++ {
		var noID, cID int64
		if err := s.i(d).i(in.w).queryOne(mDlvMin, 1, "Delivery MIN(no_o_id)", func(row []driver.Value) {
			noID = asInt(row[0])
		}); err != nil {
			return err
		}
		if noID == 0 {
			continue
		}
		o := int(noID)
		if err := s.i(o).i(d).i(in.w).exec(mDlvDelete); err != nil {
			return err
		}
		if err := s.i(o).i(d).i(in.w).queryOne(mDlvOCust, 1, "Delivery o_c_id", func(row []driver.Value) {
			cID = asInt(row[0])
		}); err != nil {
			return err
		}
		if err := s.i(in.carrier).i(o).i(d).i(in.w).exec(mDlvOrder); err != nil {
			return err
		}
		if err := s.b(dt).i(o).i(d).i(in.w).exec(mDlvLines); err != nil {
			return err
		}
		if err := s.i(o).i(d).i(in.w).queryOne(mDlvSum, 1, "Delivery SUM(ol_amount)", func(row []driver.Value) {
			w.sum = appendBytes(w.sum[:0], row[0])
		}); err != nil {
			return err
		}
		if len(w.sum) == 0 {
			w.sum = append(w.sum, '0')
		}
		if err := s.b(w.sum).i(int(cID)).i(d).i(in.w).exec(mDlvCust); err != nil {
			return err
		}
		if err := s.commit(); err != nil {
			return err
		}
	}
	return nil
}

// stockLevel is tpcc-mysql's slev(): the district's next order id, the
// distinct items of its last 20 orders, then one count(*) per item; COMMIT.
func (w *mWorker) stockLevel() error {
	s, in := w.sess, &w.in
	var next int64
	if err := s.i(in.d).i(in.w).queryOne(mSLNext, 1, "Stock-Level district", func(row []driver.Value) {
		next = asInt(row[0])
	}); err != nil {
		return err
	}
	rows, err := s.i(in.w).i(in.d).i(int(next)).i(int(next)).query(mSLItems)
	if err != nil {
		return err
	}
	w.ids = w.ids[:0]
	for {
		ok, err := s.next(rows, 1)
		if err != nil {
			rows.Close()
			return err
		}
		if !ok {
			break
		}
		w.ids = append(w.ids, asInt(s.row[0]))
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, id := range w.ids {
		if err := s.i(in.w).i(int(id)).i(in.threshold).queryOne(mSLCount, 1, "Stock-Level count", nil); err != nil {
			return err
		}
	}
	return s.commit()
}

// appendBytes appends a text column value (nil for NULL).
func appendBytes(dst []byte, v driver.Value) []byte {
	switch x := v.(type) {
	case []byte:
		return append(dst, x...)
	case string:
		return append(dst, x...)
	}
	return dst
}
