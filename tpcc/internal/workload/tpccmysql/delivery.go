package tpccmysql

import (
	"database/sql/driver"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

// delivery is tpcc-mysql's delivery(): per district the oldest new order
// (MIN without a lock), its delete, the order's customer, carrier and
// delivery date updates, the order total and the customer's balance, then
// COMMIT — ten transactions per business transaction. A retry after an
// error starts again at district 1.
func (w *worker) delivery() error {
	s, in := w.sess, &w.in
	dt := w.datetime()
	for d := 1; d <= spec.DistrictsPerW; d++ {
		var noID, cID int64
		if err := s.Int(d).Int(in.w).QueryOne(deliveryOldestNewOrder, 1, "Delivery MIN(no_o_id)", func(row []driver.Value) {
			noID = mysqlwire.AsInt(row[0])
		}); err != nil {
			return err
		}
		if noID == 0 {
			continue
		}
		o := int(noID)
		if err := s.Int(o).Int(d).Int(in.w).Exec(deliveryDeleteNewOrder); err != nil {
			return err
		}
		if err := s.Int(o).Int(d).Int(in.w).QueryOne(deliveryOrderCustomer, 1, "Delivery o_c_id", func(row []driver.Value) {
			cID = mysqlwire.AsInt(row[0])
		}); err != nil {
			return err
		}
		if err := s.Int(in.carrier).Int(o).Int(d).Int(in.w).Exec(deliveryUpdateOrder); err != nil {
			return err
		}
		if err := s.Bytes(dt).Int(o).Int(d).Int(in.w).Exec(deliveryUpdateLines); err != nil {
			return err
		}
		if err := s.Int(o).Int(d).Int(in.w).QueryOne(deliveryLinesTotal, 1, "Delivery SUM(ol_amount)", func(row []driver.Value) {
			w.sum = appendBytes(w.sum[:0], row[0])
		}); err != nil {
			return err
		}
		if len(w.sum) == 0 {
			w.sum = append(w.sum, '0')
		}
		if err := s.Bytes(w.sum).Int(int(cID)).Int(d).Int(in.w).Exec(deliveryUpdateCustomer); err != nil {
			return err
		}
		if err := s.Commit(); err != nil {
			return err
		}
	}
	return nil
}
