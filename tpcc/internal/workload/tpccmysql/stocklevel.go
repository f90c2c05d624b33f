package tpccmysql

import (
	"database/sql/driver"

	"flushbench/tpcc/internal/mysqlwire"
)

// stockLevel is tpcc-mysql's slev(): the district's next order id, the
// distinct items of its last 20 orders, then one count(*) per item; COMMIT.
func (w *worker) stockLevel() error {
	s, in := w.sess, &w.in
	var next int64
	if err := s.Int(in.d).Int(in.w).QueryOne(stockLevelNextOrder, 1, "Stock-Level district", func(row []driver.Value) {
		next = mysqlwire.AsInt(row[0])
	}); err != nil {
		return err
	}
	rows, err := s.Int(in.w).Int(in.d).Int(int(next)).Int(int(next)).Query(stockLevelRecentItems)
	if err != nil {
		return err
	}
	w.ids = w.ids[:0]
	for {
		ok, err := s.Next(rows, 1)
		if err != nil {
			rows.Close()
			return err
		}
		if !ok {
			break
		}
		w.ids = append(w.ids, mysqlwire.AsInt(s.Values(1)[0]))
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, id := range w.ids {
		if err := s.Int(in.w).Int(int(id)).Int(in.threshold).QueryOne(stockLevelLowStock, 1, "Stock-Level count", nil); err != nil {
			return err
		}
	}
	return s.Commit()
}
