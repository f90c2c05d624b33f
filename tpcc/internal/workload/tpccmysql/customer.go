package tpccmysql

import (
	"database/sql/driver"

	"flushbench/tpcc/internal/mysqlwire"
)

// byNameRows fetches the ceil(n/2)-th row of a by-last-name cursor the way
// tpcc-mysql does (n from the preceding count; n = 0 fetches nothing) and
// hands it to use.
func (w *worker) byNameRows(id, cols int, n int64, use func(row []driver.Value)) error {
	s := w.sess
	rows, err := s.Query(id)
	if err != nil {
		return err
	}
	want := (n + 1) / 2
	var got int64
	for got < want {
		ok, err := s.Next(rows, cols)
		if err != nil || !ok {
			rows.Close()
			if err == nil {
				err = mysqlwire.ErrNoRow{What: "customer by last name"}
			}
			return err
		}
		got++
		if got == want && use != nil {
			use(s.Values(cols))
		}
	}
	return rows.Close()
}

func (w *worker) countByName(id int, cW, cD int, last []byte) (int64, error) {
	var n int64
	err := w.sess.Int(cW).Int(cD).Bytes(last).QueryOne(id, 1, "count by last name", func(row []driver.Value) {
		n = mysqlwire.AsInt(row[0])
	})
	return n, err
}
