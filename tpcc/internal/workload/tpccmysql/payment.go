package tpccmysql

import (
	"bytes"
	"database/sql/driver"

	"flushbench/tpcc/internal/mysqlwire"
)

// payment is tpcc-mysql's payment(): warehouse and district ytd updates each
// followed by the row's read, the customer (60% by last name: count, then
// the ordered cursor), FOR UPDATE, the balance written as an absolute value
// (c_data read and written back unchanged for bad credit), history; COMMIT.
func (w *worker) payment() error {
	s, in := w.sess, &w.in
	dt := w.datetime()
	if err := s.Int(in.amount).Int(in.w).Exec(paymentWarehouseUpdate); err != nil {
		return err
	}
	err := s.Int(in.w).QueryOne(paymentWarehouse, 6, "Payment warehouse", func(row []driver.Value) {
		w.hdata = appendBytes(w.hdata[:0], row[5])
	})
	if err != nil {
		return err
	}
	if err := s.Int(in.amount).Int(in.w).Int(in.d).Exec(paymentDistrictUpdate); err != nil {
		return err
	}
	err = s.Int(in.w).Int(in.d).QueryOne(paymentDistrict, 6, "Payment district", func(row []driver.Value) {
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
		n, err := w.countByName(paymentCountByName, in.cW, in.cD, in.last)
		if err != nil {
			return err
		}
		s.Int(in.cW).Int(in.cD).Bytes(in.last)
		if err := w.byNameRows(paymentCustomerByName, 1, n, func(row []driver.Value) { cID = int(mysqlwire.AsInt(row[0])) }); err != nil {
			return err
		}
	}
	var balance int64
	var badCredit bool
	err = s.Int(in.cW).Int(in.cD).Int(cID).QueryOne(paymentCustomer, 14, "Payment customer", func(row []driver.Value) {
		c, _ := row[9].([]byte)
		badCredit = bytes.Contains(c, []byte("BC"))
		b, _ := row[12].([]byte)
		balance = mysqlwire.ParseFixed(b, 2)
	})
	if err != nil {
		return err
	}
	balance -= int64(in.amount) * 100
	w.bal = mysqlwire.AppendFixed(w.bal[:0], balance, 2)
	if badCredit {
		err = s.Int(in.cW).Int(in.cD).Int(cID).QueryOne(paymentCustomerData, 1, "Payment c_data", func(row []driver.Value) {
			w.cdata = appendBytes(w.cdata[:0], row[0])
		})
		if err != nil {
			return err
		}
		// tpcc-mysql builds the new c_data but binds the old one: c_data
		// never changes. Same here, so the server does the same work.
		if err := s.Bytes(w.bal).Bytes(w.cdata).Int(in.cW).Int(in.cD).Int(cID).Exec(paymentCustomerUpdateBadCredit); err != nil {
			return err
		}
	} else if err := s.Bytes(w.bal).Int(in.cW).Int(in.cD).Int(cID).Exec(paymentCustomerUpdate); err != nil {
		return err
	}
	if err := s.Int(in.cD).Int(in.cW).Int(cID).Int(in.d).Int(in.w).Bytes(dt).Int(in.amount).Bytes(w.hdata).Exec(paymentInsertHistory); err != nil {
		return err
	}
	return s.Commit()
}
