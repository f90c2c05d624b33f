package batched

import (
	"database/sql"

	"flushbench/tpcc/internal/spec"
)

const (
	deliveryOldestNewOrder = "SELECT no_o_id FROM new_orders WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1 FOR UPDATE"
	deliveryDeleteNewOrder = "DELETE FROM new_orders WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
	deliveryUpdateOrder    = "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
	deliveryUpdateLines    = "UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
	deliveryOrderTotal     = "SELECT o_c_id, (SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id) " +
		"FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
	deliveryUpdateCustomer = "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
)

// delivery executes 2.7.4 for all 10 districts of the warehouse in one
// database transaction (as tpcc-mysql does): deliver the oldest undelivered
// order of each district, skipping districts that have none.
func (w *worker) delivery(home int) error {
	carrier := w.rng.Uniform(1, 10)
	for d := 1; d <= spec.DistrictsPerW; d++ {
		var oID int64
		err := w.queryRow(deliveryOldestNewOrder, []any{&oID}, home, d)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := w.exec(deliveryDeleteNewOrder, home, d, oID); err != nil {
			return err
		}
		if _, err := w.exec(deliveryUpdateOrder, carrier, home, d, oID); err != nil {
			return err
		}
		if _, err := w.exec(deliveryUpdateLines, home, d, oID); err != nil {
			return err
		}
		var cID int64
		var sum []byte
		if err := w.queryRow(deliveryOrderTotal, []any{&cID, &sum}, home, d, oID); err != nil {
			return err
		}
		if sum == nil {
			sum = []byte("0")
		}
		if _, err := w.exec(deliveryUpdateCustomer, sum, home, d, cID); err != nil {
			return err
		}
	}
	return w.commit()
}
