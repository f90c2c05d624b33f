package tpccmysql

import (
	"database/sql/driver"
	"sort"

	"flushbench/tpcc/internal/mysqlwire"
)

// newOrder is tpcc-mysql's neword(): customer and warehouse, district FOR
// UPDATE and its increment, the order rows, then per line (sorted by supply
// warehouse and item id, tpcc-mysql's deadlock avoidance) item, stock FOR
// UPDATE, stock update, order line; COMMIT. An unused item id rolls back
// where it is met, after the rows already written, and counts as done.
func (w *worker) newOrder() error {
	s, in := w.sess, &w.in
	oID, factor, err := w.newOrderHeader()
	if err != nil {
		return err
	}
	for num, idx := range w.sortedLines() {
		found, err := w.newOrderLine(oID, num+1, &in.lines[idx], factor)
		if err != nil {
			return err
		}
		if !found {
			w.rolledBack = true
			return s.Rollback()
		}
	}
	return s.Commit()
}

// newOrderHeader reads the customer, warehouse and district, takes the
// district's next order id and inserts the order and new-order rows. It
// returns the order id and the lines' price factor
// (1 + w_tax + d_tax) * (1 - c_discount).
func (w *worker) newOrderHeader() (oID int64, factor float64, err error) {
	s, in := w.sess, &w.in
	dt := w.datetime()
	var cDiscount, wTax, dTax float64
	err = s.Int(in.w).Int(in.d).Int(in.c).QueryOne(newOrderCustomer, 4, "New-Order customer", func(row []driver.Value) {
		cDiscount, wTax = mysqlwire.AsFloat(row[0]), mysqlwire.AsFloat(row[3])
	})
	if err != nil {
		return 0, 0, err
	}
	err = s.Int(in.d).Int(in.w).QueryOne(newOrderDistrict, 2, "New-Order district", func(row []driver.Value) {
		oID, dTax = mysqlwire.AsInt(row[0]), mysqlwire.AsFloat(row[1])
	})
	if err != nil {
		return 0, 0, err
	}
	if err := s.Int(int(oID)).Int(in.d).Int(in.w).Exec(newOrderDistrictUpdate); err != nil {
		return 0, 0, err
	}
	allLocal := 0
	if in.allLocal {
		allLocal = 1
	}
	if err := s.Int(int(oID)).Int(in.d).Int(in.w).Int(in.c).Bytes(dt).Int(in.n).Int(allLocal).Exec(newOrderInsertOrder); err != nil {
		return 0, 0, err
	}
	if err := s.Int(int(oID)).Int(in.d).Int(in.w).Exec(newOrderInsertNewOrder); err != nil {
		return 0, 0, err
	}
	return oID, (1 + wTax + dTax) * (1 - cDiscount), nil
}

// sortedLines returns the line indexes sorted by supply warehouse and item
// id (tpcc-mysql's deadlock avoidance; stable, so equal items keep their
// drawn order).
func (w *worker) sortedLines() []int {
	in := &w.in
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
	return order
}

// newOrderLine is one line, number num of order oID: the item, the stock
// row FOR UPDATE, its update and the order line. found is false for the
// unused item id (nothing further is sent; the caller rolls back).
func (w *worker) newOrderLine(oID int64, num int, l *orderLine, factor float64) (found bool, err error) {
	s, in := w.sess, &w.in
	var price float64
	rows, err := s.Int(l.iid).Query(newOrderItem)
	if err != nil {
		return false, err
	}
	found, err = s.Next(rows, 3)
	if found {
		price = mysqlwire.AsFloat(s.Values(1)[0])
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil || !found {
		return found, err
	}
	var sQty int64
	err = s.Int(l.iid).Int(l.supW).QueryOne(newOrderStock, 12, "New-Order stock", func(row []driver.Value) {
		sQty = mysqlwire.AsInt(row[0])
		// ol_dist_info is s_dist_<d_id> (column 2 + d_id - 1).
		if b, ok := row[1+in.d].([]byte); ok {
			w.dist = append(w.dist[:0], b...)
		} else {
			w.dist = w.dist[:0]
		}
	})
	if err != nil {
		return true, err
	}
	// tpcc-mysql's rule (the spec's is s_quantity >= qty + 10).
	if sQty > int64(l.qty) {
		sQty -= int64(l.qty)
	} else {
		sQty = sQty - int64(l.qty) + 91
	}
	if err := s.Int(int(sQty)).Int(l.iid).Int(l.supW).Exec(newOrderStockUpdate); err != nil {
		return true, err
	}
	amount := float64(l.qty) * price * factor
	return true, s.Int(int(oID)).Int(in.d).Int(in.w).Int(num).Int(l.iid).Int(l.supW).Int(l.qty).Float(amount).Bytes(w.dist).Exec(newOrderInsertLine)
}
