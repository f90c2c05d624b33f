package tpccmysql

import (
	"database/sql/driver"

	"flushbench/tpcc/internal/mysqlwire"
)

// orderStatus is tpcc-mysql's ordstat(). By last name it reads the middle
// customer's balance and name but keeps the randomly drawn c_id for the
// order lookup, as tpcc-mysql does.
func (w *worker) orderStatus() error {
	s, in := w.sess, &w.in
	if in.byName {
		n, err := w.countByName(orderStatusCountByName, in.w, in.d, in.last)
		if err != nil {
			return err
		}
		s.Int(in.w).Int(in.d).Bytes(in.last)
		if err := w.byNameRows(orderStatusCustomerByName, 4, n, nil); err != nil {
			return err
		}
	} else if err := s.Int(in.w).Int(in.d).Int(in.c).QueryOne(orderStatusCustomer, 4, "Order-Status customer", nil); err != nil {
		return err
	}
	var oID int64
	err := s.Int(in.w).Int(in.d).Int(in.c).Int(in.w).Int(in.d).Int(in.c).QueryOne(orderStatusLastOrder, 3, "Order-Status order", func(row []driver.Value) {
		oID = mysqlwire.AsInt(row[0])
	})
	if err != nil {
		return err
	}
	rows, err := s.Int(in.w).Int(in.d).Int(int(oID)).Query(orderStatusLines)
	if err != nil {
		return err
	}
	for {
		ok, err := s.Next(rows, 5)
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
	return s.Commit()
}
