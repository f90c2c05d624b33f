package batched

import (
	"database/sql"

	"flushbench/tpcc/internal/spec"
)

const (
	orderStatusCustomer  = "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
	orderStatusLastOrder = "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1"
	orderStatusLines     = "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
)

// orderStatus executes 2.6.2 (read-only): the customer (60% by last name),
// their most recent order and its lines.
func (w *worker) orderStatus(home int) error {
	r := w.rng
	d := r.Uniform(1, spec.DistrictsPerW)
	var cID int
	if r.Uniform(1, 100) <= 60 {
		w.buf = spec.LastName(w.buf[:0], r.LastNameNum())
		id, err := w.customerByName(home, d, w.buf)
		if err != nil {
			return err
		}
		cID = id
	} else {
		cID = r.CustomerID()
	}
	var x []byte
	if err := w.queryRow(orderStatusCustomer, []any{&x, &x, &x, &x}, home, d, cID); err != nil {
		return err
	}
	var oID int64
	var carrier sql.NullInt64
	if err := w.queryRow(orderStatusLastOrder, []any{&oID, &x, &carrier}, home, d, cID); err != nil {
		return err
	}
	rows, err := w.query(orderStatusLines, home, d, oID)
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
