package tpcc

import "database/sql"

const (
	qOSCust      = "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
	qOSOrder     = "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1"
	qOSLines     = "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
	qDlvNewOrder = "SELECT no_o_id FROM new_orders WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1 FOR UPDATE"
	qDlvDelete   = "DELETE FROM new_orders WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
	qDlvOrder    = "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
	qDlvLines    = "UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
	qDlvSum      = "SELECT o_c_id, (SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id) " +
		"FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
	qDlvCust = "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
	qSLNext  = "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?"
	qSLCount = "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? " +
		"AND s_w_id = ol_w_id AND s_i_id = ol_i_id AND s_quantity < ?"
)

// orderStatus executes 2.6.2 (read-only): the customer (60% by last name),
// their most recent order and its lines.
func (w *worker) orderStatus(home int) error {
	r := w.rng
	d := r.Uniform(1, districtsPerW)
	var cID int
	if r.Uniform(1, 100) <= 60 {
		w.buf = LastName(w.buf[:0], r.LastNameNum())
		id, err := w.customerByName(home, d, w.buf)
		if err != nil {
			return err
		}
		cID = id
	} else {
		cID = r.CustomerID()
	}
	var x []byte
	if err := w.queryRow(qOSCust, []any{&x, &x, &x, &x}, home, d, cID); err != nil {
		return err
	}
	var oID int64
	var carrier sql.NullInt64
	if err := w.queryRow(qOSOrder, []any{&oID, &x, &carrier}, home, d, cID); err != nil {
		return err
	}
	rows, err := w.query(qOSLines, home, d, oID)
	if err != nil {
		return err
	}
	var a, b, c, e, f sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&a, &b, &c, &e, &f); err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return w.commit()
}

// delivery executes 2.7.4 for all 10 districts of the warehouse in one
// database transaction (as tpcc-mysql does): deliver the oldest undelivered
// order of each district, skipping districts that have none.
func (w *worker) delivery(home int) error {
	carrier := w.rng.Uniform(1, 10)
	for d := 1; d <= districtsPerW; d++ {
		var oID int64
		err := w.queryRow(qDlvNewOrder, []any{&oID}, home, d)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := w.exec(qDlvDelete, home, d, oID); err != nil {
			return err
		}
		if _, err := w.exec(qDlvOrder, carrier, home, d, oID); err != nil {
			return err
		}
		if _, err := w.exec(qDlvLines, home, d, oID); err != nil {
			return err
		}
		var cID int64
		var sum []byte
		if err := w.queryRow(qDlvSum, []any{&cID, &sum}, home, d, oID); err != nil {
			return err
		}
		if sum == nil {
			sum = []byte("0")
		}
		if _, err := w.exec(qDlvCust, sum, home, d, cID); err != nil {
			return err
		}
	}
	return w.commit()
}

// stockLevel executes 2.8.2: distinct items of the district's last 20
// orders whose stock is below a threshold in [10, 20].
func (w *worker) stockLevel(home int) error {
	r := w.rng
	d := r.Uniform(1, districtsPerW)
	threshold := r.Uniform(10, 20)
	var next int64
	if err := w.queryRow(qSLNext, []any{&next}, home, d); err != nil {
		return err
	}
	var cnt int64
	if err := w.queryRow(qSLCount, []any{&cnt}, home, d, next, next-20, threshold); err != nil {
		return err
	}
	return w.commit()
}
